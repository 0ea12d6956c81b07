package packagelock

import (
	"context"
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
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgdeps"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/store"
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
		Watches(&porchv1alpha1.PackageRevision{}, reconciler.WithPriority(handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			pr := o.(*porchv1alpha1.PackageRevision)
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pr.Namespace, Name: pr.Spec.Repository}}}
		}), reconciler.Fixed(reconciler.PriorityFanOut))).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.Options.Workers)}).
		Complete(r)
}

// scope holds what the steps of one reconcile learn.
type scope struct {
	repo *configv1alpha1.Repository
	// store is the repository's git, opened by reconcileOpen.
	store store.Store
	// catalog is the namespace's package catalog and installed what the
	// repository has of it (reconcileInstalled).
	catalog   *pkgdeps.Catalog
	installed []pkgdeps.Package
	// lock is the lock as read (exists: it was there) and planned its
	// planned packages of variants that still exist (reconcileLock).
	lock    *configv1alpha1.PackageLock
	exists  bool
	planned []configv1alpha1.LockedPackage
	// conflicts are the conflicts written (reconcileWrite).
	conflicts []configv1alpha1.LockConflict
}

// Reconcile recomputes one deployment Repository's lock from git and the
// planned packages of variants that still exist, and writes it when it
// changed (against the version read: a concurrent write is retried). The
// lock is the Repository's packages' status: the controller writes no
// status of its own, so a wait (a repository that cannot be opened) or a
// lost race is a requeue, and a failure is logged and backed off.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	repo := &configv1alpha1.Repository{}
	if err := r.Get(ctx, req.NamespacedName, repo); err != nil || !r.Options.Shard.Owns(repo) {
		if apierrors.IsNotFound(err) {
			r.spacer.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !locked(repo) {
		return ctrl.Result{}, nil // a lock is owned by its Repository and leaves with it
	}
	if wait := r.spacer.Wait(req.NamespacedName); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	s := &scope{repo: repo}
	out := reconciler.Run(ctx, s, r.reconcileOpen, r.reconcileInstalled, r.reconcileLock, r.reconcileWrite)
	if out.Waiting != nil {
		log.FromContext(ctx).V(1).Info("waiting", "reason", out.Waiting.Reason, "message", out.Waiting.Message)
	}
	return out.Return(nil)
}

// locked says whether a Repository has a lock: a deployment repository
// in git, not being deleted.
func locked(repo *configv1alpha1.Repository) bool {
	return repo.Spec.Deployment && repo.DeletionTimestamp.IsZero() && (repo.Spec.Git != nil || repo.Spec.OCI != nil)
}

// reconcileOpen opens the repository's git; one that cannot be opened is
// waited for (the Repository controller reports why on the Repository).
// It records the store.
func (r *Reconciler) reconcileOpen(ctx context.Context, s *scope) (ctrl.Result, error) {
	st, err := r.Cache.Open(ctx, s.repo)
	if err != nil {
		return ctrl.Result{}, pkgservice.WaitForRepository(s.repo.Namespace, s.repo.Name, err)
	}
	s.store = st
	return ctrl.Result{}, nil
}

// reconcileInstalled reads the namespace's catalog and what the
// repository has installed of it. It records both.
func (r *Reconciler) reconcileInstalled(ctx context.Context, s *scope) (ctrl.Result, error) {
	cat, err := r.Deps.NamespaceCatalog(ctx, r.Cache, r.Client, s.repo.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	installed, err := r.Deps.Installed(ctx, s.store, cat)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("repository %s: %w", s.repo.Name, err)
	}
	s.catalog, s.installed = cat, installed
	return ctrl.Result{}, nil
}

// reconcileLock reads the lock and keeps the planned packages of the
// variants that still exist. It records the lock and the planned packages.
func (r *Reconciler) reconcileLock(ctx context.Context, s *scope) (ctrl.Result, error) {
	lock, exists, err := pkgdeps.ReadLock(ctx, r.Client, s.repo)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.lock, s.exists = lock, exists
	s.planned, err = livePlanned(pkgdeps.Planned(lock), func(name string) (bool, error) {
		err := r.Get(ctx, types.NamespacedName{Namespace: s.repo.Namespace, Name: name}, &configv1alpha1.PackageVariant{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	return ctrl.Result{}, err
}

// reconcileWrite writes the lock computed from the installed and planned
// packages when it changed, and announces each conflict that is new. A
// lock changed meanwhile (pkgdeps.ErrLockConflict) is a lost race: read
// again, decided again.
func (r *Reconciler) reconcileWrite(ctx context.Context, s *scope) (ctrl.Result, error) {
	err := pkgdeps.WriteLock(ctx, r.Client, s.repo, s.lock, s.exists, func(l *configv1alpha1.PackageLock) {
		l.Packages, l.Conflicts = pkgdeps.Lock(s.installed, s.planned, s.catalog)
		s.conflicts = l.Conflicts
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, c := range newConflicts(s.lock.Conflicts, s.conflicts) {
		r.Recorder.Eventf(s.repo, nil, "Warning", pkgdeps.PackageConflictReason, "Lock", "%s", c.Message)
	}
	return ctrl.Result{}, nil
}

// newConflicts are the conflicts of after that before did not have (by
// message).
func newConflicts(before, after []configv1alpha1.LockConflict) []configv1alpha1.LockConflict {
	had := map[string]bool{}
	for _, c := range before {
		had[c.Message] = true
	}
	var out []configv1alpha1.LockConflict
	for _, c := range after {
		if !had[c.Message] {
			out = append(out, c)
		}
	}
	return out
}

// livePlanned drops from planned packages the variants that no longer
// exist (exists says, asked once per name), and the packages no variant
// plans any more.
func livePlanned(planned []configv1alpha1.LockedPackage, exists func(name string) (bool, error)) ([]configv1alpha1.LockedPackage, error) {
	seen := map[string]bool{}
	for i := range planned {
		var keep []string
		for _, name := range planned[i].PlannedBy {
			ok, known := seen[name]
			if !known {
				var err error
				if ok, err = exists(name); err != nil {
					return nil, err
				}
				seen[name] = ok
			}
			if ok {
				keep = append(keep, name)
			}
		}
		planned[i].PlannedBy = keep
	}
	return slices.DeleteFunc(planned, func(p configv1alpha1.LockedPackage) bool { return len(p.PlannedBy) == 0 }), nil
}
