package packagevariantset

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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
	"sigs.k8s.io/controller-runtime/pkg/source"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/kindwatch"
	"github.com/scion-dev/scion/internal/metrics"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/variantset"
)

// Field indexes of PackageVariantSets, so that an event on another object
// enqueues only the sets it concerns.
const (
	// UpstreamIndex holds "<repository>/<package>" of each of the set's
	// upstreams.
	UpstreamIndex = "spec.upstream.repoPackage"
	// RepositoryIndex holds the repository names a set names statically
	// (repository lists, downstream.repo) and AnyRepository for sets that
	// select repositories or compute their names.
	RepositoryIndex = "spec.targets.repositories"
	// KindIndex holds kindKey of each objectSelector's kind.
	KindIndex = "spec.targets.objectSelector.kind"
	// OwnerIndex indexes PackageVariants by the UID of the set that owns
	// them.
	OwnerIndex = "metadata.ownerReferences.packageVariantSet"
)

// writeConcurrency bounds the PackageVariant writes one reconcile has in
// flight.
const writeConcurrency = 16

// maxErrors bounds the write errors one status message lists.
const maxErrors = 20

// noKindRetry is how often a set selecting a kind the cluster does not
// serve looks again.
const noKindRetry = time.Minute

// AnyRepository is the RepositoryIndex value of sets any Repository may
// concern.
const AnyRepository = "*"

// Options configure the Reconciler.
type Options struct {
	Workers int
	// Shard is the share of PackageVariantSets this replica reconciles;
	// the variants a set generates carry its shard.
	Shard reconciler.Shard
}

// Reconciler reconciles PackageVariantSets.
type Reconciler struct {
	client.Client
	// APIReader reads around the cache, to tell a variant the set created
	// a moment ago (not cached yet) from someone else's.
	APIReader client.Reader
	// Status writes the status (the manager's StatusWriter, shared by
	// its controllers); one of this controller's own when nil.
	Status *reconciler.StatusWriter
	// Cache opens repositories to resolve the upstream.
	Cache     *repocache.Cache
	Evaluator *variantset.Evaluator
	Recorder  recorder.EventRecorder
	Options   Options
	// Objects are the per-namespace caches of the objects sets select,
	// and the kinds they may select.
	Objects *kindwatch.Caches

	source     *clusterSource
	expansions expansions
	// wake brings sets to their own reconcile when a repair cannot
	// decide alone.
	wake chan event.GenericEvent
}

// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagevariantsets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagevariantsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagevariantsets/finalizers,verbs=update
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagevariants,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=repositories,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=internal.scion.dev,resources=packagerevisions,verbs=get;list;watch

// SetupWithManager registers the controller and its indexes.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Evaluator == nil || r.Recorder == nil || r.APIReader == nil || r.Objects == nil || r.Cache == nil {
		return errors.New("packagevariantset controller: APIReader, Cache, Evaluator, Objects and Recorder are required")
	}
	if r.Status == nil {
		r.Status = reconciler.NewStatusWriter(mgr.GetClient(), r.APIReader, mgr.GetCache())
	}
	idx := reconciler.NamespacedIndexer{Informers: mgr.GetCache()}
	if err := idx.IndexField(ctx, &configv1alpha2.PackageVariantSet{}, UpstreamIndex, func(o client.Object) []string {
		s := o.(*configv1alpha2.PackageVariantSet)
		var out []string
		for _, u := range s.Spec.AllUpstreams() {
			out = append(out, u.Repo+"/"+u.Package)
		}
		return out
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &configv1alpha2.PackageVariantSet{}, RepositoryIndex, indexRepositories); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &configv1alpha2.PackageVariantSet{}, KindIndex, indexKinds); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &configv1alpha1.PackageVariant{}, OwnerIndex, func(o client.Object) []string {
		if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == "PackageVariantSet" {
			return []string{string(ref.UID)}
		}
		return nil
	}); err != nil {
		return err
	}
	r.wake = make(chan event.GenericEvent, wakeBuffer)
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("packagevariantset").
		// A person's edit of a set first, then what reaches many sets.
		Watches(&configv1alpha2.PackageVariantSet{}, reconciler.EnqueueAt(reconciler.Fixed(reconciler.PriorityPerson)),
			builder.WithPredicates(r.Options.Shard.Predicate(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})))).
		WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{})).
		Watches(&porchv1alpha1.PackageRevision{}, reconciler.WithPriority(handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			pr := o.(*porchv1alpha1.PackageRevision)
			return setsFor(ctx, mgr.GetClient(), pr.Namespace, UpstreamIndex, pr.Spec.Repository+"/"+pr.Spec.PackageName)
		}), reconciler.Fixed(reconciler.PriorityFanOut)), builder.WithPredicates(revisionChanged{})).
		Watches(&configv1alpha1.Repository{}, reconciler.WithPriority(handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return setsFor(ctx, mgr.GetClient(), o.GetNamespace(), RepositoryIndex, o.GetName(), AnyRepository)
		}), reconciler.Fixed(reconciler.PriorityFanOut)), builder.WithPredicates(metadataChanged{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.Options.Workers)}).
		Build(r)
	if err != nil {
		return err
	}
	r.source = &clusterSource{client: mgr.GetClient(), apiReader: r.APIReader, kinds: &kindwatch.Watches{Ctrl: c, Caches: r.Objects}}
	if err := (repairer{r}).setup(mgr, r.Options.Workers); err != nil {
		return err
	}
	return (&readiness{Client: mgr.GetClient(), APIReader: r.APIReader, Status: r.Status, Shard: r.Options.Shard, spacer: reconciler.Spacer{Interval: recountInterval}}).setup(mgr, r.Options.Workers)
}

func indexRepositories(o client.Object) []string {
	s := o.(*configv1alpha2.PackageVariantSet)
	var out []string
	for _, t := range s.Spec.Targets {
		if t.Template != nil && t.Template.Downstream != nil {
			d := t.Template.Downstream
			if d.RepoExpr != nil {
				return []string{AnyRepository}
			}
			if d.Repo != nil {
				out = append(out, *d.Repo)
				continue
			}
		}
		if t.Repositories == nil {
			// Selected objects name repositories that can be any.
			return []string{AnyRepository}
		}
		for _, r := range t.Repositories {
			out = append(out, r.Name)
		}
	}
	return out
}

func indexKinds(o client.Object) []string {
	s := o.(*configv1alpha2.PackageVariantSet)
	var out []string
	for _, t := range s.Spec.Targets {
		if os := t.ObjectSelector; os != nil {
			if gv, err := schema.ParseGroupVersion(os.APIVersion); err == nil {
				out = append(out, kindKey(gv.WithKind(os.Kind)))
			}
		}
	}
	return out
}

func kindKey(gvk schema.GroupVersionKind) string {
	return gvk.Group + "/" + gvk.Version + "/" + gvk.Kind
}

// variantChanged passes the events of a set's PackageVariants that may
// need a repair: deletion, spec or label changes (someone edited a
// generated variant, or the set did). Creations are the set's own. Ready
// transitions only change its count: the readiness reconciler handles
// them.
type variantChanged struct{ predicate.Funcs }

// Create implements predicate.Predicate.
func (variantChanged) Create(event.CreateEvent) bool { return false }

// Update implements predicate.Predicate.
func (variantChanged) Update(e event.UpdateEvent) bool {
	o, n := e.ObjectOld.(*configv1alpha1.PackageVariant), e.ObjectNew.(*configv1alpha1.PackageVariant)
	return o.Generation != n.Generation || !maps.Equal(o.Labels, n.Labels)
}

// revisionChanged passes PackageRevision events that can change what a
// set resolves as its upstream (not the status churn of drafts).
type revisionChanged struct{ predicate.Funcs }

// Update implements predicate.Predicate.
func (revisionChanged) Update(e event.UpdateEvent) bool {
	o, n := e.ObjectOld.(*porchv1alpha1.PackageRevision), e.ObjectNew.(*porchv1alpha1.PackageRevision)
	return o.Spec.Lifecycle != n.Spec.Lifecycle || o.Spec.Revision != n.Spec.Revision ||
		!apiequality.Semantic.DeepEqual(o.Labels, n.Labels) || !apiequality.Semantic.DeepEqual(o.Annotations, n.Annotations)
}

// metadataChanged passes Repository events that change what templates see.
type metadataChanged struct{ predicate.Funcs }

// Update implements predicate.Predicate.
func (metadataChanged) Update(e event.UpdateEvent) bool {
	return !apiequality.Semantic.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
		!apiequality.Semantic.DeepEqual(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations())
}

func isReady(pv *configv1alpha1.PackageVariant) bool {
	return configv1alpha1.ReadyAt(pv.Status.Conditions, pv.Generation, pv.Status.ObservedGeneration)
}

// scope holds what one reconcile learns; patchStatus writes it.
type scope struct {
	pvs *configv1alpha2.PackageVariantSet
	// upstreams are the PackageRevisions of the set's upstreams
	// (reconcileUpstream), in the order of AllUpstreams.
	upstreams []variantset.UpstreamRevision
	// variants are the desired PackageVariants (reconcileExpand).
	variants []*configv1alpha1.PackageVariant
	// summary counts this reconcile's writes (reconcileVariants).
	summary *configv1alpha2.Summary
	// empty says, for each target that selects nothing, which
	// (reconcileExpand; expanded says the expansion ran).
	empty    []string
	expanded bool
	// notReady names the desired PackageVariants that are not Ready yet
	// (created or updated by this reconcile, or not Ready for their
	// generation), sorted.
	notReady []string
}

// Reconcile makes a set's PackageVariants match its targets (one variant
// edited or deleted by someone is the repairer's: repair.go).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pvs := &configv1alpha2.PackageVariantSet{}
	if err := r.Get(ctx, req.NamespacedName, pvs); err != nil || !r.Options.Shard.Owns(pvs) {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{pvs: pvs}
	if !pvs.DeletionTimestamp.IsZero() {
		return reconciler.Run(ctx, s, r.reconcileDelete).Return(nil)
	}
	out := reconciler.Run(ctx, s, r.reconcileFinalizer, r.reconcileValid, r.reconcileUpstream, r.reconcileExpand, r.reconcileVariants)
	err := r.patchStatus(ctx, s, out)
	if errors.Is(err, reconciler.ErrStale) {
		// The spec changed while reconciling: that change brings the set
		// back; nothing failed.
		return ctrl.Result{}, nil
	}
	return out.Return(err)
}

// reconcileFinalizer adds the finalizer before any PackageVariant is
// written.
func (r *Reconciler) reconcileFinalizer(ctx context.Context, s *scope) (ctrl.Result, error) {
	return ctrl.Result{}, reconciler.AddFinalizer(ctx, r.Client, s.pvs, configv1alpha2.PackageVariantSetFinalizer)
}

// reconcileValid stalls a set whose spec is invalid (templates that do not
// compile, fields the CRD cannot check alone).
func (r *Reconciler) reconcileValid(_ context.Context, s *scope) (ctrl.Result, error) {
	if errs := r.Evaluator.Validate(s.pvs); len(errs) > 0 {
		return ctrl.Result{}, reconciler.Stall(configv1alpha1.ValidationErrorReason, "%s", errs.ToAggregate().Error())
	}
	return ctrl.Result{}, nil
}

// upstreamRetry is how soon a set whose upstream git has but no
// PackageRevision shows yet looks again (the object's creation brings it
// back sooner).
const upstreamRetry = 5 * time.Second

// reconcileUpstream resolves each of the set's upstreams in git, as its
// PackageVariants will (pkgservice.ResolveUpstream), and records the
// PackageRevisions that show them, whose metadata templates read.
func (r *Reconciler) reconcileUpstream(ctx context.Context, s *scope) (ctrl.Result, error) {
	ups := s.pvs.Spec.AllUpstreams()
	s.upstreams = make([]variantset.UpstreamRevision, len(ups))
	for i := range ups {
		u, path := &ups[i], s.pvs.Spec.UpstreamPath(i)
		repo, _, rev, err := pkgservice.FindUpstream(ctx, r.Cache, r.Client, s.pvs.Namespace, path, u, configv1alpha1.UpstreamNotFoundReason)
		if err != nil {
			return ctrl.Result{}, err
		}
		pr := &porchv1alpha1.PackageRevision{}
		name := pkgservice.ObjectName(u.Repo, rev.Package, rev.Workspace)
		if err := r.Get(ctx, types.NamespacedName{Namespace: s.pvs.Namespace, Name: name}, pr); apierrors.IsNotFound(err) {
			// Git is ahead of the objects (published by a writer outside the
			// Repository's sync): ask it to sync rather than wait a period.
			if err := pkgservice.RequestSync(ctx, r.Client, repo); err != nil {
				return ctrl.Result{}, err
			}
			return ctrl.Result{}, reconciler.Wait(upstreamRetry, configv1alpha1.UpstreamNotFoundReason, "%s: the upstream revision is in git, its PackageRevision %s is not shown yet (Repository %s asked to sync)", path, name, u.Repo)
		} else if err != nil {
			return ctrl.Result{}, err
		}
		s.upstreams[i] = variantset.UpstreamRevision{Object: pr, Revision: pr.Spec.Revision}
	}
	return ctrl.Result{}, nil
}

// reconcileExpand evaluates the set's targets; it records the desired
// PackageVariants. A target its author must change stalls the set; a
// cluster read that failed is retried.
func (r *Reconciler) reconcileExpand(ctx context.Context, s *scope) (ctrl.Result, error) {
	metrics.SetExpansions.WithLabelValues(s.pvs.Namespace, s.pvs.Name).Inc()
	expanded, err := r.Evaluator.Expand(ctx, variantset.Input{Set: s.pvs, Upstreams: s.upstreams, Source: r.source})
	if err != nil {
		reason, stalled := expandFailure(err)
		if !stalled {
			return ctrl.Result{}, err // the cluster could not be read: backoff
		}
		st := reconciler.Stall(reason, "%v", err)
		if reason == configv1alpha2.NoMatchingTargetsReason {
			st.Retry = noKindRetry // no event says a kind was installed
		}
		return ctrl.Result{}, st
	}
	if len(expanded.Empty) > 0 && !meta.IsStatusConditionTrue(s.pvs.Status.Conditions, configv1alpha2.NoTargetsCondition) {
		// An event on the transition; the condition says it for as long
		// as it holds.
		r.Recorder.Eventf(s.pvs, nil, "Warning", configv1alpha2.NoTargetsReason, "Expand", "%s", strings.Join(expanded.Empty, "; "))
	}
	s.empty, s.expanded = expanded.Empty, true
	s.variants = expanded.Variants
	r.expansions.put(s.pvs, expanded.Variants)
	return ctrl.Result{}, nil
}

// expandFailure classifies an expansion error: the set stalls (with a
// reason) when its author must change something; reading the cluster
// failed otherwise, which is retried.
func expandFailure(err error) (reason string, stalled bool) {
	switch {
	case meta.IsNoMatchError(err):
		return configv1alpha2.NoMatchingTargetsReason, true
	case errors.Is(err, kindwatch.ErrNotAllowed):
		return configv1alpha2.KindNotAllowedReason, true
	case errors.Is(err, errReadingCluster):
		return "", false
	case errors.Is(err, variantset.ErrDuplicateDownstream):
		return configv1alpha2.DuplicateDownstreamReason, true
	case errors.Is(err, variantset.ErrExpression):
		return configv1alpha2.ExpressionFailedReason, true
	default:
		return configv1alpha2.UnexpectedErrorReason, true
	}
}

// reconcileVariants makes the existing PackageVariants of the set match
// the desired ones: create what is missing, update specs in place, delete
// what is no longer desired. A variant of a desired name that the set
// does not own is an error, not something to take over. It records the
// summary and the variants not Ready.
func (r *Reconciler) reconcileVariants(ctx context.Context, s *scope) (ctrl.Result, error) {
	return ctrl.Result{}, r.ensure(ctx, s, s.variants)
}

// ensure makes the existing PackageVariants of the set match desired:
// create what is missing, update specs in place, delete what is no longer
// desired. A variant of a desired name that the set does not own is an
// error, not something to take over.
func (r *Reconciler) ensure(ctx context.Context, s *scope, desired []*configv1alpha1.PackageVariant) error {
	pvs := s.pvs
	list := &configv1alpha1.PackageVariantList{}
	// The cache's own objects, read only: a set of 10,000 variants does
	// not copy them all for the length of its fan-out.
	if err := r.List(ctx, list, client.InNamespace(pvs.Namespace), client.MatchingFields{OwnerIndex: string(pvs.UID)}, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing the set's PackageVariants: %w", err)
	}
	existing := make(map[string]*configv1alpha1.PackageVariant, len(list.Items))
	for i := range list.Items {
		existing[list.Items[i].Name] = &list.Items[i]
	}
	sum := &configv1alpha2.Summary{Desired: len(desired)}
	s.summary = sum
	// The writes go out writeConcurrency at a time: a set of a thousand
	// variants is not a thousand round trips in a row.
	var (
		mu       sync.Mutex
		errs     []error
		deleting []string
		wg       sync.WaitGroup
		sem      = make(chan struct{}, writeConcurrency)
	)
	write := func(count *int, f func() error) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := f()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, errNothingWritten):
			case err != nil:
				errs = append(errs, err)
			case count != nil:
				*count++
			}
		}()
	}
	for _, want := range byDownstream(desired) {
		cur, ok := existing[want.Name]
		delete(existing, want.Name)
		if !ok {
			s.notReady = append(s.notReady, want.Name)
			write(&sum.Created, func() error {
				_, err := r.createVariant(ctx, pvs, want)
				return err
			})
			continue
		}
		if !cur.DeletionTimestamp.IsZero() {
			// Undesired a moment ago, or deleted by hand, and still
			// applying its deletion policy: it is created again once it
			// is gone (its deletion enqueues the set). Not a failure.
			mu.Lock()
			deleting = append(deleting, cur.Name)
			mu.Unlock()
			s.notReady = append(s.notReady, cur.Name)
			continue
		}
		if inSync(pvs, cur, want) {
			if isReady(cur) {
				sum.Ready++
			} else {
				s.notReady = append(s.notReady, cur.Name)
			}
			continue
		}
		s.notReady = append(s.notReady, cur.Name)
		write(&sum.Updated, func() error { return r.updateVariant(ctx, pvs, cur, want) })
	}
	for _, pv := range byDownstream(slices.Collect(maps.Values(existing))) {
		if !pv.DeletionTimestamp.IsZero() {
			continue
		}
		write(&sum.Deleted, func() error {
			if err := r.Delete(ctx, pv); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting PackageVariant %s: %w", pv.Name, err)
			}
			return nil
		})
	}
	wg.Wait()
	slices.Sort(s.notReady)
	sum.Upstreams = upstreamSummary(&pvs.Spec, desired, s.notReady)
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	if sum.Created+sum.Updated+sum.Deleted > 0 {
		r.Recorder.Eventf(pvs, nil, "Normal", "Reconciled", "Ensure", "PackageVariants: %d desired, %d created, %d updated, %d deleted", sum.Desired, sum.Created, sum.Updated, sum.Deleted)
	}
	if len(errs) > maxErrors {
		errs = append(errs[:maxErrors], fmt.Errorf("and %d more errors", len(errs)-maxErrors))
	}
	if len(errs) == 0 {
		if len(deleting) > 0 {
			slices.Sort(deleting)
			return reconciler.Wait(0, configv1alpha2.VariantDeletingReason, "PackageVariant %s is being deleted; the set creates it again when it is gone", strings.Join(deleting, ", "))
		}
		return nil
	}
	err := errors.Join(errs...)
	if !slices.ContainsFunc(errs, func(e error) bool { return !errors.Is(e, errNameTaken) }) {
		// Only names someone else has: retrying at once cannot help, and
		// no event says when they are free.
		stalled := reconciler.Stall(configv1alpha2.VariantNameTakenReason, "%v", err)
		stalled.Retry = noKindRetry
		return stalled
	}
	r.Recorder.Eventf(pvs, nil, "Warning", configv1alpha2.UnexpectedErrorReason, "Ensure", "%v", err)
	return err
}

// inSync says whether cur, a variant of the set, is what the set wants.
func inSync(pvs *configv1alpha2.PackageVariantSet, cur, want *configv1alpha1.PackageVariant) bool {
	return apiequality.Semantic.DeepEqual(cur.Spec, want.Spec) && cur.Labels[configv1alpha2.PackageVariantSetLabel] == string(pvs.UID) &&
		cur.Labels[configv1alpha1.ShardLabel] == want.Labels[configv1alpha1.ShardLabel]
}

// createVariant creates want, owned by the set, and returns the server's
// answer. want is not changed: the write goes through a copy, so the
// set's expansion does not keep the server's whole answer (managed
// fields included) for each of its variants until its reconcile ends. A
// variant of that name the set already owns (created a moment ago, not
// cached yet) is errNothingWritten; one it does not own is errNameTaken.
func (r *Reconciler) createVariant(ctx context.Context, pvs *configv1alpha2.PackageVariantSet, want *configv1alpha1.PackageVariant) (*configv1alpha1.PackageVariant, error) {
	obj := want.DeepCopy()
	obj.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(pvs, configv1alpha2.GroupVersion.WithKind("PackageVariantSet"))}
	err := r.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		if r.ownedLive(ctx, pvs, want) {
			return nil, errNothingWritten
		}
		err = fmt.Errorf("PackageVariant %s exists and is not owned by this set: %w", want.Name, errNameTaken)
	}
	if err != nil {
		return nil, fmt.Errorf("creating PackageVariant %s: %w", want.Name, err)
	}
	return obj, nil
}

// updateVariant sets cur's spec and the set's labels to want's (a merge
// patch). cur is not changed and may be the cache's own object: the
// write goes through an object of the parts the patch sets, dropped with
// the server's answer.
func (r *Reconciler) updateVariant(ctx context.Context, pvs *configv1alpha2.PackageVariantSet, cur, want *configv1alpha1.PackageVariant) error {
	obj := &configv1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Name: cur.Name, Namespace: cur.Namespace, Labels: maps.Clone(cur.Labels)},
		Spec:       *want.Spec.DeepCopy(),
	}
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	obj.Labels[configv1alpha2.PackageVariantSetLabel] = string(pvs.UID)
	if shard := want.Labels[configv1alpha1.ShardLabel]; shard != "" {
		obj.Labels[configv1alpha1.ShardLabel] = shard
	} else {
		delete(obj.Labels, configv1alpha1.ShardLabel)
	}
	if err := r.Patch(ctx, obj, reconciler.MergeFromParts(cur, specAndLabels, false)); err != nil {
		return fmt.Errorf("updating PackageVariant %s: %w", cur.Name, err)
	}
	return nil
}

// specAndLabels is what updateVariant changes of a variant.
func specAndLabels(o client.Object) any {
	pv := o.(*configv1alpha1.PackageVariant)
	type meta struct {
		Labels map[string]string `json:"labels,omitempty"`
	}
	return struct {
		Metadata meta                              `json:"metadata"`
		Spec     configv1alpha1.PackageVariantSpec `json:"spec"`
	}{meta{pv.Labels}, pv.Spec}
}

// byDownstream orders variants by downstream repository (then name), so
// that the writes of one repository's variants go out together: their
// drafts then reach the repository within a moment of each other and share
// its pushes and its lock write, where a set's order (target by target)
// would spread them over the whole expansion.
func byDownstream(pvs []*configv1alpha1.PackageVariant) []*configv1alpha1.PackageVariant {
	out := slices.Clone(pvs)
	repo := func(pv *configv1alpha1.PackageVariant) string {
		if pv.Spec.Downstream == nil {
			return ""
		}
		return pv.Spec.Downstream.Repo
	}
	slices.SortFunc(out, func(a, b *configv1alpha1.PackageVariant) int {
		return cmp.Or(strings.Compare(repo(a), repo(b)), strings.Compare(a.Name, b.Name))
	})
	return out
}

// errNameTaken marks a desired PackageVariant whose name another owner
// has.
var errNameTaken = errors.New("the name is taken")

// ownedLive reads pv from the API server and says whether the set owns it.
func (r *Reconciler) ownedLive(ctx context.Context, pvs *configv1alpha2.PackageVariantSet, pv *configv1alpha1.PackageVariant) bool {
	live := &configv1alpha1.PackageVariant{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(pv), live); err != nil {
		return false
	}
	return ownedBy(live, pvs)
}

// reconcileDelete deletes the set's PackageVariants (each then applies its
// own deletion policy) and keeps the finalizer until they are gone.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	pvs := s.pvs
	r.expansions.forget(pvs.UID)
	metrics.SetExpansions.DeleteLabelValues(pvs.Namespace, pvs.Name)
	if !controllerutil.ContainsFinalizer(pvs, configv1alpha2.PackageVariantSetFinalizer) {
		return ctrl.Result{}, nil
	}
	list := &configv1alpha1.PackageVariantList{}
	if err := r.List(ctx, list, client.InNamespace(pvs.Namespace), client.MatchingFields{OwnerIndex: string(pvs.UID)}); err != nil {
		return ctrl.Result{}, err
	}
	for i := range list.Items {
		pv := &list.Items[i]
		if pv.DeletionTimestamp.IsZero() {
			if err := r.Delete(ctx, pv); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, fmt.Errorf("deleting PackageVariant %s: %w", pv.Name, err)
			}
		}
	}
	if len(list.Items) > 0 {
		// Each variant's deletion enqueues the set again (Owns).
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, reconciler.RemoveFinalizer(ctx, r.Client, pvs, configv1alpha2.PackageVariantSetFinalizer)
}

// errNothingWritten is a write that found its work done already (by an
// earlier reconcile the cache had not shown yet): no error, and not
// counted.
var errNothingWritten = errors.New("nothing written")
