package packagevariant

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// InjectorIndex indexes PackageVariants by the names their injectors
// select, so an event on an in-cluster object finds exactly the variants
// that may inject it.
const InjectorIndex = "spec.injectors.name"

func indexInjectors(o client.Object) []string {
	pv := o.(*configv1alpha1.PackageVariant)
	var out []string
	for _, inj := range pv.Spec.Injectors {
		out = append(out, inj.Name)
	}
	return out
}

// injectionWatches registers, once per GroupVersionKind, a watch on the
// kinds of the injection points the variants have met, so that editing an
// injected object updates the drafts without touching the variants.
type injectionWatches struct {
	ctrl   controller.Controller
	cache  cache.Cache
	client client.Client

	mu      sync.Mutex
	watched map[schema.GroupVersionKind]bool
}

// ensure watches gvk if it is not watched yet.
func (w *injectionWatches) ensure(gvk schema.GroupVersionKind) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watched[gvk] {
		return nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := w.ctrl.Watch(source.Kind(w.cache, client.Object(obj), handler.EnqueueRequestsFromMapFunc(w.requestsForObject))); err != nil {
		return err
	}
	if w.watched == nil {
		w.watched = map[schema.GroupVersionKind]bool{}
	}
	w.watched[gvk] = true
	return nil
}

// requestsForObject maps an in-cluster object to the variants of its
// namespace whose injectors name it.
func (w *injectionWatches) requestsForObject(ctx context.Context, o client.Object) []reconcile.Request {
	list := &configv1alpha1.PackageVariantList{}
	if err := w.client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{InjectorIndex: o.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, pv := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pv)})
	}
	return out
}
