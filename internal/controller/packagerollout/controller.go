package packagerollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/deployed"
	"github.com/scion-dev/scion/internal/kindwatch"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/rollout"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/variant"
)

// RevisionIndex indexes PackageRollouts by the PackageRevisions their
// waves hold, so a revision's event finds exactly its rollouts.
const RevisionIndex = "status.waves.revisions"

// publishConcurrency bounds the publishes one reconcile has in flight.
const publishConcurrency = 16

// Options configure the Reconciler.
type Options struct {
	// Workers is the number of PackageRollouts reconciled at once.
	Workers int
	// Shard is the share of PackageRollouts this replica reconciles.
	Shard reconciler.Shard
}

// Reconciler reconciles PackageRollouts.
type Reconciler struct {
	client.Client
	// APIReader reads the targets a rollout freezes, a target the cache
	// does not show, and re-reads after a conflicting status write.
	APIReader client.Reader
	// Status writes the status (the manager's StatusWriter, shared by
	// its controllers); one of this controller's own when nil.
	Status   *reconciler.StatusWriter
	Cache    *repocache.Cache
	Service  *pkgservice.Service
	Recorder recorder.EventRecorder
	Options  Options
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Objects are the per-namespace caches of the objects health
	// expressions read, and the kinds they may read.
	Objects *kindwatch.Caches

	watches *kindwatch.Watches
}

// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagerollouts,verbs=get;list;watch
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagerollouts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=internal.scion.dev,resources=packagerevisions,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=porch.kpt.dev,resources=packagerevisions/approval,verbs=update
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=repositories,verbs=get;list;watch
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagevariants,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=config.porch.kpt.dev,resources=packagevariantsets,verbs=get;list;watch

// SetupWithManager registers the controller: rollouts on spec changes,
// and the PackageRevisions of their waves (through RevisionIndex).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.APIReader == nil || r.Cache == nil || r.Service == nil || r.Recorder == nil || r.Objects == nil {
		return errors.New("packagerollout controller: APIReader, Cache, Objects, Service and Recorder are required")
	}
	if r.Status == nil {
		r.Status = reconciler.NewStatusWriter(mgr.GetClient(), r.APIReader, mgr.GetCache())
	}
	idx := reconciler.NamespacedIndexer{Informers: mgr.GetCache()}
	if err := idx.IndexField(ctx, &configv1alpha1.PackageRollout{}, HealthKindIndex, func(o client.Object) []string {
		h := o.(*configv1alpha1.PackageRollout).Spec.Health
		switch {
		case h != nil && h.Object != nil:
			return []string{healthKind(h.Object.APIVersion, h.Object.Kind)}
		case h != nil && h.Engine != "":
			return []string{engineKey(h.Engine)}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &configv1alpha1.PackageRollout{}, RevisionIndex, func(o client.Object) []string {
		var out []string
		for _, w := range o.(*configv1alpha1.PackageRollout).Status.Waves {
			out = append(out, w.Revisions...)
		}
		return out
	}); err != nil {
		return err
	}
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("packagerollout").
		// A person's approval, pause or abort first.
		Watches(&configv1alpha1.PackageRollout{}, reconciler.EnqueueAt(reconciler.Fixed(reconciler.PriorityPerson)),
			builder.WithPredicates(r.Options.Shard.Predicate(predicate.GenerationChangedPredicate{}))).
		Watches(&porchv1alpha1.PackageRevision{}, handler.EnqueueRequestsFromMapFunc(r.requestsForRevision)).
		// What a target cluster runs (read by the repository
		// controller): the rollouts judging health by its engine.
		Watches(&configv1alpha1.Repository{}, handler.EnqueueRequestsFromMapFunc(r.requestsForCluster),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return false },
				DeleteFunc:  func(event.DeleteEvent) bool { return false },
				GenericFunc: func(event.GenericEvent) bool { return false },
				UpdateFunc: func(e event.UpdateEvent) bool {
					return !apiequality.Semantic.DeepEqual(e.ObjectOld.(*configv1alpha1.Repository).Status.Cluster, e.ObjectNew.(*configv1alpha1.Repository).Status.Cluster)
				},
			})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.Options.Workers)}).
		Build(r)
	if err != nil {
		return err
	}
	r.watches = &kindwatch.Watches{Ctrl: c, Caches: r.Objects}
	return nil
}

// HealthKindIndex indexes PackageRollouts by the kind of their health
// object ("<apiVersion>/<kind>"), so an event of such an object finds the
// rollouts reading it.
const HealthKindIndex = "spec.health.object.kind"

func healthKind(apiVersion, kind string) string { return apiVersion + "/" + kind }

// requestsForHealthObject maps a health object to the rollouts of its
// namespace that read its kind.
func (r *Reconciler) requestsForHealthObject(ctx context.Context, o client.Object) []reconcile.Request {
	gvk := o.GetObjectKind().GroupVersionKind()
	list := &configv1alpha1.PackageRolloutList{}
	if err := r.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{HealthKindIndex: healthKind(gvk.GroupVersion().String(), gvk.Kind)}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// engineKey is the HealthKindIndex value of rollouts judging health by
// a GitOps engine.
func engineKey(e configv1alpha1.HealthEngine) string { return "engine/" + string(e) }

// requestsForCluster maps a Repository whose cluster was read to the
// rollouts of its namespace that judge health by Flux.
func (r *Reconciler) requestsForCluster(ctx context.Context, o client.Object) []reconcile.Request {
	list := &configv1alpha1.PackageRolloutList{}
	if err := r.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{HealthKindIndex: engineKey(configv1alpha1.HealthEngineFlux)}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		ro := &list.Items[i]
		conds := ro.Status.Conditions
		if ro.Status.StartedAt == nil || apimeta.IsStatusConditionTrue(conds, configv1alpha1.ReadyCondition) || apimeta.IsStatusConditionTrue(conds, configv1alpha1.StalledCondition) {
			continue // not started, finished or stopped: what a cluster runs changes nothing
		}
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ro)})
	}
	return out
}

// requestsForRevision maps a PackageRevision to the rollouts holding it.
func (r *Reconciler) requestsForRevision(ctx context.Context, o client.Object) []reconcile.Request {
	list := &configv1alpha1.PackageRolloutList{}
	if err := r.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{RevisionIndex: o.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// scope holds what the steps of one reconcile learn.
type scope struct {
	ro  *configv1alpha1.PackageRollout
	now time.Time
	// started is set when this reconcile froze the targets into waves.
	started bool
	waves   []configv1alpha1.WaveStatus
	// revs is what the cluster shows of the rollout's revisions, and
	// objects their PackageRevisions (those that exist).
	revs    map[string]rollout.Revision
	objects map[string]*porchv1alpha1.PackageRevision
	// decision is what the rollout does now.
	decision *rollout.Decision
	// rolledBack counts, by wave, the targets rolled back so far.
	rolledBack map[string]int32
	// held names the PackageVariants a rollback holds on the upstream
	// revision before (HoldUpstreamAnnotation).
	held []string
	// kept names the revisions a rollback leaves published: nothing was
	// published before them.
	kept []string
}

// Reconcile moves one rollout on.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ro := &configv1alpha1.PackageRollout{}
	if err := r.Get(ctx, req.NamespacedName, ro); err != nil {
		if apierrors.IsNotFound(err) {
			forget(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.Options.Shard.Owns(ro) {
		return ctrl.Result{}, nil
	}
	if !ro.DeletionTimestamp.IsZero() {
		forget(ro.Namespace, ro.Name)
		return ctrl.Result{}, nil // nothing to clean up: what it published stays published
	}
	if ro.Status.StartedAt == nil {
		// Starting: the targets are frozen into waves, and the plan is
		// recorded before anything is published.
		s := &scope{ro: ro, now: r.now()}
		out := reconciler.Run(ctx, s, r.reconcileValid, r.reconcileStart)
		written, err := r.patchStatus(ctx, s, out)
		if errors.Is(err, reconciler.ErrStale) {
			return ctrl.Result{}, nil // the spec moved on: its change brings the rollout back
		}
		if !out.Done() || err != nil || written == nil {
			return out.Return(err)
		}
		ro = written // running, from the plan just recorded
	}
	s := &scope{ro: ro, now: r.now()}
	out := reconciler.Run(ctx, s, r.reconcileValid, r.reconcileObserve, r.reconcileDecide, r.reconcilePublish, r.reconcileRollback, r.reconcileStopped)
	_, err := r.patchStatus(ctx, s, out)
	if errors.Is(err, reconciler.ErrStale) {
		return ctrl.Result{}, nil // the spec moved on: its change brings the rollout back
	}
	return out.Return(err)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// reconcileValid stalls a rollout whose plan is invalid, or whose health
// object is of a kind the controller may not read.
func (r *Reconciler) reconcileValid(_ context.Context, s *scope) (ctrl.Result, error) {
	if errs := rollout.Validate(&s.ro.Spec); len(errs) > 0 {
		return ctrl.Result{}, reconciler.Stall(configv1alpha1.ValidationErrorReason, "%s", errs.ToAggregate().Error())
	}
	// Health read from a kind this controller may not read could never
	// be judged: refused before anything is published.
	if h := s.ro.Spec.Health; h != nil && h.Object != nil {
		if gv, err := schema.ParseGroupVersion(h.Object.APIVersion); err == nil {
			if err := r.Objects.Kinds.Check(gv.WithKind(h.Object.Kind).GroupKind()); err != nil {
				return ctrl.Result{}, reconciler.Stall(configv1alpha1.ValidationErrorReason, "spec.health.object: %v", err)
			}
		}
	}
	return ctrl.Result{}, nil
}

// reconcileStart freezes the rollout's targets into waves, once (the
// step list of a rollout not started yet): the Proposed revisions its
// selector matches now, by Repository, as the API server has them (a
// cache a moment behind would leave out a revision proposed just before
// the rollout was created). A target that appears later waits for the
// next rollout. It records started and the waves, which are written
// before anything is published.
func (r *Reconciler) reconcileStart(ctx context.Context, s *scope) (ctrl.Result, error) {
	ro := s.ro
	sel, err := metav1.LabelSelectorAsSelector(&ro.Spec.RevisionSelector)
	if err != nil {
		return ctrl.Result{}, reconciler.Stall(configv1alpha1.ValidationErrorReason, "spec.revisionSelector: %v", err)
	}
	prs := &porchv1alpha1.PackageRevisionList{}
	if err := r.APIReader.List(ctx, prs, client.InNamespace(ro.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the PackageRevisions spec.revisionSelector selects: %w", err)
	}
	repos := &configv1alpha1.RepositoryList{}
	if err := r.List(ctx, repos, client.InNamespace(ro.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the Repositories: %w", err)
	}
	repoLabels := make(map[string]map[string]string, len(repos.Items))
	for _, repo := range repos.Items {
		repoLabels[repo.Name] = repo.Labels
	}
	if g := ro.Spec.Group; g != nil {
		if err := r.checkGroup(ctx, ro, g, sel, prs.Items); err != nil {
			return ctrl.Result{}, err
		}
	}
	targets := rollout.Targets(sel, ro.Spec.Group != nil, prs.Items, repoLabels)
	plan, err := rollout.Compute(&ro.Spec, targets)
	if err != nil {
		return ctrl.Result{}, reconciler.Stall(configv1alpha1.ValidationErrorReason, "%v", err)
	}
	for _, w := range plan.Waves {
		n := len(w.Revisions)
		if ro.Spec.Group != nil {
			n = len(w.Groups)
		}
		s.waves = append(s.waves, configv1alpha1.WaveStatus{Name: w.Name, State: configv1alpha1.WavePending, Revisions: w.Revisions, Groups: w.Groups, Targets: int32(n)})
	}
	s.started = true
	msg := fmt.Sprintf("%d targets in %d waves", len(targets), len(plan.Waves))
	r.Recorder.Eventf(ro, nil, "Normal", "Started", "Start", "%s", msg)
	return ctrl.Result{}, nil
}

// maxNamedRevisions bounds the revisions a message names.
const maxNamedRevisions = 5

// checkGroup stalls a group rollout whose set does not exist, or whose
// selector matches revisions that are not of its set's variants: a group
// is one set's packages, and a revision of another set would be published
// with a group it is not in.
func (r *Reconciler) checkGroup(ctx context.Context, ro *configv1alpha1.PackageRollout, g *configv1alpha1.RolloutGroup, sel labels.Selector, prs []porchv1alpha1.PackageRevision) error {
	set := &configv1alpha2.PackageVariantSet{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: ro.Namespace, Name: g.PackageVariantSet}, set); apierrors.IsNotFound(err) {
		return reconciler.Stall(configv1alpha1.ValidationErrorReason, "spec.group.packageVariantSet: PackageVariantSet %s not found in namespace %s", g.PackageVariantSet, ro.Namespace)
	} else if err != nil {
		return err
	}
	var others []string
	for i := range prs {
		pr := &prs[i]
		if !rollout.Member(pr, true) || !sel.Matches(labels.Set(pr.Labels)) {
			continue
		}
		ref := metav1.GetControllerOf(pr)
		pv := &configv1alpha1.PackageVariant{}
		if ref != nil && ref.Kind == "PackageVariant" {
			if err := r.Get(ctx, types.NamespacedName{Namespace: pr.Namespace, Name: ref.Name}, pv); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
		if pv.Labels[configv1alpha2.PackageVariantSetLabel] != string(set.UID) {
			others = append(others, pr.Name)
		}
	}
	if len(others) == 0 {
		return nil
	}
	slices.Sort(others)
	more := ""
	if len(others) > maxNamedRevisions {
		more = fmt.Sprintf(" and %d more", len(others)-maxNamedRevisions)
		others = others[:maxNamedRevisions]
	}
	return reconciler.Stall(configv1alpha1.ValidationErrorReason, "spec.revisionSelector matches PackageRevisions that are not of PackageVariantSet %s (spec.group): %s%s; narrow the selector", g.PackageVariantSet, strings.Join(others, ", "), more)
}

// reconcileObserve reads the rollout's revisions; it records revs.
func (r *Reconciler) reconcileObserve(ctx context.Context, s *scope) (ctrl.Result, error) {
	s.revs, s.objects = map[string]rollout.Revision{}, map[string]*porchv1alpha1.PackageRevision{}
	for _, w := range s.ro.Status.Waves {
		for _, name := range w.Revisions {
			pr := &porchv1alpha1.PackageRevision{}
			key := types.NamespacedName{Namespace: s.ro.Namespace, Name: name}
			err := r.Get(ctx, key, pr)
			if apierrors.IsNotFound(err) {
				// Frozen from the API server: the cache may not show a
				// revision created a moment ago yet. Gone only if the
				// API server says so.
				err = r.APIReader.Get(ctx, key, pr)
			}
			if apierrors.IsNotFound(err) {
				s.revs[name] = rollout.Revision{Name: name}
				continue
			}
			if err != nil {
				return ctrl.Result{}, err
			}
			s.objects[name] = pr
			rev := observed(pr, s.ro.Spec.Health)
			if h := s.ro.Spec.Health; rev.Lifecycle == porchv1alpha1.LifecyclePublished && h != nil {
				switch {
				case h.Expr != "":
					rev.Health, err = r.healthByExpr(ctx, s, pr)
				case h.Engine != "":
					rev.Health, err = r.healthByEngine(ctx, s, pr)
				}
				if err != nil {
					return ctrl.Result{}, err
				}
			}
			s.revs[name] = rev
		}
	}
	return ctrl.Result{}, nil
}

// healthByExpr evaluates the rollout's health expression on a published
// revision's health object, read from the namespace's cache (its kind
// watched there, so a change brings the rollout back). The verdict is a
// condition observed now: the expression compares the object with the
// revision's commit. A kind the controller may not read, or an expression
// failing, stalls the rollout.
func (r *Reconciler) healthByExpr(ctx context.Context, s *scope, pr *porchv1alpha1.PackageRevision) (*porchv1alpha1.Condition, error) {
	h := s.ro.Spec.Health
	check, errs := rollout.CompileHealth(h)
	if len(errs) > 0 {
		return nil, reconciler.Stall(configv1alpha1.ValidationErrorReason, "%s", errs.ToAggregate().Error())
	}
	repo := &configv1alpha1.Repository{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: pr.Namespace, Name: pr.Spec.Repository}, repo); client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	vars := rollout.HealthVars{
		Repository: map[string]any{"name": pr.Spec.Repository, "namespace": pr.Namespace, "labels": stringMap(repo.Labels), "annotations": stringMap(repo.Annotations)},
		Revision:   map[string]any{"name": pr.Name, "package": pr.Spec.PackageName, "workspace": pr.Spec.WorkspaceName, "revision": pr.Spec.Revision, "commit": pr.Status.Commit},
	}
	now := &metav1.Time{Time: s.now}
	verdict := func(status, msg string) *porchv1alpha1.Condition {
		return &porchv1alpha1.Condition{Type: rollout.HealthExprCondition, Status: porchv1alpha1.ConditionStatus(status), Message: msg, LastTransitionTime: now}
	}
	name, err := check.ObjectName(vars)
	if err != nil {
		return verdict("False", err.Error()), nil
	}
	gv, err := schema.ParseGroupVersion(h.Object.APIVersion)
	if err != nil {
		return nil, reconciler.Stall(configv1alpha1.ValidationErrorReason, "spec.health.object.apiVersion: %v", err)
	}
	kind := &unstructured.Unstructured{} // kept by the watch: never read into
	kind.SetGroupVersionKind(gv.WithKind(h.Object.Kind))
	if err := r.watches.Ensure(ctx, kind, pr.Namespace, handler.EnqueueRequestsFromMapFunc(r.requestsForHealthObject)); err != nil {
		if errors.Is(err, kindwatch.ErrNotAllowed) {
			return nil, reconciler.Stall(configv1alpha1.ValidationErrorReason, "spec.health.object: %v", err)
		}
		return nil, err
	}
	c, err := r.Objects.For(ctx, pr.Namespace)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gv.WithKind(h.Object.Kind))
	if err := c.Get(ctx, types.NamespacedName{Namespace: pr.Namespace, Name: name}, obj); apierrors.IsNotFound(err) {
		return verdict("False", fmt.Sprintf("%s %s not found", h.Object.Kind, name)), nil
	} else if err != nil {
		return nil, err
	}
	ok, err := check.Healthy(obj.Object, vars)
	switch {
	case err != nil:
		return verdict("False", fmt.Sprintf("%s %s: %v", h.Object.Kind, name, err)), nil
	case !ok:
		return verdict("False", fmt.Sprintf("%s %s does not say the revision runs", h.Object.Kind, name)), nil
	}
	return verdict("True", ""), nil
}

// healthByEngine judges a published revision by the GitOps engine that
// deploys it in its cluster, as its Repository's status.cluster shows it
// (the repository controller reads the cluster): healthy when the
// Kustomization applying the package runs this revision, is Ready on its
// latest spec, and waits for what it applied to be healthy. The verdict
// is a condition observed now.
func (r *Reconciler) healthByEngine(ctx context.Context, s *scope, pr *porchv1alpha1.PackageRevision) (*porchv1alpha1.Condition, error) {
	now := &metav1.Time{Time: s.now}
	verdict := func(status porchv1alpha1.ConditionStatus, format string, args ...any) *porchv1alpha1.Condition {
		return &porchv1alpha1.Condition{Type: rollout.HealthEngineCondition, Status: status, Message: fmt.Sprintf(format, args...), LastTransitionTime: now}
	}
	repo := &configv1alpha1.Repository{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: pr.Namespace, Name: pr.Spec.Repository}, repo); apierrors.IsNotFound(err) {
		return verdict(porchv1alpha1.ConditionStatus(metav1.ConditionFalse), "repository %s not found", pr.Spec.Repository), nil
	} else if err != nil {
		return nil, err
	}
	if ok, why := deployed.Healthy(repo, pr.Spec.PackageName, pr.Spec.Revision); !ok {
		return verdict(porchv1alpha1.ConditionStatus(metav1.ConditionFalse), "%s", why), nil
	}
	return verdict(porchv1alpha1.ConditionStatus(metav1.ConditionTrue), ""), nil
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// observed is what a rollout needs of one PackageRevision.
func observed(pr *porchv1alpha1.PackageRevision, health *configv1alpha1.RolloutHealth) rollout.Revision {
	rev := rollout.Revision{Name: pr.Name, Repository: pr.Spec.Repository, Package: pr.Spec.PackageName, Exists: pr.DeletionTimestamp.IsZero(), Lifecycle: pr.Spec.Lifecycle}
	if pr.Spec.Lifecycle == porchv1alpha1.LifecycleProposed {
		rev.Unmet = rollout.HoldingGates(pr)
	}
	if pr.Spec.Lifecycle == porchv1alpha1.LifecyclePublished && (pr.Status.ObservedGeneration != pr.Generation || pr.GitLifecycle() != porchv1alpha1.LifecyclePublished) {
		// Asked for, not in git yet, or refused for now (its dependencies
		// gate holds it until the rollout has published them).
		rev.Lifecycle = porchv1alpha1.LifecycleProposed
	}
	if pr.Status.PublishTimestamp != nil {
		rev.PublishedAt = pr.Status.PublishTimestamp.Time
	}
	if health != nil {
		for i := range pr.Status.Conditions {
			if pr.Status.Conditions[i].Type == health.ConditionType {
				rev.Health = &pr.Status.Conditions[i]
			}
		}
	}
	return rev
}

// reconcileDecide decides the rollout's next step; it records the
// decision and announces wave transitions and dropped revisions.
func (r *Reconciler) reconcileDecide(_ context.Context, s *scope) (ctrl.Result, error) {
	d := rollout.Evaluate(&s.ro.Spec, s.ro.Status.Waves, s.revs, s.now, s.ro.Status.ObservedGeneration != s.ro.Generation, s.ro.Status.Blocked)
	s.decision = &d
	for _, t := range d.Transitions {
		r.Recorder.Eventf(s.ro, nil, "Normal", "WaveTransition", "Rollout", "%s", t)
	}
	for _, name := range d.Dropped {
		r.Recorder.Eventf(s.ro, nil, "Warning", "RevisionDropped", "Rollout", "%s left the rollout (rejected or deleted before it was published)", name)
	}
	return ctrl.Result{RequeueAfter: d.After}, nil
}

// reconcilePublish publishes the decided revisions through their
// PackageRevision objects, as an approver would (the lifecycle policy
// checks the controller may approve), recording the rollout.
func (r *Reconciler) reconcilePublish(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.decision == nil || len(s.decision.Publish) == 0 {
		return ctrl.Result{}, nil
	}
	by := approver(s.ro)
	sem := make(chan struct{}, publishConcurrency)
	var mu sync.Mutex
	var errs []error
	approved, dependencies := 0, 0
	for _, name := range s.decision.Publish {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			did, err := r.publish(ctx, s.ro, s.objects[name], by)
			moved, derr := r.publishDependencies(ctx, s.ro, s.objects[name], by)
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, err, derr)
			if did {
				approved++
			}
			dependencies += moved
		}()
	}
	for range cap(sem) {
		sem <- struct{}{}
	}
	if approved > 0 {
		// Revisions asked for already (the PackageRevision controller has
		// not published them yet) are not counted again.
		r.Recorder.Eventf(s.ro, nil, "Normal", "Publishing", "Rollout", "wave %s: approved %d revisions", s.decision.Current, approved)
	}
	var res ctrl.Result
	if dependencies > 0 {
		r.Recorder.Eventf(s.ro, nil, "Normal", "PublishingDependencies", "Rollout", "wave %s: moved %d dependencies of its revisions towards publication", s.decision.Current, dependencies)
		// A proposed dependency is approved at the next look; its
		// events are not the rollout's.
		res.RequeueAfter = dependencyRequeue
	}
	return res, errors.Join(errs...)
}

// dependencyRequeue is how soon a rollout that moved dependencies looks
// again, to approve what it proposed.
const dependencyRequeue = 2 * time.Second

// publishDependencies moves the dependencies Scion installed for a
// target's PackageVariant (status.dependencies, Pending, installed by a
// dependency PackageVariant) along with the target: a draft is proposed,
// a proposal published. So a dependency is published in the same wave as
// its dependant, whose dependencies gate holds it until then. It returns
// how many it moved.
func (r *Reconciler) publishDependencies(ctx context.Context, ro *configv1alpha1.PackageRollout, pr *porchv1alpha1.PackageRevision, by string) (int, error) {
	if pr == nil {
		return 0, nil
	}
	ref := metav1.GetControllerOf(pr)
	if ref == nil || ref.Kind != "PackageVariant" {
		return 0, nil
	}
	pv := &configv1alpha1.PackageVariant{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: pr.Namespace, Name: ref.Name}, pv); err != nil || pv.Spec.Dependencies == nil {
		return 0, client.IgnoreNotFound(err)
	}
	moved := 0
	var errs []error
	for _, d := range pv.Status.Dependencies {
		if d.State != configv1alpha1.DependencyPending || d.InstalledBy == "" {
			continue
		}
		dep := &configv1alpha1.PackageVariant{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: pv.Namespace, Name: d.InstalledBy}, dep); err != nil {
			errs = append(errs, client.IgnoreNotFound(err))
			continue
		}
		if dep.Labels[configv1alpha1.DependencyLabel] == "" || len(dep.Status.DownstreamTargets) == 0 {
			continue // someone else's, or not written yet
		}
		dpr := &porchv1alpha1.PackageRevision{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: pv.Namespace, Name: dep.Status.DownstreamTargets[0].Name}, dpr); err != nil {
			errs = append(errs, client.IgnoreNotFound(err))
			continue
		}
		// Git's lifecycle decides, not the spec: a proposal is published
		// only once git has it as one.
		switch inGit := porchv1alpha1.Lifecycle(dpr.Labels[porchv1alpha1.LifecycleLabel]); {
		case dpr.Spec.Lifecycle == porchv1alpha1.LifecycleDraft || dpr.Spec.Lifecycle == "":
			patch := client.MergeFromWithOptions(dpr.DeepCopy(), client.MergeFromWithOptimisticLock{})
			dpr.Spec.Lifecycle = porchv1alpha1.LifecycleProposed
			dpr.RecordProposal(by, r.now())
			if err := r.Patch(ctx, dpr, patch); err != nil && !apierrors.IsConflict(err) {
				errs = append(errs, fmt.Errorf("proposing dependency %s: %w", dpr.Name, client.IgnoreNotFound(err)))
				continue
			}
			moved++
		case dpr.Spec.Lifecycle == porchv1alpha1.LifecycleProposed && inGit == porchv1alpha1.LifecycleProposed:
			did, err := r.publish(ctx, ro, dpr, by)
			errs = append(errs, err)
			if did {
				moved++
			}
		}
	}
	return moved, errors.Join(errs...)
}

// approver is who a rollout's approvals are recorded as.
func approver(ro *configv1alpha1.PackageRollout) string {
	return configv1alpha1.RolloutApprover(ro.Namespace, ro.Name)
}

// publish moves one Proposed revision, as reconcileObserve read it, to
// Published with an optimistic lock, and says whether it did: a revision someone changed since it
// was read is not published (the next reconcile sees what they did).
func (r *Reconciler) publish(ctx context.Context, ro *configv1alpha1.PackageRollout, pr *porchv1alpha1.PackageRevision, by string) (bool, error) {
	if pr == nil || pr.Spec.Lifecycle != porchv1alpha1.LifecycleProposed {
		return false, nil
	}
	pr = pr.DeepCopy()
	patch := client.MergeFromWithOptions(pr.DeepCopy(), client.MergeFromWithOptimisticLock{})
	pr.Spec.Lifecycle = porchv1alpha1.LifecyclePublished
	if pr.Annotations == nil {
		pr.Annotations = map[string]string{}
	}
	pr.Annotations[porchv1alpha1.ApprovedByAnnotation] = by
	if pr.Labels == nil {
		pr.Labels = map[string]string{}
	}
	pr.Labels[configv1alpha1.PackageRolloutLabel] = ro.Name
	switch err := r.Patch(ctx, pr, patch); {
	case apierrors.IsConflict(err):
		return false, nil // changed meanwhile: the next reconcile decides again
	case err != nil:
		return false, fmt.Errorf("publishing %s: %w", pr.Name, client.IgnoreNotFound(err))
	}
	return true, nil
}

// reconcileRollback rolls back, when the decision asks, every target the
// rollout published: a new published revision with the content of the
// one before, through the package service. It records the count by wave.
func (r *Reconciler) reconcileRollback(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.decision == nil || !s.decision.Rollback {
		return ctrl.Result{}, nil
	}
	s.rolledBack = map[string]int32{}
	var errs []error
	for _, w := range s.ro.Status.Waves {
		if w.StartedAt == nil {
			continue
		}
		// A target is its revision, or for a group rollout its group:
		// rolled back once every member the rollout published is.
		targets := w.Groups
		if len(targets) == 0 {
			for _, name := range w.Revisions {
				targets = append(targets, configv1alpha1.TargetGroup{Revisions: []string{name}})
			}
		}
		for _, t := range targets {
			rolledBack, all := 0, true
			for _, name := range t.Revisions {
				done, held, err := r.rollBack(ctx, s.ro, s.objects[name])
				if errors.Is(err, pkgservice.ErrNothingToRevertTo) {
					s.kept = append(s.kept, name)
					err = nil
				}
				if err != nil {
					errs = append(errs, err)
				}
				if done {
					rolledBack++
				} else if pr := s.objects[name]; pr != nil && pr.Labels[configv1alpha1.PackageRolloutLabel] == s.ro.Name {
					all = false // published by the rollout, not rolled back yet
				}
				s.held = append(s.held, held...)
			}
			if rolledBack > 0 && all {
				s.rolledBack[w.Name]++
			}
		}
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// reconcileStopped stalls a rollout that failed or was aborted, once
// its rollback (if asked for) is done: nothing more happens until its
// spec changes.
func (r *Reconciler) reconcileStopped(_ context.Context, s *scope) (ctrl.Result, error) {
	switch {
	case s.decision == nil:
	case s.decision.Phase == rollout.PhaseFailed:
		return ctrl.Result{}, reconciler.Stall(configv1alpha1.BudgetExceededReason, "%s%s%s", s.decision.Blocked, heldNote(s.held), keptNote(s.kept))
	case s.decision.Phase == rollout.PhaseAborted:
		return ctrl.Result{}, reconciler.Stall(configv1alpha1.AbortedReason, "%s%s%s", s.decision.Blocked, heldNote(s.held), keptNote(s.kept))
	}
	return ctrl.Result{}, nil
}

// keptNote says which revisions the rollback left published, for the
// stalled rollout's message ("" when none).
func keptNote(kept []string) string {
	if len(kept) == 0 {
		return ""
	}
	return fmt.Sprintf("; not rolled back, nothing was published before them: %s stay published (propose their deletion to take them back)", strings.Join(kept, ", "))
}

// heldNote says which variants a rollback holds, for the stalled
// rollout's message ("" when none).
func heldNote(held []string) string {
	if len(held) == 0 {
		return ""
	}
	return fmt.Sprintf("; rolled back: PackageVariant %s stays on the upstream revision before (annotation %s) until its upstream moves past the bad one",
		strings.Join(held, ", "), configv1alpha1.HoldUpstreamAnnotation)
}

// rollBack rolls back one revision (as reconcileObserve read it) if this
// rollout published it; it reports whether the revision is rolled back
// (now or before), and the variants it holds on the revision before.
// A revision with nothing published before it stays published:
// pkgservice.ErrNothingToRevertTo.
func (r *Reconciler) rollBack(ctx context.Context, ro *configv1alpha1.PackageRollout, pr *porchv1alpha1.PackageRevision) (bool, []string, error) {
	if pr == nil {
		return false, nil, nil
	}
	name := pr.Name
	if pr.Labels[configv1alpha1.PackageRolloutLabel] != ro.Name || pr.GitLifecycle() != porchv1alpha1.LifecyclePublished || pr.Status.ObservedGeneration != pr.Generation {
		return false, nil, nil // not published by this rollout (yet): left as it is
	}
	_, st, err := r.Cache.OpenNamed(ctx, r.Client, ro.Namespace, pr.Spec.Repository)
	if err != nil {
		return false, nil, err
	}
	rev, err := st.Get(ctx, pr.Spec.PackageName, pr.Spec.WorkspaceName, 0)
	if err != nil {
		return false, nil, fmt.Errorf("rolling back %s: %w", name, err)
	}
	out, now, err := r.Service.Revert(ctx, st, rev, rollbackWorkspace(ro, rev.Revision), approver(ro), store.Trailers{store.TrailerRollout: ro.Namespace + "/" + ro.Name})
	if errors.Is(err, pkgservice.ErrNothingToRevertTo) {
		r.Recorder.Eventf(ro, pr, "Warning", "RollbackImpossible", "Rollback", "%s: %v; it stays published", name, err)
		return false, nil, err
	}
	if err != nil {
		return false, nil, fmt.Errorf("rolling back %s: %w", name, err)
	}
	if out.Commit != "" && out.Revision > rev.Revision {
		held, err := r.holdUpstream(ctx, ro, pr)
		if err != nil {
			return true, nil, err
		}
		if now {
			// Announced once: a reconcile that finds it done says nothing.
			r.Recorder.Eventf(ro, pr, "Warning", "RolledBack", "Rollback", "%s rolled back: %s v%d has the content of the revision before%s", name, out.Package, out.Revision, heldNote(held))
		}
		if err := r.requestSync(ctx, ro.Namespace, pr.Spec.Repository); err != nil {
			return true, held, err
		}
		return true, held, nil
	}
	return true, nil, nil
}

// holdUpstream keeps the PackageVariant that writes a rolled-back
// revision's package from proposing the rolled-back content again: it
// sets the variant's hold-upstream annotation to the upstream commit the
// revision was made from. It returns the variants held.
func (r *Reconciler) holdUpstream(ctx context.Context, ro *configv1alpha1.PackageRollout, pr *porchv1alpha1.PackageRevision) ([]string, error) {
	lock := pr.Status.UpstreamLock
	commit := lock.Commit()
	if commit == "" {
		return nil, nil // not made from an upstream: nothing follows it
	}
	list := &configv1alpha1.PackageVariantList{}
	if err := r.List(ctx, list, client.InNamespace(ro.Namespace), client.MatchingFields{variant.DownstreamPackageIndex: variant.PackageKey(pr.Spec.Repository, pr.Spec.PackageName)}); err != nil {
		return nil, fmt.Errorf("finding the PackageVariant of %s: %w", pr.Name, err)
	}
	var held []string
	for i := range list.Items {
		pv := &list.Items[i]
		if pv.Annotations[configv1alpha1.HoldUpstreamAnnotation] == commit {
			held = append(held, pv.Name)
			continue
		}
		patch := client.MergeFrom(pv.DeepCopy())
		if pv.Annotations == nil {
			pv.Annotations = map[string]string{}
		}
		pv.Annotations[configv1alpha1.HoldUpstreamAnnotation] = commit
		if err := r.Patch(ctx, pv, patch); client.IgnoreNotFound(err) != nil {
			return held, fmt.Errorf("holding the upstream of PackageVariant %s: %w", pv.Name, err)
		}
		held = append(held, pv.Name)
	}
	return held, nil
}

// rollbackWorkspace is the workspace of a rollout's revert of a
// package's revision n: rollback-vN-ROLLOUT, so a retry finishes the same
// revert, and a rollout created again with the name of one before it
// (which rolled back an earlier revision of the package) makes its own.
func rollbackWorkspace(ro *configv1alpha1.PackageRollout, n int) string {
	ws := fmt.Sprintf("rollback-v%d-%s", n, ro.Name)
	if len(ws) > 63 {
		ws = strings.TrimRight(ws[:63], "-._")
	}
	return ws
}

// requestSync asks a Repository to show what git has now.
func (r *Reconciler) requestSync(ctx context.Context, ns, name string) error {
	repo := &configv1alpha1.Repository{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, repo); err != nil {
		return client.IgnoreNotFound(err)
	}
	return pkgservice.RequestSync(ctx, r.Client, repo)
}
