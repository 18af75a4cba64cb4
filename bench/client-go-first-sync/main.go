// SPDX-License-Identifier: Apache-2.0

// Command watchlife-bench-client-go-first-sync runs client-go v0.36's dynamic
// SharedIndexInformer (the one dynamicinformer makes, as controllers of
// custom resources use it) over one resource and says when its first sync is
// done: the bench's reference for the time and memory of a first sync.
//
// Unlike the tests' tracing reference, it prints nothing per object: its one
// handler only counts OnAdd calls, so that what it costs is client-go's own
// work.
//
// client-go's feature gates keep their defaults and are read from the
// environment as client-go reads them: KUBE_FEATURE_WatchListClient=false
// makes the informer LIST then WATCH instead of streaming its list.
//
// Output: one JSON object per line on stdout.
//
//	{"op":"start","watchListClient":true}
//	    once, first: whether the WatchListClient gate is on.
//	{"op":"synced","added":149870}
//	    once, when HasSynced turns true (looked at every 5 ms); added: the
//	    OnAdd calls made by then (the handler runs behind the Indexer).
//	{"op":"handled","added":150000}
//	    once, when the handler has been called with OnAdd -expect times.
//
// It runs until its stdin closes or it is killed.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// syncPoll is how often HasSynced is asked: small beside a first sync of
// seconds.
const syncPoll = 5 * time.Millisecond

var stdout sync.Mutex

// say writes one JSON line.
func say(fields map[string]interface{}) {
	line, err := json.Marshal(fields)
	if err != nil {
		fmt.Fprintf(os.Stderr, "encoding %v: %v\n", fields, err)
		return
	}
	stdout.Lock()
	defer stdout.Unlock()
	_, _ = os.Stdout.Write(append(line, '\n'))
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (its current context)")
	group := flag.String("group", "", "the resource's API group")
	version := flag.String("version", "v1", "the resource's API version")
	resource := flag.String("resource", "", "the resource, plural")
	namespace := flag.String("namespace", "", "the namespace watched (\"\" for all)")
	expect := flag.Int64("expect", 0, "OnAdd calls after which to print \"handled\" (0: never)")
	flag.Parse()
	if *resource == "" {
		fmt.Fprintln(os.Stderr, "-resource is required")
		os.Exit(2)
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "reading the kubeconfig %q: %v\n", *kubeconfig, err)
		os.Exit(2)
	}
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		fmt.Fprintf(os.Stderr, "making a client: %v\n", err)
		os.Exit(2)
	}
	say(map[string]interface{}{
		"op": "start", "watchListClient": clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient),
	})

	gvr := schema.GroupVersionResource{Group: *group, Version: *version, Resource: *resource}
	informer := dynamicinformer.NewFilteredDynamicInformer(client, gvr, *namespace, 0, cache.Indexers{}, nil).Informer()
	var added atomic.Int64
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc: func(interface{}) {
			if added.Add(1) == *expect {
				say(map[string]interface{}{"op": "handled", "added": *expect})
			}
		},
	}
	if _, err := informer.AddEventHandler(handler); err != nil {
		fmt.Fprintf(os.Stderr, "adding the handler: %v\n", err)
		os.Exit(2)
	}

	stop := make(chan struct{})
	go informer.Run(stop)
	go func() {
		// cache.WaitForCacheSync looks every 100 ms; this looks more often.
		for !informer.HasSynced() {
			time.Sleep(syncPoll)
		}
		say(map[string]interface{}{"op": "synced", "added": added.Load()})
	}()

	_, _ = io.Copy(io.Discard, os.Stdin)
	close(stop)
}
