// SPDX-License-Identifier: Apache-2.0

// Command watchlife-client-go-reference runs client-go v1.20's shared
// informer over the configmaps of one namespace and prints what it does, so
// that watchlife's own Reflector and informer can be compared with it.
//
// It is built inside the Kubernetes v1.20.2 source tree (GOPATH mode) by
// scripts/ensure-client-go-reference.sh; it is not part of watchlife.
//
// Output: one JSON object per line on stdout, each written with one write:
//
//	{"op":"list","rv":"0","limit":500,"continue":false}  a call of ListFunc (continue: a continuation page)
//	{"op":"listed","rv":"7","items":3,"continue":false}  that call's answer (continue: more pages follow)
//	{"op":"listFailed","error":"..."}                     that call's error
//	{"op":"watch","rv":"7","timeoutSeconds":417}          a call of WatchFunc, with the timeout it sent
//	{"op":"watchFailed","error":"..."}                    that call's error
//	{"op":"watchEvent","type":"ADDED","key":"default/a","rv":"8"}  an event the Reflector received
//	{"op":"watchEvent","type":"ERROR","code":410,"reason":"Expired","message":"..."}
//	{"op":"OnAdd","key":"default/a","rv":"5"}             the handler's calls
//	{"op":"OnUpdate","key":"default/a","oldRV":"5","rv":"6"}
//	{"op":"OnDelete","key":"default/a","rv":"6","finalStateUnknown":true}
//	{"op":"synced"}                                       once HasSynced is true
//
// For OnDelete with a cache.DeletedFinalStateUnknown, key is the tombstone's
// key and rv that of the object inside it ("" when it holds none).
// Errors, the Reflector's own warnings among them, go to stderr.
//
// It runs until its stdin closes or it is killed, so a caller that dies
// takes it along by holding the other end of a pipe.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// out writes one JSON line per call, whole, from any goroutine.
type out struct {
	mu sync.Mutex
	w  io.Writer
}

func (o *out) print(fields map[string]interface{}) {
	line, err := json.Marshal(fields)
	if err != nil {
		fmt.Fprintf(os.Stderr, "encoding %v: %v\n", fields, err)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	// os.Stdout is unbuffered: each line leaves with this one write.
	if _, err := o.w.Write(append(line, '\n')); err != nil {
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

// listWatch is a cache.ListWatch over one namespace's configmaps that prints
// every request the Reflector makes and every event it receives.
func listWatch(client corev1client.CoreV1Interface, namespace string, watchTimeout int64, o *out) *cache.ListWatch {
	configmaps := client.ConfigMaps(namespace)
	return &cache.ListWatch{
		ListFunc: func(options metav1.ListOptions) (runtime.Object, error) {
			o.print(map[string]interface{}{
				"op": "list", "rv": options.ResourceVersion,
				"limit": options.Limit, "continue": options.Continue != "",
			})
			list, err := configmaps.List(context.Background(), options)
			if err != nil {
				o.print(map[string]interface{}{"op": "listFailed", "error": err.Error()})
				return nil, err
			}
			o.print(map[string]interface{}{
				"op": "listed", "rv": list.ResourceVersion,
				"items": len(list.Items), "continue": list.Continue != "",
			})
			return list, nil
		},
		WatchFunc: func(options metav1.ListOptions) (watch.Interface, error) {
			if watchTimeout > 0 {
				timeout := watchTimeout
				options.TimeoutSeconds = &timeout
			}
			var timeout int64
			if options.TimeoutSeconds != nil {
				timeout = *options.TimeoutSeconds
			}
			o.print(map[string]interface{}{
				"op": "watch", "rv": options.ResourceVersion, "timeoutSeconds": timeout,
			})
			w, err := configmaps.Watch(context.Background(), options)
			if err != nil {
				o.print(map[string]interface{}{"op": "watchFailed", "error": err.Error()})
				return nil, err
			}
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				o.print(watchEvent(e))
				return e, true
			}), nil
		},
	}
}

// watchEvent describes one event of a watch stream.
func watchEvent(e watch.Event) map[string]interface{} {
	fields := map[string]interface{}{"op": "watchEvent", "type": string(e.Type)}
	if e.Type == watch.Error {
		status := apierrors.FromObject(e.Object)
		if s, ok := status.(apierrors.APIStatus); ok {
			fields["code"] = s.Status().Code
			fields["reason"] = string(s.Status().Reason)
		}
		fields["message"] = status.Error()
		return fields
	}
	if e.Type != watch.Bookmark {
		fields["key"] = keyOf(e.Object)
	}
	fields["rv"] = rvOf(e.Object)
	return fields
}

// handler prints every call of the informer's one event handler.
func handler(o *out) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			o.print(map[string]interface{}{"op": "OnAdd", "key": keyOf(obj), "rv": rvOf(obj)})
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
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (its current context; impersonation in it is honoured)")
	namespace := flag.String("namespace", "default", "namespace whose configmaps are watched")
	resync := flag.Duration("resync", 0, "the informer's and the handler's resync period (0: none)")
	watchTimeout := flag.Int64("watch-timeout", 0, "when > 0, every WATCH asks the server to end it after this many seconds instead of the Reflector's 5-10 minutes")
	flag.Parse()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "reading the kubeconfig %q: %v\n", *kubeconfig, err)
		os.Exit(2)
	}
	client, err := corev1client.NewForConfig(config)
	if err != nil {
		fmt.Fprintf(os.Stderr, "making a client: %v\n", err)
		os.Exit(2)
	}

	o := &out{w: os.Stdout}
	informer := cache.NewSharedIndexInformer(
		listWatch(client, *namespace, *watchTimeout, o),
		&corev1.ConfigMap{},
		*resync,
		cache.Indexers{},
	)
	informer.AddEventHandler(handler(o))

	stop := make(chan struct{})
	go informer.Run(stop)
	go func() {
		if cache.WaitForCacheSync(stop, informer.HasSynced) {
			o.print(map[string]interface{}{"op": "synced"})
		}
	}()

	// Until stdin closes (or the process is killed).
	_, _ = io.Copy(io.Discard, os.Stdin)
	close(stop)
	// Let the informer's goroutines see the stop before the process ends.
	time.Sleep(100 * time.Millisecond)
}
