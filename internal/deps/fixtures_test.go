package deps

import (
	"testing"

	"github.com/Masterminds/semver/v3"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// A small language for catalogs in tests.

type revOpt func(*Declaration)

func requires(rs ...Requirement) revOpt {
	return func(d *Declaration) { d.Requires = append(d.Requires, rs...) }
}

func provides(gvks ...string) revOpt {
	return func(d *Declaration) { d.Provides = append(d.Provides, gvks...) }
}

func noRestrictions(d *Declaration) { d.InstallationType = configv1alpha1.NoRestrictions }

// undeclared is a package without a PackageDependencies object or CRDs.
func undeclared(d *Declaration) { d.Declared = false }

func mkRev(t testing.TB, name, version string, opts ...revOpt) *Revision {
	t.Helper()
	d := &Declaration{InstallationType: configv1alpha1.OnePerRepository, Declared: true}
	for _, o := range opts {
		o(d)
	}
	r := &Revision{Package: name, Decl: d}
	if version != "" {
		r.Version = semver.MustParse(version)
	}
	return r
}

func pkgReq(t testing.TB, name, rng string) Requirement {
	t.Helper()
	r, err := NewPackageRequirement(name, rng)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func optional(r Requirement) Requirement { r.Optional = true; return r }

func gvkReq(g string) Requirement { return Requirement{GVK: g} }

func anyOf(rs ...Requirement) Requirement { return Requirement{AnyOf: rs} }

func catalogOf(t testing.TB, revs ...*Revision) *Catalog {
	t.Helper()
	c := NewCatalog()
	for _, r := range revs {
		if err := c.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func installed(r *Revision) Installed { return Installed{Dir: r.Package, Revision: r} }

func requests(t testing.TB, specs ...string) []Request {
	t.Helper()
	var out []Request
	for _, s := range specs {
		r, err := ParseRequest(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}
