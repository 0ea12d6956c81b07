package deps

import (
	"errors"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
)

// A repository holding an unreadable package, a package at two versions
// and a provider of an unrelated kind: a request that touches none of
// them resolves; one that touches them meets them.
func TestProblem_relevant(t *testing.T) {
	g := NewWithT(t)
	const widget, gadget = "example.com/v1/Widget", "example.com/v1/Gadget"
	cat := catalogOf(t,
		mkRev(t, "app", "1.0.0", requires(pkgReq(t, "lib", "^1"))),
		mkRev(t, "lib", "1.0.0"), mkRev(t, "lib", "1.1.0"),
		mkRev(t, "tenant", "1.0.0"), mkRev(t, "tenant", "2.0.0"),
		mkRev(t, "widget-operator", "1.0.0", provides(widget)),
		mkRev(t, "widgets-community", "1.0.0", provides(widget)),
		mkRev(t, "gadgets", "1.0.0", provides(gadget)),
	)
	broken := &Revision{Package: "broken", Err: errors.New("cannot be read")}
	p := Problem{Catalog: cat, Installed: []Installed{
		{Dir: "lib", Revision: mkRev(t, "lib", "1.0.0")},
		{Dir: "web", Revision: mkRev(t, "web", "", requires(pkgReq(t, "lib", "<1.1.0")))},
		{Dir: "broken", Revision: broken},
		{Dir: "tenant-a", Revision: mkRev(t, "tenant", "1.0.0")},
		{Dir: "ops", Revision: mkRev(t, "tenant", "2.0.0")},
		{Dir: "gadgets", Revision: mkRev(t, "gadgets", "1.0.0", provides(gadget))},
		{Dir: "community", Revision: mkRev(t, "widgets-community", "1.0.0", provides(widget))},
	}, Requests: requests(t, "app")}

	_, err := Resolve(p)
	g.Expect(err).To(HaveOccurred(), "the whole repository's problem fails on what app never touches")

	rel := p.Relevant()
	var dirs []string
	for _, in := range rel.Installed {
		dirs = append(dirs, in.Dir)
	}
	g.Expect(dirs).To(Equal([]string{"lib", "web"}), "lib is required; web requires lib")
	res, err := Resolve(rel)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(planText(res)).To(Equal("app 1.0.0 install\nlib 1.0.0 keep\nweb (unversioned) keep"), "web's range still holds lib")

	// A request for a provider of the kind meets the other provider.
	rel = Problem{Catalog: cat, Installed: p.Installed, Requests: requests(t, "widget-operator")}.Relevant()
	g.Expect(rel.Installed).To(HaveLen(1))
	g.Expect(rel.Installed[0].Dir).To(Equal("community"))
	_, err = Resolve(rel)
	var unsat *UnsatisfiableError
	g.Expect(errors.As(err, &unsat)).To(BeTrue(), "%v", err)
	g.Expect(unsat.Explanation).To(ContainSubstring("both provide kind " + widget))

	// A request for the package installed twice meets both copies.
	_, err = Resolve(Problem{Catalog: cat, Installed: p.Installed, Requests: requests(t, "tenant")}.Relevant())
	g.Expect(err).To(MatchError(ContainSubstring("package tenant is installed twice at different versions")))

	// A root names a package that is not requested (an unversioned
	// variant's own package, resolved as installed).
	rel = Problem{Catalog: cat, Installed: p.Installed}.Relevant("gadgets")
	g.Expect(rel.Installed).To(HaveLen(1))
	g.Expect(rel.Installed[0].Dir).To(Equal("gadgets"))
}

// On random problems, nothing left out interacts with what the pruned
// problem's solution holds: no shared package, no shared kind, no
// requirement either way; and pruning never turns a solvable problem
// unsolvable.
func TestProblem_relevantIndependent(t *testing.T) {
	n := int64(2000)
	if testing.Short() || raceEnabled {
		n = 300
	}
	for seed := int64(0); seed < n; seed++ {
		p, catalog := randomProblem(t, seed)
		rel := p.Relevant()
		res, err := Resolve(rel)
		if _, full := Resolve(p); full == nil && err != nil {
			t.Fatalf("seed %d: the whole problem resolves, the relevant part does not: %v\n%s", seed, err, describe(p, catalog))
		}
		if err != nil {
			continue
		}
		chosen := map[string]*Revision{}
		for _, st := range res.Plan {
			for _, r := range catalog {
				if r.Package == st.Package && r.VersionString() == st.Version {
					chosen[st.Package] = r
				}
			}
			for _, in := range rel.Installed {
				if in.Revision.Package == st.Package && in.Revision.VersionString() == st.Version {
					chosen[st.Package] = in.Revision
				}
			}
		}
		for _, in := range p.Installed {
			if slices.ContainsFunc(rel.Installed, func(o Installed) bool { return o.Dir == in.Dir }) {
				continue
			}
			d := in.Revision
			for name, r := range chosen {
				if name == d.Package {
					t.Fatalf("seed %d: %s left out, and the plan chooses %s\n%s", seed, d.Label(), r.Label(), describe(p, catalog))
				}
				if interacts(d, r) || interacts(r, d) {
					t.Fatalf("seed %d: %s left out, and it interacts with %s of the plan\n%s", seed, d.Label(), r.Label(), describe(p, catalog))
				}
			}
		}
	}
}

// interacts says whether a requires what b is (its package or a kind it
// provides), or both provide one kind.
func interacts(a, b *Revision) bool {
	if a.Decl == nil || b.Decl == nil {
		return false
	}
	var names func(r Requirement) bool
	names = func(r Requirement) bool {
		switch {
		case r.GVK != "":
			return slices.Contains(b.Decl.Provides, r.GVK)
		case r.AnyOf != nil:
			return slices.ContainsFunc(r.AnyOf, names)
		default:
			return r.Package == b.Package
		}
	}
	return slices.ContainsFunc(a.Decl.Requires, names) || slices.ContainsFunc(a.Decl.Provides, func(g string) bool { return slices.Contains(b.Decl.Provides, g) })
}
