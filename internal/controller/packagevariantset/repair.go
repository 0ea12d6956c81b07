package packagevariantset

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
)

// expansions keeps each set's last expansion (the desired variants of one
// generation), so that an event on one of its variants costs a look at
// that variant, not an expansion of every target: with a set of 10,000
// variants, an expansion per deleted or edited variant (or per variant
// the set updates itself) made the set's cost grow with its size per
// event.
type expansions struct {
	mu sync.Mutex
	m  map[types.UID]expansion
}

// expansion is the desired variants of a set's generation, by name, each
// encoded as JSON: a set of 10,000 kept 10,000 objects (22 MiB, and as
// many pointers for the collector to follow) for the few its variants'
// events look at.
type expansion struct {
	generation int64
	desired    map[string][]byte
}

// put records the desired variants of pvs's generation; none when one of
// them cannot be encoded (an event on a variant then brings the set's own
// reconcile).
func (e *expansions) put(pvs *configv1alpha2.PackageVariantSet, desired []*configv1alpha1.PackageVariant) {
	byName := make(map[string][]byte, len(desired))
	for _, pv := range desired {
		b, err := json.Marshal(pv)
		if err != nil {
			e.forget(pvs.UID)
			return
		}
		byName[pv.Name] = b
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[types.UID]expansion{}
	}
	e.m[pvs.UID] = expansion{generation: pvs.Generation, desired: byName}
}

// desired returns a copy of the variant name pvs's current generation
// wants; ok is false when no expansion of that generation is known.
func (e *expansions) desired(pvs *configv1alpha2.PackageVariantSet, name string) (want *configv1alpha1.PackageVariant, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, found := e.m[pvs.UID]
	if !found || x.generation != pvs.Generation {
		return nil, false
	}
	b, found := x.desired[name]
	if !found {
		return nil, true
	}
	want = &configv1alpha1.PackageVariant{}
	if err := json.Unmarshal(b, want); err != nil {
		return nil, false
	}
	return want, true
}

// forget drops a set's expansion (the set is being deleted).
func (e *expansions) forget(uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, uid)
}

// repairRequest asks for one variant of a set to be repaired: a kind of
// request of its own, with its own controller and queue
// (packagevariantset-repair), so that an event on one variant costs a
// look at that variant, not an expansion of the set.
type repairRequest struct {
	Set     types.NamespacedName
	Variant string
}

// repairer is the sets' repair controller: it makes one variant of a set
// what the set's last expansion wants: created again when someone deleted
// it, set back when someone edited it. What it cannot decide alone it
// hands to the set's own reconcile (Reconciler.wake).
type repairer struct{ r *Reconciler }

// wakeBuffer bounds the sets waiting to be handed to their reconcile.
const wakeBuffer = 1024

func (p repairer) setup(mgr ctrl.Manager, workers int) error {
	return builder.TypedControllerManagedBy[repairRequest](mgr).
		Named("packagevariantset-repair").
		Watches(&configv1alpha1.PackageVariant{}, handler.TypedEnqueueRequestsFromMapFunc(repairRequestFor), builder.WithPredicates(variantChanged{})).
		WithOptions(controller.TypedOptions[repairRequest]{MaxConcurrentReconciles: max(1, workers)}).
		Complete(p)
}

// repairRequestFor maps an event of a variant a set controls to a repair
// of that variant alone.
func repairRequestFor(_ context.Context, o client.Object) []repairRequest {
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.Kind != "PackageVariantSet" || !strings.HasPrefix(ref.APIVersion, configv1alpha2.GroupVersion.Group+"/") {
		return nil
	}
	return []repairRequest{{Set: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}, Variant: o.GetName()}}
}

// Reconcile repairs one variant. Without an expansion of the set's
// current generation (the set changed, stalled, or the process
// restarted) it does nothing: the set's own reconcile, which those bring,
// looks at every variant.
func (p repairer) Reconcile(ctx context.Context, req repairRequest) (ctrl.Result, error) {
	r := p.r
	pvs := &configv1alpha2.PackageVariantSet{}
	if err := r.Get(ctx, req.Set, pvs); err != nil || !r.Options.Shard.Owns(pvs) {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pvs.DeletionTimestamp.IsZero() {
		// The set's deletion waits for its variants to be gone.
		return ctrl.Result{}, p.wakeSet(ctx, pvs)
	}
	name := req.Variant
	want, known := r.expansions.desired(pvs, name)
	if !known || want == nil {
		// Unknown, or a variant the set no longer wants, which its own
		// reconcile deletes.
		return ctrl.Result{}, nil
	}
	cur := &configv1alpha1.PackageVariant{}
	err := r.Get(ctx, types.NamespacedName{Namespace: pvs.Namespace, Name: name}, cur)
	switch {
	case apierrors.IsNotFound(err) && waitsOnDeletion(pvs):
		// The set's last reconcile waited for this variant (or another)
		// to be gone: its own reconcile creates it and says what the set
		// waits for now.
		return ctrl.Result{}, p.wakeSet(ctx, pvs)
	case apierrors.IsNotFound(err):
		var created *configv1alpha1.PackageVariant
		created, err = r.createVariant(ctx, pvs, want)
		if err == nil {
			r.Recorder.Eventf(pvs, created, "Normal", "Repaired", "Recreate", "PackageVariant %s was deleted: created again", name)
		}
	case err != nil:
		return ctrl.Result{}, err
	case !cur.DeletionTimestamp.IsZero():
		return ctrl.Result{}, nil // created again once gone (its deletion brings it back)
	case !ownedBy(cur, pvs):
		return ctrl.Result{}, nil
	case inSync(pvs, cur, want):
		return ctrl.Result{}, nil
	default:
		err = r.updateVariant(ctx, pvs, cur, want)
		if err == nil {
			r.Recorder.Eventf(pvs, cur, "Normal", "Repaired", "Revert", "PackageVariant %s differed from the set's template: set back", name)
		}
	}
	switch {
	case errors.Is(err, errNothingWritten):
		return ctrl.Result{}, nil
	case errors.Is(err, errNameTaken):
		// Someone else's variant took the name: the set's own reconcile
		// reports it in its status.
		return ctrl.Result{}, p.wakeSet(ctx, pvs)
	}
	return ctrl.Result{}, err
}

// wakeSet hands a set to its own reconcile.
func (p repairer) wakeSet(ctx context.Context, pvs *configv1alpha2.PackageVariantSet) error {
	select {
	case p.r.wake <- event.GenericEvent{Object: pvs}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitsOnDeletion says whether the set's last reconcile stopped to wait
// for variants being deleted.
func waitsOnDeletion(pvs *configv1alpha2.PackageVariantSet) bool {
	c := meta.FindStatusCondition(pvs.Status.Conditions, configv1alpha1.ReadyCondition)
	return c != nil && c.Reason == configv1alpha2.VariantDeletingReason
}

// ownedBy says whether pvs controls pv.
func ownedBy(pv *configv1alpha1.PackageVariant, pvs *configv1alpha2.PackageVariantSet) bool {
	ref := metav1.GetControllerOf(pv)
	return ref != nil && ref.UID == pvs.UID
}
