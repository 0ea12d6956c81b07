package packagerevision

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/store"
)

// Options configure the Reconciler.
type Options struct {
	// Workers is the number of PackageRevisions reconciled at once.
	Workers int
}

// Reconciler reconciles PackageRevisions.
type Reconciler struct {
	client.Client
	// APIReader re-reads an object after a conflicting status write.
	APIReader client.Reader
	Cache     *repocache.Cache
	Service   *pkgservice.Service
	Recorder  recorder.EventRecorder
	Options   Options
}

// +kubebuilder:rbac:groups=porch.kpt.dev,resources=packagerevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=porch.kpt.dev,resources=packagerevisions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=porch.kpt.dev,resources=packagerevisions/finalizers,verbs=update
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=repositories,verbs=get;list;watch
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagevariants,verbs=get;list;watch

// SetupWithManager registers the controller. PackageRevisions are
// reconciled when their spec changes, when they are being deleted, and
// when other actors change their conditions (which gate publishing and are
// written into drafts' Kptfiles); the controller's own Ready updates do
// not trigger it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Cache == nil || r.Service == nil || r.Recorder == nil {
		return fmt.Errorf("packagerevision controller: Cache, Service and Recorder are required")
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("packagerevision").
		For(&porchv1alpha1.PackageRevision{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			predicate.Funcs{UpdateFunc: conditionsChanged},
		))).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.Options.Workers)}).
		Complete(r)
}

// conditionsChanged reports a change of conditions other than Ready, of
// the auto-propose annotations, or a deletion starting.
func conditionsChanged(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*porchv1alpha1.PackageRevision)
	n, ok2 := e.ObjectNew.(*porchv1alpha1.PackageRevision)
	if !ok1 || !ok2 {
		return false
	}
	if o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero() {
		return true
	}
	for _, a := range []string{porchv1alpha1.AutoLifecycleAnnotation, porchv1alpha1.AutoProposeSettleAnnotation} {
		if o.Annotations[a] != n.Annotations[a] {
			return true
		}
	}
	return !reflect.DeepEqual(actorConditions(o), actorConditions(n))
}

func actorConditions(pr *porchv1alpha1.PackageRevision) map[string]porchv1alpha1.Condition {
	out := map[string]porchv1alpha1.Condition{}
	for _, c := range pr.Status.Conditions {
		if c.Type != configv1alpha1.ReadyCondition {
			c.LastTransitionTime = nil
			out[c.Type] = c
		}
	}
	return out
}

// Reconcile brings one PackageRevision's git revision in line with its
// spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pr := &porchv1alpha1.PackageRevision{}
	if err := r.Get(ctx, req.NamespacedName, pr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	repoObj := &configv1alpha1.Repository{}
	err := r.Get(ctx, types.NamespacedName{Namespace: pr.Namespace, Name: pr.Spec.Repository}, repoObj)
	if !pr.DeletionTimestamp.IsZero() && (apierrors.IsNotFound(err) || (err == nil && !repoObj.DeletionTimestamp.IsZero())) {
		// The Repository is being unregistered: its objects go, git stays.
		return ctrl.Result{}, r.removeFinalizer(ctx, pr)
	}
	var repo *store.Repository
	if err == nil {
		repo, err = r.Cache.Open(ctx, repoObj)
	}
	if err != nil {
		// Waiting for the Repository: no backoff noise, look again soon.
		return ctrl.Result{RequeueAfter: 15 * time.Second}, r.setReady(ctx, pr, "False", porchv1alpha1.RepositoryNotReadyReason,
			fmt.Sprintf("repository %s is not usable: %v", pr.Spec.Repository, err))
	}
	if !pr.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, pr, repo)
	}
	if !controllerutil.ContainsFinalizer(pr, porchv1alpha1.PackageRevisionFinalizer) {
		patch := client.MergeFrom(pr.DeepCopy())
		controllerutil.AddFinalizer(pr, porchv1alpha1.PackageRevisionFinalizer)
		if err := r.Patch(ctx, pr, patch); err != nil {
			return ctrl.Result{}, err
		}
	}
	res, err := r.reconcileRevision(ctx, pr, repoObj, repo)
	if errors.Is(err, store.ErrConflict) {
		// Someone else wrote to git since this mirror was fetched: the
		// retry decides with what git has now.
		err = errors.Join(err, repo.Fetch(ctx))
	}
	return res, err
}

// reconcileRevision materializes the draft if git does not have it, writes
// a draft's object conditions into its Kptfile, moves the lifecycle, and
// shows the result on the object.
func (r *Reconciler) reconcileRevision(ctx context.Context, pr *porchv1alpha1.PackageRevision, repoObj *configv1alpha1.Repository, repo *store.Repository) (ctrl.Result, error) {
	rev, err := repo.Get(ctx, pr.Spec.PackageName, pr.Spec.WorkspaceName, 0)
	switch {
	case errors.Is(err, store.ErrNotFound) && pr.Status.Commit != "":
		return ctrl.Result{}, nil // removed from git by someone else: the sync deletes the object
	case errors.Is(err, store.ErrNotFound):
		if lc := pr.Spec.Lifecycle; lc != "" && lc != porchv1alpha1.LifecycleDraft {
			return r.fail(ctx, pr, fmt.Errorf("spec.lifecycle: a new PackageRevision starts as Draft, not %s: %w", lc, pkgservice.ErrInvalid))
		}
		contents, message, err := pkgservice.Contents(ctx, pr, repoObj.Spec.Deployment, r.resolver(pr.Namespace))
		if err != nil {
			return r.fail(ctx, pr, err)
		}
		if rev, err = pkgservice.CreateDraft(ctx, repo, pr, contents, message); err != nil {
			return r.fail(ctx, pr, err)
		}
		r.Recorder.Eventf(pr, nil, "Normal", "Created", "Create", "draft written to git at %s", shortHash(rev.Commit))
	case err != nil:
		return ctrl.Result{}, err
	case pr.Status.Commit == "" && len(pr.Status.Conditions) == 0:
		// Git has the revision and the object was never shown: it was
		// just made by whoever showed it (a sync, a PackageVariant),
		// whose status write follows its create. Writing the same status
		// here too would double the writes; look again after a while in
		// case that writer stopped in between.
		if wait := showGrace - time.Since(pr.CreationTimestamp.Time); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	if rev.Lifecycle == porchv1alpha1.LifecycleDraft || rev.Lifecycle == porchv1alpha1.LifecycleProposed {
		if rev, err = pkgservice.MirrorToKptfile(ctx, repo, pr, rev); err != nil {
			return r.fail(ctx, pr, err)
		}
	}
	before := rev.Lifecycle
	moved, err := pkgservice.Move(ctx, repo, repoObj.Name, repoObj.Spec.Deployment, pr, rev)
	var gates *pkgservice.GatesError
	switch {
	case errors.As(err, &gates):
		_, showErr := r.Service.Show(ctx, repoObj, repo, rev, pr, pkgservice.ShowOptions{
			Ready: &porchv1alpha1.Condition{Type: configv1alpha1.ReadyCondition, Status: "False", Reason: porchv1alpha1.ReadinessGatesNotMetReason, Message: gates.Error(), ObservedGeneration: pr.Generation},
		})
		r.Recorder.Eventf(pr, nil, "Warning", porchv1alpha1.ReadinessGatesNotMetReason, "Publish", "%s", gates.Error())
		return ctrl.Result{}, showErr // waits for a condition change
	case err != nil:
		return r.fail(ctx, pr, err)
	}
	if moved.Lifecycle != before {
		r.Recorder.Eventf(pr, nil, "Normal", string(moved.Lifecycle), "Lifecycle", "%s -> %s", before, moved.Lifecycle)
	}
	if _, err = r.Service.Show(ctx, repoObj, repo, moved, pr, pkgservice.ShowOptions{Handled: true}); err != nil {
		return ctrl.Result{}, err
	}
	if moved.Lifecycle == porchv1alpha1.LifecycleDraft && pr.Annotations[porchv1alpha1.AutoLifecycleAnnotation] == "true" {
		return r.autoPropose(ctx, pr, repo, moved)
	}
	return ctrl.Result{}, nil
}

// autoPropose proposes a draft annotated for it once pkgservice.AutoPropose
// says so: the proposal is the object's spec, moved as a person would,
// recorded in an annotation and an event.
func (r *Reconciler) autoPropose(ctx context.Context, pr *porchv1alpha1.PackageRevision, repo *store.Repository, rev store.Revision) (ctrl.Result, error) {
	cur := &porchv1alpha1.PackageRevision{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(pr), cur); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cur.Spec.Lifecycle != "" && cur.Spec.Lifecycle != porchv1alpha1.LifecycleDraft {
		return ctrl.Result{}, nil // someone moved it meanwhile
	}
	history, err := repo.DraftHistory(ctx, rev)
	if err != nil || len(history) == 0 {
		return ctrl.Result{}, err
	}
	variant := pkgservice.VariantState{}
	if ref := metav1.GetControllerOf(cur); ref != nil && ref.Kind == "PackageVariant" {
		pv := &configv1alpha1.PackageVariant{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: cur.Namespace, Name: ref.Name}, pv); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		variant = pkgservice.VariantState{Name: pv.Name,
			Ready: pv.Status.ObservedGeneration == pv.Generation && meta.IsStatusConditionTrue(pv.Status.Conditions, configv1alpha1.ReadyCondition)}
	}
	decision, err := pkgservice.AutoPropose(cur, history[0].When, variant, time.Now())
	if err != nil {
		// The revision itself is fine: only the automation is refused,
		// until the annotation changes.
		r.Recorder.Eventf(cur, nil, "Warning", porchv1alpha1.InvalidReason, "Propose", "not proposed automatically: %v", err)
		return ctrl.Result{}, nil
	}
	if !decision.Propose {
		return ctrl.Result{RequeueAfter: decision.After}, nil
	}
	patch := client.MergeFromWithOptions(cur.DeepCopy(), client.MergeFromWithOptimisticLock{})
	cur.Spec.Lifecycle = porchv1alpha1.LifecycleProposed
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	cur.Annotations[porchv1alpha1.ProposedByAnnotation] = autoProposer
	if err := r.Patch(ctx, cur, patch); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.Recorder.Eventf(cur, nil, "Normal", "AutoProposed", "Propose", "proposed by %s: %s", autoProposer, decision.Why)
	return ctrl.Result{}, nil
}

// autoProposer is who proposals made by auto-propose are recorded as.
const autoProposer = "scion (config.porch.kpt.dev/auto-lifecycle-mgmt)"

// showGrace is how long a new object git already has is left to the
// writer that made it to show.
const showGrace = 5 * time.Second

// fail reports an error: invalid requests stay on the object until its
// spec changes; anything else is retried with backoff.
func (r *Reconciler) fail(ctx context.Context, pr *porchv1alpha1.PackageRevision, err error) (ctrl.Result, error) {
	if errors.Is(err, pkgservice.ErrInvalid) {
		r.Recorder.Eventf(pr, nil, "Warning", porchv1alpha1.InvalidReason, "Reconcile", "%v", err)
		return ctrl.Result{}, r.setReady(ctx, pr, "False", porchv1alpha1.InvalidReason, err.Error())
	}
	if setErr := r.setReady(ctx, pr, "False", porchv1alpha1.ErrorReason, err.Error()); setErr != nil {
		return ctrl.Result{}, errors.Join(err, setErr)
	}
	return ctrl.Result{}, err
}

// setReady writes the Ready condition of an object git does not show yet
// (or cannot show now), through pkgservice.WriteStatus.
func (r *Reconciler) setReady(ctx context.Context, pr *porchv1alpha1.PackageRevision, status, reason, message string) error {
	c := porchv1alpha1.Condition{Type: configv1alpha1.ReadyCondition, Status: porchv1alpha1.ConditionStatus(status), Reason: reason, Message: message, ObservedGeneration: pr.Generation}
	_, err := pkgservice.WriteStatus(ctx, r.Client, r.APIReader, pr, func(pr *porchv1alpha1.PackageRevision) bool {
		for i := range pr.Status.Conditions {
			if pr.Status.Conditions[i].Type == c.Type {
				if pr.Status.Conditions[i] == c {
					return false
				}
				pr.Status.Conditions[i] = c
				return true
			}
		}
		pr.Status.Conditions = append(pr.Status.Conditions, c)
		return true
	})
	return client.IgnoreNotFound(err)
}

// reconcileDelete removes the revision from git, then the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, pr *porchv1alpha1.PackageRevision, repo *store.Repository) error {
	if !controllerutil.ContainsFinalizer(pr, porchv1alpha1.PackageRevisionFinalizer) {
		return nil
	}
	rev, err := repo.Get(ctx, pr.Spec.PackageName, pr.Spec.WorkspaceName, 0)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return err
	default:
		if err := repo.Delete(ctx, rev); err != nil && !errors.Is(err, store.ErrNotFound) {
			r.Recorder.Eventf(pr, nil, "Warning", porchv1alpha1.DeleteFailedReason, "Delete", "removing %s from git: %v", pr.Name, err)
			return r.setReadyAndReturn(ctx, pr, fmt.Errorf("removing the revision from git: %w", err))
		}
		r.Recorder.Eventf(pr, nil, "Normal", "Deleted", "Delete", "removed from git")
	}
	return r.removeFinalizer(ctx, pr)
}

func (r *Reconciler) setReadyAndReturn(ctx context.Context, pr *porchv1alpha1.PackageRevision, err error) error {
	return errors.Join(err, r.setReady(ctx, pr, "False", porchv1alpha1.DeleteFailedReason, err.Error()))
}

func (r *Reconciler) removeFinalizer(ctx context.Context, pr *porchv1alpha1.PackageRevision) error {
	if !controllerutil.ContainsFinalizer(pr, porchv1alpha1.PackageRevisionFinalizer) {
		return nil
	}
	patch := client.MergeFrom(pr.DeepCopy())
	controllerutil.RemoveFinalizer(pr, porchv1alpha1.PackageRevisionFinalizer)
	return client.IgnoreNotFound(r.Patch(ctx, pr, patch))
}

// resolver finds the git revision behind a PackageRevision name.
func (r *Reconciler) resolver(namespace string) pkgservice.SourceResolver {
	return func(ctx context.Context, name string) (pkgservice.Source, error) {
		src := &porchv1alpha1.PackageRevision{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, src); err != nil {
			if apierrors.IsNotFound(err) {
				return pkgservice.Source{}, fmt.Errorf("PackageRevision %s/%s does not exist: %w", namespace, name, pkgservice.ErrInvalid)
			}
			return pkgservice.Source{}, err
		}
		repoObj, repo, err := r.Cache.OpenNamed(ctx, r.Client, namespace, src.Spec.Repository)
		if err != nil {
			return pkgservice.Source{}, fmt.Errorf("%s: %w", name, err)
		}
		rev, err := repo.Get(ctx, src.Spec.PackageName, src.Spec.WorkspaceName, 0)
		if err != nil {
			return pkgservice.Source{}, fmt.Errorf("revision of %s: %w", name, err)
		}
		return pkgservice.Source{Repository: repoObj, Store: repo, Revision: rev}, nil
	}
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
