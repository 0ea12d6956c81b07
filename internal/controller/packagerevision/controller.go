package packagerevision

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/scion-dev/scion/internal/engine"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgdeps"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/store"
)

// Options configure the Reconciler.
type Options struct {
	// Workers is the number of PackageRevisions reconciled at once.
	Workers int
	// Shard is the share of PackageRevisions this replica reconciles
	// (a PackageRevision carries its Repository's shard).
	Shard reconciler.Shard
}

// Reconciler reconciles PackageRevisions.
type Reconciler struct {
	client.Client
	// APIReader re-reads an object after a conflicting status write.
	APIReader client.Reader
	Cache     *repocache.Cache
	Service   *pkgservice.Service
	Recorder  recorder.EventRecorder
	// Deps reads the kinds packages provide, to refuse a publication
	// that would give a kind two providers in a deployment repository.
	Deps    *pkgdeps.Reader
	Options Options
}

// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagelocks,verbs=get;list;watch
// +kubebuilder:rbac:groups=internal.scion.dev,resources=packagerevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=internal.scion.dev,resources=packagerevisions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=internal.scion.dev,resources=packagerevisions/finalizers,verbs=update
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=repositories,verbs=get;list;watch
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagevariants,verbs=get;list;watch

// SetupWithManager registers the controller. PackageRevisions are
// reconciled when their spec changes, when they are being deleted, and
// when other actors change their conditions (which gate publishing and are
// written into drafts' Kptfiles); the controller's own Ready updates do
// not trigger it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil || r.Cache == nil || r.Service == nil || r.Recorder == nil {
		return fmt.Errorf("packagerevision controller: APIReader, Cache, Service and Recorder are required")
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("packagerevision").
		Watches(&porchv1alpha1.PackageRevision{}, reconciler.EnqueueAt(revisionPriority), builder.WithPredicates(r.Options.Shard.Predicate(predicate.Or(
			predicate.GenerationChangedPredicate{},
			predicate.Funcs{UpdateFunc: conditionsChanged},
		)))).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.Options.Workers)}).
		Complete(r)
}

// revisionPriority is the priority of an event about a PackageRevision: a
// lifecycle move, an approval, a condition set by someone other than this
// controller or a deletion starting is reconciler.PriorityPerson (a
// person's, or a rollout's or auto-propose's, which a person waits for);
// any other change of a revision with an owner (a variant's draft, a
// revision a Repository's sync shows) is PriorityFanOut, of one without
// (a person's new draft) PriorityPerson.
func revisionPriority(old, obj client.Object) int {
	n, ok := obj.(*porchv1alpha1.PackageRevision)
	if !ok {
		return reconciler.PriorityDefault
	}
	if o, ok := old.(*porchv1alpha1.PackageRevision); ok && (o.Spec.Lifecycle != n.Spec.Lifecycle || o.Annotations[porchv1alpha1.ApprovedByAnnotation] != n.Annotations[porchv1alpha1.ApprovedByAnnotation] || conditionsChanged(event.UpdateEvent{ObjectOld: o, ObjectNew: n})) {
		return reconciler.PriorityPerson
	}
	return reconciler.PersonUnlessOwned(old, obj)
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
		if !porchv1alpha1.IsControllerCondition(c.Type) {
			c.LastTransitionTime = nil
			out[c.Type] = c
		}
	}
	return out
}

// scope holds what the steps of one reconcile learn.
type scope struct {
	pr      *porchv1alpha1.PackageRevision
	repoObj *configv1alpha1.Repository
	store   store.Store
	// rev is the git revision the object shows, once git has it (found).
	rev   store.Revision
	found bool
	// quiet is set when the object is not this reconcile's to show (git
	// removed the revision, its creator is showing it, or it is gone):
	// no status is written and the remaining steps do nothing.
	quiet bool
	// deleteErr is set when the revision could not be removed from git.
	deleteErr error
}

// Reconcile brings one PackageRevision's git revision in line with its
// spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pr := &porchv1alpha1.PackageRevision{}
	if err := r.Get(ctx, req.NamespacedName, pr); err != nil || !r.Options.Shard.Owns(pr) {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{pr: pr}
	var out reconciler.Outcome
	if !pr.DeletionTimestamp.IsZero() {
		out = reconciler.Run(ctx, s, r.reconcileRepository, r.reconcileDelete)
	} else {
		out = reconciler.Run(ctx, s, r.reconcileRepository, r.reconcileFinalizer, r.reconcileGit, r.reconcileKptfile, r.reconcileLifecycle, r.reconcileAutoPropose)
	}
	return out.Return(r.patchStatus(ctx, s, out))
}

// reconcileRepository opens the object's repository; it records the
// Repository and its store. A Repository being unregistered takes its
// objects along (git stays): their finalizer goes at once.
func (r *Reconciler) reconcileRepository(ctx context.Context, s *scope) (ctrl.Result, error) {
	pr := s.pr
	repoObj := &configv1alpha1.Repository{}
	err := r.Get(ctx, types.NamespacedName{Namespace: pr.Namespace, Name: pr.Spec.Repository}, repoObj)
	if !pr.DeletionTimestamp.IsZero() && (apierrors.IsNotFound(err) || (err == nil && !repoObj.DeletionTimestamp.IsZero())) {
		s.quiet = true
		return ctrl.Result{}, reconciler.RemoveFinalizer(ctx, r.Client, pr, porchv1alpha1.PackageRevisionFinalizer)
	}
	if gone, gerr := r.orphaned(ctx, pr, repoObj, err); gerr != nil || gone {
		// Shown for a Repository that is gone (a writer that read it
		// before its deletion created this object after the Repository
		// removed its objects): it goes too; git stays.
		s.quiet = true
		if gerr == nil {
			gerr = client.IgnoreNotFound(r.Delete(ctx, pr, client.Preconditions{UID: &pr.UID}))
		}
		return ctrl.Result{}, gerr
	}
	var st store.Store
	if err == nil {
		st, err = r.Cache.Open(ctx, repoObj)
	}
	if err != nil {
		return ctrl.Result{}, pkgservice.WaitForRepository(pr.Namespace, pr.Spec.Repository, err)
	}
	s.repoObj, s.store = repoObj, st
	return ctrl.Result{}, nil
}

// orphaned says whether a PackageRevision was shown for a Repository that
// is gone: it has a Repository owner, and that Repository is being
// deleted, or does not exist (confirmed with the API server: the cache
// may not have seen a new one yet) or is another one of the same name.
// An object a person created for a Repository not there yet is not.
func (r *Reconciler) orphaned(ctx context.Context, pr *porchv1alpha1.PackageRevision, repoObj *configv1alpha1.Repository, getErr error) (bool, error) {
	var owners []types.UID
	for _, ref := range pr.OwnerReferences {
		if ref.Kind == "Repository" && ref.APIVersion == configv1alpha1.GroupVersion.String() && ref.Name == pr.Spec.Repository {
			owners = append(owners, ref.UID)
		}
	}
	switch {
	case len(owners) == 0 || getErr != nil && !apierrors.IsNotFound(getErr):
		return false, nil
	case getErr == nil && !repoObj.DeletionTimestamp.IsZero():
		return true, nil
	case getErr == nil && slices.Contains(owners, repoObj.UID):
		return false, nil
	}
	fresh := &configv1alpha1.Repository{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: pr.Namespace, Name: pr.Spec.Repository}, fresh)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	return !slices.Contains(owners, fresh.UID) || !fresh.DeletionTimestamp.IsZero(), nil
}

// reconcileFinalizer adds the finalizer before anything is written.
func (r *Reconciler) reconcileFinalizer(ctx context.Context, s *scope) (ctrl.Result, error) {
	return ctrl.Result{}, reconciler.AddFinalizer(ctx, r.Client, s.pr, porchv1alpha1.PackageRevisionFinalizer)
}

// reconcileGit finds the revision in git, or writes a new draft there for
// an object someone created; it records rev and found.
func (r *Reconciler) reconcileGit(ctx context.Context, s *scope) (ctrl.Result, error) {
	pr := s.pr
	rev, err := s.store.Get(ctx, pr.Spec.PackageName, pr.Spec.WorkspaceName, 0)
	switch {
	case errors.Is(err, store.ErrNotFound) && pr.Status.Commit != "":
		s.quiet = true // removed from git by someone else: the sync deletes the object
		return ctrl.Result{}, nil
	case errors.Is(err, store.ErrNotFound) && pkgservice.ShownBySync(pr, s.repoObj) && !isDraft(pr):
		// Made by the sync for a revision git no longer has: the next
		// sync deletes it; nothing to write.
		s.quiet = true
		return ctrl.Result{}, nil
	case errors.Is(err, store.ErrNotFound):
		// Someone made it (as a Draft: the lifecycle policy admits no
		// other new revision) and may have moved it on since (proposed,
		// approved) before any controller acted: the draft is written
		// now, and reconcileLifecycle carries the moves out in order.
		contents, message, err := pkgservice.Contents(ctx, pr, s.repoObj.Spec.Deployment, r.resolver(pr.Namespace))
		if err != nil {
			return ctrl.Result{}, invalid(err)
		}
		if rev, err = r.Service.CreateDraft(ctx, s.store, pr, contents, message); err != nil {
			return ctrl.Result{}, invalid(err)
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
			s.quiet = true
			return reconciler.Periodic(wait), nil
		}
	}
	s.rev, s.found = rev, true
	return ctrl.Result{}, nil
}

func isDraft(pr *porchv1alpha1.PackageRevision) bool {
	return pr.Spec.Lifecycle == "" || pr.Spec.Lifecycle == porchv1alpha1.LifecycleDraft
}

// reconcileKptfile writes a draft's (or proposal's) object conditions
// into its Kptfile; it records the revision written.
func (r *Reconciler) reconcileKptfile(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.quiet || (s.rev.Lifecycle != porchv1alpha1.LifecycleDraft && s.rev.Lifecycle != porchv1alpha1.LifecycleProposed) {
		return ctrl.Result{}, nil
	}
	rev, err := r.Service.MirrorToKptfile(ctx, s.store, s.pr, s.rev)
	if err != nil {
		return ctrl.Result{}, invalid(err)
	}
	s.rev = rev
	return ctrl.Result{}, nil
}

// reconcileLifecycle moves the revision to the lifecycle its spec asks
// for; it records the moved revision. Unmet readiness gates are waited
// for: a condition change brings the object back.
func (r *Reconciler) reconcileLifecycle(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.quiet {
		return ctrl.Result{}, nil
	}
	before := s.rev.Lifecycle
	if before == porchv1alpha1.LifecyclePublished && (s.pr.Spec.Lifecycle == "" || s.pr.Spec.Lifecycle == porchv1alpha1.LifecycleDraft || s.pr.Spec.Lifecycle == porchv1alpha1.LifecycleProposed) {
		return ctrl.Result{}, r.publishedFirst(ctx, s)
	}
	if s.pr.Spec.Lifecycle == porchv1alpha1.LifecyclePublished && before == porchv1alpha1.LifecycleProposed && s.repoObj.Spec.Deployment {
		msg, err := r.publishConflict(ctx, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		if msg != "" {
			r.Recorder.Eventf(s.pr, nil, "Warning", pkgdeps.PackageConflictReason, "Publish", "%s", msg)
			return ctrl.Result{}, reconciler.Wait(conflictRetry, pkgdeps.PackageConflictReason, "%s", msg)
		}
	}
	moved, err := r.Service.Move(ctx, s.store, s.repoObj.Name, s.repoObj.Spec.Deployment, s.pr, s.rev)
	var gates *pkgservice.GatesError
	switch {
	case errors.As(err, &gates):
		r.Recorder.Eventf(s.pr, nil, "Warning", porchv1alpha1.ReadinessGatesNotMetReason, "Publish", "%s", gates.Error())
		return ctrl.Result{}, reconciler.Wait(0, porchv1alpha1.ReadinessGatesNotMetReason, "%s", gates.Error())
	case err != nil:
		return ctrl.Result{}, invalid(err)
	}
	if moved.Lifecycle != before {
		r.Recorder.Eventf(s.pr, nil, "Normal", string(moved.Lifecycle), "Lifecycle", "%s -> %s", before, moved.Lifecycle)
	}
	s.rev = moved
	if moved.Lifecycle == porchv1alpha1.LifecyclePublished && before != porchv1alpha1.LifecyclePublished && moved.Latest {
		// One revision says it is the latest at a time.
		if err := r.Service.HandOverLatest(ctx, s.repoObj, moved); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// publishedFirst answers a request to take back a revision git has
// published already (a withdrawal or rejection that lost the race with
// its approval, or a publication by another writer): git is the record,
// so the object says Published again, with the approval git recorded,
// and an event tells who reads it what happened. Nothing is left
// waiting on a request no one may carry out.
func (r *Reconciler) publishedFirst(ctx context.Context, s *scope) error {
	pr := s.pr
	asked := pr.Spec.Lifecycle
	if asked == "" {
		asked = porchv1alpha1.LifecycleDraft
	}
	patch := client.MergeFromWithOptions(pr.DeepCopy(), client.MergeFromWithOptimisticLock{})
	pr.Spec.Lifecycle = porchv1alpha1.LifecyclePublished
	by := s.rev.PublishedBy
	if by != "" {
		if pr.Annotations == nil {
			pr.Annotations = map[string]string{}
		}
		pr.Annotations[porchv1alpha1.ApprovedByAnnotation] = by
	}
	if err := r.Patch(ctx, pr, patch); err != nil {
		// A newer request (a conflict): looked at again.
		return fmt.Errorf("showing that git published %s first: %w", pr.Name, err)
	}
	approved := ""
	if by != "" {
		approved = ", approved by " + by
	}
	r.Recorder.Eventf(pr, nil, "Warning", porchv1alpha1.PublishedFirstReason, "Lifecycle",
		"%s was published in git (revision %d%s) before the request to make it %s was carried out: it stays Published; to remove it, propose its deletion", pr.Name, s.rev.Revision, approved, asked)
	return nil
}

// conflictRetry is how often a publication refused for a kind another
// package provides is looked at again (the other package's removal is
// not an event of this revision).
const conflictRetry = time.Minute

// publishConflict says why a proposal of a deployment repository may not
// be published: a kind it provides that a Published package of the
// repository provides already (read from git now), or a conflict of the
// repository's PackageLock this package does not hold (a kind another
// package holds, or its package at another version in another folder).
func (r *Reconciler) publishConflict(ctx context.Context, s *scope) (string, error) {
	decl, err := r.Deps.Declaration(ctx, s.store, s.rev)
	if err != nil || decl == nil {
		return "", nil // a declaration that does not read provides nothing we can check; the render reports it
	}
	var msgs []string
	if len(decl.Provides) > 0 {
		installed, err := r.Deps.Installed(ctx, s.store, nil)
		if err != nil {
			return "", err
		}
		for _, in := range installed {
			if in.Dir == s.rev.Package || in.Published == nil || in.Published.Decl == nil {
				continue
			}
			for _, g := range decl.Provides {
				if slices.Contains(in.Published.Decl.Provides, g) {
					msgs = append(msgs, fmt.Sprintf("kind %s is provided by %s, Published in this repository, and a kind has one provider per repository: publishing %s is refused while %s provides it", g, in.Dir, s.rev.Package, in.Dir))
				}
			}
		}
	}
	lock := &configv1alpha1.PackageLock{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: s.pr.Namespace, Name: s.repoObj.Name}, lock); err == nil && len(msgs) == 0 {
		for _, p := range lock.Packages {
			if p.Directory == s.rev.Package {
				for _, c := range pkgdeps.ConflictFor(lock.Conflicts, p) {
					msgs = append(msgs, c.Message)
				}
			}
		}
	}
	return strings.Join(msgs, "; "), nil
}

// reconcileAutoPropose proposes a draft annotated for it once
// pkgservice.AutoPropose says so.
func (r *Reconciler) reconcileAutoPropose(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.quiet || s.rev.Lifecycle != porchv1alpha1.LifecycleDraft || s.pr.Annotations[porchv1alpha1.AutoLifecycleAnnotation] != "true" {
		return ctrl.Result{}, nil
	}
	return r.autoPropose(ctx, s.pr, s.store, s.rev)
}

// invalid turns a request the revision cannot follow
// (pkgservice.ErrInvalid) into a stall, kept until the spec changes;
// other errors stay transient.
func invalid(err error) error {
	if errors.Is(err, pkgservice.ErrInvalid) {
		return reconciler.Stall(porchv1alpha1.InvalidReason, "%v", err)
	}
	return err
}

// autoPropose proposes a draft annotated for it once pkgservice.AutoPropose
// says so: the proposal is the object's spec, moved as a person would,
// recorded in an annotation and an event.
func (r *Reconciler) autoPropose(ctx context.Context, pr *porchv1alpha1.PackageRevision, repo store.Store, rev store.Revision) (ctrl.Result, error) {
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
			Ready: configv1alpha1.ReadyAt(pv.Status.Conditions, pv.Generation, pv.Status.ObservedGeneration)}
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
	cur.RecordProposal(autoProposer, time.Now())
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

// reconcileDelete removes the revision from git, then the finalizer; it
// records deleteErr.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	pr := s.pr
	if s.quiet || !controllerutil.ContainsFinalizer(pr, porchv1alpha1.PackageRevisionFinalizer) {
		s.quiet = true
		return ctrl.Result{}, nil
	}
	rev, err := s.store.Get(ctx, pr.Spec.PackageName, pr.Spec.WorkspaceName, 0)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return ctrl.Result{}, err
	case rev.Lifecycle == porchv1alpha1.LifecyclePublished && pr.Spec.Lifecycle != porchv1alpha1.LifecycleDeletionProposed:
		// The object of a Published revision deleted from the storage
		// directly (the API refuses it; a cluster administrator can
		// still reach the storage): git keeps the revision, and the
		// next sync shows it again.
		r.Recorder.Eventf(pr, nil, "Warning", porchv1alpha1.DeleteFailedReason, "Delete",
			"%s is Published and is not deleted directly: git keeps it and it is shown again; %s", pr.Name, pkgservice.DeleteAdvice(pr.Name))
		if err := pkgservice.RequestSync(ctx, r.Client, s.repoObj); err != nil {
			return ctrl.Result{}, err
		}
	default:
		if err := r.Service.Delete(ctx, s.store, rev); err != nil {
			r.Recorder.Eventf(pr, nil, "Warning", porchv1alpha1.DeleteFailedReason, "Delete", "removing %s from git: %v", pr.Name, err)
			s.deleteErr = fmt.Errorf("removing the revision from git: %w", err)
			return ctrl.Result{}, s.deleteErr
		}
		r.Recorder.Eventf(pr, nil, "Normal", "Deleted", "Delete", "removed from git")
	}
	s.quiet = true
	return ctrl.Result{}, reconciler.RemoveFinalizer(ctx, r.Client, pr, porchv1alpha1.PackageRevisionFinalizer)
}

// resolver finds what a namespace's tasks read from.
func (r *Reconciler) resolver(namespace string) pkgservice.SourceResolver {
	return sources{r: r, namespace: namespace}
}

// sources resolves the sources of tasks in one namespace.
type sources struct {
	r         *Reconciler
	namespace string
}

// Revision finds the git revision behind a PackageRevision name.
func (s sources) Revision(ctx context.Context, name string) (pkgservice.Source, error) {
	src := &porchv1alpha1.PackageRevision{}
	if err := s.r.Get(ctx, types.NamespacedName{Namespace: s.namespace, Name: name}, src); err != nil {
		if apierrors.IsNotFound(err) {
			return pkgservice.Source{}, fmt.Errorf("PackageRevision %s/%s does not exist: %w", s.namespace, name, pkgservice.ErrInvalid)
		}
		return pkgservice.Source{}, err
	}
	repoObj, repo, err := s.r.Cache.OpenNamed(ctx, s.r.Client, s.namespace, src.Spec.Repository)
	if err != nil {
		return pkgservice.Source{}, fmt.Errorf("%s: %w", name, err)
	}
	rev, err := repo.Get(ctx, src.Spec.PackageName, src.Spec.WorkspaceName, 0)
	if err != nil {
		return pkgservice.Source{}, fmt.Errorf("revision of %s: %w", name, err)
	}
	return pkgservice.Source{Repository: repoObj, Store: repo, Revision: rev}, nil
}

// Git reads a package from a git URL, with the namespace's Secret when
// the task names one. A URL this controller refuses and a repository,
// ref or directory that does not exist stall the revision (its spec is
// what needs fixing); anything else (an unreachable remote, refused
// credentials, a Secret not made yet) is tried again.
func (s sources) Git(ctx context.Context, g porchv1alpha1.GitPackage, field string) (*pkg.Package, engine.Origin, error) {
	src := repocache.GitSource{Namespace: s.namespace, URL: g.Repo, Ref: g.Ref, Directory: porchv1alpha1.GitDirectory(g.Directory), Field: field}
	if g.SecretRef != nil {
		src.SecretName = g.SecretRef.Name
	}
	p, commit, err := s.r.Cache.ReadSource(ctx, src)
	if errors.Is(err, repocache.ErrURLNotAllowed) || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrRepositoryNotFound) {
		err = fmt.Errorf("%w: %w", err, pkgservice.ErrInvalid)
	}
	if err != nil {
		return nil, engine.Origin{}, err
	}
	ref := g.Ref
	if ref == "" {
		ref = "main"
	}
	return p, engine.Origin{Repo: store.Redact(g.Repo), Directory: src.Directory, Ref: ref, Commit: commit}, nil
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
