package packagevariant

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/kindwatch"
	"github.com/scion-dev/scion/internal/reconciler"
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

// injectionWatches watches the kinds of the injection points the variants
// have met, so that editing an injected object updates the drafts without
// touching the variants.
type injectionWatches struct {
	kinds  *kindwatch.Watches
	client client.Client
	// memo is told of every event of an object an injector names, so no
	// variant injecting it reuses a production made before it.
	memo *producedMemo
}

// ensure watches gvk in namespace if it is not watched there yet.
func (w *injectionWatches) ensure(ctx context.Context, gvk schema.GroupVersionKind, namespace string) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	return w.kinds.Ensure(ctx, obj, namespace, reconciler.WithPriority(handler.EnqueueRequestsFromMapFunc(w.requestsForObject), reconciler.Fixed(reconciler.PriorityFanOut)))
}

// requestsForObject maps an in-cluster object to the variants of its
// namespace whose injectors name it.
func (w *injectionWatches) requestsForObject(ctx context.Context, o client.Object) []reconcile.Request {
	list := &configv1alpha1.PackageVariantList{}
	if err := w.client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{InjectorIndex: o.GetName()}); err != nil {
		return nil
	}
	if len(list.Items) > 0 {
		w.memo.injected(client.ObjectKeyFromObject(o))
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, pv := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pv)})
	}
	return out
}
