package deps

import (
	"fmt"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// This file is an independent statement of what a solution must satisfy,
// written without the solver's machinery: the tests hold plans to it, and
// the fuzz test uses it to search every assignment by brute force.

func mustVersion(t testing.TB, s string) *semver.Version {
	t.Helper()
	v, err := semver.NewVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// matches says whether v satisfies a range as written ("" is any); a
// pre-release is compared like any version once it may be chosen at all
// (valid checks that).
func matches(v *semver.Version, rng string) bool {
	if v == nil {
		return rng == ""
	}
	if rng == "" {
		return true
	}
	c, err := semver.NewConstraint(rng)
	if err != nil {
		return false
	}
	c.IncludePrerelease = true
	return c.Check(v)
}

// selection is a candidate solution: the revisions chosen, by package.
type selection map[string][]*Revision

func (s selection) providers(gvk string) map[string]bool {
	out := map[string]bool{}
	for name, revs := range s {
		for _, r := range revs {
			if r.Decl == nil {
				continue
			}
			for _, g := range r.Decl.Provides {
				if g == gvk {
					out[name] = true
				}
			}
		}
	}
	return out
}

func (s selection) satisfies(r Requirement) bool {
	switch {
	case r.GVK != "":
		return r.Optional || len(s.providers(r.GVK)) > 0
	case r.AnyOf != nil:
		for _, a := range r.AnyOf {
			if s.satisfies(a) {
				return true
			}
		}
		return false
	case r.Optional:
		for _, c := range s[r.Package] {
			if !matches(c.Version, r.RangeText) {
				return false
			}
		}
		return true
	default:
		for _, c := range s[r.Package] {
			if matches(c.Version, r.RangeText) {
				return true
			}
		}
		return false
	}
}

// namedPre returns the packages some range in the problem names a
// pre-release of.
func namedPre(catalog []*Revision, inst []Installed, reqs []Request) map[string]bool {
	out := map[string]bool{}
	var note func(rs []Requirement)
	note = func(rs []Requirement) {
		for _, r := range rs {
			if strings.Contains(r.RangeText, "-") {
				out[r.Package] = true
			}
			note(r.AnyOf)
		}
	}
	for _, r := range catalog {
		if r.Decl != nil {
			note(r.Decl.Requires)
		}
	}
	for _, in := range inst {
		note(in.Revision.Decl.Requires)
	}
	for _, r := range reqs {
		if strings.Contains(r.Range, "-") {
			out[r.Package] = true
		}
	}
	return out
}

// valid returns why a selection is not a solution, or nil. A pre-release
// may be chosen only with the opt-in, when installed, or when a range in
// the problem names a pre-release of its package.
func valid(sel selection, catalog []*Revision, inst []Installed, reqs []Request, downgrade, pre bool) error {
	preNamed := namedPre(catalog, inst, reqs)
	for _, r := range reqs {
		if !sel.satisfies(Requirement{Package: r.Package, RangeText: r.Range}) {
			return fmt.Errorf("request %s not met", r)
		}
	}
	for _, in := range inst {
		r := in.Revision
		if r.Decl.InstallationType == configv1alpha1.NoRestrictions {
			continue
		}
		revs := sel[r.Package]
		if len(revs) != 1 {
			return fmt.Errorf("installed %s is not in the solution once", r.Label())
		}
		if r.Version == nil && revs[0] != r {
			return fmt.Errorf("unversioned %s was replaced", r.Package)
		}
		if r.Version != nil && !downgrade && revs[0].Version.LessThan(r.Version) {
			return fmt.Errorf("%s downgraded to %s", r.Label(), revs[0].VersionString())
		}
	}
	gvks := map[string]bool{}
	for name, revs := range sel {
		if len(revs) > 1 && revs[0].Decl.InstallationType != configv1alpha1.NoRestrictions {
			return fmt.Errorf("%s chosen %d times", name, len(revs))
		}
		for _, r := range revs {
			if r.Err != nil {
				return fmt.Errorf("unusable %s chosen", r.Label())
			}
			if r.Version != nil && r.Version.Prerelease() != "" && !pre && !preNamed[name] && !installedAt(inst, name, r.VersionString()) {
				return fmt.Errorf("pre-release %s chosen though nothing names a pre-release of %s", r.Label(), name)
			}
			for _, q := range r.Decl.Requires {
				if !sel.satisfies(q) {
					return fmt.Errorf("%s requires %s, not met", r.Label(), q)
				}
			}
			for _, g := range r.Decl.Provides {
				gvks[g] = true
			}
		}
	}
	for g := range gvks {
		if n := len(sel.providers(g)); n > 1 {
			return fmt.Errorf("kind %s has %d providers", g, n)
		}
	}
	return nil
}

// check holds a result to valid: every revision of the plan is looked up
// in the catalog or among the installed packages.
func check(catalog []*Revision, inst []Installed, reqs []Request, downgrade, pre bool, res *Result) error {
	sel := selection{}
	for _, st := range res.Plan {
		var found *Revision
		for _, in := range inst {
			if in.Revision.Package == st.Package && in.Revision.VersionString() == st.Version {
				found = in.Revision
			}
		}
		for _, r := range catalog {
			if found == nil && r.Package == st.Package && r.VersionString() == st.Version {
				found = r
			}
		}
		if found == nil {
			return fmt.Errorf("plan step %s %s is neither in the catalog nor installed", st.Package, st.Version)
		}
		if (st.Action == Keep) != (found.Version == nil || installedAt(inst, st.Package, st.Version)) {
			return fmt.Errorf("plan step %s %s says %s", st.Package, st.Version, st.Action)
		}
		sel[st.Package] = append(sel[st.Package], found)
	}
	return valid(sel, catalog, inst, reqs, downgrade, pre)
}

func installedAt(inst []Installed, name, version string) bool {
	for _, in := range inst {
		if in.Revision.Package == name && in.Revision.VersionString() == version {
			return true
		}
	}
	return false
}
