package pkgdeps

import (
	"errors"
	"fmt"
	"testing"

	"github.com/Masterminds/semver/v3"
	. "github.com/onsi/gomega"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/deps"
	"github.com/scion-dev/scion/internal/reconciler"
)

func rev(t *testing.T, name, version string, provides []string, requires ...string) *deps.Revision {
	t.Helper()
	d := &deps.Declaration{Provides: provides}
	for _, r := range requires {
		req, err := deps.NewPackageRequirement(r, "")
		if err != nil {
			t.Fatal(err)
		}
		d.Requires = append(d.Requires, req)
	}
	r := &deps.Revision{Package: name, Decl: d}
	if version != "" {
		r.Version = semver.MustParse(version)
	}
	return r
}

func TestLock(t *testing.T) {
	g := NewWithT(t)
	const widget = "example.com/v1/Widget"
	cat := &Catalog{Catalog: deps.NewCatalog(), where: map[string]Location{}, byCommit: map[string]*deps.Revision{}}
	g.Expect(cat.Add(rev(t, "community", "1.0.0", []string{widget}))).To(Succeed())
	installed := []Package{
		{Dir: "app", Rev: rev(t, "app", "2.0.0", nil, "lib", "operator"), Lifecycle: porchv1alpha1.LifecyclePublished},
		{Dir: "lib", Rev: rev(t, "lib", "1.0.0", nil), Lifecycle: porchv1alpha1.LifecycleDraft},
		{Dir: "operator", Rev: rev(t, "operator", "1.0.0", []string{widget}), Lifecycle: porchv1alpha1.LifecyclePublished},
	}
	planned := []configv1alpha1.LockedPackage{
		{Name: "community", Version: "1.0.0", State: configv1alpha1.LockedPlanned, PlannedBy: []string{"b", "a"}},
		{Name: "lib", Version: "2.0.0", State: configv1alpha1.LockedPlanned, PlannedBy: []string{"c"}}, // git has it: git's entry wins
		{Name: "gone", Version: "1.0.0", State: configv1alpha1.LockedPlanned},                          // nobody plans it
	}
	pkgs, conflicts := Lock(installed, planned, cat)
	g.Expect(pkgs).To(Equal([]configv1alpha1.LockedPackage{
		{Name: "app", Version: "2.0.0", Directory: "app", State: configv1alpha1.LockedPublished},
		{Name: "community", Version: "1.0.0", State: configv1alpha1.LockedPlanned, Provides: []string{widget}, PlannedBy: []string{"a", "b"}},
		{Name: "lib", Version: "1.0.0", Directory: "lib", State: configv1alpha1.LockedDraft, Dependants: []string{"app"}},
		{Name: "operator", Version: "1.0.0", Directory: "operator", State: configv1alpha1.LockedPublished, Provides: []string{widget}, Dependants: []string{"app"}},
	}))
	g.Expect(conflicts).To(Equal([]configv1alpha1.LockConflict{{Kind: widget, Packages: []string{"operator", "community"},
		Message: "kind example.com/v1/Widget is provided by operator 1.0.0 (published in operator) and community 1.0.0 (planned by a, b), and a kind has one provider per repository: operator holds it, and publishing community is refused while the conflict stands"}}))
	g.Expect(ConflictFor(conflicts, pkgs[1])).To(HaveLen(1))
	g.Expect(ConflictFor(conflicts, pkgs[3])).To(BeEmpty(), "the holder may publish")
}

// The lock lists every conflict it causes anyone: a package that allows
// one version at two versions (not one that allows several, nor two
// copies of one version), and a package that requires a rival of a
// kind's holder.
func TestLock_everyConflict(t *testing.T) {
	g := NewWithT(t)
	const widget = "example.com/v1/Widget"
	cat := &Catalog{Catalog: deps.NewCatalog(), where: map[string]Location{}, byCommit: map[string]*deps.Revision{}}
	g.Expect(cat.Add(rev(t, "widgets-community", "1.0.0", []string{widget}))).To(Succeed())
	free := func(r *deps.Revision) *deps.Revision {
		r.Decl.InstallationType = configv1alpha1.NoRestrictions
		return r
	}
	declared := func(r *deps.Revision) *deps.Revision { r.Decl.Declared = true; return r }
	installed := []Package{
		{Dir: "operator", Rev: rev(t, "widget-operator", "1.0.0", []string{widget}), Lifecycle: porchv1alpha1.LifecycleDraft},
		{Dir: "app-b", Rev: rev(t, "app-b", "1.0.0", nil, "widgets-community"), Lifecycle: porchv1alpha1.LifecycleDraft},
		{Dir: "app-c", Rev: rev(t, "app-c", "1.0.0", nil, "widgets-community"), Lifecycle: porchv1alpha1.LifecycleDraft},
		{Dir: "tenant-a", Rev: declared(rev(t, "platform", "1.0.0", nil)), Lifecycle: porchv1alpha1.LifecyclePublished},
		{Dir: "ops", Rev: declared(rev(t, "platform", "2.0.0", nil)), Lifecycle: porchv1alpha1.LifecycleDraft},
		{Dir: "tenant-b", Rev: declared(rev(t, "platform", "1.0.0", nil)), Lifecycle: porchv1alpha1.LifecyclePublished},
		{Dir: "ns-a", Rev: declared(free(rev(t, "shared", "1.0.0", nil))), Lifecycle: porchv1alpha1.LifecyclePublished},
		{Dir: "ns-b", Rev: declared(free(rev(t, "shared", "2.0.0", nil))), Lifecycle: porchv1alpha1.LifecycleDraft},
		{Dir: "tenant-c", Rev: rev(t, "tenant-ns", "1.0.0", nil), Lifecycle: porchv1alpha1.LifecyclePublished}, // no declaration
		{Dir: "tenant-d", Rev: rev(t, "tenant-ns", "2.0.0", nil), Lifecycle: porchv1alpha1.LifecycleDraft},
	}
	pkgs, conflicts := Lock(installed, nil, cat)
	g.Expect(conflicts).To(Equal([]configv1alpha1.LockConflict{
		{Package: "platform", Packages: []string{"tenant-a", "ops"},
			Message: "package platform is in the repository as platform 1.0.0 (published in tenant-a) and platform 2.0.0 (draft in ops), and it allows one version per repository (installationType onePerRepository): tenant-a stays, and publishing ops is refused while the conflict stands; move one copy to the other's version, or remove it"},
		{Kind: widget, Packages: []string{"widget-operator", "widgets-community"}, RequiredBy: []string{"app-b", "app-c"},
			Message: "app-b, app-c requires widgets-community, which provides kind example.com/v1/Widget, and widget-operator 1.0.0 (draft in operator) holds it: a kind has one provider per repository, so app-b, app-c cannot be installed while widget-operator is there"},
	}))
	byDir := map[string]configv1alpha1.LockedPackage{}
	for _, p := range pkgs {
		byDir[p.Directory] = p
	}
	g.Expect(ConflictFor(conflicts, byDir["ops"])).To(HaveLen(1), "the other version's publication is refused")
	g.Expect(ConflictFor(conflicts, byDir["tenant-a"])).To(BeEmpty())
	g.Expect(ConflictFor(conflicts, byDir["operator"])).To(BeEmpty(), "the holder may publish")
}

// Two drafts needing rival providers of a kind: neither binds the other
// until its needs are claimed; once one is (planned in the lock), it
// binds, and the other cannot resolve.
func TestResolve_rivalDrafts(t *testing.T) {
	g := NewWithT(t)
	const widget = "example.com/v1/Widget"
	c := deps.NewCatalog()
	for _, r := range []*deps.Revision{
		rev(t, "widget-operator", "1.0.0", []string{widget}), rev(t, "widgets-community", "1.0.0", []string{widget}),
		rev(t, "app-a", "1.0.0", nil, "widget-operator"), rev(t, "app-b", "1.0.0", nil, "widgets-community"),
	} {
		g.Expect(c.Add(r)).To(Succeed())
	}
	cat := OfflineCatalog(c)
	installed := []Package{
		{Dir: "app-a", Rev: rev(t, "app-a", "1.0.0", nil, "widget-operator"), Lifecycle: porchv1alpha1.LifecycleDraft},
		{Dir: "app-b", Rev: rev(t, "app-b", "1.0.0", nil, "widgets-community"), Lifecycle: porchv1alpha1.LifecycleDraft},
	}
	variant := func(name string, planned ...configv1alpha1.LockedPackage) error {
		_, err := Resolve(Variant{Catalog: cat, Installed: installed, Self: name, Package: name, Version: semver.MustParse("1.0.0"), Planned: planned})
		return err
	}
	g.Expect(variant("app-a")).To(Succeed(), "app-b's draft has claimed nothing")
	g.Expect(variant("app-b")).To(Succeed(), "app-a's draft has claimed nothing")

	// app-a claims widget-operator first.
	claim := configv1alpha1.LockedPackage{Name: "widget-operator", Version: "1.0.0", State: configv1alpha1.LockedPlanned, PlannedBy: []string{"app-a"}}
	g.Expect(variant("app-a", claim)).To(Succeed())
	err := variant("app-b", claim)
	g.Expect(err).To(MatchError(ContainSubstring("both provide kind " + widget)))

	// Its draft is there too: still one winner.
	installed = append(installed, Package{Dir: "widget-operator", Rev: rev(t, "widget-operator", "1.0.0", []string{widget}), Lifecycle: porchv1alpha1.LifecycleDraft})
	g.Expect(variant("app-a")).To(Succeed())
	g.Expect(variant("widget-operator")).To(Succeed(), "the provider's own resolution is not held back by app-b's draft")
	g.Expect(variant("app-b")).To(MatchError(ContainSubstring("both provide kind " + widget)))
}

func TestWithPlan(t *testing.T) {
	g := NewWithT(t)
	planned := []configv1alpha1.LockedPackage{
		{Name: "lib", Version: "1.0.0", State: configv1alpha1.LockedPlanned, PlannedBy: []string{"a", "b"}},
		{Name: "base", Version: "1.0.0", State: configv1alpha1.LockedPlanned, PlannedBy: []string{"a"}},
		{Name: "app", Version: "1.0.0", State: configv1alpha1.LockedPublished, Directory: "app"},
	}
	// a no longer needs base; it needs lib at 2.0.0 (moved for b too) and
	// a new one.
	out := WithPlan(planned, "a", []Need{{Step: deps.Step{Package: "lib", Version: "2.0.0"}}, {Step: deps.Step{Package: "extra", Version: "1.0.0"}}})
	g.Expect(out).To(Equal([]configv1alpha1.LockedPackage{
		{Name: "lib", Version: "2.0.0", State: configv1alpha1.LockedPlanned, PlannedBy: []string{"a", "b"}},
		{Name: "extra", Version: "1.0.0", State: configv1alpha1.LockedPlanned, PlannedBy: []string{"a"}},
	}))
	g.Expect(WithPlan(out, "a", nil)).To(Equal([]configv1alpha1.LockedPackage{
		{Name: "lib", Version: "2.0.0", State: configv1alpha1.LockedPlanned, PlannedBy: []string{"b"}},
	}))
}

func TestAssess(t *testing.T) {
	g := NewWithT(t)
	published := &Package{Dir: "lib", Rev: rev(t, "lib", "1.0.0", nil), Published: rev(t, "lib", "1.0.0", nil), Lifecycle: porchv1alpha1.LifecyclePublished}
	draft := &Package{Dir: "base", Rev: rev(t, "base", "1.0.0", nil), Lifecycle: porchv1alpha1.LifecycleDraft}
	old := &Package{Dir: "web", Rev: rev(t, "web", "1.0.0", nil), Published: rev(t, "web", "1.0.0", nil), Lifecycle: porchv1alpha1.LifecyclePublished}
	need := func(name, version string, in *Package) Need {
		return Need{Step: deps.Step{Package: name, Version: version}, In: in}
	}
	installers := map[string]Installer{
		"base": {Name: "cluster.base.dependency", Dependency: true, Dependant: true},
		"web":  {Name: "team-web"},
	}

	a := Assess([]Need{need("lib", "1.0.0", published)}, false, nil)
	g.Expect(a.Ready).To(BeTrue())
	g.Expect(a.Reason).To(Equal(DependenciesSatisfiedReason))
	g.Expect(a.Status).To(Equal([]configv1alpha1.DependencyStatus{{Package: "lib", Version: "1.0.0", State: configv1alpha1.DependencySatisfied, SatisfiedBy: "lib (Published 1.0.0)"}}))

	a = Assess([]Need{need("lib", "1.0.0", published), need("base", "1.0.0", draft), need("new", "1.0.0", nil)}, true, installers)
	g.Expect(a.Ready).To(BeFalse())
	g.Expect(a.Reason).To(Equal(DependencyPendingReason))
	g.Expect(a.Message).To(Equal("base 1.0.0 in base is draft: publish it; new 1.0.0 is being installed"))
	g.Expect(a.Install).To(HaveLen(2), "base (shared: owned too) and new")

	a = Assess([]Need{need("new", "1.0.0", nil), need("web", "2.0.0", old)}, false, installers)
	g.Expect(a.Reason).To(Equal(DependencyConflictReason), "a conflict outranks a missing one")
	g.Expect(a.Message).To(Equal("new 1.0.0 is not in the repository: install it, or set spec.dependencies.install: true; web is at 1.0.0 in web, put there by PackageVariant team-web, and this variant needs 2.0.0: Scion changes only the dependencies it installed; move it yourself, or override the range in spec.dependencies.overrides"))
	g.Expect(a.Install).To(BeEmpty())

	a = Assess(nil, true, nil)
	g.Expect(a.Ready).To(BeTrue())
	g.Expect(a.Message).To(Equal("the package has no dependencies"))
}

// A draft that provides a kind a Published package provides cannot be
// published: it is left out of resolutions.
func TestBlocked(t *testing.T) {
	g := NewWithT(t)
	const widget = "example.com/v1/Widget"
	holder := rev(t, "crds", "1.0.0", []string{widget})
	installed := []Package{
		{Dir: "crds", Rev: holder, Published: holder, Lifecycle: porchv1alpha1.LifecyclePublished},
		{Dir: "legacy", Rev: rev(t, "legacy", "1.0.0", []string{widget}), Lifecycle: porchv1alpha1.LifecycleDraft},
		{Dir: "crds-copy", Rev: rev(t, "crds", "1.0.0", []string{widget}), Lifecycle: porchv1alpha1.LifecycleDraft},
		{Dir: "app", Rev: rev(t, "app", "1.0.0", nil), Lifecycle: porchv1alpha1.LifecycleDraft},
	}
	g.Expect(Blocked(installed)).To(Equal(map[string]bool{"legacy": true}))
	p := RepositoryProblem(OfflineCatalog(deps.NewCatalog()), installed, nil)
	var dirs []string
	for _, in := range p.Installed {
		dirs = append(dirs, in.Dir)
	}
	g.Expect(dirs).To(Equal([]string{"crds", "crds-copy", "app"}))
}

// A lock write that lost a race is a race the caller's retry resolves:
// retried soon, never logged as a failure.
func TestErrLockConflict_isARaceLost(t *testing.T) {
	err := fmt.Errorf("PackageLock cluster-06: %w", ErrLockConflict)
	if !reconciler.Expected(err) || !errors.Is(err, ErrLockConflict) {
		t.Fatalf("%v is not an expected race", err)
	}
}
