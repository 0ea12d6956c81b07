package repository

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/deployed"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/store"
)

// clusterReconciler keeps a Repository's status.cluster: what its target
// cluster (spec.cluster) runs of its published packages, read from the
// cluster's Flux Kustomizations. It is apart from the Repository's sync
// and writes that one field only, so that a slow or unreachable cluster
// never holds a sync; it reads again soon after a publication of the
// repository, often while something moves, and seldom when all is
// settled.
type clusterReconciler struct {
	client.Client
	APIReader client.Reader
	Status    *reconciler.StatusWriter
	Cache     *repocache.Cache
	Clusters  *deployed.Clusters
	Recorder  recorder.EventRecorder
	Shard     reconciler.Shard
	// Poll and Idle are the periods of the reads (configv1alpha1.DefaultClusterPoll,
	// configv1alpha1.DefaultClusterIdle when 0).
	Poll, Idle time.Duration
	// Workers is how many clusters are read at once: a cluster that does
	// not answer holds one for the read's timeout only.
	Workers int
}

func (c *clusterReconciler) setup(mgr ctrl.Manager) error {
	if c.Poll <= 0 {
		c.Poll = configv1alpha1.DefaultClusterPoll
	}
	if c.Idle <= 0 {
		c.Idle = configv1alpha1.DefaultClusterIdle
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("repository-cluster").
		For(&configv1alpha1.Repository{}, builder.WithPredicates(c.Shard.Predicate(predicate.And(
			predicate.NewPredicateFuncs(func(o client.Object) bool {
				repo := o.(*configv1alpha1.Repository)
				return repo.Spec.Cluster != nil || repo.Status.Cluster != nil
			}),
			predicate.GenerationChangedPredicate{},
		)))).
		// A publication (or a deletion) of the repository: the cluster
		// is read again soon, to see Flux take it.
		Watches(&porchv1alpha1.PackageRevision{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			pr := o.(*porchv1alpha1.PackageRevision)
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pr.Namespace, Name: pr.Spec.Repository}}}
		}), builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(e event.CreateEvent) bool { return published(e.Object) },
			DeleteFunc:  func(e event.DeleteEvent) bool { return published(e.Object) },
			GenericFunc: func(event.GenericEvent) bool { return false },
			UpdateFunc: func(e event.UpdateEvent) bool {
				return published(e.ObjectOld) != published(e.ObjectNew)
			},
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, c.Workers)}).
		Complete(c)
}

// published says whether git has a PackageRevision as published.
func published(o client.Object) bool {
	return o.(*porchv1alpha1.PackageRevision).GitLifecycle() == porchv1alpha1.LifecyclePublished
}

// Reconcile reads one Repository's target cluster and writes what it
// runs into status.cluster when that changed.
func (c *clusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	repo := &configv1alpha1.Repository{}
	if err := c.Get(ctx, req.NamespacedName, repo); err != nil || !c.Shard.Owns(repo) || !repo.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if repo.Spec.Cluster == nil {
		// No cluster any more: nothing is shown of one, nor kept.
		c.Clusters.Forget(req.NamespacedName)
		_, err := reconciler.PatchStatus(ctx, c.Status, repo, func(r *configv1alpha1.Repository) (bool, error) {
			r.Status.Cluster = nil
			return true, nil
		})
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !meta.IsStatusConditionTrue(repo.Status.Conditions, configv1alpha1.ReadyCondition) {
		// Not synced yet (or failing): opening the store here would race
		// the sync's own first open and fetch; its Ready says why.
		return ctrl.Result{RequeueAfter: c.Poll}, nil
	}
	st, err := c.Cache.Open(ctx, repo)
	if errors.Is(err, store.ErrBusy) {
		return ctrl.Result{RequeueAfter: c.Poll}, nil // its sync is fetching: read the cluster after
	}
	if err != nil {
		// The repository's own Ready says why it cannot be opened.
		return ctrl.Result{RequeueAfter: c.Idle}, nil
	}
	observed, err := c.Clusters.Observe(ctx, repo, st, repo.Status.Cluster, time.Now())
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading the cluster of repository %s: %w", repo.Name, err)
	}
	before := repo.Status.Cluster
	_, err = reconciler.PatchStatus(ctx, c.Status, repo, func(r *configv1alpha1.Repository) (bool, error) {
		if r.Status.Cluster != nil && sameObservation(r.Status.Cluster, observed) {
			return false, nil // only the time moved: not written, so a settled fleet writes nothing
		}
		r.Status.Cluster = observed
		return true, nil
	})
	if err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	c.announce(repo, before, observed)
	return ctrl.Result{RequeueAfter: c.next(observed, time.Now())}, nil
}

// settleWindow is how long after a package's state changed its cluster
// is still read often although nothing seems to move: a Kustomization
// made after the publication, a drift being put right.
const settleWindow = 10 * time.Minute

// next is when a cluster is read again: soon while something of it moves
// or changed lately, seldom once all is settled.
func (c *clusterReconciler) next(observed *configv1alpha1.ClusterStatus, now time.Time) time.Duration {
	if observed.Error != "" {
		return c.Poll
	}
	for _, p := range observed.Packages {
		switch p.State {
		case configv1alpha1.DeployProgressing, configv1alpha1.DeployBehind, configv1alpha1.DeployFailed, configv1alpha1.DeployUnknown:
			return c.Poll
		}
		if p.State != configv1alpha1.DeployCurrent && p.Since != nil && now.Sub(p.Since.Time) < settleWindow {
			return c.Poll
		}
	}
	return c.Idle
}

// sameObservation says whether two observations differ only in when
// they were made.
func sameObservation(a, b *configv1alpha1.ClusterStatus) bool {
	x, y := *a, *b
	x.ObservedAt, y.ObservedAt = nil, nil
	return apiequality.Semantic.DeepEqual(x, y)
}

// announce records an event when the cluster becomes unreadable or
// readable again, and when a package starts failing or drifts.
func (c *clusterReconciler) announce(repo *configv1alpha1.Repository, before, now *configv1alpha1.ClusterStatus) {
	if c.Recorder == nil {
		return
	}
	wasErr := before != nil && before.Error != ""
	switch {
	case now.Error != "" && !wasErr:
		c.Recorder.Eventf(repo, nil, "Warning", "ClusterUnreachable", "ReadCluster", "%s", now.Error)
	case now.Error == "" && wasErr:
		c.Recorder.Eventf(repo, nil, "Normal", "ClusterReachable", "ReadCluster", "the cluster can be read again")
	}
	for _, p := range now.Packages {
		if p.State != configv1alpha1.DeployFailed && p.State != configv1alpha1.DeployDrifted {
			continue
		}
		if b := before.Package(p.Package); b != nil && b.State == p.State {
			continue
		}
		c.Recorder.Eventf(repo, nil, "Warning", "Deploy"+string(p.State), "ReadCluster", "package %s: %s", p.Package, p.Message)
	}
}
