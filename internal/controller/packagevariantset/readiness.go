package packagevariantset

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	"github.com/scion-dev/scion/internal/reconciler"
)

// readiness keeps a set's VariantsReady condition and ready count current
// as its variants become Ready or stop being Ready, without expanding the
// set's targets: flips cost a count over the set's variants in the cache
// and, when the verdict changed, one status write, at most once per set
// every recountInterval (the work queue folds the flips meanwhile into
// the next recount), so a fleet becoming Ready costs a number of counts
// that grows with the time it takes, not with the set's size.
type readiness struct {
	client.Client
	APIReader client.Reader
	Status    *reconciler.StatusWriter
	Shard     reconciler.Shard
	// spacer makes one recount per set every recountInterval at most: a
	// fleet becoming Ready costs a count (and a status write) per
	// interval, not per flip.
	spacer reconciler.Spacer
}

// recountInterval is the least time between two recounts of one set.
const recountInterval = 2 * time.Second

// recountAfter is how soon a recount put off by the set's own reconcile
// is tried again.
const recountAfter = 2 * time.Second

// readyFlipped passes the updates of a variant that change whether it is
// Ready for its generation, and deletions.
var readyFlipped = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*configv1alpha1.PackageVariant), e.ObjectNew.(*configv1alpha1.PackageVariant)
		return o.Generation == n.Generation && isReady(o) != isReady(n)
	},
}

func (r *readiness) setup(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("packagevariantset-readiness").
		Watches(&configv1alpha1.PackageVariant{},
			handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &configv1alpha2.PackageVariantSet{}, handler.OnlyControllerOwner()),
			builder.WithPredicates(readyFlipped)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, workers)}).
		Complete(r)
}

// Reconcile recounts one set's Ready variants.
func (r *readiness) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pvs := &configv1alpha2.PackageVariantSet{}
	if err := r.Get(ctx, req.NamespacedName, pvs); err != nil || !r.Shard.Owns(pvs) {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pvs.DeletionTimestamp.IsZero() {
		r.spacer.Forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if pvs.Status.Summary == nil || pvs.Status.ObservedGeneration != pvs.Generation {
		// The set's own reconcile is under way: it counts what it sees,
		// and this looks again after it, for flips it did not see.
		return ctrl.Result{RequeueAfter: recountAfter}, nil
	}
	if meta.IsStatusConditionTrue(pvs.Status.Conditions, configv1alpha1.StalledCondition) {
		return ctrl.Result{}, nil
	}
	if wait := r.spacer.Wait(req.NamespacedName); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	list := &configv1alpha1.PackageVariantList{}
	// Read only: the cache's objects themselves, not copies of 10,000 of
	// them every interval.
	if err := r.List(ctx, list, client.InNamespace(pvs.Namespace), client.MatchingFields{OwnerIndex: string(pvs.UID)}, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, err
	}
	s := &scope{pvs: pvs, summary: pvs.Status.Summary.DeepCopy()}
	s.summary.Ready = 0
	live := make([]*configv1alpha1.PackageVariant, 0, len(list.Items))
	for i := range list.Items {
		pv := &list.Items[i]
		if !pv.DeletionTimestamp.IsZero() {
			continue
		}
		live = append(live, pv)
		if isReady(pv) {
			s.summary.Ready++
		} else {
			s.notReady = append(s.notReady, pv.Name)
		}
	}
	slices.Sort(s.notReady)
	upstreams := upstreamSummary(&pvs.Spec, live, s.notReady)
	gen := pvs.Generation
	_, err := reconciler.PatchStatus(ctx, r.Status, pvs, func(pvs *configv1alpha2.PackageVariantSet) (bool, error) {
		if pvs.Generation != gen || pvs.Status.ObservedGeneration != gen || pvs.Status.Summary == nil {
			return false, nil // the set's own reconcile writes next
		}
		applyRecount(pvs, s, upstreams)
		return true, nil
	})
	return ctrl.Result{}, client.IgnoreNotFound(err)
}

// applyRecount writes a recount of a set's Ready variants into its status.
// Ready and VariantsReady are rewritten only while the set's own reconcile
// found it reconciled (Ready True): one that waits (its upstream's
// Repository deleted) or failed keeps that verdict until it reconciles
// again, rather than reading Ready=True over variants that are not.
func applyRecount(pvs *configv1alpha2.PackageVariantSet, s *scope, upstreams []configv1alpha2.UpstreamSummary) {
	gen := pvs.Generation
	pvs.Status.Summary.Ready = s.summary.Ready
	pvs.Status.Summary.NotReady = named(s.notReady)
	pvs.Status.Summary.Upstreams = upstreams
	if cur := meta.FindStatusCondition(pvs.Status.Conditions, configv1alpha1.ReadyCondition); cur == nil || cur.Status != metav1.ConditionTrue {
		return
	}
	ready := readyCondition(s, reconciler.Outcome{})
	ready.Type = configv1alpha1.ReadyCondition
	reconciler.SetConditions(&pvs.Status.Conditions, gen, variantsReadyCondition(s, reconciler.Outcome{}), ready)
}
