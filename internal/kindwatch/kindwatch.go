// Package kindwatch adds watches to a running controller for kinds that
// are only known once objects name them (the kinds of injection points, the
// kinds object selectors select), once per kind and namespace, limited to
// the kinds an administrator lets tenants have the controller read.
package kindwatch

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Watches registers watches on Ctrl, from the cache of each namespace.
type Watches struct {
	Ctrl   controller.Controller
	Caches *Caches

	mu      sync.Mutex
	watched map[key]bool
}

type key struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// Ensure watches the kind of obj (an Unstructured or PartialObjectMetadata
// with its GroupVersionKind set) in namespace, mapping events with h,
// unless it is watched there already. Kinds the Caches' allow-list does
// not name are refused with ErrNotAllowed.
func (w *Watches) Ensure(ctx context.Context, obj client.Object, namespace string, h handler.EventHandler) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if err := w.Caches.Kinds.Check(gvk.GroupKind()); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	k := key{gvk, namespace}
	if w.watched[k] {
		return nil
	}
	c, err := w.Caches.For(ctx, namespace)
	if err != nil {
		return err
	}
	if err := w.Ctrl.Watch(source.Kind(c, obj, h)); err != nil {
		return fmt.Errorf("watching %s in %s: %w", gvk, namespace, err)
	}
	if w.watched == nil {
		w.watched = map[key]bool{}
	}
	w.watched[k] = true
	return nil
}

// Watched reports whether gvk is watched in namespace, so that its objects
// can be read from the namespace's cache.
func (w *Watches) Watched(gvk schema.GroupVersionKind, namespace string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watched[key{gvk, namespace}]
}

// Caches holds one cache per namespace that asked for a watch, so the
// controller watches objects only where variants and sets need them
// (and RBAC may grant reads per namespace). It is a manager Runnable:
// the caches run while it does.
type Caches struct {
	// Kinds are the kinds tenants may have the controller read.
	Kinds Kinds
	// New makes the cache of a namespace.
	New func(namespace string) (cache.Cache, error)

	mu      sync.Mutex
	byNS    map[string]cache.Cache
	ctx     context.Context
	started chan struct{}
	once    sync.Once
}

func (c *Caches) init() {
	c.once.Do(func() { c.started = make(chan struct{}) })
}

// Start runs the caches made so far and those made later, until ctx ends.
func (c *Caches) Start(ctx context.Context) error {
	c.init()
	c.mu.Lock()
	c.ctx = ctx
	close(c.started)
	c.mu.Unlock()
	<-ctx.Done()
	return nil
}

// For returns the cache of namespace, made and started on first use,
// once the Caches run.
func (c *Caches) For(ctx context.Context, namespace string) (cache.Cache, error) {
	c.init()
	select {
	case <-c.started:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	ca, err := c.cacheFor(namespace)
	if err != nil {
		return nil, err
	}
	// A cache reads nothing before it has started.
	if !ca.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the cache of namespace %s did not start: %w", namespace, ctx.Err())
	}
	return ca, nil
}

func (c *Caches) cacheFor(namespace string) (cache.Cache, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ca, ok := c.byNS[namespace]; ok {
		return ca, nil
	}
	ca, err := c.New(namespace)
	if err != nil {
		return nil, fmt.Errorf("making the cache of namespace %s: %w", namespace, err)
	}
	go func() {
		if err := ca.Start(c.ctx); err != nil {
			log.FromContext(c.ctx).Error(err, "the cache of a namespace stopped", "namespace", namespace)
		}
	}()
	if c.byNS == nil {
		c.byNS = map[string]cache.Cache{}
	}
	c.byNS[namespace] = ca
	return ca, nil
}
