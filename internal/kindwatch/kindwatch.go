// Package kindwatch adds watches to a running controller for kinds that
// are only known once objects name them (the kinds of injection points, the
// kinds object selectors select), once per kind.
package kindwatch

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Watches registers watches on Ctrl, from Cache.
type Watches struct {
	Ctrl  controller.Controller
	Cache cache.Cache

	mu      sync.Mutex
	watched map[schema.GroupVersionKind]bool
}

// Ensure watches the kind of obj (an Unstructured or PartialObjectMetadata
// with its GroupVersionKind set), mapping events with h, unless it is
// watched already.
func (w *Watches) Ensure(obj client.Object, h handler.EventHandler) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watched[gvk] {
		return nil
	}
	if err := w.Ctrl.Watch(source.Kind(w.Cache, obj, h)); err != nil {
		return fmt.Errorf("watching %s: %w", gvk, err)
	}
	if w.watched == nil {
		w.watched = map[schema.GroupVersionKind]bool{}
	}
	w.watched[gvk] = true
	return nil
}

// Watched reports whether gvk is watched, so that its objects can be read
// from the cache.
func (w *Watches) Watched(gvk schema.GroupVersionKind) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watched[gvk]
}
