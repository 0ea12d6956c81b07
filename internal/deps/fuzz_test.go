package deps

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/scion-dev/scion/internal/pkg"
)

// randomProblem builds a small random catalog, installed set and request
// from a seed: up to five packages of up to three versions, requirements
// of every form, two kinds.
func randomProblem(t testing.TB, seed int64) (Problem, []*Revision) {
	rng := rand.New(rand.NewSource(seed))
	names := []string{"a", "b", "c", "d", "e"}[:2+rng.Intn(4)]
	versions := []string{"1.0.0", "1.1.0", "2.0.0", "3.0.0-rc.1"}
	ranges := []string{"", "^1", ">=1.1.0", "<2.0.0", "2.x", "^3", ">=3.0.0-rc.0"}
	gvks := []string{"example.com/v1/Widget", "example.com/v1/Gadget"}
	randReq := func(depth int) Requirement {
		var gen func(depth int) Requirement
		gen = func(depth int) Requirement {
			switch n := rng.Intn(10); {
			case n < 5:
				return pkgReq(t, names[rng.Intn(len(names))], ranges[rng.Intn(len(ranges))])
			case n < 6:
				return optional(pkgReq(t, names[rng.Intn(len(names))], ranges[rng.Intn(len(ranges))]))
			case n < 8 || depth > 0:
				return gvkReq(gvks[rng.Intn(len(gvks))])
			default:
				return anyOf(gen(depth+1), gen(depth+1))
			}
		}
		return gen(depth)
	}
	var catalog []*Revision
	for _, name := range names {
		for _, v := range versions {
			if rng.Intn(3) == 0 {
				continue
			}
			var opts []revOpt
			for i := rng.Intn(3); i > 0; i-- {
				opts = append(opts, requires(randReq(0)))
			}
			if rng.Intn(4) == 0 {
				opts = append(opts, provides(gvks[rng.Intn(len(gvks))]))
			}
			r := mkRev(t, name, v, opts...)
			if rng.Intn(12) == 0 {
				r.Decl, r.Err = nil, errors.New("unreadable")
			}
			catalog = append(catalog, r)
		}
	}
	p := Problem{Catalog: catalogOf(t, catalog...), AllowDowngrade: rng.Intn(3) == 0, Prerelease: rng.Intn(4) == 0}
	for _, r := range catalog {
		if r.Err == nil && rng.Intn(5) == 0 && !installedName(p.Installed, r.Package) {
			p.Installed = append(p.Installed, installed(r))
		}
	}
	if rng.Intn(4) == 0 {
		var opts []revOpt
		if rng.Intn(2) == 0 {
			opts = append(opts, provides(gvks[0]))
		}
		if rng.Intn(2) == 0 {
			opts = append(opts, requires(randReq(0)))
		}
		p.Installed = append(p.Installed, installed(mkRev(t, "local", "", opts...)))
	}
	for i := 1 + rng.Intn(2); i > 0; i-- {
		p.Requests = append(p.Requests, Request{Package: names[rng.Intn(len(names))], Range: ranges[rng.Intn(len(ranges))]})
	}
	return p, catalog
}

func installedName(inst []Installed, name string) bool {
	for _, in := range inst {
		if in.Revision.Package == name {
			return true
		}
	}
	return false
}

// bruteForce tries every selection: each package absent or at one of its
// revisions (the installed one in place of the catalog's of its version).
func bruteForce(p Problem, catalog []*Revision) (selection, bool) {
	byName := map[string][]*Revision{}
	var order []string
	addRev := func(r *Revision) {
		if _, ok := byName[r.Package]; !ok {
			order = append(order, r.Package)
		}
		for i, o := range byName[r.Package] {
			if o.Version != nil && r.Version != nil && o.Version.Equal(r.Version) {
				byName[r.Package][i] = r
				return
			}
		}
		byName[r.Package] = append(byName[r.Package], r)
	}
	for _, r := range catalog {
		addRev(r)
	}
	for _, in := range p.Installed {
		addRev(in.Revision)
	}
	sel := selection{}
	var try func(i int) bool
	try = func(i int) bool {
		if i == len(order) {
			return valid(sel, catalog, p.Installed, p.Requests, p.AllowDowngrade, p.Prerelease) == nil
		}
		name := order[i]
		delete(sel, name)
		if try(i + 1) {
			return true
		}
		for _, r := range byName[name] {
			sel[name] = []*Revision{r}
			if try(i + 1) {
				return true
			}
		}
		delete(sel, name)
		return false
	}
	return sel, try(0)
}

// resolveAgainstBruteForce checks one random problem: a plan satisfies
// every constraint; a failure is a true unsatisfiability.
func resolveAgainstBruteForce(t *testing.T, seed int64) {
	p, catalog := randomProblem(t, seed)
	res, err := Resolve(p)
	var unsat *UnsatisfiableError
	switch {
	case err == nil:
		if cerr := check(catalog, p.Installed, p.Requests, p.AllowDowngrade, p.Prerelease, res); cerr != nil {
			t.Fatalf("seed %d: the plan is not a solution: %v\n%s\n%s", seed, cerr, planText(res), describe(p, catalog))
		}
	case errors.As(err, &unsat):
		if unsat.Explanation == "" {
			t.Fatalf("seed %d: empty explanation", seed)
		}
		if sel, ok := bruteForce(p, catalog); ok {
			var found []string
			for name, revs := range sel {
				found = append(found, revs[0].Label()+" ("+name+")")
			}
			t.Fatalf("seed %d: said unsatisfiable (%s), but %v is a solution\n%s", seed, unsat.Explanation, found, describe(p, catalog))
		}
	default:
		t.Fatalf("seed %d: %v", seed, err)
	}
}

func describe(p Problem, catalog []*Revision) string {
	s := fmt.Sprintf("requests %v downgrade=%v pre=%v\n", p.Requests, p.AllowDowngrade, p.Prerelease)
	for _, r := range catalog {
		if r.Err != nil {
			s += fmt.Sprintf("  %s: unusable\n", r.Label())
			continue
		}
		s += fmt.Sprintf("  %s: requires %v provides %v\n", r.Label(), r.Decl.Requires, r.Decl.Provides)
	}
	for _, in := range p.Installed {
		s += fmt.Sprintf("  installed %s: requires %v provides %v\n", in.Revision.Label(), in.Revision.Decl.Requires, in.Revision.Decl.Provides)
	}
	return s
}

// Thousands of random problems on every test run.
func TestResolve_bruteForce(t *testing.T) {
	n := int64(3000)
	if testing.Short() || raceEnabled {
		n = 400
	}
	for seed := int64(0); seed < n; seed++ {
		resolveAgainstBruteForce(t, seed)
	}
}

// FuzzResolve is the same check, driven by the fuzzer:
// go test -fuzz FuzzResolve ./internal/deps/
func FuzzResolve(f *testing.F) {
	for _, s := range []int64{1, 42, 1234} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		resolveAgainstBruteForce(t, seed)
	})
}

// FuzzParseRequest: a request on the command line (PACKAGE[@RANGE]) is
// either refused with an error or names a valid package path; never a
// panic. go test -fuzz FuzzParseRequest ./internal/deps/
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{"app", "app@^1.2", "team/app@>=1.0.0 <2.0.0", "../x@1", "app@>>1", "app@", "@1", "app@1.0.0-rc.1 || ^3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRequest(s)
		if err != nil {
			return
		}
		if pkg.ValidatePackagePath(r.Package) != nil {
			t.Fatalf("%q accepted with package %q", s, r.Package)
		}
	})
}
