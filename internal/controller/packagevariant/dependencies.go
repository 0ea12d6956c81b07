package packagevariant

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/deps"
	"github.com/scion-dev/scion/internal/pkgdeps"
	"github.com/scion-dev/scion/internal/reconciler"
)

// DownstreamIndex indexes PackageVariants by their downstream Repository,
// so a repository's lock and revisions find the variants writing into it.
const DownstreamIndex = "spec.downstream.repo"

// DependantIndex indexes PackageVariants with spec.dependencies by their
// downstream Repository: a revision event in it may change their gate.
const DependantIndex = "spec.downstream.repo+dependencies"

// DependantOfIndex indexes the dependency PackageVariants (with the
// DependencyLabel) by the UIDs of their owners: a variant finds those it
// owns without listing the namespace.
const DependantOfIndex = "metadata.ownerReferences.uid+dependency"

// dependenciesRetry is how often a variant whose dependencies cannot be
// resolved looks again (a newly published upstream revision may solve
// it, and no event of its own repository says so).
const dependenciesRetry = time.Minute

// depsFacts is what reconcileDependencies learns.
type depsFacts struct {
	// assessment is the resolution's meaning (nil when it failed).
	assessment *pkgdeps.Assessment
	// failure is the explanation of a resolution that failed.
	failure string
	// version is the variant's package's version ("" when unknown).
	version string
}

// condition is the DependenciesReady condition (also the gate's).
func (f *depsFacts) condition() metav1.Condition {
	if f.assessment == nil {
		return metav1.Condition{Type: configv1alpha1.DependenciesReadyCondition, Status: metav1.ConditionFalse, Reason: pkgdeps.DependenciesUnsatisfiableReason, Message: f.failure}
	}
	c := metav1.Condition{Type: configv1alpha1.DependenciesReadyCondition, Status: metav1.ConditionFalse, Reason: f.assessment.Reason, Message: f.assessment.Message}
	if f.assessment.Ready {
		c.Status = metav1.ConditionTrue
	}
	return c
}

// stalls says whether the variant cannot go on without a change: its
// dependencies have no solution, or one is held at another version by
// someone else.
func (f *depsFacts) stalls() bool {
	return f.assessment == nil || f.assessment.Reason == pkgdeps.DependencyConflictReason
}

// reconcileDependencies resolves the variant's dependencies in its
// downstream repository (with spec.dependencies): it writes the packages
// it installs into the repository's lock (against the lock it resolved
// with, so two resolutions cannot both claim one kind), makes or moves
// the dependency PackageVariants, releases those it no longer needs, and
// records the facts for the gate and the status. A resolution that fails
// is recorded, not returned: the draft still shows the gate, False with
// the explanation.
func (r *Reconciler) reconcileDependencies(ctx context.Context, s *scope) (ctrl.Result, error) {
	pv := s.pv
	if pv.Spec.Dependencies == nil {
		// Dependencies were turned off: what it installed is released.
		return ctrl.Result{}, r.releaseDependencies(ctx, pv, nil)
	}
	cat, err := r.Deps.NamespaceCatalog(ctx, r.Cache, r.Client, pv.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	installed, err := r.Deps.Installed(ctx, s.down.store, cat)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("repository %s: %w", s.down.obj.Name, err)
	}
	f := &depsFacts{}
	s.deps = f
	v := pkgdeps.Variant{Catalog: cat, Installed: installed, Self: pv.Spec.Downstream.Package, Spec: *pv.Spec.Dependencies, Package: s.take.rev.Package}
	if self := cat.Identify(s.take.rev.Commit); self != nil {
		v.Package, v.Version = self.Package, self.Version
		f.version = self.Version.String()
	} else {
		upstream, err := r.upstreams.read(ctx, s.up.store, s.take.rev)
		if err != nil {
			return ctrl.Result{}, err
		}
		if v.Decl, err = deps.ParsePackage(upstream); err != nil {
			f.failure = fmt.Sprintf("the upstream package %s cannot be read: %v", s.take.rev.Package, err)
			return ctrl.Result{}, nil
		}
	}
	// Resolve against the lock as read and write what this variant
	// installs against that version; a write another resolution beat is
	// decided again at once, with the lock it lost to (a few times: a
	// burst of variants resolving in one repository settles in a few
	// rounds), before the reconcile gives up and is retried.
	var a pkgdeps.Assessment
	var failed bool
	for attempt := 1; ; attempt++ {
		a, failed, err = r.resolveAndClaim(ctx, s, v, installed, cat)
		if !errors.Is(err, pkgdeps.ErrLockConflict) || attempt == lockAttempts {
			break
		}
		select {
		case <-ctx.Done():
			return ctrl.Result{}, ctx.Err()
		case <-time.After(reconciler.RaceRetry() / 5):
		}
		if installed, err = r.Deps.Installed(ctx, s.down.store, cat); err != nil {
			return ctrl.Result{}, fmt.Errorf("repository %s: %w", s.down.obj.Name, err)
		}
		v.Installed = installed
	}
	if err != nil || failed {
		return ctrl.Result{}, err
	}
	keep := map[string]bool{}
	for _, n := range a.Install {
		name, err := r.ensureDependency(ctx, pv, s.down.obj.Name, n)
		if err != nil {
			return ctrl.Result{}, err
		}
		keep[name] = true
	}
	return ctrl.Result{}, r.releaseDependencies(ctx, pv, keep)
}

// lockAttempts bounds how often one reconcile resolves again after its
// lock write lost to another resolution's.
const lockAttempts = 5

// resolveAndClaim resolves the variant against the repository's lock as
// read now and writes what it installs into the lock against that
// version (pkgdeps.ErrLockConflict when another write came first). It
// records the facts for the gate and the status; done is true when the
// resolution failed (recorded, nothing to write).
func (r *Reconciler) resolveAndClaim(ctx context.Context, s *scope, v pkgdeps.Variant, installed []pkgdeps.Package, cat *pkgdeps.Catalog) (pkgdeps.Assessment, bool, error) {
	pv, f := s.pv, s.deps
	lock, exists, err := pkgdeps.ReadLock(ctx, r.APIReader, s.down.obj)
	if err != nil {
		return pkgdeps.Assessment{}, false, err
	}
	// What others plan counts as installed; what this variant planned
	// before is decided again.
	v.Planned = pkgdeps.WithPlan(pkgdeps.Planned(lock), pv.Name, nil)
	res, err := pkgdeps.Resolve(v)
	if err != nil {
		f.assessment, f.failure = nil, pkgdeps.Explain(err, cat)
		return pkgdeps.Assessment{}, true, nil
	}
	installers, err := r.installers(ctx, pv)
	if err != nil {
		return pkgdeps.Assessment{}, false, err
	}
	a := pkgdeps.Assess(res.Needs, pv.Spec.Dependencies.Install, installers)
	f.assessment, f.failure = &a, ""
	var plan []pkgdeps.Need
	for _, n := range a.Install {
		if n.In == nil {
			plan = append(plan, n) // not in git yet: claimed in the lock
		}
	}
	err = pkgdeps.WriteLock(ctx, r.Client, s.down.obj, lock, exists, func(l *configv1alpha1.PackageLock) {
		l.Packages, l.Conflicts = pkgdeps.Lock(installed, pkgdeps.WithPlan(pkgdeps.Planned(l), pv.Name, plan), cat)
	})
	return a, false, err
}

// installers maps the downstream folders of the variant's repository to
// the PackageVariants writing them.
func (r *Reconciler) installers(ctx context.Context, pv *configv1alpha1.PackageVariant) (map[string]pkgdeps.Installer, error) {
	list := &configv1alpha1.PackageVariantList{}
	if err := r.List(ctx, list, client.InNamespace(pv.Namespace), client.MatchingFields{DownstreamIndex: pv.Spec.Downstream.Repo}); err != nil {
		return nil, err
	}
	out := map[string]pkgdeps.Installer{}
	for i := range list.Items {
		o := &list.Items[i]
		if o.Name == pv.Name || o.Spec.Downstream == nil {
			continue
		}
		out[o.Spec.Downstream.Package] = pkgdeps.Installer{Name: o.Name, Dependency: o.Labels[configv1alpha1.DependencyLabel] == pv.Spec.Downstream.Repo, Dependant: ownedBy(o, pv)}
	}
	return out, nil
}

func ownedBy(o metav1.Object, owner *configv1alpha1.PackageVariant) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == owner.UID {
			return true
		}
	}
	return false
}

// ensureDependency makes the PackageVariant that installs a need into the
// repository (one per package per repository, shared: every dependant is
// an owner), or moves it to the version chosen; one somebody adopted
// (DependencyLabel removed) is left alone. It returns its name.
func (r *Reconciler) ensureDependency(ctx context.Context, pv *configv1alpha1.PackageVariant, repo string, n pkgdeps.Need) (string, error) {
	name := pkgdeps.DependencyVariantName(repo, n.Package)
	if n.Location.Repo == "" {
		return name, fmt.Errorf("dependency %s %s: no upstream repository publishes it", n.Package, n.Version)
	}
	want := &configv1alpha1.Upstream{Repo: n.Location.Repo, Package: n.Package, Revision: configv1alpha1.RevisionNumber(strconv.Itoa(n.Location.Revision.Revision))}
	ref := metav1.OwnerReference{APIVersion: configv1alpha1.GroupVersion.String(), Kind: "PackageVariant", Name: pv.Name, UID: pv.UID}
	cur := &configv1alpha1.PackageVariant{}
	err := r.Get(ctx, types.NamespacedName{Namespace: pv.Namespace, Name: name}, cur)
	switch {
	case apierrors.IsNotFound(err):
		dep := &configv1alpha1.PackageVariant{
			ObjectMeta: metav1.ObjectMeta{Namespace: pv.Namespace, Name: name, OwnerReferences: []metav1.OwnerReference{ref},
				Labels: map[string]string{configv1alpha1.DependencyLabel: repo}},
			Spec: configv1alpha1.PackageVariantSpec{
				Upstream:     want,
				Downstream:   &configv1alpha1.Downstream{Repo: repo, Package: n.Package},
				Dependencies: &configv1alpha1.Dependencies{Overrides: pv.Spec.Dependencies.Overrides, Prerelease: pv.Spec.Dependencies.Prerelease},
			},
		}
		if shard := pv.Labels[configv1alpha1.ShardLabel]; shard != "" {
			dep.Labels[configv1alpha1.ShardLabel] = shard
		}
		if err := r.Create(ctx, dep); err != nil {
			return name, fmt.Errorf("installing %s %s: %w", n.Package, n.Version, err)
		}
		r.Recorder.Eventf(pv, dep, "Normal", "DependencyInstalled", "Install", "%s %s is installed into %s by PackageVariant %s", n.Package, n.Version, repo, name)
		return name, nil
	case err != nil:
		return name, err
	case cur.Labels[configv1alpha1.DependencyLabel] != repo || !cur.DeletionTimestamp.IsZero():
		return name, nil // adopted by someone, or on its way out
	}
	patch := client.MergeFromWithOptions(cur.DeepCopy(), client.MergeFromWithOptimisticLock{})
	changed := false
	if !ownedBy(cur, pv) {
		cur.OwnerReferences = append(cur.OwnerReferences, ref)
		changed = true
	}
	if u := cur.Spec.Upstream; u == nil || *u != *want {
		from := ""
		if u != nil {
			from = string(u.Revision)
		}
		r.Recorder.Eventf(pv, cur, "Normal", "DependencyMoved", "Install", "%s moves to %s (revision %s, was %s) in %s", n.Package, n.Version, want.Revision, from, repo)
		cur.Spec.Upstream = want
		changed = true
	}
	if !changed {
		return name, nil
	}
	if err := r.Patch(ctx, cur, patch); err != nil {
		return name, fmt.Errorf("dependency %s: %w", name, err)
	}
	return name, nil
}

// releaseDependencies removes the variant from the owners of the
// dependency PackageVariants it no longer needs (keep names those it
// does); one left without a dependant is deleted, unless someone adopted
// it.
func (r *Reconciler) releaseDependencies(ctx context.Context, pv *configv1alpha1.PackageVariant, keep map[string]bool) error {
	list := &configv1alpha1.PackageVariantList{}
	if err := r.List(ctx, list, client.InNamespace(pv.Namespace), client.MatchingFields{DependantOfIndex: string(pv.UID)}); err != nil {
		return err
	}
	var errs []error
	for i := range list.Items {
		dep := &list.Items[i]
		if keep[dep.Name] || !ownedBy(dep, pv) {
			continue
		}
		patch := client.MergeFromWithOptions(dep.DeepCopy(), client.MergeFromWithOptimisticLock{})
		dep.OwnerReferences = slices.DeleteFunc(dep.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == pv.UID })
		dependants := 0
		for _, ref := range dep.OwnerReferences {
			if ref.Kind == "PackageVariant" {
				dependants++
			}
		}
		if dependants == 0 {
			r.Recorder.Eventf(pv, dep, "Normal", "DependencyRemoved", "Release", "%s is no longer needed by any variant: deleted", dep.Name)
			errs = append(errs, client.IgnoreNotFound(r.Delete(ctx, dep, client.Preconditions{UID: &dep.UID, ResourceVersion: &dep.ResourceVersion})))
			continue
		}
		errs = append(errs, client.IgnoreNotFound(r.Patch(ctx, dep, patch)))
	}
	return errors.Join(errs...)
}

// packageConflict returns the conflicts of the variant's repository's lock
// that name its package (from the cache: the lock controller keeps it).
func (r *Reconciler) packageConflict(ctx context.Context, s *scope) string {
	lock := &configv1alpha1.PackageLock{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: s.pv.Namespace, Name: s.pv.Spec.Downstream.Repo}, lock); err != nil {
		return ""
	}
	var msgs []string
	for _, c := range lock.Conflicts {
		for _, p := range c.Packages {
			if p == s.pv.Spec.Upstream.Package || p == s.pv.Spec.Downstream.Package {
				msgs = append(msgs, c.Message)
				break
			}
		}
	}
	return strings.Join(msgs, "; ")
}

// requestsForLock maps a PackageLock to the variants writing into its
// repository that its conflicts name, and to those with dependencies
// (what others plan changes their resolution).
func (r *Reconciler) requestsForLock(ctx context.Context, o client.Object) []reconcile.Request {
	lock := o.(*configv1alpha1.PackageLock)
	named := map[string]bool{}
	for _, c := range lock.Conflicts {
		for _, p := range c.Packages {
			named[p] = true
		}
	}
	list := &configv1alpha1.PackageVariantList{}
	if err := r.List(ctx, list, client.InNamespace(lock.Namespace), client.MatchingFields{DownstreamIndex: lock.Name}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		pv := &list.Items[i]
		conflicted := apimeta.IsStatusConditionTrue(pv.Status.Conditions, configv1alpha1.PackageConflictCondition)
		if pv.Spec.Dependencies != nil || pv.Spec.Upstream != nil && named[pv.Spec.Upstream.Package] || pv.Spec.Downstream != nil && named[pv.Spec.Downstream.Package] || conflicted {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pv)})
		}
	}
	return out
}
