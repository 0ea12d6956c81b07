// Package changes tells when objects of some kinds change in a namespace:
// what scion console's pages and scion rollout status --watch follow.
package changes

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// retry is how long a watch that failed waits before it starts again.
const retry = time.Second

// watchTimeout, when set, asks the API server to end each watch after it
// (tests: to see a watch resumed); by default the server's own.
var watchTimeout *int64

// watching, when set, is called each time a watch starts (tests: to know
// a watch was resumed without waiting for the clock).
var watching func()

// Watch returns a channel that receives whenever an object of the kinds
// lists names changes in ns, from now on (what exists when it starts is
// not a change), at most once per interval. Each kind is watched from the
// resourceVersion of a list, and watched again from where it was when
// the API server ends the watch (as it does every few minutes); a kind
// the client may not list or watch is left out. The channel closes when
// ctx ends.
func Watch(ctx context.Context, c client.WithWatch, ns string, interval time.Duration, lists ...client.ObjectList) <-chan struct{} {
	raw := make(chan struct{}, 1)
	for _, list := range lists {
		rv, err := resourceVersion(ctx, c, ns, list)
		if err != nil {
			continue // not allowed to see it: nothing to tell
		}
		go follow(ctx, c, ns, list, rv, raw)
	}
	out := make(chan struct{})
	go func() {
		defer close(out)
		var last time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case <-raw:
			}
			if wait := interval - time.Since(last); wait > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
			}
			select {
			case <-raw: // what came meanwhile is told with it
			default:
			}
			last = time.Now()
			select {
			case out <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// resourceVersion is where the kind of list stands now in ns.
func resourceVersion(ctx context.Context, c client.WithWatch, ns string, list client.ObjectList) (string, error) {
	l := list.DeepCopyObject().(client.ObjectList)
	if err := c.List(ctx, l, client.InNamespace(ns), client.Limit(1)); err != nil {
		return "", err
	}
	return l.GetResourceVersion(), nil
}

// follow watches one kind from rv until ctx ends, signalling raw on every
// change.
func follow(ctx context.Context, c client.WithWatch, ns string, list client.ObjectList, rv string, raw chan<- struct{}) {
	signal := func() {
		select {
		case raw <- struct{}{}:
		default:
		}
	}
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: watchTimeout}})
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			return // may list, not watch: nothing to tell
		}
		if err == nil {
			if watching != nil {
				watching()
			}
			rv = drain(w, rv, signal)
			w.Stop()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
		if err != nil || rv == "" {
			// Too old to resume (or never started): start from now, and
			// say something may have changed meanwhile.
			if rv, err = resourceVersion(ctx, c, ns, list); err != nil {
				rv = ""
				continue
			}
			signal()
		}
	}
}

// drain reads a watch until it ends; it returns the resourceVersion to
// resume from ("" when the watch ended in an error, such as a version too
// old to resume).
func drain(w watch.Interface, rv string, signal func()) string {
	for e := range w.ResultChan() {
		switch e.Type {
		case watch.Error:
			return ""
		case watch.Bookmark:
		default:
			signal()
		}
		if o, err := meta.Accessor(e.Object); err == nil && o.GetResourceVersion() != "" {
			rv = o.GetResourceVersion()
		}
	}
	return rv
}
