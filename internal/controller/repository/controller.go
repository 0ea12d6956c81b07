package repository

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/deployed"
	"github.com/scion-dev/scion/internal/metrics"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/variant"
)

// RepositoryFinalizer keeps a Repository until its PackageRevision objects
// are removed.
const RepositoryFinalizer = "config.porch.kpt.dev/repository"

// Options configure the Reconciler.
type Options struct {
	// SyncPeriod is the default time between syncs.
	SyncPeriod time.Duration
	// Workers is the number of Repositories reconciled at once.
	Workers int
	// Shard is the share of Repositories this replica reconciles.
	Shard reconciler.Shard
	// ClusterPoll and ClusterIdle are how often a target cluster is read
	// while something of it moves or changed lately, and when all is
	// settled (configv1alpha1.DefaultClusterPoll, DefaultClusterIdle when 0).
	ClusterPoll, ClusterIdle time.Duration
}

// Reconciler reconciles Repositories.
type Reconciler struct {
	client.Client
	// APIReader re-reads a Repository after a conflicting status write.
	APIReader client.Reader
	// Status writes the status (the manager's StatusWriter, shared by
	// its controllers); one of this controller's own when nil.
	Status   *reconciler.StatusWriter
	Cache    *repocache.Cache
	Service  *pkgservice.Service
	Recorder recorder.EventRecorder
	// Clusters reads the target clusters of deployment Repositories
	// (spec.cluster) into status.cluster; none are read when nil.
	Clusters *deployed.Clusters
	Options  Options

	// fetched tells a periodic sync from a requested one.
	fetched fetchMarks
}

// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=repositories,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=repositories/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=repositories/finalizers,verbs=update
// +kubebuilder:rbac:groups=internal.scion.dev,resources=packagerevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=internal.scion.dev,resources=packagerevisions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=porch.kpt.dev,resources=packagerevisions/sync,verbs=update
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagevariants,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller: Repositories, reconciled on
// spec changes (GenerationChanged) and sync requests at
// reconciler.PriorityPerson, and periodically at PriorityResync.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil || r.Cache == nil || r.Service == nil || r.Recorder == nil {
		return fmt.Errorf("repository controller: APIReader, Cache, Service and Recorder are required")
	}
	if r.Status == nil {
		r.Status = reconciler.NewStatusWriter(mgr.GetClient(), r.APIReader, mgr.GetCache())
	}
	if r.Options.SyncPeriod <= 0 {
		r.Options.SyncPeriod = configv1alpha1.DefaultSyncPeriod
	}
	if err := (&usersReconciler{Client: r.Client, Status: r.Status, Shard: r.Options.Shard}).setup(mgr); err != nil {
		return err
	}
	if r.Clusters != nil {
		cr := &clusterReconciler{Client: r.Client, APIReader: r.APIReader, Status: r.Status, Cache: r.Cache, Clusters: r.Clusters, Recorder: r.Recorder,
			Shard: r.Options.Shard, Poll: r.Options.ClusterPoll, Idle: r.Options.ClusterIdle, Workers: r.Options.Workers}
		if err := cr.setup(mgr); err != nil {
			return err
		}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("repository").
		Watches(&configv1alpha1.Repository{}, reconciler.EnqueueAt(reconciler.Fixed(reconciler.PriorityPerson)), builder.WithPredicates(r.Options.Shard.Predicate(predicate.Or(
			predicate.GenerationChangedPredicate{},
			syncRequested,
		)))).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.Options.Workers)}).
		Complete(r)
}

// syncRequested passes updates that change the sync-requested annotation.
var syncRequested = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return e.ObjectOld.GetAnnotations()[configv1alpha1.SyncRequestedAnnotation] != e.ObjectNew.GetAnnotations()[configv1alpha1.SyncRequestedAnnotation]
}}

// scope holds what the steps of one reconcile learn.
type scope struct {
	repo   *configv1alpha1.Repository
	store  store.Store
	result pkgservice.SyncResult
	// busy is set when another reconcile is opening or fetching the
	// repository: nothing was learned, the status stays as it is.
	busy bool
}

// Reconcile syncs one Repository.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	repo := &configv1alpha1.Repository{}
	if err := r.Get(ctx, req.NamespacedName, repo); err != nil || !r.Options.Shard.Owns(repo) {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{repo: repo}
	if !repo.DeletionTimestamp.IsZero() {
		return reconciler.Run(ctx, s, r.reconcileDelete).Return(nil)
	}
	out := reconciler.Run(ctx, s, r.reconcileFinalizer, r.reconcileOpen, r.reconcileHistory, r.reconcileSync)
	return out.Return(r.patchStatus(ctx, s, out))
}

// busyRetry is how soon a Repository another reconcile was opening is
// looked at again.
const busyRetry = 5 * time.Second

func (r *Reconciler) syncPeriod(repo *configv1alpha1.Repository) time.Duration {
	if repo.Spec.Sync != nil && repo.Spec.Sync.Period != nil && repo.Spec.Sync.Period.Duration > 0 {
		return repo.Spec.Sync.Period.Duration
	}
	return r.Options.SyncPeriod
}

func (r *Reconciler) retryPeriod(repo *configv1alpha1.Repository) time.Duration {
	return min(r.syncPeriod(repo), time.Minute)
}

// reconcileFinalizer adds the finalizer before anything is synced.
func (r *Reconciler) reconcileFinalizer(ctx context.Context, s *scope) (ctrl.Result, error) {
	return ctrl.Result{}, reconciler.AddFinalizer(ctx, r.Client, s.repo, RepositoryFinalizer)
}

// reconcileOpen opens the repository and fetches it; it records the
// store. A remote that does not answer is waited for; settings a user
// must fix (credentials, missing repository or branch) stall the
// Repository, looked at again after a while since the fix may be made
// without an edit (in the Secret or the remote).
func (r *Reconciler) reconcileOpen(ctx context.Context, s *scope) (ctrl.Result, error) {
	if g := s.repo.Spec.Git; g != nil && s.repo.Status.ObservedGeneration != s.repo.Generation && store.HasCredentials(g.Repo) {
		// Once per spec change: a warning, not a refusal.
		r.Recorder.Eventf(s.repo, nil, "Warning", configv1alpha1.CredentialsInURLReason, "Open",
			"spec.git.repo carries credentials, which anyone who can read this Repository sees (Scion never prints them); put them in a Secret named by spec.git.secretRef")
	}
	st, err := r.Cache.Open(ctx, s.repo)
	if err == nil {
		start := time.Now()
		if r.fetched.periodic(s.repo, start) {
			err = st.Resync(ctx)
		} else if err = st.Fetch(ctx); err == nil {
			r.fetched.done(s.repo, start)
		}
		metrics.ObserveGit("fetch", start, &err)
	}
	if errors.Is(err, store.ErrBusy) {
		// Another reconcile is talking to the remote: it reports.
		s.busy = true
		return ctrl.Result{}, reconciler.Wait(busyRetry, configv1alpha1.RemoteUnavailableReason, "%v", err)
	}
	if err != nil {
		return ctrl.Result{}, openFailure(s.repo, err, r.retryPeriod(s.repo))
	}
	s.store = st
	return ctrl.Result{}, nil
}

// reconcileHistory deletes, with spec.revisionHistoryLimit, the
// published revisions beyond the limit that nothing references (a
// floating tag, a PackageVariant's upstream revision); the sync that
// follows removes their objects.
func (r *Reconciler) reconcileHistory(ctx context.Context, s *scope) (ctrl.Result, error) {
	limit := s.repo.Spec.RevisionHistoryLimit
	if limit == nil || *limit < 1 {
		return ctrl.Result{}, nil
	}
	deleted, err := r.Service.PruneHistory(ctx, s.store, int(*limit), func(rev store.Revision) bool {
		return r.variantNames(ctx, s.repo, rev)
	})
	if len(deleted) > 0 {
		var names []string
		for _, d := range deleted {
			names = append(names, fmt.Sprintf("%s v%d", d.Package, d.Revision))
		}
		r.Recorder.Eventf(s.repo, nil, "Normal", "HistoryPruned", "Sync", "revisionHistoryLimit %d: deleted %s", *limit, strings.Join(names, ", "))
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("pruning the revision history: %w", err)
	}
	return ctrl.Result{}, nil
}

// variantNames says whether a PackageVariant of the Repository's
// namespace names the revision as its upstream (found through the
// variants' upstream index); a failed read keeps the revision.
func (r *Reconciler) variantNames(ctx context.Context, repo *configv1alpha1.Repository, rev store.Revision) bool {
	list := &configv1alpha1.PackageVariantList{}
	if err := r.List(ctx, list, client.InNamespace(repo.Namespace), client.MatchingFields{variant.UpstreamIndex: variant.PackageKey(repo.Name, rev.Package)}); err != nil {
		return true
	}
	for _, pv := range list.Items {
		if n, err := pv.Spec.Upstream.Revision.Number(); err == nil && pv.Spec.Upstream.Revision != "" && n == rev.Revision {
			return true
		}
	}
	return false
}

// reconcileSync projects the revisions as PackageRevisions; it records the
// result.
func (r *Reconciler) reconcileSync(ctx context.Context, s *scope) (ctrl.Result, error) {
	var err error
	s.result, err = r.Service.Sync(ctx, s.repo, s.store)
	switch {
	case err != nil:
		metrics.RepositorySyncs.WithLabelValues("error").Inc()
		return ctrl.Result{}, fmt.Errorf("%w: %w", errSync, err)
	case s.result.Changed():
		metrics.RepositorySyncs.WithLabelValues("changed").Inc()
		log.FromContext(ctx).Info("synced", "created", s.result.Created, "updated", s.result.Updated, "deleted", s.result.Deleted)
	default:
		metrics.RepositorySyncs.WithLabelValues("unchanged").Inc()
	}
	return reconciler.Periodic(r.nextSync(s.repo, time.Now())), nil
}

// nextSync is how long until the next sync: the sync period, or less when
// a one-time sync (spec.sync.runOnceAt, porchctl repo sync) is due sooner.
func (r *Reconciler) nextSync(repo *configv1alpha1.Repository, now time.Time) time.Duration {
	next := r.syncPeriod(repo)
	if repo.Spec.Sync != nil && repo.Spec.Sync.RunOnceAt != nil {
		if until := repo.Spec.Sync.RunOnceAt.Sub(now); until > 0 && until < next {
			next = until
		}
	}
	return next
}

// reconcileDelete removes the Repository's PackageRevision objects (git is
// left alone: the repository outlives its registration), then the
// finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	repo := s.repo
	if !controllerutil.ContainsFinalizer(repo, RepositoryFinalizer) {
		return ctrl.Result{}, nil
	}
	if err := r.DeleteAllOf(ctx, &porchv1alpha1.PackageRevision{}, client.InNamespace(repo.Namespace),
		client.MatchingLabels{porchv1alpha1.RepositoryLabel: pkgservice.LabelValue(repo.Name)}); err != nil {
		return ctrl.Result{}, fmt.Errorf("deleting the PackageRevisions of %s: %w", repo.Name, err)
	}
	r.Cache.Forget(types.NamespacedName{Namespace: repo.Namespace, Name: repo.Name})
	r.fetched.forget(repo)
	if r.Clusters != nil {
		r.Clusters.Forget(types.NamespacedName{Namespace: repo.Namespace, Name: repo.Name})
	}
	return ctrl.Result{}, reconciler.RemoveFinalizer(ctx, r.Client, repo, RepositoryFinalizer)
}
