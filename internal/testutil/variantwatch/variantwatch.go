// Package variantwatch counts, for the benchmarks, the PackageVariants of
// a namespace that are Ready, from the events of one watch: a waiter looks
// at each event once, where a poll over the whole fleet ten times a
// second would cost the benchmark's process (whose CPU the tables charge
// to the controllers) more than the controllers at 10,000 variants.
package variantwatch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// Counter counts the variants Ready at their generation that pass the
// current want.
type Counter struct {
	cache cache.Cache
	mu    sync.Mutex
	want  func(*configv1alpha1.PackageVariant) bool
	// ready holds the names of the variants that count.
	ready map[string]bool
	// changed is closed (and replaced) whenever ready changes.
	changed chan struct{}
	// updated is called with every variant an event brings (slim).
	updated func(*configv1alpha1.PackageVariant)
}

// Start starts a cache of the PackageVariants of ns (cut to what the
// counter reads) and counts those Ready; it stops with the test.
func Start(tb testing.TB, cfg *rest.Config, scheme *runtime.Scheme, ns string) *Counter {
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}, DefaultTransform: slim})
	if err != nil {
		tb.Fatal(err)
	}
	rc := &Counter{cache: c, ready: map[string]bool{}, changed: make(chan struct{})}
	inf, err := c.GetInformer(ctx, &configv1alpha1.PackageVariant{})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { rc.observe(o, false) },
		UpdateFunc: func(_, o any) { rc.observe(o, false) },
		DeleteFunc: func(o any) { rc.observe(o, true) },
	}); err != nil {
		tb.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		tb.Fatal("the PackageVariant cache did not sync")
	}
	return rc
}

// OnUpdate calls fn with each variant an event brings from now on (as
// the counter keeps it: name, labels, generation, upstream, Ready), on
// the watch's goroutine.
func (rc *Counter) OnUpdate(fn func(*configv1alpha1.PackageVariant)) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.updated = fn
}

// Get reads a variant from the counter's cache (no API request).
func (rc *Counter) Get(ctx context.Context, ns, name string) (*configv1alpha1.PackageVariant, error) {
	pv := &configv1alpha1.PackageVariant{}
	return pv, rc.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pv)
}

// Count returns how many variants count now.
func (rc *Counter) Count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.ready)
}

// slim keeps of a PackageVariant what the counter looks at: the cache is
// the benchmark's process's, whose heap (and collector's work) the
// tables charge to the controllers: it should not hold a second full copy
// of every variant beside the controllers' own.
func slim(o any) (any, error) {
	pv, ok := o.(*configv1alpha1.PackageVariant)
	if !ok {
		return o, nil
	}
	s := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: pv.Name, Namespace: pv.Namespace, UID: pv.UID, ResourceVersion: pv.ResourceVersion,
		Generation: pv.Generation, Labels: pv.Labels}}
	s.Spec.Upstream = pv.Spec.Upstream
	s.Status.ObservedGeneration = pv.Status.ObservedGeneration
	if c := meta.FindStatusCondition(pv.Status.Conditions, configv1alpha1.ReadyCondition); c != nil {
		// The reason and message, for the report of a stalled Wait.
		s.Status.Conditions = []metav1.Condition{{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}}
	}
	return s, nil
}

func (rc *Counter) isReady(pv *configv1alpha1.PackageVariant) bool {
	return configv1alpha1.ReadyAt(pv.Status.Conditions, pv.Generation, pv.Status.ObservedGeneration) && (rc.want == nil || rc.want(pv))
}

// observe counts one event's variant.
func (rc *Counter) observe(o any, deleted bool) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o, deleted = d.Obj, true
	}
	pv, ok := o.(*configv1alpha1.PackageVariant)
	if !ok {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.updated != nil && !deleted {
		rc.updated(pv)
	}
	rc.set(pv.Name, !deleted && rc.isReady(pv))
}

// set records whether the variant name counts; rc.mu is held.
func (rc *Counter) set(name string, ready bool) {
	if rc.ready[name] == ready {
		return
	}
	if ready {
		rc.ready[name] = true
	} else {
		delete(rc.ready, name)
	}
	close(rc.changed)
	rc.changed = make(chan struct{})
}

// Wait waits until at least n variants are Ready at their generation and
// pass want (nil: any), for at most 20 minutes; want stays the counter's
// (Count) until the next Wait.
func (rc *Counter) Wait(tb testing.TB, n int, want func(*configv1alpha1.PackageVariant) bool) {
	rc.mu.Lock()
	rc.want = want
	// Count again with want, once; events keep the count from here.
	list := &configv1alpha1.PackageVariantList{}
	if err := rc.cache.List(context.Background(), list, client.UnsafeDisableDeepCopy); err != nil {
		rc.mu.Unlock()
		tb.Fatal(err)
	}
	for i := range list.Items {
		rc.set(list.Items[i].Name, rc.isReady(&list.Items[i]))
	}
	rc.mu.Unlock()
	deadline := time.After(20 * time.Minute)
	for {
		rc.mu.Lock()
		ready, changed := len(rc.ready), rc.changed
		rc.mu.Unlock()
		if ready >= n {
			return
		}
		select {
		case <-changed:
		case <-time.After(stallReport):
			// Printed, not logged: a benchmark's log shows only at its end.
			fmt.Printf("variantwatch: %d of %d variants ready, none more for %s; not ready:\n%s", ready, n, stallReport, rc.notReady(5))
		case <-deadline:
			tb.Fatalf("%d of %d variants ready after 20 minutes; not ready:\n%s", ready, n, rc.notReady(5))
		}
	}
}

// stallReport is how long a Wait sees no progress before it says which
// variants it waits for.
const stallReport = time.Minute

// notReady describes up to max variants that do not count, with their
// Ready condition.
func (rc *Counter) notReady(max int) string {
	list := &configv1alpha1.PackageVariantList{}
	if err := rc.cache.List(context.Background(), list, client.UnsafeDisableDeepCopy); err != nil {
		return err.Error() + "\n"
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var b strings.Builder
	for i := range list.Items {
		pv := &list.Items[i]
		if rc.ready[pv.Name] || max == 0 {
			continue
		}
		max--
		c := meta.FindStatusCondition(pv.Status.Conditions, configv1alpha1.ReadyCondition)
		if c == nil {
			c = &metav1.Condition{Status: "(none)"}
		}
		fmt.Fprintf(&b, "  %s (generation %d, observed %d, upstream revision %s): Ready=%s %s: %s\n", pv.Name, pv.Generation, pv.Status.ObservedGeneration, pv.Spec.Upstream.Revision, c.Status, c.Reason, c.Message)
	}
	return b.String()
}
