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

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// syncWait is how long a page waits for the revision cache's first list
// before it says why it has none.
const syncWait = 30 * time.Second

// revisionCache is the console's view of the namespace's
// PackageRevisions, listed once (as the person) and then kept by a watch:
// pages that need every revision (the fleet table, the proposals) read it
// instead of listing thousands of revisions per page load. It starts on
// the first page that needs it.
type revisionCache struct {
	c  client.WithWatch
	ns string

	once     sync.Once
	informer toolscache.SharedIndexInformer
	mu       sync.Mutex
	lastErr  error
}

// start runs the informer until ctx ends (once).
func (rc *revisionCache) start(ctx context.Context) {
	rc.once.Do(func() {
		lw := &toolscache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				list := &porchv1alpha1.PackageRevisionList{}
				return list, rc.c.List(ctx, list, &client.ListOptions{Namespace: rc.ns, Raw: &o})
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return rc.c.Watch(ctx, &porchv1alpha1.PackageRevisionList{}, &client.ListOptions{Namespace: rc.ns, Raw: &o})
			},
		}
		rc.informer = toolscache.NewSharedIndexInformer(lw, &porchv1alpha1.PackageRevision{}, 0, toolscache.Indexers{})
		// What the pages never show is not kept.
		_ = rc.informer.SetTransform(func(o any) (any, error) {
			if pr, ok := o.(*porchv1alpha1.PackageRevision); ok {
				pr.ManagedFields = nil
			}
			return o, nil
		})
		_ = rc.informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *toolscache.Reflector, err error) {
			rc.mu.Lock()
			rc.lastErr = err
			rc.mu.Unlock()
		})
		go rc.informer.RunWithContext(ctx)
	})
}

// revisions returns every PackageRevision of the namespace (shared: not
// to be changed), waiting for the first list; when that fails (RBAC
// refuses it, the API server is away) it says why at once, while the
// cache goes on trying.
func (rc *revisionCache) revisions(ctx context.Context) ([]*porchv1alpha1.PackageRevision, error) {
	ctx, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	for !rc.informer.HasSynced() {
		rc.mu.Lock()
		err := rc.lastErr
		rc.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("listing PackageRevisions: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("listing PackageRevisions: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	items := rc.informer.GetStore().List()
	out := make([]*porchv1alpha1.PackageRevision, 0, len(items))
	for _, o := range items {
		out = append(out, o.(*porchv1alpha1.PackageRevision))
	}
	return out, nil
}
