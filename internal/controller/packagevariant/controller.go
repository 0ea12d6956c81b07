package packagevariant

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/engine"
	"github.com/scion-dev/scion/internal/fn"
	"github.com/scion-dev/scion/internal/fn/builtin"
	"github.com/scion-dev/scion/internal/kindwatch"
	"github.com/scion-dev/scion/internal/kptfile"
	"github.com/scion-dev/scion/internal/metrics"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgdeps"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/variant"
)

// RevisionIndex indexes PackageRevisions by repository, package and
// workspace, so a variant finds its draft's object without listing the
// namespace's revisions.
const RevisionIndex = "spec.repository+packageName+workspaceName"

// ControllerIndex indexes PackageRevisions by the UID of their controller
// (a variant), so a deleting variant finds its revisions without reading
// every revision of its namespace.
const ControllerIndex = "metadata.ownerReferences.controller"

// Options configure the Reconciler.
type Options struct {
	Workers int
	// TagPollPeriod is how often a variant following a floating tag looks
	// whether the tag moved (a move changes no PackageRevision, so no
	// event says so). One minute when 0.
	TagPollPeriod time.Duration
	// Shard is the share of PackageVariants this replica reconciles.
	Shard reconciler.Shard
	// FunctionImages are the images pipelines may run as containers
	// (builtin.ServerRuntime); only builtin functions run when empty.
	FunctionImages []string
	// FunctionRunner runs the allowed images (as Pods) instead of a
	// container CLI on this machine, when set.
	FunctionRunner fn.ImageRunner
}

// Reconciler reconciles PackageVariants.
type Reconciler struct {
	client.Client
	APIReader client.Reader
	// Status writes the status (the manager's StatusWriter, shared by
	// its controllers); one of this controller's own when nil.
	Status   *reconciler.StatusWriter
	Cache    *repocache.Cache
	Service  *pkgservice.Service
	Recorder recorder.EventRecorder
	Options  Options
	// Objects are the per-namespace caches of the objects variants
	// inject, and the kinds they may inject.
	Objects *kindwatch.Caches
	// Definitions reads the CRDs of injected kinds (a namedwatch.Reader:
	// one watch per CRD an injection point names).
	Definitions client.Reader
	// Deps reads package declarations for dependency resolution.
	Deps *pkgdeps.Reader

	watches *injectionWatches
	// memo remembers each variant's last production (see producedMemo).
	memo producedMemo
	// upstreams shares the upstream packages variants are made from.
	upstreams upstreamPackages
	// runtime runs the pipelines (builtin.ServerRuntime of
	// Options.FunctionImages), made once: it only reads.
	runtime *fn.Runtime
}

// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagevariants,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagelocks,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagevariants/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagevariants/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch

// SetupWithManager registers the controller: PackageVariants on spec
// changes; PackageRevisions mapped to the variant that owns them and to
// the variants deriving from their package (through variant.UpstreamIndex).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Cache == nil || r.Service == nil || r.Recorder == nil || r.APIReader == nil || r.Objects == nil || r.Definitions == nil || r.Deps == nil {
		return fmt.Errorf("packagevariant controller: APIReader, Cache, Definitions, Deps, Objects, Service and Recorder are required")
	}
	if r.Status == nil {
		r.Status = reconciler.NewStatusWriter(mgr.GetClient(), r.APIReader, mgr.GetCache())
	}
	idx := reconciler.NamespacedIndexer{Informers: mgr.GetCache()}
	if err := idx.IndexField(ctx, &configv1alpha1.PackageVariant{}, DownstreamIndex, func(o client.Object) []string {
		if pv := o.(*configv1alpha1.PackageVariant); pv.Spec.Downstream != nil {
			return []string{pv.Spec.Downstream.Repo}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &configv1alpha1.PackageVariant{}, DependantOfIndex, func(o client.Object) []string {
		if o.GetLabels()[configv1alpha1.DependencyLabel] == "" {
			return nil
		}
		var uids []string
		for _, ref := range o.GetOwnerReferences() {
			uids = append(uids, string(ref.UID))
		}
		return uids
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &configv1alpha1.PackageVariant{}, DependantIndex, func(o client.Object) []string {
		if pv := o.(*configv1alpha1.PackageVariant); pv.Spec.Downstream != nil && pv.Spec.Dependencies != nil {
			return []string{pv.Spec.Downstream.Repo}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &configv1alpha1.PackageVariant{}, InjectorIndex, indexInjectors); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &porchv1alpha1.PackageRevision{}, RevisionIndex, func(o client.Object) []string {
		pr := o.(*porchv1alpha1.PackageRevision)
		return []string{revisionKey(pr.Spec.Repository, pr.Spec.PackageName, pr.Spec.WorkspaceName)}
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &porchv1alpha1.PackageRevision{}, ControllerIndex, func(o client.Object) []string {
		if ref := metav1.GetControllerOf(o); ref != nil {
			return []string{string(ref.UID)}
		}
		return nil
	}); err != nil {
		return err
	}
	c, err := r.watch(ctrl.NewControllerManagedBy(mgr).Named("packagevariant")).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.Options.Workers)}).
		Build(r)
	if err != nil {
		return err
	}
	r.watches = &injectionWatches{kinds: &kindwatch.Watches{Ctrl: c, Caches: r.Objects}, client: mgr.GetClient(), memo: &r.memo}
	r.runtime = builtin.ServerRuntime(r.Options.FunctionImages, r.Options.FunctionRunner)
	return nil
}

// watch adds the controller's watches to b, each at its priority
// (reconciler.PriorityPerson and below): a person's edit of a variant is
// acted on before the variants an upstream, a set or an injected object
// fanned out to.
func (r *Reconciler) watch(b *builder.Builder) *builder.Builder {
	return b.
		// The variant itself: its spec (a person's edit, or its set's
		// rewrite when a set controls it) or its hold.
		Watches(&configv1alpha1.PackageVariant{}, reconciler.EnqueueAt(reconciler.PersonUnlessOwned),
			builder.WithPredicates(r.Options.Shard.Predicate(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, holdChanged)))).
		// Its own downstream revision (approved, published, deleted).
		Watches(&porchv1alpha1.PackageRevision{}, reconciler.WithPriority(handler.EnqueueRequestsFromMapFunc(r.requestsForOwnRevision), reconciler.Fixed(reconciler.PriorityDefault))).
		// An upstream's revision to its followers, a dependency's to its
		// dependants.
		Watches(&porchv1alpha1.PackageRevision{}, reconciler.WithPriority(handler.EnqueueRequestsFromMapFunc(r.requestsForRevision), reconciler.Fixed(reconciler.PriorityFanOut))).
		Watches(&configv1alpha1.PackageLock{}, reconciler.WithPriority(handler.EnqueueRequestsFromMapFunc(r.requestsForLock), reconciler.Fixed(reconciler.PriorityFanOut))).
		// A variant that goes (or moves its downstream) frees its package
		// for the next variant that wants it.
		Watches(&configv1alpha1.PackageVariant{}, reconciler.WithPriority(handler.EnqueueRequestsFromMapFunc(r.requestsForSamePackage), reconciler.Fixed(reconciler.PriorityDefault)), builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
			UpdateFunc: func(e event.UpdateEvent) bool {
				return variant.DownstreamPackageKey(e.ObjectOld.(*configv1alpha1.PackageVariant)) != variant.DownstreamPackageKey(e.ObjectNew.(*configv1alpha1.PackageVariant))
			},
		}))
}

// requestsForSamePackage maps a variant to the other variants of its
// downstream package.
func (r *Reconciler) requestsForSamePackage(ctx context.Context, o client.Object) []reconcile.Request {
	pv := o.(*configv1alpha1.PackageVariant)
	list := &configv1alpha1.PackageVariantList{}
	if err := r.List(ctx, list, client.InNamespace(pv.Namespace), client.MatchingFields{variant.DownstreamPackageIndex: variant.DownstreamPackageKey(pv)}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, other := range list.Items {
		if other.UID != pv.UID {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&other)})
		}
	}
	return out
}

// requestsForOwnRevision maps a PackageRevision to the variant that made
// it; one that no variant owns (the sync showed it: after a restore, or
// an orphaning delete) to the variants of its package, which adopt what
// git says they wrote (reconcileAdopt).
func (r *Reconciler) requestsForOwnRevision(ctx context.Context, o client.Object) []reconcile.Request {
	if ref := metav1.GetControllerOf(o); ref != nil {
		if ref.Kind == "PackageVariant" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}}}
		}
		return nil
	}
	pr := o.(*porchv1alpha1.PackageRevision)
	list := &configv1alpha1.PackageVariantList{}
	if err := r.List(ctx, list, client.InNamespace(pr.Namespace), client.MatchingFields{variant.DownstreamPackageIndex: variant.PackageKey(pr.Spec.Repository, pr.Spec.PackageName)}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, pv := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pv)})
	}
	return out
}

// requestsForRevision maps a PackageRevision to the variants whose
// upstream is its package, and to the variants with dependencies writing
// into its repository (a dependency's lifecycle moves their gate).
func (r *Reconciler) requestsForRevision(ctx context.Context, o client.Object) []reconcile.Request {
	pr := o.(*porchv1alpha1.PackageRevision)
	var out []reconcile.Request
	list := &configv1alpha1.PackageVariantList{}
	if err := r.List(ctx, list, client.InNamespace(pr.Namespace), client.MatchingFields{variant.UpstreamIndex: variant.PackageKey(pr.Spec.Repository, pr.Spec.PackageName)}); err == nil {
		for _, pv := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pv)})
		}
	}
	dependants := &configv1alpha1.PackageVariantList{}
	if err := r.List(ctx, dependants, client.InNamespace(pr.Namespace), client.MatchingFields{DependantIndex: pr.Spec.Repository}); err == nil {
		for _, pv := range dependants.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pv)})
		}
	}
	return out
}

// scope holds what one reconcile learns, grouped by the step that
// records it: each group is written by its step alone and read by the
// steps after it; patchStatus turns them into the status.
type scope struct {
	pv *configv1alpha1.PackageVariant
	// injection is the variant's injection epoch when the reconcile
	// began (see producedMemo).
	injection uint64

	up    upstreamFacts   // reconcileUpstream
	down  downstreamFacts // reconcileDownstream
	take  takenUpstream   // reconcileHold
	deps  *depsFacts      // reconcileDependencies (nil without spec.dependencies)
	prod  productionFacts // reconcileProduce
	write writeFacts      // reconcileWrite
	show  showFacts       // reconcileShow

	// conditions are the variant's own conditions (Valid,
	// DownstreamEnsured, package context, injection, dependencies),
	// appended by the steps that decide them (reconcileValid,
	// reconcileProduce).
	conditions []metav1.Condition
	// pending names the drafts a deleting variant waits for
	// (reconcileDelete).
	pending []string
}

// upstreamFacts are what spec.upstream resolves to: its Repository and
// store, the revision it names and, for a versionRange, the package's
// published versions.
type upstreamFacts struct {
	obj      *configv1alpha1.Repository
	store    store.Store
	rev      store.Revision
	versions []pkgservice.Versioned
}

// downstreamFacts are what git has of the variant's downstream package:
// its Repository and store, the variant's revisions, and the one the
// variant starts from (its draft, its proposal or the latest published
// revision; nil: a new clone).
type downstreamFacts struct {
	obj   *configv1alpha1.Repository
	store store.Store
	revs  pkgservice.VariantRevisions
	from  *store.Revision
}

// takenUpstream is the upstream revision the variant is made from: the
// one spec.upstream resolves to, or the one a hold keeps it on (an
// update policy of Manual, or a rollout's rollback), with why.
type takenUpstream struct {
	rev store.Revision
	// version is rev's version, for a versionRange.
	version string
	// heldReason and held say why a newer revision is not taken (the
	// UpdateAvailable condition; "": not held).
	heldReason, held string
}

// productionFacts are what reconcileProduce made and from what.
type productionFacts struct {
	// key is the key of this production (ok false: not memoized);
	// reused is the memo of an equal one, which reconcileProduce and
	// reconcileWrite take instead of producing and writing.
	key    producedKey
	memoOK bool
	reused *producedResult
	in     variant.Input
	// base is the package the variant starts from (the downstream's
	// from, its draft brought onto a newer published revision when
	// someone published one meanwhile: rebased).
	base    *pkg.Package
	rebased bool
	out     variant.Output
	// render is the render status of the package the variant shows.
	render *kptfilev1.RenderStatus
}

// writeFacts are what reconcileWrite decided: the revision the variant's
// object shows, why the variant's changes wait (its revision is
// Proposed), and what reflects the variant when that is not a draft
// written now (the DownstreamEnsured message).
type writeFacts struct {
	target          *store.Revision
	proposalPending string
	ensured         string
}

// showFacts are what reconcileShow shows and found: the downstream
// targets (status.downstreamTargets) and what the repository's lock says
// of the variant's package.
type showFacts struct {
	targets  []configv1alpha1.DownstreamTarget
	conflict string
}

// Reconcile keeps a PackageVariant's downstream draft.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pv := &configv1alpha1.PackageVariant{}
	if err := r.Get(ctx, req.NamespacedName, pv); err != nil || !r.Options.Shard.Owns(pv) {
		r.memo.forget(req.NamespacedName)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{pv: pv, injection: r.memo.epoch(pv)}
	if !pv.DeletionTimestamp.IsZero() {
		r.memo.forget(req.NamespacedName)
		out := reconciler.Run(ctx, s, r.reconcileDelete)
		return out.Return(r.patchStatus(ctx, s, out))
	}
	steps := []reconciler.Step[*scope]{r.reconcileFinalizer, r.reconcileValid, r.reconcileOwnership, r.reconcileUpstream, r.reconcileDownstream, r.reconcileHold, r.reconcileDependencies, r.reconcileProduce, r.reconcileWrite, r.reconcileShow, r.reconcileAdopt}
	out := reconciler.Run(ctx, s, steps...)
	if errors.Is(out.Err, store.ErrConflict) {
		// Someone else wrote to git meanwhile, and the mirror has
		// fetched it: decide once more with what git has now, rather
		// than report a conflict nobody needs to act on.
		*s = scope{pv: pv, injection: r.memo.epoch(pv)}
		out = reconciler.Run(ctx, s, steps...)
	}
	return out.Return(r.patchStatus(ctx, s, out))
}

// reconcileFinalizer adds the finalizer before anything is written.
func (r *Reconciler) reconcileFinalizer(ctx context.Context, s *scope) (ctrl.Result, error) {
	return ctrl.Result{}, reconciler.AddFinalizer(ctx, r.Client, s.pv, configv1alpha1.PackageVariantFinalizer)
}

// reconcileValid stalls a variant whose spec is invalid (which the CRD's
// validation cannot tell alone); it records Valid=False.
func (r *Reconciler) reconcileValid(_ context.Context, s *scope) (ctrl.Result, error) {
	errs := variant.Validate(s.pv)
	if len(errs) == 0 {
		return ctrl.Result{}, nil
	}
	msg := errs.ToAggregate().Error()
	s.conditions = append(s.conditions, metav1.Condition{Type: configv1alpha1.ValidCondition, Status: metav1.ConditionFalse, Reason: configv1alpha1.ValidationErrorReason, Message: msg})
	return ctrl.Result{}, reconciler.Stall(configv1alpha1.ValidationErrorReason, "%s", msg)
}

// reconcileOwnership stalls a variant whose downstream package another
// variant has: one variant per package, the oldest (by creation, then
// name), so two variants never write one package. Nothing is written for
// the others; they are looked at again when the owner goes.
func (r *Reconciler) reconcileOwnership(ctx context.Context, s *scope) (ctrl.Result, error) {
	list := &configv1alpha1.PackageVariantList{}
	if err := r.List(ctx, list, client.InNamespace(s.pv.Namespace), client.MatchingFields{variant.DownstreamPackageIndex: variant.DownstreamPackageKey(s.pv)}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the variants of downstream %s: %w", variant.DownstreamPackageKey(s.pv), err)
	}
	for i := range list.Items {
		other := &list.Items[i]
		// An older variant being deleted still owns the package until
		// it is gone (it is removing its drafts).
		if other.UID == s.pv.UID || !olderVariant(other, s.pv) {
			continue
		}
		return ctrl.Result{}, reconciler.Stall(configv1alpha1.DownstreamOwnedReason,
			"spec.downstream: package %s of repository %s is the downstream of PackageVariant %s; one variant per package: change this variant's downstream, or delete one of them",
			s.pv.Spec.Downstream.Package, s.pv.Spec.Downstream.Repo, other.Name)
	}
	return ctrl.Result{}, nil
}

// olderVariant says whether a owns a downstream package before b.
func olderVariant(a, b *configv1alpha1.PackageVariant) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// reconcileUpstream resolves the upstream revision in git; it records the
// upstream facts. A missing upstream stalls the variant (a
// PackageRevision event brings it back).
func (r *Reconciler) reconcileUpstream(ctx context.Context, s *scope) (ctrl.Result, error) {
	upObj, st, rev, err := pkgservice.FindUpstream(ctx, r.Cache, r.Client, s.pv.Namespace, field.NewPath("spec", "upstream"), s.pv.Spec.Upstream, configv1alpha1.UpstreamNotFoundReason)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.up = upstreamFacts{obj: upObj, store: st, rev: rev}
	if s.pv.Spec.Upstream.VersionRange != "" {
		if s.up.versions, err = pkgservice.PublishedVersions(ctx, st, rev.Package); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// versionOf is the version of the published revision at commit ("": none).
func versionOf(vs []pkgservice.Versioned, commit string) string {
	for _, v := range vs {
		if v.Revision.Commit == commit {
			return v.Version.String()
		}
	}
	return ""
}

// reconcileDownstream reads what git has of the variant's downstream
// package; it records the downstream facts.
func (r *Reconciler) reconcileDownstream(ctx context.Context, s *scope) (ctrl.Result, error) {
	pv := s.pv
	downObj, downStore, err := r.Cache.OpenNamed(ctx, r.Client, pv.Namespace, pv.Spec.Downstream.Repo)
	if err != nil {
		return ctrl.Result{}, pkgservice.WaitForRepository(pv.Namespace, pv.Spec.Downstream.Repo, err)
	}
	revs, err := pkgservice.FindVariantRevisions(ctx, downStore, pv)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.down = downstreamFacts{obj: downObj, store: downStore, revs: revs}
	switch {
	case revs.Draft != nil:
		s.down.from = revs.Draft
	case revs.Proposal != nil:
		s.down.from = revs.Proposal
	default:
		s.down.from = revs.Published
	}
	return ctrl.Result{}, nil
}

// reconcileHold decides the upstream revision the variant is made from:
// the one spec.upstream resolves to, unless a hold keeps the variant on
// the one its downstream was made from (holdManual, holdRolledBack); it
// records what it takes and why.
func (r *Reconciler) reconcileHold(ctx context.Context, s *scope) (ctrl.Result, error) {
	s.take = takenUpstream{rev: s.up.rev, version: versionOf(s.up.versions, s.up.rev.Commit)}
	if s.down.from == nil {
		return ctrl.Result{}, nil // a new clone: nothing to hold on
	}
	for _, hold := range []func(context.Context, *scope) (*takenUpstream, error){r.holdManual, r.holdRolledBack} {
		held, err := hold(ctx, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		if held != nil {
			s.take = *held
			break
		}
	}
	return ctrl.Result{}, nil
}

// holdManual keeps a variant with updatePolicy Manual on the upstream
// revision its downstream was made from, while that revision is still in
// range; the newest one in range is recorded as available.
func (r *Reconciler) holdManual(ctx context.Context, s *scope) (*takenUpstream, error) {
	u := s.pv.Spec.Upstream
	if u.VersionRange == "" || u.UpdatePolicy != configv1alpha1.UpdatePolicyManual {
		return nil, nil
	}
	c, err := semver.NewConstraint(u.VersionRange)
	if err != nil {
		return nil, nil // reported by reconcileValid
	}
	lock, err := upstreamLockOf(ctx, s.down.store, *s.down.from)
	if err != nil || lock == "" || lock == s.up.rev.Commit {
		return nil, err
	}
	for _, v := range s.up.versions {
		if v.Revision.Commit != lock || !c.Check(v.Version) {
			continue
		}
		return &takenUpstream{rev: v.Revision, version: v.Version.String(), heldReason: configv1alpha1.UpdateAvailableReason,
			held: fmt.Sprintf("%s %s (revision %d) is published in range %s; the variant stays on %s (updatePolicy Manual): set spec.upstream.revision, or narrow the range, to take it",
				u.Package, versionOf(s.up.versions, s.up.rev.Commit), s.up.rev.Revision, u.VersionRange, v.Version)}, nil
	}
	return nil, nil
}

// holdChanged passes updates that change the hold-upstream annotation.
var holdChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return e.ObjectOld.GetAnnotations()[configv1alpha1.HoldUpstreamAnnotation] != e.ObjectNew.GetAnnotations()[configv1alpha1.HoldUpstreamAnnotation]
}}

// holdRolledBack keeps a variant whose upstream resolves to a commit a
// rollout rolled back (HoldUpstreamAnnotation) on the published upstream
// revision its published downstream was made from (what the rollback
// restored), so it does not propose the rolled-back content again.
func (r *Reconciler) holdRolledBack(ctx context.Context, s *scope) (*takenUpstream, error) {
	held := s.pv.Annotations[configv1alpha1.HoldUpstreamAnnotation]
	if held == "" || held != s.up.rev.Commit || s.down.revs.Published == nil {
		return nil, nil
	}
	lock, err := upstreamLockOf(ctx, s.down.store, *s.down.revs.Published)
	if err != nil || lock == "" || lock == held {
		return nil, err
	}
	revs, err := s.up.store.ListPackage(ctx, s.up.rev.Package)
	if err != nil {
		return nil, err
	}
	for _, rev := range revs {
		if rev.Commit != lock || rev.Lifecycle != porchv1alpha1.LifecyclePublished {
			continue
		}
		return &takenUpstream{rev: rev, version: versionOf(s.up.versions, rev.Commit), heldReason: configv1alpha1.UpstreamHeldReason,
			held: fmt.Sprintf("%s revision %d (commit %.12s) was rolled back (annotation %s): the variant stays on revision %d until the upstream moves past it; remove the annotation to take it again",
				s.up.rev.Package, s.up.rev.Revision, held, configv1alpha1.HoldUpstreamAnnotation, rev.Revision)}, nil
	}
	return nil, nil
}

// upstreamLockOf is the upstream commit the Kptfile of rev records (its
// upstreamLock; "": none), read without the rest of the package.
func upstreamLockOf(ctx context.Context, st store.Store, rev store.Revision) (string, error) {
	data, err := st.ReadFile(ctx, rev, kptfilev1.KptFileName)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	kf, err := kptfile.Parse(data)
	if err != nil {
		return "", nil // the production says what is wrong with it
	}
	return kf.UpstreamLock.Commit(), nil
}

// reconcileProduce makes the downstream package (clone or 3-way update,
// context, pipeline, injection, render) and watches the kinds it injects
// from, or takes the memo of an equal production; it records the
// production and its conditions. A package that cannot be made without a
// change (no package context) stalls the variant.
func (r *Reconciler) reconcileProduce(ctx context.Context, s *scope) (ctrl.Result, error) {
	p := &s.prod
	if p.key, p.memoOK = memoKey(s); p.memoOK {
		if m, ok := r.memo.get(client.ObjectKeyFromObject(s.pv), p.key); ok {
			// Nothing it is made from has changed.
			metrics.VariantProductions.WithLabelValues("reused").Inc()
			p.reused = &m
			p.out = variant.Output{Conditions: m.conditions, Outcome: variant.Outcome{Injection: variant.InjectionResult{Points: m.points}}}
			p.render = m.render
			s.conditions = append(s.conditions, m.conditions...)
			return ctrl.Result{}, nil
		}
	}
	if err := r.readInput(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	metrics.VariantProductions.WithLabelValues("produced").Inc()
	out, err := variant.Produce(ctx, p.in)
	p.out = out
	if out.Package != nil {
		p.render = renderStatus(out.Package)
	}
	s.conditions = append(s.conditions, out.Conditions...)
	for _, pt := range out.Outcome.Injection.Points {
		// Watch the kind of every injection point the cluster serves and
		// the controller may read, in the variant's namespace, so edits of
		// injected objects (or new ones) bring the variant back.
		if served, _, serr := p.in.Objects.Schema(ctx, pt.GVK); serr == nil && served {
			if werr := r.watches.ensure(ctx, pt.GVK, s.pv.Namespace); werr != nil {
				return ctrl.Result{}, werr
			}
		}
	}
	var renderErr *engine.RenderError
	switch {
	case out.Package == nil && errors.Is(err, variant.ErrNoPackageContext):
		return ctrl.Result{}, reconciler.Stall(variant.MutationFailedReason, "%v", err)
	case out.Package == nil && errors.Is(err, variant.ErrFunctionRefused):
		return ctrl.Result{}, reconciler.Stall(variant.FunctionRefusedReason, "%v", err)
	case out.Package == nil:
		return ctrl.Result{}, err
	case err != nil && !errors.As(err, &renderErr):
		return ctrl.Result{}, err
	}
	var ready *bool
	var reason, message string
	if s.deps != nil {
		c := s.deps.condition()
		s.conditions = append(s.conditions, c)
		ready, reason, message = ptr.To(c.Status == metav1.ConditionTrue), c.Reason, c.Message
	}
	if gerr := pkgdeps.ApplyGate(out.Package, ready, reason, message); gerr != nil {
		return ctrl.Result{}, gerr
	}
	return ctrl.Result{}, nil // a render failure is written, then reported by reconcileShow
}

// readInput reads what the production is made from: the upstream
// revision taken, the package the variant starts from (its draft brought
// onto a newer published revision when someone published one meanwhile)
// and the upstream that was derived from.
func (r *Reconciler) readInput(ctx context.Context, s *scope) error {
	pv, p, d := s.pv, &s.prod, s.down
	upstream, err := r.upstreams.read(ctx, s.up.store, s.take.rev)
	if err != nil {
		return err
	}
	p.in = variant.Input{
		PV: pv, Upstream: upstream, Deployment: d.obj.Spec.Deployment,
		Origin:  pkgservice.Source{Store: s.up.store, Revision: s.take.rev}.Origin(),
		Objects: &clusterObjects{reader: r.APIReader, definitions: r.Definitions, watches: r.watches.kinds, mapper: r.RESTMapper(), namespace: pv.Namespace},
		Runtime: r.runtime,
	}
	if !d.obj.Spec.Deployment {
		p.in.ContextHint = fmt.Sprintf("Repository %s is not a deployment repository (spec.deployment), so its packages get no package context; set spec.deployment: true, or add the ConfigMap to the upstream package", d.obj.Name)
	} else {
		p.in.ContextHint = "the downstream package has lost it: add it back to the draft"
	}
	if d.from == nil {
		return nil // a new clone
	}
	if p.base, err = d.store.Read(ctx, *d.from); err != nil {
		return err
	}
	if d.from == d.revs.Draft && d.revs.Published != nil {
		merged, rebased, err := pkgservice.OntoPublished(ctx, d.store, *d.revs.Draft, p.base, *d.revs.Published)
		if err != nil {
			return err
		}
		if p.rebased = rebased; rebased {
			r.Recorder.Eventf(pv, nil, "Normal", "DraftRebased", "Write", "draft %s/%s brought onto the published revision v%d", d.revs.Draft.Package, d.revs.Draft.Workspace, d.revs.Published.Revision)
		}
		p.base = merged
	}
	p.in.Downstream = p.base
	if lock := lockedCommit(p.base); lock != "" && lock != s.take.rev.Commit {
		if p.in.OldUpstream, err = r.upstreams.read(ctx, s.up.store, store.Revision{Package: s.take.rev.Package, Commit: lock}); err != nil {
			return fmt.Errorf("reading the upstream the downstream was derived from (%s): %w", lock, err)
		}
	}
	return nil
}

// reconcileWrite writes the produced package as one commit onto the
// variant's draft, onto a new draft from the latest published revision, or
// as a new clone, through the package service; nothing is written when the
// result equals what is there, nor while the variant's revision is
// Proposed (frozen for its approver). It records the target revision,
// proposalPending, and what reflects the variant when that is not a
// draft.
func (r *Reconciler) reconcileWrite(ctx context.Context, s *scope) (ctrl.Result, error) {
	d, w, base, p := s.down.revs, &s.write, s.prod.base, s.prod.out.Package
	switch {
	case s.prod.reused != nil:
		// Made from the same inputs as what is there: the draft (or,
		// without one, the published revision) is the variant's.
		w.target = d.Draft
		if w.target == nil {
			w.target = d.Published
		}
		return ctrl.Result{}, nil
	case d.Draft == nil && d.Proposal != nil:
		// Once the proposal is rejected (a draft again) it is updated;
		// once published, a new draft follows from it if the variant
		// still asks for changes.
		w.target = d.Proposal
		if !variant.SameContent(p, base) {
			w.proposalPending = fmt.Sprintf("the downstream revision %s is Proposed: the variant's changes (upstream, context, pipeline or injected objects) are written once it is published or rejected",
				pkgservice.ObjectName(s.down.obj.Name, d.Proposal.Package, d.Proposal.Workspace))
		}
		return ctrl.Result{}, nil
	case d.Draft != nil && variant.SameContent(p, base):
		w.target = d.Draft
		r.remember(s, s.prod.key)
		return ctrl.Result{}, nil
	case d.Draft != nil && d.Published != nil:
		// A draft about to be written back to what is published would
		// change nothing: it goes (a person's edit of it would show in
		// p). Read only when the draft would change, so a draft kept
		// (someone else's commits) is not looked at again and again.
		pub, err := s.down.store.Read(ctx, *d.Published)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !variant.SameContent(p, pub) {
			break
		}
		name := pkgservice.ObjectName(s.down.obj.Name, d.Draft.Package, d.Draft.Workspace)
		if removed, err := r.removeDraft(ctx, s, name); err != nil || !removed {
			if err != nil {
				return ctrl.Result{}, fmt.Errorf("repository %s: removing draft %s, which changes nothing: %w", s.pv.Spec.Downstream.Repo, name, err)
			}
			break // someone else's work too: kept
		}
		r.Recorder.Eventf(s.pv, nil, "Normal", "DraftRemoved", "Write", "draft %s removed: it would equal the published revision v%d", name, d.Published.Revision)
		w.target = d.Published
		w.ensured = fmt.Sprintf("the published revision v%d reflects the variant: draft %s, which would have changed nothing, was removed", d.Published.Revision, name)
		return ctrl.Result{}, nil
	case d.Draft == nil && d.Published != nil && variant.SameContent(p, base):
		w.target = d.Published // nothing to change: no new draft
		w.ensured = fmt.Sprintf("the published revision v%d reflects the variant: no draft is needed", d.Published.Revision)
		r.remember(s, s.prod.key)
		return ctrl.Result{}, nil
	}
	written, err := r.Service.WriteVariantDraft(ctx, s.down.store, s.pv, d, p)
	if err != nil {
		// A lost race has brought the mirror up to date (the store
		// fetches after a conflict): the retry decides with what git has.
		return ctrl.Result{}, fmt.Errorf("repository %s: %w", s.pv.Spec.Downstream.Repo, err)
	}
	w.target = &written
	// The lock's reconcile reads what the draft declares: from the
	// package in hand, not from git.
	r.Deps.Remember(s.down.store, written, p)
	// The next reconcile (this write's event brings it) finds the draft
	// at the commit written: from the same inputs, Produce makes the same
	// package again.
	k := s.prod.key
	k.draft = written.Commit
	r.remember(s, k)
	if d.Draft != nil || d.Published != nil {
		// A change of what exists. A variant's first draft is announced
		// by its Ready condition and downstreamTargets: no event, one
		// request less per variant when a fleet is created.
		r.Recorder.Eventf(s.pv, nil, "Normal", "DraftWritten", "Write", "downstream draft %s/%s at %.12s", written.Package, written.Workspace, written.Commit)
	}
	return ctrl.Result{}, nil
}

// removeDraft removes the variant's draft: its PackageRevision (the
// PackageRevision controller removes it from git), or without one yet,
// the draft in git. A draft with commits by others is kept (false).
func (r *Reconciler) removeDraft(ctx context.Context, s *scope, name string) (bool, error) {
	pr := &porchv1alpha1.PackageRevision{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: s.pv.Namespace, Name: name}, pr); {
	case apierrors.IsNotFound(err):
		return true, r.Service.Delete(ctx, s.down.store, *s.down.revs.Draft)
	case err != nil:
		return false, err
	}
	if !metav1.IsControlledBy(pr, s.pv) {
		return false, nil
	}
	if others, err := r.othersCommits(ctx, s.pv, pr); err != nil || len(others) > 0 {
		return false, err
	}
	return true, client.IgnoreNotFound(r.Delete(ctx, pr))
}

// ensuredAs is conds with the message of its DownstreamEnsured=True
// condition set to msg, which says what reflects the variant ("": conds
// as they are).
func ensuredAs(conds []metav1.Condition, msg string) []metav1.Condition {
	if msg == "" {
		return conds
	}
	out := slices.Clone(conds)
	for i := range out {
		if out[i].Type == configv1alpha1.DownstreamEnsuredCondition && out[i].Status == metav1.ConditionTrue {
			out[i].Message = msg
		}
	}
	return out
}

// remember memoizes the reconcile's production under key, when it may be.
func (r *Reconciler) remember(s *scope, key producedKey) {
	p := &s.prod
	if !p.memoOK || !memoizable(p.out, p.rebased) {
		return
	}
	r.memo.put(client.ObjectKeyFromObject(s.pv), producedResult{key: key, conditions: ensuredAs(p.out.Conditions, s.write.ensured), points: p.out.Outcome.Injection.Points, render: p.render})
}

// reconcileShow makes the target revision's PackageRevision show it
// (owned by the variant while it is a draft); it records the downstream
// targets. A proposal's object is the approver's and the PackageRevision
// controller's: the variant leaves it alone, status included, but for the
// dependencies condition (set on the object like any writer's, and
// written into git by the PackageRevision controller). A render
// failure, written to the draft for people to see, stalls the variant
// until it or its upstream changes (the functions are deterministic).
func (r *Reconciler) reconcileShow(ctx context.Context, s *scope) (ctrl.Result, error) {
	t := s.write.target
	name := pkgservice.ObjectName(s.down.obj.Name, t.Package, t.Workspace)
	if t == s.down.revs.Proposal {
		s.show.targets = []configv1alpha1.DownstreamTarget{{Name: name, RenderStatus: renderStatus(s.prod.base)}}
		s.show.conflict = r.packageConflict(ctx, s)
		return ctrl.Result{}, r.proposalGate(ctx, s, t)
	}
	cur, err := r.currentObject(ctx, s.pv.Namespace, s.pv.Spec.Downstream.Repo, t.Package, t.Workspace)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The conditions the variant sets in git (its gate and one per
	// injection point) are shown from git. The object's spec is not the
	// variant's to handle: a lifecycle change someone asked for (propose,
	// approve) stays for the PackageRevision controller.
	opts := pkgservice.ShowOptions{GitConditions: []string{configv1alpha1.PackageVariantReadinessGate, configv1alpha1.DependenciesReadinessGate}}
	for _, pt := range s.prod.out.Outcome.Injection.Points {
		opts.GitConditions = append(opts.GitConditions, pt.ConditionType)
	}
	if t.Lifecycle == porchv1alpha1.LifecycleDraft {
		opts.Owner = ptr.To(*metav1.NewControllerRef(s.pv, configv1alpha1.GroupVersion.WithKind("PackageVariant")))
		opts.OwnerLabels = map[string]string{configv1alpha1.PackageVariantLabel: pkgservice.LabelValue(s.pv.Name)}
		opts.InitialLabels, opts.InitialAnnotations = s.pv.Spec.Labels, s.pv.Spec.Annotations
	}
	if _, err := r.Service.Show(ctx, s.down.obj, s.down.store, *t, cur, opts); err != nil {
		return ctrl.Result{}, err
	}
	s.show.targets = []configv1alpha1.DownstreamTarget{{Name: name, RenderStatus: s.prod.render}}
	var res ctrl.Result
	if s.pv.Spec.Upstream.Tag != "" || s.pv.Spec.Upstream.VersionRange != "" {
		// A tag's move changes no PackageRevision: no event says so (a
		// version range reads semver tags too).
		res = reconciler.Periodic(r.tagPollPeriod())
	}
	if c := meta.FindStatusCondition(s.prod.out.Conditions, configv1alpha1.DownstreamEnsuredCondition); c != nil && c.Reason == variant.RenderFailedReason {
		return res, reconciler.Stall(variant.RenderFailedReason, "%s", c.Message)
	}
	s.show.conflict = r.packageConflict(ctx, s)
	if s.deps != nil && s.deps.stalls() {
		c := s.deps.condition()
		stall := reconciler.Stall(c.Reason, "%s", c.Message)
		stall.Retry = dependenciesRetry
		return res, stall
	}
	return res, nil
}

// reconcileAdopt makes the variant the owner of the objects of its
// proposals and published revisions that have none: those git says it
// wrote (by its namespace and name), which a restore of the cluster or an
// orphaning delete and a create left without the owner they had, so that
// the variant's deletion policy reaches them again. Its draft's object is
// reconcileShow's.
func (r *Reconciler) reconcileAdopt(ctx context.Context, s *scope) (ctrl.Result, error) {
	var errs []error
	for _, rev := range pkgservice.VariantWrote(s.pv, s.down.revs.All) {
		if rev.Lifecycle == porchv1alpha1.LifecycleDraft {
			continue
		}
		pr, err := r.currentObject(ctx, s.pv.Namespace, s.pv.Spec.Downstream.Repo, rev.Package, rev.Workspace)
		if err != nil || pr == nil || metav1.GetControllerOf(pr) != nil || !pr.DeletionTimestamp.IsZero() {
			errs = append(errs, err)
			continue
		}
		patch := client.MergeFromWithOptions(pr.DeepCopy(), client.MergeFromWithOptimisticLock{})
		pr.OwnerReferences = append(pr.OwnerReferences, *metav1.NewControllerRef(s.pv, configv1alpha1.GroupVersion.WithKind("PackageVariant")))
		if pr.Labels == nil {
			pr.Labels = map[string]string{}
		}
		pr.Labels[configv1alpha1.PackageVariantLabel] = pkgservice.LabelValue(s.pv.Name)
		errs = append(errs, client.IgnoreNotFound(r.Patch(ctx, pr, patch)))
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// proposalGate sets the dependencies condition on the object of the
// variant's proposal when it says otherwise (a proposal's content is
// frozen, but its gate moves as its dependencies are published).
func (r *Reconciler) proposalGate(ctx context.Context, s *scope, t *store.Revision) error {
	if s.deps == nil {
		return nil
	}
	cur, err := r.currentObject(ctx, s.pv.Namespace, s.pv.Spec.Downstream.Repo, t.Package, t.Workspace)
	if err != nil || cur == nil {
		return err
	}
	c := s.deps.condition()
	want := porchv1alpha1.Condition{Type: configv1alpha1.DependenciesReadinessGate, Status: porchv1alpha1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message}
	_, err = r.Service.WriteStatus(ctx, cur, func(pr *porchv1alpha1.PackageRevision) bool {
		return pkgservice.SetConditions(&pr.Status.Conditions, want)
	})
	return err
}

func (r *Reconciler) tagPollPeriod() time.Duration {
	if r.Options.TagPollPeriod > 0 {
		return r.Options.TagPollPeriod
	}
	return time.Minute
}

func (r *Reconciler) currentObject(ctx context.Context, ns, repo, pkgPath, ws string) (*porchv1alpha1.PackageRevision, error) {
	list := &porchv1alpha1.PackageRevisionList{}
	if err := r.List(ctx, list, client.InNamespace(ns), client.MatchingFields{RevisionIndex: revisionKey(repo, pkgPath, ws)}); err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	return &list.Items[0], nil
}

// revisionKey is a RevisionIndex value: repository and workspace names
// have no "/", so the key is unambiguous.
func revisionKey(repo, pkgPath, ws string) string {
	return repo + "/" + pkgPath + "/" + ws
}

func lockedCommit(p *pkg.Package) string {
	kf, err := p.Kptfile()
	if err != nil {
		return ""
	}
	return kf.UpstreamLock.Commit()
}

func renderStatus(p *pkg.Package) *kptfilev1.RenderStatus {
	kf, err := p.Kptfile()
	if err != nil || kf.Status == nil {
		return nil
	}
	return kf.Status.RenderStatus
}

// deletingRetry is how soon a deleting variant looks again at drafts that
// have not left git (each one's deletion brings it back sooner).
const deletingRetry = 15 * time.Second

// reconcileDelete applies the deletion policy, then removes the finalizer:
// delete removes the variant's drafts (the PackageRevision controller
// removes them from git) and proposes deletion of its published
// revisions; orphan removes the owner references. Drafts with commits by
// others are kept for them. It records the drafts still pending.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	pv := s.pv
	if !controllerutil.ContainsFinalizer(pv, configv1alpha1.PackageVariantFinalizer) {
		return ctrl.Result{}, nil
	}
	if err := r.releaseDependencies(ctx, pv, nil); err != nil {
		return ctrl.Result{}, err
	}
	list := &porchv1alpha1.PackageRevisionList{}
	if err := r.List(ctx, list, client.InNamespace(pv.Namespace), client.MatchingFields{ControllerIndex: string(pv.UID)}); err != nil {
		return ctrl.Result{}, err
	}
	var errs []error
	for i := range list.Items {
		pr := &list.Items[i]
		orphan := pv.Spec.DeletionPolicy == configv1alpha1.DeletionPolicyOrphan
		// What git has decides, not what the spec asks: a proposal whose
		// publication is asked for but refused (a gate, a conflict) is
		// still a proposal, deleted as one.
		lc := pr.GitLifecycle()
		if !orphan && (lc == porchv1alpha1.LifecycleDraft || lc == porchv1alpha1.LifecycleProposed || lc == "") {
			others, err := r.othersCommits(ctx, pv, pr)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if len(others) > 0 {
				// Someone else's work: kept, and no longer the variant's.
				orphan = true
				r.Recorder.Eventf(pv, pr, "Warning", "DraftKept", "Delete",
					"%s is kept, no longer the variant's: it has commits by others (%s); delete it with scion rpkg delete %s if it is not needed",
					pr.Name, strings.Join(others, "; "), pr.Name)
			}
		}
		patch := client.MergeFrom(pr.DeepCopy())
		switch {
		case orphan:
			var refs []metav1.OwnerReference
			for _, ref := range pr.OwnerReferences {
				if ref.UID != pv.UID {
					refs = append(refs, ref)
				}
			}
			pr.OwnerReferences = refs
			delete(pr.Labels, configv1alpha1.PackageVariantLabel)
			errs = append(errs, client.IgnoreNotFound(r.Patch(ctx, pr, patch)))
		case lc == porchv1alpha1.LifecyclePublished:
			pr.Spec.Lifecycle = porchv1alpha1.LifecycleDeletionProposed
			errs = append(errs, client.IgnoreNotFound(r.Patch(ctx, pr, patch)))
		case lc == porchv1alpha1.LifecycleDeletionProposed:
		default:
			errs = append(errs, client.IgnoreNotFound(r.Delete(ctx, pr)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		r.Recorder.Eventf(pv, nil, "Warning", "DeleteFailed", "Delete", "%v", err)
		return ctrl.Result{}, err
	}
	if pv.Spec.DeletionPolicy != configv1alpha1.DeletionPolicyOrphan {
		// Keep the finalizer until the drafts are really gone from git;
		// say what holds them when their deletion fails.
		for i := range list.Items {
			pr := &list.Items[i]
			if lc := pr.GitLifecycle(); !metav1.IsControlledBy(pr, pv) || lc != porchv1alpha1.LifecycleDraft && lc != porchv1alpha1.LifecycleProposed {
				continue
			}
			cur := &porchv1alpha1.PackageRevision{}
			if err := r.Get(ctx, client.ObjectKeyFromObject(pr), cur); apierrors.IsNotFound(err) {
				continue
			} else if err != nil {
				return ctrl.Result{}, err
			}
			if !metav1.IsControlledBy(cur, pv) {
				continue // kept for someone else (orphaned above)
			}
			msg := cur.Name
			for _, c := range cur.Status.Conditions {
				if c.Type == configv1alpha1.ReadyCondition && c.Reason == porchv1alpha1.DeleteFailedReason {
					msg += ": " + c.Message
				}
			}
			s.pending = append(s.pending, msg)
		}
		if len(s.pending) > 0 {
			return ctrl.Result{}, reconciler.Wait(deletingRetry, configv1alpha1.DeletingReason, "waiting for the drafts to leave git: %s", strings.Join(s.pending, "; "))
		}
	}
	return ctrl.Result{}, reconciler.RemoveFinalizer(ctx, r.Client, pv, configv1alpha1.PackageVariantFinalizer)
}

// othersCommits lists the commits of a draft (or proposal) of the variant
// that neither the variant nor the PackageRevision controller wrote. A
// Repository that is gone or going has none to keep: its PackageRevisions
// go with it.
func (r *Reconciler) othersCommits(ctx context.Context, pv *configv1alpha1.PackageVariant, pr *porchv1alpha1.PackageRevision) ([]string, error) {
	_, st, err := r.Cache.OpenNamed(ctx, r.Client, pv.Namespace, pr.Spec.Repository)
	if apierrors.IsNotFound(err) || errors.Is(err, repocache.ErrDeleting) {
		return nil, nil
	}
	if err != nil {
		return nil, err // names the repository
	}
	return pkgservice.ForeignCommits(ctx, st, pv, pr.Spec.PackageName, pr.Spec.WorkspaceName)
}
