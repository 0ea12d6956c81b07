package deps

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/Masterminds/semver/v3"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// Revision is one version of a package: a published revision in the
// catalog, or a package installed in a deployment repository.
type Revision struct {
	// Package is the package's path in its repository.
	Package string
	// Version is the revision's semantic version; nil for an installed
	// package that records no upstream (it has no version).
	Version *semver.Version
	// Decl is what the revision requires and provides; nil when Err is
	// set.
	Decl *Declaration
	// Err says why the revision cannot be used (its declaration does not
	// read). Such a revision is never chosen; it affects only requests
	// that reach it.
	Err error
}

// VersionString is the version as written in plans ("1.4.0"), or
// "(unversioned)".
func (r *Revision) VersionString() string {
	if r.Version == nil {
		return "(unversioned)"
	}
	return r.Version.String()
}

// Label is "package version", as explanations name a revision.
func (r *Revision) Label() string {
	if r.Version == nil {
		return r.Package
	}
	return r.Package + " " + r.Version.String()
}

// ParseVersion reads a revision's version: semver with or without a
// leading v ("1.4.0", "v1.4.0"), or a revision number ("v3", "3": 3.0.0).
func ParseVersion(s string) (*semver.Version, error) {
	v, err := semver.NewVersion(s)
	if err != nil {
		return nil, fmt.Errorf("version %q is neither semver nor a revision number v<N>: %w", s, err)
	}
	return v, nil
}

// Catalog holds the published revisions of the upstream packages, by
// package. It is safe to share between concurrent resolutions once filled.
type Catalog struct {
	revs map[string][]*Revision

	once      sync.Once
	sorted    map[string][]*Revision
	providers map[string][]string
	preNamed  map[string]bool
	types     map[string]configv1alpha1.InstallationType

	checkMu sync.Mutex
	checked map[string]bool
}

// maxChecked bounds the cache of range checks; it starts over when full.
const maxChecked = 1 << 20

// check says whether a version satisfies a range (rng is its text),
// comparing pre-releases like any version. Results are cached: a catalog
// is resolved against many times, and a check is costly.
func (c *Catalog) check(r *semver.Constraints, rng string, v *semver.Version) bool {
	key := rng + "\x00" + v.String()
	c.checkMu.Lock()
	ok, found := c.checked[key]
	c.checkMu.Unlock()
	if found {
		return ok
	}
	ok = admits(r, v)
	c.checkMu.Lock()
	if c.checked == nil || len(c.checked) >= maxChecked {
		c.checked = map[string]bool{}
	}
	c.checked[key] = ok
	c.checkMu.Unlock()
	return ok
}

// admits checks a version against a range, comparing pre-releases like
// any version.
func admits(r *semver.Constraints, v *semver.Version) bool {
	inclusive := *r
	inclusive.IncludePrerelease = true
	return inclusive.Check(v)
}

// NewCatalog returns an empty catalog.
func NewCatalog() *Catalog { return &Catalog{revs: map[string][]*Revision{}} }

// Add adds a revision; a second revision of a package with the same
// version is an error. Add must not be called once the catalog is used.
func (c *Catalog) Add(r *Revision) error {
	if r.Version == nil {
		return fmt.Errorf("catalog revision of %s has no version", r.Package)
	}
	for _, o := range c.revs[r.Package] {
		if o.Version.Equal(r.Version) {
			return fmt.Errorf("%s has two revisions of version %s (%s and %s)", r.Package, r.Version, o.Version.Original(), r.Version.Original())
		}
	}
	c.revs[r.Package] = append(c.revs[r.Package], r)
	return nil
}

// Packages returns the names of the packages in the catalog, sorted.
func (c *Catalog) Packages() []string {
	out := make([]string, 0, len(c.revs))
	for name := range c.revs {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// index sorts each package's revisions, highest version first, and indexes
// which packages provide each kind.
func (c *Catalog) index() {
	c.once.Do(func() {
		c.sorted = make(map[string][]*Revision, len(c.revs))
		c.providers = map[string][]string{}
		c.preNamed = map[string]bool{}
		c.types = map[string]configv1alpha1.InstallationType{}
		for name, revs := range c.revs {
			c.types[name] = installationType(revs)
			s := append([]*Revision(nil), revs...)
			sort.Slice(s, func(i, j int) bool { return s[i].Version.GreaterThan(s[j].Version) })
			c.sorted[name] = s
			seen := map[string]bool{}
			for _, r := range s {
				if r.Decl == nil {
					continue
				}
				notePrereleaseRanges(c.preNamed, r.Decl.Requires)
				for _, g := range r.Decl.Provides {
					if !seen[g] {
						seen[g] = true
						c.providers[g] = append(c.providers[g], name)
					}
				}
			}
		}
		for _, names := range c.providers {
			sort.Strings(names)
		}
	})
}

// Revisions returns a package's revisions, highest version first.
func (c *Catalog) Revisions(name string) []*Revision {
	c.index()
	return c.sorted[name]
}

// InstallationType returns a package's installation type (false: the
// catalog does not have the package).
func (c *Catalog) InstallationType(name string) (configv1alpha1.InstallationType, bool) {
	c.index()
	t, ok := c.types[name]
	return t, ok
}

// providersOf returns the catalog packages any revision of which provides
// the kind, sorted.
func (c *Catalog) providersOf(gvk string) []string {
	c.index()
	return c.providers[gvk]
}

// namesPrerelease says whether any range in the catalog's requirements on
// a package names a pre-release.
func (c *Catalog) namesPrerelease(name string) bool {
	c.index()
	return c.preNamed[name]
}

// notePrereleaseRanges records the packages that requirements give a range
// naming a pre-release.
func notePrereleaseRanges(into map[string]bool, reqs []Requirement) {
	for _, r := range reqs {
		if r.Package != "" && rangeNamesPrerelease(r.RangeText) {
			into[r.Package] = true
		}
		notePrereleaseRanges(into, r.AnyOf)
	}
}

// rangeNamesPrerelease says whether a range mentions a pre-release version,
// as in ">=2.0.0-rc.0".
func rangeNamesPrerelease(rng string) bool {
	for _, tok := range strings.FieldsFunc(rng, func(r rune) bool { return r == ' ' || r == ',' || r == '|' }) {
		if v, err := semver.NewVersion(strings.TrimLeft(tok, "=<>~^!")); err == nil && v.Prerelease() != "" {
			return true
		}
	}
	return false
}

// installationType is noRestrictions when every usable revision of the
// package declares it, else onePerRepository.
func installationType(revs []*Revision) configv1alpha1.InstallationType {
	usable := 0
	for _, r := range revs {
		if r.Decl == nil {
			continue
		}
		usable++
		if r.Decl.InstallationType != configv1alpha1.NoRestrictions {
			return configv1alpha1.OnePerRepository
		}
	}
	if usable == 0 {
		return configv1alpha1.OnePerRepository
	}
	return configv1alpha1.NoRestrictions
}

// Installed is a package present in the deployment repository.
type Installed struct {
	// Dir is where it is in the repository.
	Dir string
	// Revision is its identity, version and declaration. A package with
	// no upstream lock has the folder as its name and no version.
	Revision *Revision
}

// Request is a package asked for, with a semver range ("" for any).
type Request struct {
	Package string
	Range   string
}

// ParseRequest reads PACKAGE[@RANGE].
func ParseRequest(s string) (Request, error) {
	name, rng, _ := strings.Cut(s, "@")
	if _, err := NewPackageRequirement(name, rng); err != nil {
		return Request{}, fmt.Errorf("request %q: %w", s, err)
	}
	return Request{Package: name, Range: strings.TrimSpace(rng)}, nil
}

// String is PACKAGE or PACKAGE@RANGE.
func (r Request) String() string {
	if r.Range == "" {
		return r.Package
	}
	return r.Package + "@" + r.Range
}
