package console

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// syncWait is how long a page waits for a cache's first list before it
// says why it has none.
const syncWait = 30 * time.Second

// objectCache is the console's view of one kind of the namespace (T,
// listed as L), listed once (as the person) and then kept by a watch:
// pages that need every object of a kind (the fleet, the targets table,
// the proposals) read it instead of listing thousands per page load. It
// starts on the first page that needs it.
type objectCache[T client.Object, L client.ObjectList] struct {
	c       client.WithWatch
	ns      string
	kind    string
	newList func() L

	once     sync.Once
	informer toolscache.SharedIndexInformer
	mu       sync.Mutex
	lastErr  error
}

// newObjectCache makes the cache of kind (as the errors name it).
func newObjectCache[T client.Object, L client.ObjectList](c client.WithWatch, ns, kind string, newList func() L) *objectCache[T, L] {
	return &objectCache[T, L]{c: c, ns: ns, kind: kind, newList: newList}
}

// start runs the informer until ctx ends (once).
func (oc *objectCache[T, L]) start(ctx context.Context, example T) {
	oc.once.Do(func() {
		lw := &toolscache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				list := oc.newList()
				return list, oc.c.List(ctx, list, &client.ListOptions{Namespace: oc.ns, Raw: &o})
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return oc.c.Watch(ctx, oc.newList(), &client.ListOptions{Namespace: oc.ns, Raw: &o})
			},
		}
		oc.informer = toolscache.NewSharedIndexInformer(lw, example, 0, toolscache.Indexers{})
		// What the pages never show is not kept.
		_ = oc.informer.SetTransform(func(o any) (any, error) {
			if obj, ok := o.(client.Object); ok {
				obj.SetManagedFields(nil)
			}
			return o, nil
		})
		_ = oc.informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *toolscache.Reflector, err error) {
			oc.mu.Lock()
			oc.lastErr = err
			oc.mu.Unlock()
		})
		go oc.informer.RunWithContext(ctx)
	})
}

// list returns every object of the kind in the namespace (shared: not to
// be changed), waiting for the first list; when that fails (RBAC refuses
// it, the API server is away) it says why at once, while the cache goes
// on trying.
func (oc *objectCache[T, L]) list(ctx context.Context) ([]T, error) {
	ctx, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	for !oc.informer.HasSynced() {
		oc.mu.Lock()
		err := oc.lastErr
		oc.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", oc.kind, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("listing %s: %w", oc.kind, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	items := oc.informer.GetStore().List()
	out := make([]T, 0, len(items))
	for _, o := range items {
		out = append(out, o.(T))
	}
	return out, nil
}
