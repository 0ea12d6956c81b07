package packagelock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgdeps"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/repocache"
)

// Options configure the Reconciler.
type Options struct {
	Workers int
	// Shard is the share of Repositories this replica keeps locks of.
	Shard reconciler.Shard
	// MinInterval is the least time between two writes of one lock (10
	// seconds when 0): a burst of revision changes in a repository (a
	// fleet being created) makes one write, not one per change. Variants
	// resolve against git and their own lock writes, and publication
	// checks git, so a lock a few seconds behind decides nothing.
	MinInterval time.Duration
}

// DefaultMinInterval is Options.MinInterval's default.
const DefaultMinInterval = 10 * time.Second

// settle is how long the first recomputation after a quiet interval waits
// for the rest of its burst: the drafts a batch of variants writes into one
// repository land within a second or two of each other, and make one write
// of the lock instead of two.
const settle = 3 * time.Second

// Reconciler keeps PackageLocks. It writes nothing but the lock: no
// status of its own (the lock is the status of its Repository's
// packages).
type Reconciler struct {
	client.Client
	Cache    *repocache.Cache
	Deps     *pkgdeps.Reader
	Recorder recorder.EventRecorder
	Options  Options

	spacer reconciler.Spacer
}

// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagelocks,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=repositories,verbs=get;list;watch

// SetupWithManager registers the controller: a Repository is looked at
// when it changes, when one of its PackageRevisions does, and when its
// lock does (someone else's write is checked against git).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Cache == nil || r.Deps == nil || r.Recorder == nil {
		return fmt.Errorf("packagelock controller: Cache, Deps and Recorder are required")
	}
	r.spacer.Interval = r.Options.MinInterval
	if r.spacer.Interval <= 0 {
		r.spacer.Interval = DefaultMinInterval
	}
	r.spacer.Settle = settle
	return ctrl.NewControllerManagedBy(mgr).
		Named("packagelock").
		For(&configv1alpha1.Repository{}, builder.WithPredicates(r.Options.Shard.Predicate())).
		Owns(&configv1alpha1.PackageLock{}).
		Watches(&porchv1alpha1.PackageRevision{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			pr := o.(*porchv1alpha1.PackageRevision)
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pr.Namespace, Name: pr.Spec.Repository}}}
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.Options.Workers)}).
		Complete(r)
}

// Reconcile recomputes one deployment Repository's lock from git and the
// planned packages of variants that still exist, and writes it when it
// changed (against the version read: a concurrent write is retried).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	repo := &configv1alpha1.Repository{}
	if err := r.Get(ctx, req.NamespacedName, repo); err != nil || !r.Options.Shard.Owns(repo) {
		if apierrors.IsNotFound(err) {
			r.spacer.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !repo.Spec.Deployment || !repo.DeletionTimestamp.IsZero() || repo.Spec.Git == nil {
		return ctrl.Result{}, nil // a lock is owned by its Repository and leaves with it
	}
	if wait := r.spacer.Wait(req.NamespacedName); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	st, err := r.Cache.Open(ctx, repo)
	if err != nil {
		// The Repository controller reports it; a sync brings it back.
		return ctrl.Result{}, nil
	}
	cat, err := r.Deps.NamespaceCatalog(ctx, r.Cache, r.Client, repo.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	installed, err := r.Deps.Installed(ctx, st, cat)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("repository %s: %w", repo.Name, err)
	}
	lock, exists, err := pkgdeps.ReadLock(ctx, r.Client, repo)
	if err != nil {
		return ctrl.Result{}, err
	}
	planned, err := r.live(ctx, repo.Namespace, pkgdeps.Planned(lock))
	if err != nil {
		return ctrl.Result{}, err
	}
	before := map[string]bool{}
	for _, c := range lock.Conflicts {
		before[c.Message] = true
	}
	var conflicts []configv1alpha1.LockConflict
	err = pkgdeps.WriteLock(ctx, r.Client, repo, lock, exists, func(l *configv1alpha1.PackageLock) {
		l.Packages, l.Conflicts = pkgdeps.Lock(installed, planned, cat)
		conflicts = l.Conflicts
	})
	if errors.Is(err, pkgdeps.ErrLockConflict) {
		return ctrl.Result{RequeueAfter: reconciler.RaceRetry()}, nil // read again, decide again
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, c := range conflicts {
		if !before[c.Message] {
			r.Recorder.Eventf(repo, nil, "Warning", pkgdeps.PackageConflictReason, "Lock", "%s", c.Message)
		}
	}
	return ctrl.Result{}, nil
}

// live drops from planned packages the variants that no longer exist.
func (r *Reconciler) live(ctx context.Context, ns string, planned []configv1alpha1.LockedPackage) ([]configv1alpha1.LockedPackage, error) {
	exists := map[string]bool{}
	for i := range planned {
		var keep []string
		for _, name := range planned[i].PlannedBy {
			ok, seen := exists[name]
			if !seen {
				err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &configv1alpha1.PackageVariant{})
				if err != nil && !apierrors.IsNotFound(err) {
					return nil, err
				}
				ok = err == nil
				exists[name] = ok
			}
			if ok {
				keep = append(keep, name)
			}
		}
		planned[i].PlannedBy = keep
	}
	return slices.DeleteFunc(planned, func(p configv1alpha1.LockedPackage) bool { return len(p.PlannedBy) == 0 }), nil
}
