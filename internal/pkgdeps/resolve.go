package pkgdeps

import (
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/deps"
)

// Variant is one variant's resolution problem: its package, in its
// downstream repository, with the namespace's catalog.
type Variant struct {
	Catalog   *Catalog
	Installed []Package
	// Self is the variant's downstream folder. What is there now is not
	// counted as installed: the variant decides what it becomes.
	Self string
	// Package and Version are the variant's upstream package and version;
	// Version is nil when the upstream revision is not in the catalog (a
	// draft), and Decl is then its declaration.
	Package string
	Version *semver.Version
	Decl    *deps.Declaration
	// Spec is the variant's spec.dependencies.
	Spec configv1alpha1.Dependencies
	// Planned are the packages other variants are installing into the
	// repository (the lock's Planned entries).
	Planned []configv1alpha1.LockedPackage
}

// Need is one dependency of a resolved variant.
type Need struct {
	deps.Step
	// In is the repository's package that holds it (nil: none).
	In *Package
	// PlannedBy are the variants installing it, when another one is.
	PlannedBy []string
	// Location is where the chosen version is published.
	Location Location
}

// Resolution is a variant's resolved dependencies.
type Resolution struct {
	Result *deps.Result
	// Needs are the variant's package's dependencies, direct and
	// indirect, by package.
	Needs []Need
}

// Resolve resolves a variant's dependencies. The error is a
// *deps.UnsatisfiableError with the explanation, or a problem with the
// input.
func Resolve(v Variant) (*Resolution, error) {
	p, byName, planned := problem(v.Catalog, v.Installed, v.Planned, v.Self, v.Package)
	p.AllowDowngrade, p.Prerelease = v.Spec.AllowDowngrade, v.Spec.Prerelease
	if len(v.Spec.Overrides) > 0 {
		p.Overrides = map[string]string{}
		for _, o := range v.Spec.Overrides {
			p.Overrides[o.Name] = o.Version
		}
	}
	if v.Version != nil {
		p.Requests = []deps.Request{{Package: v.Package, Range: "=" + v.Version.String()}}
	} else {
		decl := v.Decl
		if decl == nil {
			decl = &deps.Declaration{}
		}
		p.Installed = append(p.Installed, deps.Installed{Dir: v.Self, Revision: &deps.Revision{Package: v.Package, Decl: decl}})
	}
	// Only what the variant's package can meet counts: another package's
	// trouble stays its own.
	res, err := deps.Resolve(p.Relevant(v.Package))
	if err != nil {
		return nil, err
	}
	out := &Resolution{Result: res}
	for _, st := range reachable(res, v.Package) {
		n := Need{Step: st, In: byName[st.Package], PlannedBy: planned[st.Package]}
		if ver, err := semver.NewVersion(st.Version); err == nil {
			n.Location, _ = v.Catalog.Location(st.Package, ver)
		}
		out.Needs = append(out.Needs, n)
	}
	return out, nil
}

// RepositoryProblem is the resolution problem of a deployment
// repository, without requests: its catalog, what it holds and what
// variants are installing into it (the lock's planned packages), as the
// controller sees it.
func RepositoryProblem(cat *Catalog, installed []Package, planned []configv1alpha1.LockedPackage) deps.Problem {
	p, _, _ := problem(cat, installed, planned, "", "")
	return p
}

// problem builds a repository's problem, leaving out the folder self and
// planned packages named selfPkg; it returns the repository's packages by
// name and who plans each planned package.
//
// A draft or proposal (a package not Published in its folder) binds
// others with its requirements only once they are met: each is in the
// repository or planned in the lock, in range. Until its own variant has
// claimed what it needs, it holds its package and kinds and nothing more,
// so two drafts needing rival providers do not lock each other out: the
// first resolution to claim a provider in the lock wins, and the other's
// draft then needs what it cannot have and is told so by its own
// resolution (and the lock's conflicts).
func problem(cat *Catalog, installed []Package, plannedPkgs []configv1alpha1.LockedPackage, self, selfPkg string) (deps.Problem, map[string]*Package, map[string][]string) {
	p := deps.Problem{Catalog: cat.Catalog}
	byName := map[string]*Package{}
	blocked := Blocked(installed)
	have := holdings(cat, installed, plannedPkgs, self)
	for i := range installed {
		in := &installed[i]
		if self != "" && in.Dir == self || blocked[in.Dir] {
			continue
		}
		rev := in.Rev
		if in.Lifecycle != porchv1alpha1.LifecyclePublished && rev.Decl != nil && !have.meets(rev.Decl.Requires) {
			rev = identity(rev)
		}
		p.Installed = append(p.Installed, deps.Installed{Dir: in.Dir, Revision: rev})
		byName[in.Rev.Package] = in
	}
	planned := map[string][]string{}
	for _, pl := range plannedPkgs {
		planned[pl.Name] = pl.PlannedBy
		if pl.State != configv1alpha1.LockedPlanned || byName[pl.Name] != nil || pl.Name == selfPkg {
			continue
		}
		pv, err := semver.NewVersion(pl.Version)
		if err != nil {
			continue
		}
		rev := revisionOf(cat, pl.Name, pv)
		if rev == nil {
			continue // no longer in the catalog: the planner will see
		}
		p.Installed = append(p.Installed, deps.Installed{Dir: "(planned by " + joinNames(pl.PlannedBy) + ")", Revision: rev})
	}
	return p, byName, planned
}

// identity is a revision that holds its package, version and kinds, and
// requires nothing.
func identity(r *deps.Revision) *deps.Revision {
	out := *r
	d := *r.Decl
	d.Requires = nil
	out.Decl = &d
	return &out
}

// held is what a repository holds or its lock plans: versions by package
// (nil for an unversioned one) and kinds.
type held struct {
	versions map[string][]*semver.Version
	kinds    map[string]bool
}

// holdings reads what a repository holds (but the folder self) and what
// its lock plans.
func holdings(cat *Catalog, installed []Package, planned []configv1alpha1.LockedPackage, self string) held {
	h := held{versions: map[string][]*semver.Version{}, kinds: map[string]bool{}}
	add := func(r *deps.Revision) {
		h.versions[r.Package] = append(h.versions[r.Package], r.Version)
		if r.Decl != nil {
			for _, g := range r.Decl.Provides {
				h.kinds[g] = true
			}
		}
	}
	for _, in := range installed {
		if in.Dir != self || self == "" {
			add(in.Rev)
		}
	}
	for _, pl := range planned {
		if pl.State != configv1alpha1.LockedPlanned {
			continue
		}
		if v, err := semver.NewVersion(pl.Version); err == nil {
			if rev := revisionOf(cat, pl.Name, v); rev != nil {
				add(rev)
			}
		}
	}
	return h
}

// meets says whether requirements are met by what is held: a package in
// range, a kind provided, one alternative of an anyOf; an optional one
// always is.
func (h held) meets(reqs []deps.Requirement) bool {
	for _, r := range reqs {
		if !r.Optional && !h.meet(r) {
			return false
		}
	}
	return true
}

func (h held) meet(r deps.Requirement) bool {
	switch {
	case r.GVK != "":
		return h.kinds[r.GVK]
	case r.AnyOf != nil:
		for _, a := range r.AnyOf {
			if h.meet(a) {
				return true
			}
		}
		return false
	default:
		for _, v := range h.versions[r.Package] {
			if r.Admits(v) {
				return true
			}
		}
		return false
	}
}

// Blocked returns the folders of packages that are only drafts (or
// proposals) and provide a kind a Published package of the repository
// provides: their publication is refused while that one is there, so they
// are left out of other packages' resolutions (a conflicting draft added
// later does not unsettle what the repository runs). Their own variants
// learn of the conflict from the lock.
func Blocked(installed []Package) map[string]bool {
	published := map[string]string{}
	for _, in := range installed {
		if in.Published != nil && in.Published.Decl != nil {
			for _, g := range in.Published.Decl.Provides {
				published[g] = in.Published.Package
			}
		}
	}
	out := map[string]bool{}
	for _, in := range installed {
		if in.Published != nil || in.Rev.Decl == nil {
			continue
		}
		for _, g := range in.Rev.Decl.Provides {
			if holder, ok := published[g]; ok && holder != in.Rev.Package {
				out[in.Dir] = true
			}
		}
	}
	return out
}

// revisionOf is the catalog's revision of a package's version (nil: none).
func revisionOf(c *Catalog, name string, v *semver.Version) *deps.Revision {
	for _, r := range c.Revisions(name) {
		if r.Version != nil && r.Version.Equal(v) {
			return r
		}
	}
	return nil
}

func sortSteps(steps []deps.Step) {
	sort.Slice(steps, func(i, j int) bool {
		if steps[i].Package != steps[j].Package {
			return steps[i].Package < steps[j].Package
		}
		return steps[i].Version < steps[j].Version
	})
}

// reachable lists the packages a package's node reaches in a solution's
// tree of reasons (not the package itself), each once, by package.
func reachable(res *deps.Result, self string) []deps.Step {
	full := map[string]*deps.Node{}
	var index func(n *deps.Node)
	index = func(n *deps.Node) {
		if !n.Seen {
			full[n.Package+"\x00"+n.Version] = n
		}
		for _, c := range n.Children {
			index(c)
		}
	}
	for _, n := range res.Why {
		index(n)
	}
	var start *deps.Node
	for _, n := range res.Why {
		if n.Package == self {
			start = full[n.Package+"\x00"+n.Version]
			break
		}
	}
	if start == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []deps.Step
	var walk func(n *deps.Node)
	walk = func(n *deps.Node) {
		if f := full[n.Package+"\x00"+n.Version]; f != nil {
			n = f
		}
		for _, c := range n.Children {
			key := c.Package + "\x00" + c.Version
			if seen[key] || c.Package == self {
				continue
			}
			seen[key] = true
			out = append(out, c.Step)
			walk(c)
		}
	}
	walk(start)
	sortSteps(out)
	return out
}

func joinNames(names []string) string {
	if len(names) == 0 {
		return "a variant"
	}
	return strings.Join(names, ", ")
}

// Explain is the text of a resolution's failure: the explanation of an
// unsatisfiable one, else the error; it names the catalog's repositories
// that could not be read (their packages were not there to choose).
func Explain(err error, cat *Catalog) string {
	msg := fmt.Sprint(err)
	if u, ok := err.(*deps.UnsatisfiableError); ok {
		msg = u.Explanation
	}
	if cat != nil && len(cat.Unavailable) > 0 {
		msg += fmt.Sprintf(" (the catalog lacks the packages of %s, which cannot be read)", strings.Join(cat.Unavailable, ", "))
	}
	return msg
}
