package pkgservice

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/kptfile"
	"github.com/scion-dev/scion/internal/metrics"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/store"
)

// maxFactsCache bounds the Kptfile facts kept in memory: one entry per
// revision shown, so the bound is only reached by a fleet of that many
// revisions (the cache then starts over).
const maxFactsCache = 100_000

// syncParallelism bounds the PackageRevision writes one sync makes at
// once.
const syncParallelism = 16

// Service is the package service.
type Service struct {
	Client client.Client
	// APIReader reads around the cache, to re-read an object after a
	// conflicting write (Client when nil).
	APIReader client.Reader
	// Status writes PackageRevisions' status: the manager's
	// StatusWriter, which its controllers share; one without a cache,
	// from Client and APIReader, when nil.
	Status *reconciler.StatusWriter

	mu    sync.Mutex
	facts map[factsKey]kptFacts
}

// factsKey names a revision: the Kptfile facts of a revision are kept
// for its latest commit only, so the cache holds one entry per revision
// however often its draft is written (keyed by commit, every draft write
// left the facts of the commit it replaced behind, and a fleet's drafts
// filled the cache many times over before it was dropped).
type factsKey struct {
	repo     types.UID
	pkg, ws  string
	revision int
}

// kptFacts is what a PackageRevision shows of its Kptfile, at commit.
type kptFacts struct {
	commit     string
	gates      []kptfilev1.ReadinessGate
	conditions []kptfilev1.Condition
	lock       *kptfilev1.UpstreamLock
}

func (s *Service) kptfileFacts(ctx context.Context, repoObj *configv1alpha1.Repository, repo store.Store, rev store.Revision) (kptFacts, error) {
	key := factsKey{repo: repoObj.UID, pkg: rev.Package, ws: rev.Workspace, revision: rev.Revision}
	s.mu.Lock()
	f, ok := s.facts[key]
	s.mu.Unlock()
	if ok && f.commit == rev.Commit {
		return f, nil
	}
	f = kptFacts{commit: rev.Commit}
	start := time.Now()
	data, err := repo.ReadFile(ctx, rev, kptfilev1.KptFileName)
	metrics.ObserveGit("read", start, &err)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return kptFacts{}, nil // a folder without Kptfile: nothing to show
		}
		return kptFacts{}, err
	}
	kf, err := kptfile.Parse(data)
	if err != nil {
		log.FromContext(ctx).Info("ignoring an unreadable Kptfile", "package", rev.Package, "commit", rev.Commit, "error", err.Error())
		return kptFacts{}, nil
	}
	if kf.Info != nil {
		f.gates = kf.Info.ReadinessGates
	}
	if kf.Status != nil {
		f.conditions = kf.Status.Conditions
	}
	f.lock = kf.UpstreamLock
	s.mu.Lock()
	if s.facts == nil || len(s.facts) >= maxFactsCache {
		s.facts = map[factsKey]kptFacts{}
	}
	s.facts[key] = f
	s.mu.Unlock()
	return f, nil
}

// SyncResult counts what a sync did.
type SyncResult struct {
	// Packages and Revisions count what git holds; Created, Updated and
	// Deleted the PackageRevision objects written.
	Packages, Revisions, Created, Updated, Deleted int
}

// Changed reports whether the sync wrote anything.
func (r SyncResult) Changed() bool { return r.Created+r.Updated+r.Deleted > 0 }

// RepositoryIndex indexes PackageRevisions by spec.repository, so that a
// Repository's sync reads the objects of that repository alone.
// IndexRevisions registers it; Sync needs it.
const RepositoryIndex = "spec.repository"

// IndexRevisions registers RepositoryIndex with a manager's cache.
func IndexRevisions(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &porchv1alpha1.PackageRevision{}, RepositoryIndex, func(o client.Object) []string {
		return []string{o.(*porchv1alpha1.PackageRevision).Spec.Repository}
	})
}

// Sync makes the PackageRevision objects of a Repository match the
// revisions in git: it creates objects for new revisions, updates those
// whose revision changed, and deletes those whose revision is gone. It
// writes nothing for objects that already match, so a resync of an
// unchanged repository makes no API writes. Spec changes a user asked for
// and the PackageRevision controller has not handled yet (generation ahead
// of status.observedGeneration) are left alone, and objects not yet
// written to git (no status.commit) are never deleted.
func (s *Service) Sync(ctx context.Context, repoObj *configv1alpha1.Repository, repo store.Store) (SyncResult, error) {
	logger := log.FromContext(ctx)
	// Objects first, git second: what is written then comes from a git
	// state at least as new as the object it patches (whose
	// resourceVersion the patch is conditional on). The other order would
	// let a revision someone moved in git and showed meanwhile be shown
	// back in its old lifecycle, undoing their move.
	// Every object naming the repository in its spec, not only those
	// labelled with it: an object a user created is labelled once shown,
	// and one whose first write went to git but was never shown must be
	// found here, not duplicated. Through RepositoryIndex, not the whole
	// namespace: with 1,000 repositories of 20 revisions in a namespace, a
	// sync reads its 20 objects, not 20,000.
	existing := &porchv1alpha1.PackageRevisionList{}
	if err := s.Client.List(ctx, existing, client.InNamespace(repoObj.Namespace), client.MatchingFields{RepositoryIndex: repoObj.Name}); err != nil {
		return SyncResult{}, fmt.Errorf("listing the PackageRevisions of %s: %w", repoObj.Name, err)
	}
	start := time.Now()
	revs, err := repo.List(ctx)
	metrics.ObserveGit("list", start, &err)
	if err != nil {
		return SyncResult{}, err
	}
	// Objects are matched to revisions by identity (package and
	// workspace), not by name: a PackageRevision created by a user may
	// have any name.
	current := map[string]*porchv1alpha1.PackageRevision{}
	for i := range existing.Items {
		pr := &existing.Items[i]
		current[Identity(pr.Spec.PackageName, pr.Spec.WorkspaceName)] = pr
	}
	res := SyncResult{Revisions: len(revs)}
	packages := map[string]bool{}
	for _, rev := range revs {
		packages[rev.Package] = true
	}
	res.Packages = len(packages)
	seen := map[string]bool{}
	var (
		errs []error
		mu   sync.Mutex
		wg   sync.WaitGroup
		sem  = make(chan struct{}, syncParallelism)
	)
	for _, rev := range revs {
		id := Identity(rev.Package, rev.Workspace)
		if seen[id] {
			logger.Info("two revisions have the same package and workspace; showing the first", "package", rev.Package, "workspace", rev.Workspace)
			continue
		}
		seen[id] = true
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			changed, err := s.Show(ctx, repoObj, repo, rev, current[id], ShowOptions{})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("%s %s: %w", rev.Package, rev.Workspace, err))
			case changed && current[id] == nil:
				res.Created++
			case changed:
				res.Updated++
			}
		}()
	}
	wg.Wait()
	for id, pr := range current {
		if seen[id] || pr.Status.Commit == "" || !pr.DeletionTimestamp.IsZero() || pr.Generation != pr.Status.ObservedGeneration {
			continue
		}
		if err := s.Client.Delete(ctx, pr, client.Preconditions{UID: &pr.UID}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting %s: %w", pr.Name, err))
			continue
		}
		res.Deleted++
	}
	return res, errors.Join(errs...)
}

// Identity keys a package revision by package path and workspace.
func Identity(pkgPath, workspace string) string { return pkgPath + "\x00" + workspace }

// ShowOptions tune Show.
type ShowOptions struct {
	// Handled says the caller acted on the object's spec: the spec is set
	// from git and observedGeneration advances even if the generation was
	// ahead.
	Handled bool
	// Kstatus replace, by type, the controller's conditions derived from
	// git (Ready=True, Reconciling=False, Stalled=False): the
	// PackageRevision controller's verdict.
	Kstatus []porchv1alpha1.Condition
	// GitConditions are condition types whose value in git (the Kptfile)
	// the caller owns and just wrote: for drafts they are shown from git,
	// where the object's other conditions are kept (people and controllers
	// set those on the object, and the PackageRevision controller writes
	// them to git).
	GitConditions []string
	// Owner, when set, is made the controller owner of the object, and
	// OwnerLabels are set. When the object does not have this owner yet
	// (it is created, or the sync created it first), InitialLabels and
	// InitialAnnotations are added too: they are set once, never again.
	Owner              *metav1.OwnerReference
	OwnerLabels        map[string]string
	InitialLabels      map[string]string
	InitialAnnotations map[string]string
}

// Show makes the PackageRevision cur (nil: create one) show the git
// revision rev. It reports whether it wrote anything.
func (s *Service) Show(ctx context.Context, repoObj *configv1alpha1.Repository, repo store.Store, rev store.Revision, cur *porchv1alpha1.PackageRevision, o ShowOptions) (bool, error) {
	if cur != nil && !o.Handled && cur.Spec.Lifecycle != rev.Lifecycle {
		// The caller's view of git may be older than the object (read
		// before the PackageRevision controller moved the revision and
		// showed it): look again, so a move is never shown undone. This
		// process's refs are current, and cur was read before this.
		if fresh, err := repo.Get(ctx, rev.Package, rev.Workspace, 0); err == nil {
			rev = fresh
		}
	}
	facts, err := s.kptfileFacts(ctx, repoObj, repo, rev)
	if err != nil {
		return false, err
	}
	want := Desired(repoObj, rev, facts.gates, facts.conditions, facts.lock)
	if cur != nil {
		want.Name = cur.Name
	}
	if o.Owner != nil {
		want.OwnerReferences = append(want.OwnerReferences, *o.Owner)
		for k, v := range o.OwnerLabels {
			want.Labels[k] = v
		}
		if cur == nil || !hasOwner(cur.OwnerReferences, *o.Owner) {
			for k, v := range o.InitialLabels {
				if _, ours := want.Labels[k]; !ours {
					want.Labels[k] = v
				}
			}
			for k, v := range o.InitialAnnotations {
				if want.Annotations == nil {
					want.Annotations = map[string]string{}
				}
				want.Annotations[k] = v
			}
		}
	}
	for _, k := range o.Kstatus {
		for i := range want.Status.Conditions {
			if want.Status.Conditions[i].Type == k.Type {
				want.Status.Conditions[i] = k
			}
		}
	}
	return s.apply(ctx, want, cur, o.Handled, len(o.Kstatus) == 0, o.GitConditions)
}

// keepVerdict keeps, for a writer without a verdict of its own (a sync),
// the PackageRevision controller's verdict on the object's current
// generation when it is not Ready (a stall, a wait, a retry): the sync
// shows what git has, and must not erase why the object's spec is not
// carried out (a Published revision asked to become a Draft, a gate not
// met). A Ready verdict is the sync's to refresh.
// It reads cur as the status write reads it (fresh after a conflict).
func keepVerdict(want *porchv1alpha1.PackageRevisionStatus, cur *porchv1alpha1.PackageRevision) {
	if !verdictStands(cur) {
		return
	}
	for _, c := range cur.Status.Conditions {
		if !porchv1alpha1.IsControllerCondition(c.Type) {
			continue
		}
		for i := range want.Conditions {
			if want.Conditions[i].Type == c.Type {
				want.Conditions[i] = c
			}
		}
	}
}

// verdictStands says whether the controller's verdict on cur's current
// generation is not Ready: the spec asks for something it did not carry
// out (refused, or waiting).
func verdictStands(cur *porchv1alpha1.PackageRevision) bool {
	ready := slices.IndexFunc(cur.Status.Conditions, func(c porchv1alpha1.Condition) bool { return c.Type == configv1alpha1.ReadyCondition })
	return ready >= 0 && cur.Status.Conditions[ready].Status != "True" && cur.Status.Conditions[ready].ObservedGeneration == cur.Generation
}

// Desired is the PackageRevision that shows a git revision.
func Desired(repoObj *configv1alpha1.Repository, rev store.Revision, gates []kptfilev1.ReadinessGate, conditions []kptfilev1.Condition, lock *kptfilev1.UpstreamLock) *porchv1alpha1.PackageRevision {
	pr := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ObjectName(repoObj.Name, rev.Package, rev.Workspace),
			Namespace: repoObj.Namespace,
			Labels: map[string]string{
				porchv1alpha1.RepositoryLabel: LabelValue(repoObj.Name),
				porchv1alpha1.PackageLabel:    LabelValue(rev.Package),
				porchv1alpha1.LifecycleLabel:  string(rev.Lifecycle),
			},
			OwnerReferences: []metav1.OwnerReference{repositoryOwner(repoObj)},
			// Created with the finalizer the PackageRevision controller
			// needs, rather than one more write per object later.
			Finalizers: []string{porchv1alpha1.PackageRevisionFinalizer},
		},
		Spec: porchv1alpha1.PackageRevisionSpec{
			PackageName:    rev.Package,
			Repository:     repoObj.Name,
			WorkspaceName:  rev.Workspace,
			Revision:       rev.Revision,
			Lifecycle:      rev.Lifecycle,
			ReadinessGates: gates,
		},
		Status: porchv1alpha1.PackageRevisionStatus{
			Lifecycle:    rev.Lifecycle,
			Commit:       rev.Commit,
			UpstreamLock: lock,
			PublishedBy:  rev.PublishedBy,
			Deployment:   repoObj.Spec.Deployment,
		},
	}
	if shard := repoObj.Labels[configv1alpha1.ShardLabel]; shard != "" {
		pr.Labels[configv1alpha1.ShardLabel] = shard // reconciled by its Repository's replica
	}
	if rev.Latest {
		pr.Labels[porchv1alpha1.LatestRevisionLabel] = "true"
	}
	if ns, name, ok := strings.Cut(rev.Trailers[store.TrailerRollout], "/"); ok && ns == repoObj.Namespace && rev.Trailers[store.TrailerRevertOf] != "" {
		// A rollout's rollback: shown like the revisions the rollout
		// published, with its label and approval record (git's tag names
		// the same approver).
		pr.Labels[configv1alpha1.PackageRolloutLabel] = name
		if rev.Lifecycle == porchv1alpha1.LifecyclePublished || rev.Lifecycle == porchv1alpha1.LifecycleDeletionProposed {
			pr.Annotations = map[string]string{porchv1alpha1.ApprovedByAnnotation: configv1alpha1.RolloutApprover(ns, name)}
		}
	}
	// The lifecycle records git holds, shown again on an object the sync
	// makes (after a restore, say).
	if rec := rev.Proposed(); rec.By != "" {
		pr.RecordProposal(rec.By, rec.At)
	}
	if by := rev.Trailers[store.TrailerApprovedBy]; by != "" && (rev.Lifecycle == porchv1alpha1.LifecyclePublished || rev.Lifecycle == porchv1alpha1.LifecycleDeletionProposed) && pr.Annotations[porchv1alpha1.ApprovedByAnnotation] == "" {
		if pr.Annotations == nil {
			pr.Annotations = map[string]string{}
		}
		pr.Annotations[porchv1alpha1.ApprovedByAnnotation] = by
	}
	if !rev.PublishedAt.IsZero() {
		pr.Status.PublishTimestamp = ptr.To(metav1.NewTime(rev.PublishedAt))
	}
	for _, c := range conditions {
		if porchv1alpha1.IsControllerCondition(c.Type) {
			continue
		}
		pr.Status.Conditions = append(pr.Status.Conditions, porchv1alpha1.Condition{
			Type: c.Type, Status: porchv1alpha1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message,
		})
	}
	pr.Status.Conditions = append(pr.Status.Conditions,
		porchv1alpha1.Condition{Type: configv1alpha1.ReadyCondition, Status: "True", Reason: porchv1alpha1.SyncedReason, Message: "the revision is in git at commit " + short(rev.Commit)},
		porchv1alpha1.Condition{Type: configv1alpha1.ReconcilingCondition, Status: "False", Reason: configv1alpha1.DoneReason},
		porchv1alpha1.Condition{Type: configv1alpha1.StalledCondition, Status: "False", Reason: configv1alpha1.DoneReason},
	)
	return pr
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// ShownBySync says whether pr was made by a sync of repo (it has the
// Repository as owner), not by a person or a tool.
func ShownBySync(pr *porchv1alpha1.PackageRevision, repo *configv1alpha1.Repository) bool {
	return hasOwner(pr.OwnerReferences, repositoryOwner(repo))
}

func repositoryOwner(r *configv1alpha1.Repository) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: configv1alpha1.GroupVersion.String(), Kind: "Repository", Name: r.Name, UID: r.UID,
	}
}

// apply creates or updates one PackageRevision to show want. It reports
// whether it wrote anything.
func (s *Service) apply(ctx context.Context, want, cur *porchv1alpha1.PackageRevision, handled, noVerdict bool, gitConditions []string) (bool, error) {
	if cur == nil {
		obj := want.DeepCopy()
		obj.Status = porchv1alpha1.PackageRevisionStatus{}
		if err := s.Client.Create(ctx, obj); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return false, nil // made by someone else meanwhile; the next sync compares
			}
			return false, err
		}
		// A new object shows the conditions only a variant writes, and
		// writes to git (its gate, the dependencies gate, an injection
		// point's), from git: otherwise a proposal the sync shows again
		// keeps its gates unset for good (the variant does not show
		// proposals). Other conditions of drafts and proposals are the
		// object's: a person sets them there, and a draft's Kptfile may
		// carry copies from the revision it was made from (a canary
		// passed on the last revision, not on this one).
		for _, c := range want.Status.Conditions {
			if WrittenToGit(c.Type) {
				gitConditions = append(gitConditions, c.Type)
			}
		}
		_, err := s.applyStatus(ctx, want, obj, true, false, gitConditions)
		return true, err
	}
	pending := cur.Generation != cur.Status.ObservedGeneration && !handled
	obj := cur.DeepCopy()
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	for k, v := range want.Labels {
		obj.Labels[k] = v
	}
	for _, l := range []string{porchv1alpha1.LatestRevisionLabel, configv1alpha1.ShardLabel} {
		if _, ok := want.Labels[l]; !ok {
			delete(obj.Labels, l)
		}
	}
	for _, ref := range want.OwnerReferences {
		if !hasOwner(obj.OwnerReferences, ref) {
			obj.OwnerReferences = append(obj.OwnerReferences, ref)
		}
	}
	for k, v := range want.Annotations {
		if obj.Annotations == nil {
			obj.Annotations = map[string]string{}
		}
		obj.Annotations[k] = v
	}
	if !pending {
		obj.Spec.PackageName = want.Spec.PackageName
		obj.Spec.Repository = want.Spec.Repository
		obj.Spec.WorkspaceName = want.Spec.WorkspaceName
		obj.Spec.Revision = want.Spec.Revision
		obj.Spec.ReadinessGates = want.Spec.ReadinessGates
		// A lifecycle the controller refused or waits on is the person's
		// request, with its verdict: a sync keeps both while git still
		// has the lifecycle the verdict was given against, so the object
		// says the same whether or not a sync ran since.
		if !noVerdict || !verdictStands(cur) || cur.Status.Lifecycle != want.Spec.Lifecycle {
			obj.Spec.Lifecycle = want.Spec.Lifecycle
		}
	}
	if obj.Spec.Revision == 0 && want.Spec.Revision != 0 {
		// The number git gave the revision when it published it is a
		// fact, not a request: shown even while a request of the spec is
		// pending (a withdrawal refused after git published).
		obj.Spec.Revision = want.Spec.Revision
	}
	wrote := false
	if !apiequality.Semantic.DeepEqual(obj.Labels, cur.Labels) || !apiequality.Semantic.DeepEqual(obj.OwnerReferences, cur.OwnerReferences) ||
		!apiequality.Semantic.DeepEqual(obj.Annotations, cur.Annotations) ||
		!apiequality.Semantic.DeepEqual(obj.Spec, cur.Spec) {
		if err := s.Client.Patch(ctx, obj, client.MergeFromWithOptions(cur, client.MergeFromWithOptimisticLock{})); err != nil {
			return false, err
		}
		wrote = true
	}
	changed, err := s.applyStatus(ctx, want, obj, handled, noVerdict, gitConditions)
	return wrote || changed, err
}

// applyStatus writes want's status onto obj, keeping the conditions other
// writers own (people, other controllers: see mergeConditions), through
// WriteStatus.
//
// handled speaks of obj's generation as the caller had it: when a
// conflict makes the write re-read a newer generation (someone changed
// the spec meanwhile), that one was not handled, and the write does not
// say it was.
func (s *Service) applyStatus(ctx context.Context, want, obj *porchv1alpha1.PackageRevision, handled, noVerdict bool, gitConditions []string) (bool, error) {
	handledGen := obj.Generation
	baseVersion, baseLifecycle := obj.ResourceVersion, obj.Labels[porchv1alpha1.LifecycleLabel]
	sync := !handled
	return s.WriteStatus(ctx, obj, func(obj *porchv1alpha1.PackageRevision) bool {
		if sync && obj.ResourceVersion != baseVersion && obj.Labels[porchv1alpha1.LifecycleLabel] != baseLifecycle {
			// Read again (a conflict, or the cache caught up with this
			// process's own write): someone moved the revision in git and
			// showed it since the sync read git. Its view is the newer;
			// the sync's would show the move undone (a proposal shown as
			// a draft again until the next sync: `rpkg push` then
			// `rpkg propose` waited for it).
			return false
		}
		handled := handled && obj.Generation == handledGen
		pending := obj.Generation != obj.Status.ObservedGeneration && !handled
		st := want.Status
		switch {
		case pending:
			st.ObservedGeneration = obj.Status.ObservedGeneration
		default:
			st.ObservedGeneration = obj.Generation
		}
		// Ready says which generation it describes, so waiters can tell a
		// fresh verdict from a stale one.
		st.Conditions = slices.Clone(st.Conditions)
		if noVerdict {
			keepVerdict(&st, obj)
		}
		for i := range st.Conditions {
			if porchv1alpha1.IsControllerCondition(st.Conditions[i].Type) && st.Conditions[i].ObservedGeneration == 0 {
				st.Conditions[i].ObservedGeneration = st.ObservedGeneration
			}
		}
		if want.Spec.Lifecycle == porchv1alpha1.LifecycleDraft || want.Spec.Lifecycle == porchv1alpha1.LifecycleProposed {
			// Conditions of drafts are also set by other actors on the
			// object: the PackageRevision controller writes them to git.
			st.Conditions = mergeConditions(obj.Status.Conditions, st.Conditions, append(slices.Clone(porchv1alpha1.ControllerConditions), gitConditions...))
		} else {
			// A published revision's git conditions are final; conditions
			// others set on its object (a deployer's health, which a
			// rollout waits for) are theirs and stay.
			owned := slices.Clone(porchv1alpha1.ControllerConditions)
			for _, c := range st.Conditions {
				owned = append(owned, c.Type)
			}
			st.Conditions = mergeConditions(obj.Status.Conditions, st.Conditions, owned)
		}
		if apiequality.Semantic.DeepEqual(st, obj.Status) {
			return false
		}
		obj.Status = st
		return true
	})
}

// WrittenToGit tells whether a condition type is one a PackageVariant
// writes into its drafts' Kptfiles (and nobody sets on the object): its
// readiness gate, the dependencies gate and its injection points'.
func WrittenToGit(conditionType string) bool {
	return conditionType == configv1alpha1.PackageVariantReadinessGate || conditionType == configv1alpha1.DependenciesReadinessGate ||
		strings.HasPrefix(conditionType, configv1alpha1.InjectionConditionPrefix)
}

// mergeConditions keeps the conditions an object has and sets those of
// the given types from want (removing them when want has none).
func mergeConditions(cur, want []porchv1alpha1.Condition, types []string) []porchv1alpha1.Condition {
	fromWant := func(t string) bool { return slices.Contains(types, t) }
	out := make([]porchv1alpha1.Condition, 0, len(cur)+len(types))
	for _, c := range cur {
		if !fromWant(c.Type) {
			out = append(out, c)
		}
	}
	for _, c := range want {
		if fromWant(c.Type) {
			out = append(out, c)
		}
	}
	return out
}

func hasOwner(refs []metav1.OwnerReference, want metav1.OwnerReference) bool {
	for _, r := range refs {
		if r.UID == want.UID {
			return true
		}
	}
	return false
}
