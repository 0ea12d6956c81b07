package packagevariant

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
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
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/variant"
)

// UpstreamIndex indexes PackageVariants by "<repository>/<package>" of
// their upstream, so a PackageRevision event finds exactly the variants
// deriving from it.
const UpstreamIndex = "spec.upstream.repoPackage"

// RevisionIndex indexes PackageRevisions by repository, package and
// workspace, so a variant finds its draft's object without listing the
// namespace's revisions.
const RevisionIndex = "spec.repository+packageName+workspaceName"

// Condition reasons of a PackageVariant.
const (
	UpstreamNotFoundReason   = "UpstreamNotFound"
	RepositoryNotReadyReason = "RepositoryNotReady"
	// RepositoryUnavailableReason: a repository's remote did not answer in
	// time (or is left alone for a while after it did not).
	RepositoryUnavailableReason = "RepositoryUnavailable"
	// ProposalPendingReason: the variant's revision is Proposed and the
	// variant has changes for it, written once it is published or
	// rejected.
	ProposalPendingReason = "ProposalPending"
)

// fetchMaxAge is how stale the upstream repository's refs may be when a
// reconcile reads them: variants reconciled in a burst share one fetch of
// their upstream instead of making one each. A revision not found is
// always looked for in the remote. (The downstream is always fetched
// before a draft is created: a draft someone wrote a moment ago must be
// found, to be adopted or to keep one draft per variant.)
const fetchMaxAge = time.Second

// Options configure the Reconciler.
type Options struct {
	Workers int
	// TagPollPeriod is how often a variant following a floating tag looks
	// whether the tag moved (a move changes no PackageRevision, so no
	// event says so). One minute when 0.
	TagPollPeriod time.Duration
}

// Reconciler reconciles PackageVariants.
type Reconciler struct {
	client.Client
	APIReader client.Reader
	Cache     *repocache.Cache
	Service   *pkgservice.Service
	Recorder  recorder.EventRecorder
	Options   Options
	// Objects are the per-namespace caches of the objects variants
	// inject, and the kinds they may inject.
	Objects *kindwatch.Caches

	watches *injectionWatches
}

// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagevariants,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagevariants/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagevariants/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get

// SetupWithManager registers the controller: PackageVariants on spec
// changes; PackageRevisions mapped to the variant that owns them and to
// the variants deriving from their package (through UpstreamIndex).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Cache == nil || r.Service == nil || r.Recorder == nil || r.APIReader == nil || r.Objects == nil {
		return fmt.Errorf("packagevariant controller: APIReader, Cache, Objects, Service and Recorder are required")
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &configv1alpha1.PackageVariant{}, UpstreamIndex, func(o client.Object) []string {
		pv := o.(*configv1alpha1.PackageVariant)
		if pv.Spec.Upstream == nil {
			return nil
		}
		return []string{pv.Spec.Upstream.Repo + "/" + pv.Spec.Upstream.Package}
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &configv1alpha1.PackageVariant{}, InjectorIndex, indexInjectors); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &porchv1alpha1.PackageRevision{}, RevisionIndex, func(o client.Object) []string {
		pr := o.(*porchv1alpha1.PackageRevision)
		return []string{revisionKey(pr.Spec.Repository, pr.Spec.PackageName, pr.Spec.WorkspaceName)}
	}); err != nil {
		return err
	}
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("packagevariant").
		For(&configv1alpha1.PackageVariant{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&porchv1alpha1.PackageRevision{}, handler.EnqueueRequestsFromMapFunc(r.requestsForRevision)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.Options.Workers)}).
		Build(r)
	if err != nil {
		return err
	}
	r.watches = &injectionWatches{kinds: &kindwatch.Watches{Ctrl: c, Caches: r.Objects}, client: mgr.GetClient()}
	return nil
}

// requestsForRevision maps a PackageRevision to its owning variant and to
// the variants whose upstream is its package.
func (r *Reconciler) requestsForRevision(ctx context.Context, o client.Object) []reconcile.Request {
	pr := o.(*porchv1alpha1.PackageRevision)
	var out []reconcile.Request
	if ref := metav1.GetControllerOf(pr); ref != nil && ref.Kind == "PackageVariant" {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: pr.Namespace, Name: ref.Name}})
	}
	list := &configv1alpha1.PackageVariantList{}
	if err := r.List(ctx, list, client.InNamespace(pr.Namespace), client.MatchingFields{UpstreamIndex: pr.Spec.Repository + "/" + pr.Spec.PackageName}); err == nil {
		for _, pv := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pv)})
		}
	}
	return out
}

// scope holds what one reconcile learns.
type scope struct {
	pv *configv1alpha1.PackageVariant
	// conditions are set by the steps; patchStatus writes them.
	conditions []metav1.Condition
	targets    []configv1alpha1.DownstreamTarget
	stalled    *metav1.Condition
	// waiting, when set, is the Reconciling condition of a reconcile
	// that waits for something outside the variant (a repository): the
	// reconcile is not complete.
	waiting *metav1.Condition
}

// Reconcile keeps a PackageVariant's downstream draft.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	pv := &configv1alpha1.PackageVariant{}
	if err := r.Get(ctx, req.NamespacedName, pv); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pv.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, pv)
	}
	if !controllerutil.ContainsFinalizer(pv, configv1alpha1.PackageVariantFinalizer) {
		patch := client.MergeFrom(pv.DeepCopy())
		controllerutil.AddFinalizer(pv, configv1alpha1.PackageVariantFinalizer)
		if err := r.Patch(ctx, pv, patch); err != nil {
			return ctrl.Result{}, err
		}
	}
	s := &scope{pv: pv}
	defer func() { retErr = r.patchStatus(ctx, s, retErr) }()
	if errs := variant.Validate(pv); len(errs) > 0 {
		s.stalled = &metav1.Condition{Type: configv1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: variant.ValidationErrorReason, Message: errs.ToAggregate().Error()}
		s.conditions = append(s.conditions, metav1.Condition{Type: configv1alpha1.ValidCondition, Status: metav1.ConditionFalse, Reason: variant.ValidationErrorReason, Message: errs.ToAggregate().Error()})
		return ctrl.Result{}, nil
	}
	res, err := r.reconcileDownstream(ctx, s)
	if errors.Is(err, store.ErrConflict) {
		// Someone else wrote to git meanwhile, and the mirror has
		// fetched it: decide once more with what git has now, rather
		// than report a conflict nobody needs to act on.
		*s = scope{pv: pv}
		res, err = r.reconcileDownstream(ctx, s)
	}
	if _, ok := store.RetryAfter(err); ok {
		return r.waiting(s, RepositoryUnavailableReason, err)
	}
	return res, err
}

// open opens a Repository of the variant's namespace by name.
func (r *Reconciler) open(ctx context.Context, ns, name string) (*configv1alpha1.Repository, *store.Repository, error) {
	return r.Cache.OpenNamed(ctx, r.Client, ns, name)
}

func (r *Reconciler) resolveUpstream(ctx context.Context, st *store.Repository, u *configv1alpha1.Upstream) (store.Revision, error) {
	switch {
	case u.Tag != "":
		return st.ResolveFloatingTag(ctx, u.Package, u.Tag)
	case u.Revision != "":
		n, err := u.Revision.Number()
		if err != nil {
			return store.Revision{}, err
		}
		return st.Get(ctx, u.Package, "", n)
	default:
		return st.Get(ctx, u.Package, u.WorkspaceName, 0)
	}
}

// upstreamNotFoundMessage says which upstream is missing, in the terms of
// the spec (the Repository's name, the revision as written), and what the
// package has instead.
func upstreamNotFoundMessage(u *configv1alpha1.Upstream, revs []store.Revision) string {
	field, what := "spec.upstream.workspaceName", "workspace "+u.WorkspaceName
	if u.Revision != "" {
		field, what = "spec.upstream.revision", "revision "+string(u.Revision)
	}
	var numbers []int
	var published, workspaces []string
	for _, rev := range revs {
		switch {
		case rev.Lifecycle == porchv1alpha1.LifecyclePublished || rev.Lifecycle == porchv1alpha1.LifecycleDeletionProposed:
			numbers = append(numbers, rev.Revision)
		default:
			workspaces = append(workspaces, rev.Workspace)
		}
	}
	slices.Sort(numbers)
	for _, n := range numbers {
		published = append(published, strconv.Itoa(n))
	}
	slices.Sort(workspaces)
	msg := fmt.Sprintf("%s: Repository %s has no %s of package %s", field, u.Repo, what, u.Package)
	switch {
	case len(revs) == 0:
		msg += " (the package is not in that repository)"
	case u.Revision != "" && len(published) == 0:
		msg += " (it has no published revision yet)"
	case u.Revision != "":
		msg += " (published revisions: " + strings.Join(published, ", ") + ")"
	case len(workspaces) > 0:
		msg += " (unpublished workspaces: " + strings.Join(workspaces, ", ") + ")"
	}
	return msg
}

// reconcileDownstream produces the downstream package and writes it as
// one commit: onto the variant's draft (found by its git trailer, so a
// draft written before a crash is found), onto a new draft from the
// latest published downstream, or as a new clone. Nothing is written when
// the result equals what is there.
func (r *Reconciler) reconcileDownstream(ctx context.Context, s *scope) (ctrl.Result, error) {
	pv := s.pv
	_, upStore, err := r.open(ctx, pv.Namespace, pv.Spec.Upstream.Repo)
	if err != nil {
		return r.waiting(s, RepositoryNotReadyReason, err)
	}
	if err := upStore.FetchIfOlder(ctx, fetchMaxAge); err != nil {
		return ctrl.Result{}, fmt.Errorf("repository %s: %w", pv.Spec.Upstream.Repo, err)
	}
	upRev, err := r.resolveUpstream(ctx, upStore, pv.Spec.Upstream)
	if errors.Is(err, store.ErrNotFound) {
		// Perhaps published since the last fetch: look in the remote.
		if err := upStore.Fetch(ctx); err != nil {
			return ctrl.Result{}, fmt.Errorf("repository %s: %w", pv.Spec.Upstream.Repo, err)
		}
		upRev, err = r.resolveUpstream(ctx, upStore, pv.Spec.Upstream)
	}
	if errors.Is(err, store.ErrNotFound) {
		msg := "spec.upstream.tag: " + err.Error()
		if pv.Spec.Upstream.Tag == "" {
			revs, lerr := upStore.ListPackage(ctx, pv.Spec.Upstream.Package)
			if lerr != nil {
				return ctrl.Result{}, lerr
			}
			msg = upstreamNotFoundMessage(pv.Spec.Upstream, revs)
		}
		s.stalled = &metav1.Condition{Type: configv1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: UpstreamNotFoundReason, Message: msg}
		return ctrl.Result{}, nil // a PackageRevision event brings us back
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	downObj, downStore, err := r.open(ctx, pv.Namespace, pv.Spec.Downstream.Repo)
	if err != nil {
		return r.waiting(s, RepositoryNotReadyReason, err)
	}
	down, err := findDownstream(ctx, downStore, pv)
	if err != nil {
		return ctrl.Result{}, err
	}
	revs, draft, published := down.revs, down.draft, down.published
	upstream, err := upStore.Read(ctx, upRev)
	if err != nil {
		return ctrl.Result{}, err
	}
	in := variant.Input{
		PV: pv, Upstream: upstream, Deployment: downObj.Spec.Deployment,
		Origin:  pkgservice.Source{Store: upStore, Revision: upRev}.Origin(),
		Objects: &clusterObjects{reader: r.APIReader, watches: r.watches.kinds, mapper: r.RESTMapper(), namespace: pv.Namespace},
		Runtime: noExecRuntime(),
	}
	if !downObj.Spec.Deployment {
		in.ContextHint = fmt.Sprintf("Repository %s is not a deployment repository (spec.deployment), so its packages get no package context; set spec.deployment: true, or add the ConfigMap to the upstream package", downObj.Name)
	} else {
		in.ContextHint = "the downstream package has lost it: add it back to the draft"
	}
	var base *pkg.Package
	proposal := down.proposal
	if draft != nil {
		proposal = nil // the draft is the one to write
	}
	if b := draft; b != nil || proposal != nil || published != nil {
		switch {
		case b != nil:
		case proposal != nil:
			b = proposal
		default:
			b = published
		}
		if base, err = downStore.Read(ctx, *b); err != nil {
			return ctrl.Result{}, err
		}
		if b == draft && published != nil {
			if base, err = r.ontoPublished(ctx, downStore, pv, *draft, base, *published); err != nil {
				return ctrl.Result{}, err
			}
		}
		in.Downstream = base
		if lock := lockedCommit(base); lock != "" && lock != upRev.Commit {
			if in.OldUpstream, err = upStore.Read(ctx, store.Revision{Package: upRev.Package, Commit: lock}); err != nil {
				return ctrl.Result{}, fmt.Errorf("reading the upstream the downstream was derived from (%s): %w", lock, err)
			}
		}
	}
	out, produceErr := variant.Produce(ctx, in)
	s.conditions = append(s.conditions, out.Conditions...)
	for _, pt := range out.Outcome.Injection.Points {
		// Watch the kind of every injection point the cluster serves and
		// the controller may read, in the variant's namespace, so edits of
		// injected objects (or new ones) bring the variant back.
		if served, _, serr := in.Objects.Schema(ctx, pt.GVK); serr == nil && served {
			if werr := r.watches.ensure(ctx, pt.GVK, pv.Namespace); werr != nil {
				return ctrl.Result{}, werr
			}
		}
	}
	if out.Package == nil {
		if errors.Is(produceErr, variant.ErrNoPackageContext) {
			return ctrl.Result{}, nil // reported in the conditions
		}
		return ctrl.Result{}, produceErr
	}
	target := draft
	switch {
	case proposal != nil:
		// While the variant's revision is proposed, it is frozen for the
		// approver: nothing is written. Once it is rejected (a draft
		// again) it is updated; once published, a new draft follows
		// from it if the variant still asks for changes.
		target = proposal
		if !variant.SameContent(out.Package, base) {
			msg := fmt.Sprintf("the downstream revision %s is Proposed: the variant's changes (upstream, context, pipeline or injected objects) are written once it is published or rejected",
				pkgservice.ObjectName(downObj.Name, proposal.Package, proposal.Workspace))
			s.conditions = append(s.conditions,
				metav1.Condition{Type: configv1alpha1.DownstreamEnsuredCondition, Status: metav1.ConditionFalse, Reason: ProposalPendingReason, Message: msg},
				metav1.Condition{Type: configv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: ProposalPendingReason, Message: msg})
		}
	case draft != nil && variant.SameContent(out.Package, base):
	case draft == nil && published != nil && variant.SameContent(out.Package, base):
		target = published // nothing to change: no new draft
	default:
		written, werr := r.write(ctx, downStore, pv, draft, revs, out.Package)
		if werr != nil {
			werr = fmt.Errorf("repository %s: %w", pv.Spec.Downstream.Repo, werr)
			if errors.Is(werr, store.ErrConflict) && draft != nil {
				// Someone else wrote the draft: re-read before the
				// retry (a new draft's write has fetched already).
				return ctrl.Result{}, errors.Join(werr, downStore.Fetch(ctx))
			}
			return ctrl.Result{}, werr
		}
		target = &written
		r.Recorder.Eventf(pv, nil, "Normal", "DraftWritten", "Write", "downstream draft %s/%s at %.12s", written.Package, written.Workspace, written.Commit)
	}
	if target == proposal {
		// A proposal's object is the approver's and the PackageRevision
		// controller's: the variant leaves it alone, status included.
		s.targets = []configv1alpha1.DownstreamTarget{{Name: pkgservice.ObjectName(downObj.Name, target.Package, target.Workspace), RenderStatus: renderStatus(base)}}
		return ctrl.Result{}, nil
	}
	cur, err := r.currentObject(ctx, pv.Namespace, pv.Spec.Downstream.Repo, target.Package, target.Workspace)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The conditions the variant sets in git (its gate and one per
	// injection point) are shown from git. The object's spec is not the
	// variant's to handle: a lifecycle change someone asked for (propose,
	// approve) stays for the PackageRevision controller.
	opts := pkgservice.ShowOptions{GitConditions: []string{configv1alpha1.PackageVariantReadinessGate}}
	for _, pt := range out.Outcome.Injection.Points {
		opts.GitConditions = append(opts.GitConditions, pt.ConditionType)
	}
	if target.Lifecycle == porchv1alpha1.LifecycleDraft {
		opts.Owner = ptr.To(*metav1.NewControllerRef(pv, configv1alpha1.GroupVersion.WithKind("PackageVariant")))
		opts.OwnerLabels = map[string]string{configv1alpha1.PackageVariantLabel: pkgservice.LabelValue(pv.Name)}
		opts.InitialLabels, opts.InitialAnnotations = pv.Spec.Labels, pv.Spec.Annotations
	}
	if _, err := r.Service.Show(ctx, downObj, downStore, *target, cur, opts); err != nil {
		return ctrl.Result{}, err
	}
	s.targets = []configv1alpha1.DownstreamTarget{{Name: pkgservice.ObjectName(downObj.Name, target.Package, target.Workspace), RenderStatus: renderStatus(out.Package)}}
	var renderErr *engine.RenderError
	if errors.As(produceErr, &renderErr) {
		// The functions are this process's own and deterministic: the
		// same inputs fail the same way. The draft shows the function's
		// results; a change of the variant or its upstream comes back.
		s.stalled = &metav1.Condition{Type: configv1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: variant.RenderFailedReason, Message: produceErr.Error()}
		produceErr = nil
	}
	if pv.Spec.Upstream.Tag != "" {
		return ctrl.Result{RequeueAfter: r.tagPollPeriod()}, produceErr
	}
	return ctrl.Result{}, produceErr
}

func (r *Reconciler) tagPollPeriod() time.Duration {
	if r.Options.TagPollPeriod > 0 {
		return r.Options.TagPollPeriod
	}
	return time.Minute
}

// downstream is what git has of a variant's downstream package.
type downstream struct {
	revs []store.Revision
	// draft and proposal are the variant's own (by the git trailer
	// recording the variant; with adoptExisting, a draft no variant
	// owns); published is the latest published revision.
	draft, proposal, published *store.Revision
}

// findDownstream finds the variant's revisions among the downstream
// package's.
func findDownstream(ctx context.Context, st *store.Repository, pv *configv1alpha1.PackageVariant) (downstream, error) {
	revs, err := st.ListPackage(ctx, pv.Spec.Downstream.Package)
	if err != nil {
		return downstream{}, err
	}
	d := downstream{revs: revs}
	var adoptable *store.Revision
	for i := range revs {
		rev := &revs[i]
		owner := rev.Trailers[store.TrailerPackageVariantUID]
		switch {
		case rev.Lifecycle == porchv1alpha1.LifecycleDraft && owner == string(pv.UID):
			d.draft = rev
		case rev.Lifecycle == porchv1alpha1.LifecycleProposed && owner == string(pv.UID):
			d.proposal = rev
		case rev.Lifecycle == porchv1alpha1.LifecycleDraft && owner == "" && adoptable == nil:
			adoptable = rev
		case rev.Latest:
			d.published = rev
		}
	}
	if d.draft == nil && pv.Spec.AdoptionPolicy == configv1alpha1.AdoptionPolicyAdoptExisting {
		d.draft = adoptable // adopted: the next commit records the variant
	}
	return d, nil
}

// write commits the package onto the variant's draft, or creates one in
// the first free workspace packagevariant-N.
func (r *Reconciler) write(ctx context.Context, st *store.Repository, pv *configv1alpha1.PackageVariant, draft *store.Revision, revs []store.Revision, p *pkg.Package) (store.Revision, error) {
	trailers := store.Trailers{store.TrailerPackageVariant: pv.Namespace + "/" + pv.Name, store.TrailerPackageVariantUID: string(pv.UID)}
	if draft != nil {
		return st.WriteDraft(ctx, store.DraftWrite{Package: draft.Package, Workspace: draft.Workspace, Expected: draft.Commit, Contents: p,
			Message: updateSubject + pv.Name, Trailers: trailers})
	}
	used := map[string]bool{}
	for _, rev := range revs {
		used[rev.Workspace] = true
	}
	ws := ""
	for n := 1; ; n++ {
		if ws = "packagevariant-" + strconv.Itoa(n); !used[ws] {
			break
		}
	}
	// A new draft is pushed only if git has no revision of the package
	// this mirror has not seen: none of ours (written before a crash, or
	// by another replica) nor one to adopt. Otherwise the write fails with
	// a conflict, the mirror is fetched, and the retry decides again.
	return st.WriteDraft(ctx, store.DraftWrite{Package: pv.Spec.Downstream.Package, Workspace: ws, Contents: p,
		Message: createSubject + pv.Name, Trailers: trailers, CheckRemote: true})
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
	if err != nil || kf.UpstreamLock == nil || kf.UpstreamLock.Git == nil {
		return ""
	}
	return kf.UpstreamLock.Git.Commit
}

func renderStatus(p *pkg.Package) *kptfilev1.RenderStatus {
	kf, err := p.Kptfile()
	if err != nil || kf.Status == nil {
		return nil
	}
	return kf.Status.RenderStatus
}

// waiting reports what the variant waits for (Ready=False with reason)
// and comes back later. A remote that is slow or did not answer is
// reported as RepositoryUnavailable, whatever the step, and looked at again
// when it may have recovered, rather than holding a worker or backing off
// for minutes.
func (r *Reconciler) waiting(s *scope, reason string, err error) (ctrl.Result, error) {
	after, unavailable := store.RetryAfter(err)
	if unavailable {
		reason = RepositoryUnavailableReason
	}
	s.conditions = append(s.conditions, metav1.Condition{Type: configv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: reason, Message: err.Error()})
	s.waiting = &metav1.Condition{Type: configv1alpha1.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: reason, Message: err.Error()}
	if unavailable {
		return ctrl.Result{RequeueAfter: after}, nil
	}
	return ctrl.Result{RequeueAfter: 15 * time.Second}, nil
}

// reconcileDelete applies the deletion policy, then removes the finalizer:
// delete removes the variant's drafts (the PackageRevision controller
// removes them from git) and proposes deletion of its published
// revisions; orphan removes the owner references.
func (r *Reconciler) reconcileDelete(ctx context.Context, pv *configv1alpha1.PackageVariant) error {
	if !controllerutil.ContainsFinalizer(pv, configv1alpha1.PackageVariantFinalizer) {
		return nil
	}
	list := &porchv1alpha1.PackageRevisionList{}
	if err := r.List(ctx, list, client.InNamespace(pv.Namespace), client.MatchingLabels{configv1alpha1.PackageVariantLabel: pkgservice.LabelValue(pv.Name)}); err != nil {
		return err
	}
	var errs []error
	for i := range list.Items {
		pr := &list.Items[i]
		if !metav1.IsControlledBy(pr, pv) {
			continue
		}
		orphan := pv.Spec.DeletionPolicy == configv1alpha1.DeletionPolicyOrphan
		if !orphan && (pr.Spec.Lifecycle == porchv1alpha1.LifecycleDraft || pr.Spec.Lifecycle == porchv1alpha1.LifecycleProposed || pr.Spec.Lifecycle == "") {
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
		case pr.Spec.Lifecycle == porchv1alpha1.LifecyclePublished:
			pr.Spec.Lifecycle = porchv1alpha1.LifecycleDeletionProposed
			errs = append(errs, client.IgnoreNotFound(r.Patch(ctx, pr, patch)))
		case pr.Spec.Lifecycle == porchv1alpha1.LifecycleDeletionProposed:
		default:
			errs = append(errs, client.IgnoreNotFound(r.Delete(ctx, pr)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		r.Recorder.Eventf(pv, nil, "Warning", "DeleteFailed", "Delete", "%v", err)
		return err
	}
	if pv.Spec.DeletionPolicy != configv1alpha1.DeletionPolicyOrphan {
		// Keep the finalizer until the drafts are really gone from git;
		// say what holds them when their deletion fails.
		var pending []string
		for i := range list.Items {
			pr := &list.Items[i]
			if !metav1.IsControlledBy(pr, pv) || pr.Spec.Lifecycle != porchv1alpha1.LifecycleDraft && pr.Spec.Lifecycle != porchv1alpha1.LifecycleProposed {
				continue
			}
			cur := &porchv1alpha1.PackageRevision{}
			if err := r.Get(ctx, client.ObjectKeyFromObject(pr), cur); apierrors.IsNotFound(err) {
				continue
			} else if err != nil {
				return err
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
			pending = append(pending, msg)
		}
		if len(pending) > 0 {
			before := pv.DeepCopy()
			meta.SetStatusCondition(&pv.Status.Conditions, metav1.Condition{Type: configv1alpha1.ReadyCondition, Status: metav1.ConditionFalse,
				Reason: "Deleting", Message: "waiting for the drafts to leave git: " + strings.Join(pending, "; "), ObservedGeneration: pv.Generation})
			if err := r.Status().Patch(ctx, pv, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
				return err
			}
			return errDraftsPending
		}
	}
	patch := client.MergeFrom(pv.DeepCopy())
	controllerutil.RemoveFinalizer(pv, configv1alpha1.PackageVariantFinalizer)
	return client.IgnoreNotFound(r.Patch(ctx, pv, patch))
}

// ontoPublished brings a draft onto the latest published revision of its
// package when that revision is not the one the draft forked from
// (someone published another revision meanwhile): the draft then keeps
// what was published, and publishing it reverts nothing. It returns the
// draft's contents, merged when needed.
func (r *Reconciler) ontoPublished(ctx context.Context, st *store.Repository, pv *configv1alpha1.PackageVariant, draft store.Revision, contents *pkg.Package, published store.Revision) (*pkg.Package, error) {
	fork, err := st.DraftFork(ctx, draft)
	if err != nil || fork == "" {
		return contents, err
	}
	// Usually the package is what it was at the fork (other packages
	// were published since): the trees say so without reading files.
	if same, err := st.SamePackage(ctx, draft.Package, fork, published.Commit); err != nil || same {
		return contents, err
	}
	forked, err := st.Read(ctx, store.Revision{Package: draft.Package, Commit: fork})
	if errors.Is(err, store.ErrNotFound) {
		return contents, nil // a new package when the draft was made: nothing to bring it onto
	}
	if err != nil {
		return nil, err
	}
	latest, err := st.Read(ctx, published)
	if err != nil {
		return nil, err
	}
	merged, _, err := engine.Merge(contents, forked, latest)
	if err != nil {
		return nil, fmt.Errorf("bringing draft %s onto the published revision v%d: %w", draft.Workspace, published.Revision, err)
	}
	r.Recorder.Eventf(pv, nil, "Normal", "DraftRebased", "Write", "draft %s/%s brought onto the published revision v%d", draft.Package, draft.Workspace, published.Revision)
	return merged, nil
}

// Subjects of the commits the variant writes.
const (
	createSubject = "Create from PackageVariant "
	updateSubject = "Update from PackageVariant "
)

// othersCommits lists the commits of a draft (or proposal) of the variant
// that neither the variant nor the PackageRevision controller wrote: a
// person's push, with scion rpkg push or plain git.
func (r *Reconciler) othersCommits(ctx context.Context, pv *configv1alpha1.PackageVariant, pr *porchv1alpha1.PackageRevision) ([]string, error) {
	_, st, err := r.open(ctx, pv.Namespace, pr.Spec.Repository)
	if err != nil {
		return nil, err
	}
	rev, err := st.Get(ctx, pr.Spec.PackageName, pr.Spec.WorkspaceName, 0)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	history, err := st.DraftHistory(ctx, rev)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range history {
		ours := strings.HasPrefix(c.Subject, createSubject+pv.Name) || strings.HasPrefix(c.Subject, updateSubject+pv.Name) ||
			strings.HasPrefix(c.Subject, pkgservice.ConditionsSubject)
		if !ours {
			out = append(out, c.String())
		}
	}
	return out, nil
}

// errDraftsPending makes a deleting variant look again (with backoff)
// until its drafts are gone.
var errDraftsPending = errors.New("waiting for the variant's drafts to be removed from git")

// patchStatus is the one place a PackageVariant's status is written.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope, reconcileErr error) error {
	pv := s.pv
	before := pv.DeepCopy()
	gen := pv.Generation
	for _, c := range s.conditions {
		c.ObservedGeneration = gen
		meta.SetStatusCondition(&pv.Status.Conditions, c)
	}
	stalled := metav1.Condition{Type: configv1alpha1.StalledCondition, Status: metav1.ConditionFalse, Reason: "Progressing", ObservedGeneration: gen}
	if s.stalled != nil {
		stalled = *s.stalled
		stalled.ObservedGeneration = gen
		meta.SetStatusCondition(&pv.Status.Conditions, metav1.Condition{Type: configv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: stalled.Reason, Message: stalled.Message, ObservedGeneration: gen})
	}
	meta.SetStatusCondition(&pv.Status.Conditions, stalled)
	reconciling := metav1.Condition{Type: configv1alpha1.ReconcilingCondition, Status: metav1.ConditionFalse, Reason: "Done", ObservedGeneration: gen}
	if reconcileErr != nil {
		reconciling = metav1.Condition{Type: configv1alpha1.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: "Retrying", Message: reconcileErr.Error(), ObservedGeneration: gen}
		meta.SetStatusCondition(&pv.Status.Conditions, metav1.Condition{Type: configv1alpha1.ReadyCondition, Status: metav1.ConditionUnknown, Reason: "Retrying", Message: reconcileErr.Error(), ObservedGeneration: gen})
	}
	if reconcileErr == nil && s.waiting != nil {
		reconciling = *s.waiting
		reconciling.ObservedGeneration = gen
	}
	meta.SetStatusCondition(&pv.Status.Conditions, reconciling)
	if reconcileErr == nil && s.waiting == nil {
		pv.Status.ObservedGeneration = gen
		if s.targets != nil {
			pv.Status.DownstreamTargets = s.targets
		}
	}
	if apiequality.Semantic.DeepEqual(before.Status, pv.Status) {
		return reconcileErr
	}
	if err := r.Status().Patch(ctx, pv, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return errors.Join(reconcileErr, err)
	}
	return reconcileErr
}

// noExecRuntime runs builtin and container functions but not exec ones:
// a variant's pipeline comes from packages and PackageVariants, not from
// the operator of the controller.
func noExecRuntime() *fn.Runtime {
	rt := builtin.NewRuntime()
	rt.DisableExec = true
	return rt
}
