// SPDX-License-Identifier: Apache-2.0

// Command watchlife-client-go-reference-modern runs a client-go v0.36
// dynamic SharedIndexInformer (the one dynamicinformer makes, as controllers
// use it) over one resource of one namespace and prints what it does, so
// that watchlife's own Reflector and informer can be compared with it.
//
// It is built from Debian's packaged Go sources in GOPATH mode by
// scripts/ensure-client-go-reference-modern.sh; it is not part of watchlife.
//
// client-go's feature gates keep their defaults and are read from the
// environment as client-go reads them: KUBE_FEATURE_WatchListClient=false
// turns the streaming list (WatchList) off, for instance.
//
// Output: one JSON object per line on stdout, each written with one write.
//
//	{"op":"start","watchListClient":true}
//	    once, first: whether the WatchListClient gate is on.
//	{"op":"request","id":1,"method":"GET","path":"/apis/g/v/namespaces/n/r","query":"allowWatchBookmarks=true&..."}
//	    an HTTP request the informer makes, the query exactly as sent.
//	{"op":"response","id":1,"path":"/apis/...","code":200}
//	{"op":"response","id":1,"path":"/apis/...","code":0,"error":"dial tcp ...: connection refused"}
//	    its answer's status (the headers), or the error that took its place.
//	{"op":"watchEvent","id":1,"type":"ADDED","key":"n/a","rv":"8"}
//	{"op":"watchEvent","id":1,"type":"BOOKMARK","rv":"9","initialEventsEnd":true}
//	{"op":"watchEvent","id":1,"type":"ERROR","code":410,"reason":"Expired","message":"..."}
//	    an event of the watch stream of request id, read off the wire as
//	    the Reflector receives it; initialEventsEnd: the bookmark carries
//	    the k8s.io/initial-events-end annotation.
//	{"op":"watchEnd","id":1}
//	    that stream ended (the server closed it or the Reflector did).
//	{"op":"OnAdd","key":"n/a","rv":"5","isInInitialList":true}
//	{"op":"OnUpdate","key":"n/a","oldRV":"5","rv":"6"}
//	{"op":"OnDelete","key":"n/a","rv":"6","finalStateUnknown":false}
//	    the calls of the informer's one event handler. For OnDelete with a
//	    cache.DeletedFinalStateUnknown, key is the tombstone's key and rv
//	    that of the last state the informer knew ("" when none).
//	{"op":"synced","rv":"9"}
//	    once, when HasSynced turns true; rv: the informer's
//	    LastSyncResourceVersion at that moment.
//
// Errors, the Reflector's own warnings among them, go to stderr.
//
// It runs until its stdin closes or it is killed, so a caller that dies
// takes it along by holding the other end of a pipe.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// out writes one JSON line per call, whole, from any goroutine.
type out struct {
	mu sync.Mutex
	w  io.Writer
}

func (o *out) print(fields map[string]interface{}) {
	var line bytes.Buffer
	encoder := json.NewEncoder(&line)
	// Queries keep their '&' as sent, not as \u0026.
	encoder.SetEscapeHTML(false)
	// Encode ends the line with '\n'.
	if err := encoder.Encode(fields); err != nil {
		fmt.Fprintf(os.Stderr, "encoding %v: %v\n", fields, err)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	// os.Stdout is unbuffered: each line leaves with this one write.
	if _, err := o.w.Write(line.Bytes()); err != nil {
		fmt.Fprintf(os.Stderr, "writing stdout: %v\n", err)
		os.Exit(1)
	}
}

// rvOf is an object's resourceVersion, or "" when it has no metadata.
func rvOf(obj interface{}) string {
	if obj == nil {
		return ""
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// keyOf is the informer's key of an object (namespace/name).
func keyOf(obj interface{}) string {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		fmt.Fprintf(os.Stderr, "no key for %T: %v\n", obj, err)
	}
	return key
}

// tracing is an http.RoundTripper that prints every request and its
// answer's status, and the events of every watch stream it carries.
type tracing struct {
	next http.RoundTripper
	o    *out
	ids  atomic.Int64
}

func (t *tracing) RoundTrip(req *http.Request) (*http.Response, error) {
	id := t.ids.Add(1)
	path := req.URL.Path
	t.o.print(map[string]interface{}{
		"op": "request", "id": id, "method": req.Method, "path": path, "query": req.URL.RawQuery,
	})
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		t.o.print(map[string]interface{}{"op": "response", "id": id, "path": path, "code": 0, "error": err.Error()})
		return resp, err
	}
	t.o.print(map[string]interface{}{"op": "response", "id": id, "path": path, "code": resp.StatusCode})
	if resp.StatusCode == http.StatusOK && req.URL.Query().Get("watch") == "true" &&
		strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		resp.Body = t.watchBody(id, resp.Body)
	}
	return resp, err
}

// watchBody passes the stream through unchanged while a second reader
// decodes a copy of it, frame by frame, and prints each event.
func (t *tracing) watchBody(id int64, body io.ReadCloser) io.ReadCloser {
	copyReader, copyWriter := io.Pipe()
	go func() {
		decoder := json.NewDecoder(bufio.NewReader(copyReader))
		for {
			var frame struct {
				Type   string          `json:"type"`
				Object json.RawMessage `json:"object"`
			}
			if err := decoder.Decode(&frame); err != nil {
				break
			}
			t.o.print(watchEvent(id, frame.Type, frame.Object))
		}
		t.o.print(map[string]interface{}{"op": "watchEnd", "id": id})
		// Whatever is left is drained, so the tee never blocks on it.
		_, _ = io.Copy(io.Discard, copyReader)
	}()
	return &teeBody{Reader: io.TeeReader(body, copyWriter), body: body, copy: copyWriter}
}

// teeBody is a watch stream's body whose reads are copied to a pipe; the
// pipe closes with the body or at the stream's end.
type teeBody struct {
	io.Reader
	body io.Closer
	copy *io.PipeWriter
	once sync.Once
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	if err != nil {
		b.once.Do(func() { _ = b.copy.CloseWithError(err) })
	}
	return n, err
}

func (b *teeBody) Close() error {
	b.once.Do(func() { _ = b.copy.Close() })
	return b.body.Close()
}

// watchEvent describes one frame of a watch stream.
func watchEvent(id int64, kind string, object json.RawMessage) map[string]interface{} {
	fields := map[string]interface{}{"op": "watchEvent", "id": id, "type": kind}
	if kind == "ERROR" {
		var status metav1.Status
		_ = json.Unmarshal(object, &status)
		fields["code"] = status.Code
		fields["reason"] = string(status.Reason)
		fields["message"] = status.Message
		return fields
	}
	var obj struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	_ = json.Unmarshal(object, &obj)
	fields["rv"] = obj.Metadata.ResourceVersion
	if kind == "BOOKMARK" {
		fields["initialEventsEnd"] = obj.Metadata.Annotations[metav1.InitialEventsAnnotationKey] == "true"
		return fields
	}
	key := obj.Metadata.Name
	if obj.Metadata.Namespace != "" {
		key = obj.Metadata.Namespace + "/" + key
	}
	fields["key"] = key
	return fields
}

// handler prints every call of the informer's one event handler.
func handler(o *out) cache.ResourceEventHandlerDetailedFuncs {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, isInInitialList bool) {
			o.print(map[string]interface{}{
				"op": "OnAdd", "key": keyOf(obj), "rv": rvOf(obj), "isInInitialList": isInInitialList,
			})
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			o.print(map[string]interface{}{
				"op": "OnUpdate", "key": keyOf(newObj), "oldRV": rvOf(oldObj), "rv": rvOf(newObj),
			})
		},
		DeleteFunc: func(obj interface{}) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				o.print(map[string]interface{}{
					"op": "OnDelete", "key": tombstone.Key, "rv": rvOf(tombstone.Obj),
					"finalStateUnknown": true,
				})
				return
			}
			o.print(map[string]interface{}{
				"op": "OnDelete", "key": keyOf(obj), "rv": rvOf(obj), "finalStateUnknown": false,
			})
		},
	}
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (its current context)")
	group := flag.String("group", "", "the resource's API group (\"\" for the core group)")
	version := flag.String("version", "v1", "the resource's API version")
	resource := flag.String("resource", "", "the resource, plural (widgets)")
	namespace := flag.String("namespace", "default", "the namespace watched (\"\" for all)")
	resync := flag.Duration("resync", 0, "the informer's and the handler's resync period (0: none)")
	flag.Parse()
	if *resource == "" {
		fmt.Fprintln(os.Stderr, "--resource is required")
		os.Exit(2)
	}

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "reading the kubeconfig %q: %v\n", *kubeconfig, err)
		os.Exit(2)
	}
	o := &out{w: os.Stdout}
	config.Wrap(func(next http.RoundTripper) http.RoundTripper { return &tracing{next: next, o: o} })
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		fmt.Fprintf(os.Stderr, "making a client: %v\n", err)
		os.Exit(2)
	}

	o.print(map[string]interface{}{
		"op": "start", "watchListClient": clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient),
	})
	gvr := schema.GroupVersionResource{Group: *group, Version: *version, Resource: *resource}
	informer := dynamicinformer.NewFilteredDynamicInformer(client, gvr, *namespace, *resync, cache.Indexers{}, nil).Informer()
	if _, err := informer.AddEventHandlerWithResyncPeriod(handler(o), *resync); err != nil {
		fmt.Fprintf(os.Stderr, "adding the handler: %v\n", err)
		os.Exit(2)
	}

	stop := make(chan struct{})
	go informer.Run(stop)
	go func() {
		if cache.WaitForCacheSync(stop, informer.HasSynced) {
			o.print(map[string]interface{}{"op": "synced", "rv": informer.LastSyncResourceVersion()})
		}
	}()

	// Until stdin closes (or the process is killed).
	_, _ = io.Copy(io.Discard, os.Stdin)
	close(stop)
	// Let the informer's goroutines see the stop before the process ends.
	time.Sleep(100 * time.Millisecond)
}
