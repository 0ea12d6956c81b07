package deps

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// planText renders a plan one step a line: "lib 1.5.2 install",
// "web 1.4.0 upgrade from 1.3.0".
func planText(res *Result) string {
	var lines []string
	for _, s := range res.Plan {
		l := fmt.Sprintf("%s %s %s", s.Package, s.Version, s.Action)
		if s.From != "" {
			l += " from " + s.From
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

func TestResolve(t *testing.T) {
	const widget = "example.com/v1/Widget"
	type tc struct {
		name      string
		catalog   []*Revision
		installed []Installed
		requests  []string
		downgrade bool
		pre       bool
		// want is the plan, or wantErr the explanation.
		want, wantErr string
		providers     map[string]string
	}
	cases := func(t *testing.T) []tc {
		return []tc{
			{
				name:     "highest match",
				catalog:  []*Revision{mkRev(t, "lib", "1.4.0"), mkRev(t, "lib", "1.5.2"), mkRev(t, "lib", "2.0.0")},
				requests: []string{"lib@^1.4"},
				want:     "lib 1.5.2 install",
			},
			{
				name:     "no valid version",
				catalog:  []*Revision{mkRev(t, "lib", "1.4.0"), mkRev(t, "lib", "1.5.2")},
				requests: []string{"lib@>=3.0.0"},
				wantErr:  "lib >=3.0.0 is requested, but no version of lib matches >=3.0.0 (available: 1.4.0, 1.5.2)",
			},
			{
				name:     "not in the catalog",
				catalog:  []*Revision{mkRev(t, "app", "1.0.0", requires(pkgReq(t, "lib", "^1")))},
				requests: []string{"app"},
				wantErr:  "app 1.0.0 requires lib ^1, but no upstream repository has a package lib; so no version of app can be chosen (available: 1.0.0)",
			},
			{
				// The highest app needs lib 2, whose only version needs a kind
				// nobody provides: the solver backs off to app 1.
				name: "backtracking",
				catalog: []*Revision{
					mkRev(t, "app", "1.0.0", requires(pkgReq(t, "lib", "^1"))),
					mkRev(t, "app", "2.0.0", requires(pkgReq(t, "lib", "^2"))),
					mkRev(t, "lib", "1.0.0"),
					mkRev(t, "lib", "2.0.0", requires(gvkReq("example.com/v1/Missing"))),
				},
				requests: []string{"app"},
				want:     "app 1.0.0 install\nlib 1.0.0 install",
			},
			{
				// The highest of a depends on c 2, which conflicts with b's
				// needs; a 1 does not.
				name: "backtracking across packages",
				catalog: []*Revision{
					mkRev(t, "a", "1.0.0", requires(pkgReq(t, "c", "1.x"))),
					mkRev(t, "a", "2.0.0", requires(pkgReq(t, "c", "2.x"))),
					mkRev(t, "b", "1.0.0", requires(pkgReq(t, "c", "1.x"))),
					mkRev(t, "c", "1.0.0"), mkRev(t, "c", "1.1.0"), mkRev(t, "c", "2.0.0"),
				},
				requests: []string{"a", "b"},
				want:     "a 1.0.0 install\nb 1.0.0 install\nc 1.1.0 install",
			},
			{
				name: "diamond",
				catalog: []*Revision{
					mkRev(t, "app", "1.0.0", requires(pkgReq(t, "left", "^1"), pkgReq(t, "right", "^1"))),
					mkRev(t, "left", "1.0.0", requires(pkgReq(t, "base", ">=1.2.0"))),
					mkRev(t, "right", "1.0.0", requires(pkgReq(t, "base", "<1.4.0"))),
					mkRev(t, "base", "1.1.0"), mkRev(t, "base", "1.2.0"), mkRev(t, "base", "1.3.0"), mkRev(t, "base", "1.4.0"),
				},
				requests: []string{"app"},
				want:     "app 1.0.0 install\nbase 1.3.0 install\nleft 1.0.0 install\nright 1.0.0 install",
			},
			{
				name:      "keep installed",
				catalog:   []*Revision{mkRev(t, "app", "1.0.0", requires(pkgReq(t, "lib", "^1"))), mkRev(t, "lib", "1.4.0"), mkRev(t, "lib", "1.5.2")},
				installed: []Installed{installed(mkRev(t, "lib", "1.4.0"))},
				requests:  []string{"app"},
				want:      "app 1.0.0 install\nlib 1.4.0 keep",
			},
			{
				name:      "upgrade when needed",
				catalog:   []*Revision{mkRev(t, "app", "1.0.0", requires(pkgReq(t, "lib", ">=1.5.0"))), mkRev(t, "lib", "1.4.0"), mkRev(t, "lib", "1.5.2"), mkRev(t, "lib", "1.6.0")},
				installed: []Installed{installed(mkRev(t, "lib", "1.4.0"))},
				requests:  []string{"app"},
				want:      "app 1.0.0 install\nlib 1.6.0 upgrade from 1.4.0",
			},
			{
				name:      "downgrade refused",
				catalog:   []*Revision{mkRev(t, "app", "1.0.0", requires(pkgReq(t, "lib", "<1.5.0"))), mkRev(t, "lib", "1.4.0"), mkRev(t, "lib", "1.5.2")},
				installed: []Installed{installed(mkRev(t, "lib", "1.5.2"))},
				requests:  []string{"app"},
				wantErr:   "lib 1.5.2 is installed (a downgrade is not allowed); app 1.0.0 requires lib <1.5.0; no version of lib satisfies both (available: 1.4.0, 1.5.2)",
			},
			{
				name:      "downgrade allowed",
				catalog:   []*Revision{mkRev(t, "app", "1.0.0", requires(pkgReq(t, "lib", "<1.5.0"))), mkRev(t, "lib", "1.4.0"), mkRev(t, "lib", "1.5.2")},
				installed: []Installed{installed(mkRev(t, "lib", "1.5.2"))},
				requests:  []string{"app"},
				downgrade: true,
				want:      "app 1.0.0 install\nlib 1.4.0 downgrade from 1.5.2",
			},
			{
				name: "the issue's collision",
				catalog: []*Revision{
					mkRev(t, "app", "2.1.0", requires(pkgReq(t, "lib", ">=2.0.0"))),
					mkRev(t, "web", "1.3.0", requires(pkgReq(t, "lib", "<2.0.0"))),
					mkRev(t, "lib", "1.4.0"), mkRev(t, "lib", "1.5.2"), mkRev(t, "lib", "2.0.0"),
				},
				installed: []Installed{installed(mkRev(t, "web", "1.3.0", requires(pkgReq(t, "lib", "<2.0.0")))), installed(mkRev(t, "lib", "1.5.2"))},
				requests:  []string{"app"},
				wantErr:   "app 2.1.0 requires lib >=2.0.0; web 1.3.0 (installed) requires lib <2.0.0; no version of lib satisfies both (available: 1.4.0, 1.5.2, 2.0.0)",
			},
			{
				name: "kind from an installed package",
				catalog: []*Revision{
					mkRev(t, "app", "1.0.0", requires(gvkReq(widget))),
					mkRev(t, "widget-operator", "1.0.0", provides(widget)),
					mkRev(t, "widget-operator", "2.0.0", provides(widget)),
				},
				installed: []Installed{{Dir: "platform/widgets", Revision: mkRev(t, "platform/widgets", "", provides(widget))}},
				requests:  []string{"app"},
				want:      "app 1.0.0 install\nplatform/widgets (unversioned) keep",
				providers: map[string]string{widget: "platform/widgets"},
			},
			{
				name: "kind from the catalog",
				catalog: []*Revision{
					mkRev(t, "app", "1.0.0", requires(gvkReq(widget))),
					mkRev(t, "widget-operator", "1.0.0", provides(widget)),
					mkRev(t, "widget-operator", "2.0.0"),
				},
				requests:  []string{"app"},
				want:      "app 1.0.0 install\nwidget-operator 1.0.0 install",
				providers: map[string]string{widget: "widget-operator"},
			},
			{
				name:     "kind nobody provides",
				catalog:  []*Revision{mkRev(t, "app", "1.0.0", requires(gvkReq(widget)))},
				requests: []string{"app"},
				wantErr:  "app 1.0.0 requires kind example.com/v1/Widget, but no package provides it; so no version of app can be chosen (available: 1.0.0)",
			},
			{
				name: "two providers of one kind",
				catalog: []*Revision{
					mkRev(t, "widgets-a", "1.0.0", provides(widget)),
					mkRev(t, "widgets-b", "1.0.0", provides(widget)),
				},
				requests: []string{"widgets-a", "widgets-b"},
				wantErr:  "widgets-a is requested; widgets-b is requested; widgets-a 1.0.0 and widgets-b 1.0.0 both provide kind example.com/v1/Widget, and a kind has one provider per repository; so no version of widgets-a can be chosen (available: 1.0.0)",
			},
			{
				name: "a second provider of an installed kind",
				catalog: []*Revision{
					mkRev(t, "app", "1.0.0", requires(pkgReq(t, "widgets-b", ""))),
					mkRev(t, "widgets-b", "1.0.0", provides(widget)),
				},
				installed: []Installed{installed(mkRev(t, "widgets-a", "1.0.0", provides(widget)))},
				requests:  []string{"app"},
				wantErr:   "widgets-a 1.0.0 is installed; app 1.0.0 requires widgets-b; widgets-a 1.0.0 and widgets-b 1.0.0 both provide kind example.com/v1/Widget, and a kind has one provider per repository; so no version of widgets-b can be chosen (available: 1.0.0)",
			},
			{
				name: "anyOf takes the first alternative",
				catalog: []*Revision{
					mkRev(t, "app", "1.0.0", requires(anyOf(pkgReq(t, "postgres", ""), pkgReq(t, "mysql", "")))),
					mkRev(t, "postgres", "1.0.0"), mkRev(t, "mysql", "1.0.0"),
				},
				requests: []string{"app"},
				want:     "app 1.0.0 install\npostgres 1.0.0 install",
			},
			{
				name: "anyOf falls back",
				catalog: []*Revision{
					mkRev(t, "app", "1.0.0", requires(anyOf(pkgReq(t, "postgres", ">=14"), pkgReq(t, "mysql", "")))),
					mkRev(t, "postgres", "13.0.0"), mkRev(t, "mysql", "8.0.0"),
				},
				requests: []string{"app"},
				want:     "app 1.0.0 install\nmysql 8.0.0 install",
			},
			{
				name: "anyOf prefers what is installed only when it is the first that works",
				catalog: []*Revision{
					mkRev(t, "app", "1.0.0", requires(anyOf(gvkReq(widget), pkgReq(t, "mysql", "")))),
					mkRev(t, "mysql", "8.0.0"),
				},
				requests: []string{"app"},
				want:     "app 1.0.0 install\nmysql 8.0.0 install",
			},
			{
				name: "optional absent",
				catalog: []*Revision{
					mkRev(t, "app", "1.0.0", requires(optional(pkgReq(t, "metrics", "^2")))),
					mkRev(t, "metrics", "2.0.0"),
				},
				requests: []string{"app"},
				want:     "app 1.0.0 install",
			},
			{
				name: "optional present with a wrong version",
				catalog: []*Revision{
					mkRev(t, "app", "1.0.0", requires(optional(pkgReq(t, "metrics", "^2")))),
					mkRev(t, "metrics", "1.0.0"), mkRev(t, "metrics", "2.0.0"),
				},
				installed: []Installed{installed(mkRev(t, "metrics", "1.0.0"))},
				requests:  []string{"app"},
				want:      "app 1.0.0 install\nmetrics 2.0.0 upgrade from 1.0.0",
			},
			{
				name: "optional present with a wrong version that cannot move",
				catalog: []*Revision{
					mkRev(t, "app", "1.0.0", requires(optional(pkgReq(t, "metrics", "^2")))),
					mkRev(t, "metrics", "1.0.0"), mkRev(t, "metrics", "2.0.0"), mkRev(t, "metrics", "3.0.0"),
				},
				installed: []Installed{installed(mkRev(t, "metrics", "3.0.0"))},
				requests:  []string{"app"},
				wantErr:   "metrics 3.0.0 is installed (a downgrade is not allowed); app 1.0.0 requires metrics ^2 when it is present (optional); no version of metrics satisfies both (available: 1.0.0, 2.0.0, 3.0.0)",
			},
			{
				name:     "pre-release not chosen by default",
				catalog:  []*Revision{mkRev(t, "lib", "1.0.0"), mkRev(t, "lib", "2.0.0-rc.1")},
				requests: []string{"lib@>=1.0.0"},
				want:     "lib 1.0.0 install",
			},
			{
				name:     "pre-release on opt-in",
				catalog:  []*Revision{mkRev(t, "lib", "1.0.0"), mkRev(t, "lib", "2.0.0-rc.1")},
				requests: []string{"lib@>=1.0.0"},
				pre:      true,
				want:     "lib 2.0.0-rc.1 install",
			},
			{
				name:     "pre-release named by the range",
				catalog:  []*Revision{mkRev(t, "lib", "1.0.0"), mkRev(t, "lib", "2.0.0-rc.1")},
				requests: []string{"lib@>=2.0.0-rc.0"},
				want:     "lib 2.0.0-rc.1 install",
			},
			{
				name: "mutual dependencies",
				catalog: []*Revision{
					mkRev(t, "a", "1.0.0", requires(pkgReq(t, "b", "^1"))),
					mkRev(t, "b", "1.0.0", requires(pkgReq(t, "a", "^1"))),
				},
				requests: []string{"a"},
				want:     "a 1.0.0 install\nb 1.0.0 install",
			},
			{
				name: "a broken package nobody reaches",
				catalog: []*Revision{
					mkRev(t, "app", "1.0.0", requires(pkgReq(t, "lib", "^1"))),
					mkRev(t, "lib", "1.0.0"),
					{Package: "broken", Version: mustVersion(t, "1.0.0"), Err: errors.New("spec.requires[0]: Required value")},
					mkRev(t, "unsatisfiable", "1.0.0", requires(pkgReq(t, "nowhere", ""))),
				},
				requests: []string{"app"},
				want:     "app 1.0.0 install\nlib 1.0.0 install",
			},
			{
				name: "a broken revision is passed over",
				catalog: []*Revision{
					mkRev(t, "lib", "1.0.0"),
					{Package: "lib", Version: mustVersion(t, "1.1.0"), Err: errors.New("spec.requires[0]: Required value")},
				},
				requests: []string{"lib"},
				want:     "lib 1.0.0 install",
			},
			{
				name: "a broken revision reached",
				catalog: []*Revision{
					{Package: "lib", Version: mustVersion(t, "1.1.0"), Err: errors.New("spec.requires[0]: Required value")},
				},
				requests: []string{"lib"},
				wantErr:  "lib 1.1.0 cannot be used: spec.requires[0]: Required value; so no version of lib can be chosen (available: 1.1.0)",
			},
			{
				name: "noRestrictions: two versions side by side",
				catalog: []*Revision{
					mkRev(t, "a", "1.0.0", requires(pkgReq(t, "tenant", "^1"))),
					mkRev(t, "b", "1.0.0", requires(pkgReq(t, "tenant", "^2"))),
					mkRev(t, "tenant", "1.0.0", noRestrictions), mkRev(t, "tenant", "2.0.0", noRestrictions),
				},
				requests: []string{"a", "b"},
				want:     "a 1.0.0 install\nb 1.0.0 install\ntenant 1.0.0 install\ntenant 2.0.0 install",
			},
			{
				name: "onePerRepository: the same two cannot",
				catalog: []*Revision{
					mkRev(t, "a", "1.0.0", requires(pkgReq(t, "tenant", "^1"))),
					mkRev(t, "b", "1.0.0", requires(pkgReq(t, "tenant", "^2"))),
					mkRev(t, "tenant", "1.0.0"), mkRev(t, "tenant", "2.0.0"),
				},
				requests: []string{"a", "b"},
				wantErr:  "a 1.0.0 requires tenant ^1; b 1.0.0 requires tenant ^2; no version of tenant satisfies both (available: 1.0.0, 2.0.0)",
			},
		}
	}
	for _, c := range cases(t) {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			res, err := Resolve(Problem{Catalog: catalogOf(t, c.catalog...), Installed: c.installed, Requests: requests(t, c.requests...),
				AllowDowngrade: c.downgrade, Prerelease: c.pre})
			if c.wantErr != "" {
				var unsat *UnsatisfiableError
				g.Expect(errors.As(err, &unsat)).To(BeTrue(), "want an explanation, got %v", err)
				g.Expect(unsat.Explanation).To(Equal(c.wantErr), "got:\n%s", unsat.Explanation)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(planText(res)).To(Equal(c.want))
			if c.providers != nil {
				g.Expect(res.Providers).To(Equal(c.providers))
			}
			g.Expect(check(c.catalog, c.installed, requests(t, c.requests...), c.downgrade, c.pre, res)).To(Succeed())
		})
	}
}

func TestResolve_inputErrors(t *testing.T) {
	g := NewWithT(t)
	_, err := Resolve(Problem{Catalog: catalogOf(t, mkRev(t, "lib", "1.0.0")),
		Installed: []Installed{{Dir: "a/lib", Revision: mkRev(t, "lib", "1.0.0")}, {Dir: "b/lib", Revision: mkRev(t, "lib", "1.2.0")}},
		Requests:  requests(t, "lib")})
	g.Expect(err).To(MatchError("package lib is installed twice at different versions (a/lib at 1.0.0, b/lib at 1.2.0), and it allows one version per repository"))

	// Two copies of one version (two tenants of one blueprint) are one
	// version in the repository.
	res, err := Resolve(Problem{Catalog: catalogOf(t, mkRev(t, "lib", "1.0.0"), mkRev(t, "lib", "1.2.0")),
		Installed: []Installed{{Dir: "a/lib", Revision: mkRev(t, "lib", "1.0.0")}, {Dir: "b/lib", Revision: mkRev(t, "lib", "1.0.0")}},
		Requests:  requests(t, "lib")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(planText(res)).To(Equal("lib 1.0.0 keep"))

	// Copies of a package that does not declare itself may differ (an
	// upgrade under way): the first stands for the package.
	res, err = Resolve(Problem{Catalog: catalogOf(t, mkRev(t, "tenant-ns", "1.0.0", undeclared), mkRev(t, "tenant-ns", "2.0.0", undeclared)),
		Installed: []Installed{{Dir: "tenant-a", Revision: mkRev(t, "tenant-ns", "1.0.0", undeclared)}, {Dir: "ops", Revision: mkRev(t, "tenant-ns", "2.0.0", undeclared)}},
		Requests:  requests(t, "tenant-ns")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(planText(res)).To(Equal("tenant-ns 1.0.0 keep"))

	_, err = Resolve(Problem{Requests: []Request{{Package: "lib", Range: ">>1"}}})
	g.Expect(err).To(MatchError(`request lib@>>1: improper constraint: ">>1"`))

	g.Expect(NewCatalog().Add(mkRev(t, "lib", ""))).To(MatchError("catalog revision of lib has no version"))
	c := catalogOf(t, mkRev(t, "lib", "1.0.0"))
	g.Expect(c.Add(&Revision{Package: "lib", Version: mustVersion(t, "v1")})).To(MatchError("lib has two revisions of version 1.0.0 (1.0.0 and v1)"))
}

// A search past its bound stops with ErrTooComplex instead of running on.
func TestResolve_bounded(t *testing.T) {
	g := NewWithT(t)
	var revs []*Revision
	for i := 0; i < 6; i++ {
		for v := 1; v <= 5; v++ {
			revs = append(revs, mkRev(t, fmt.Sprintf("p%d", i), fmt.Sprintf("%d.0.0", v),
				requires(pkgReq(t, fmt.Sprintf("p%d", (i+1)%6), fmt.Sprintf(">=%d.0.0", v)))))
		}
	}
	p := Problem{Catalog: catalogOf(t, revs...), Requests: requests(t, "p0"), MaxSteps: 5}
	_, err := Resolve(p)
	g.Expect(errors.Is(err, ErrTooComplex)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(HavePrefix("the dependency graph is too complex to resolve within the step limit (5 steps,"))
	// The same problem with the default bound resolves.
	p.MaxSteps = 0
	res, err := Resolve(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Plan).To(HaveLen(6))
}

// An override replaces the range every declaration asks for a package,
// in requirements and alternatives, and shows in explanations.
func TestResolve_overrides(t *testing.T) {
	g := NewWithT(t)
	cat := catalogOf(t,
		mkRev(t, "app", "1.0.0", requires(pkgReq(t, "lib", "^1"))),
		mkRev(t, "lib", "1.5.0"), mkRev(t, "lib", "2.0.0"), mkRev(t, "lib", "3.0.0-rc.1"))
	res, err := Resolve(Problem{Catalog: cat, Requests: requests(t, "app")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(planText(res)).To(Equal("app 1.0.0 install\nlib 1.5.0 install"))

	res, err = Resolve(Problem{Catalog: cat, Requests: requests(t, "app"), Overrides: map[string]string{"lib": ">=2.0.0"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(planText(res)).To(Equal("app 1.0.0 install\nlib 2.0.0 install"))
	g.Expect(check([]*Revision{cat.Revisions("app")[0]}, nil, nil, false, false, res)).NotTo(Succeed(), "the override is not what app declares")

	// An override naming a pre-release admits it.
	res, err = Resolve(Problem{Catalog: cat, Requests: requests(t, "app"), Overrides: map[string]string{"lib": ">=3.0.0-rc.0"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(planText(res)).To(Equal("app 1.0.0 install\nlib 3.0.0-rc.1 install"))

	_, err = Resolve(Problem{Catalog: cat, Requests: requests(t, "app"), Overrides: map[string]string{"lib": ">=4.0.0"}})
	var unsat *UnsatisfiableError
	g.Expect(errors.As(err, &unsat)).To(BeTrue(), "%v", err)
	g.Expect(unsat.Explanation).To(Equal("app 1.0.0 requires lib >=4.0.0 (overridden), but no version of lib matches >=4.0.0 (overridden) (available: 1.5.0, 2.0.0, 3.0.0-rc.1); so no version of app can be chosen (available: 1.0.0)"))

	_, err = Resolve(Problem{Catalog: cat, Requests: requests(t, "app"), Overrides: map[string]string{"lib": ">>1"}})
	g.Expect(err).To(MatchError(`override of lib: improper constraint: ">>1"`))
}
