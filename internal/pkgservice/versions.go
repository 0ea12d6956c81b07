package pkgservice

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/store"
)

// Versioned is a published revision with its version.
type Versioned struct {
	Revision store.Revision
	Version  *semver.Version
}

// PublishedVersions returns the published revisions of a package with
// their versions, lowest version first. A revision's version is the
// highest semver floating tag pointing at it ("v1.4.0" or "1.4.0": three
// numbers), else its revision number N as N.0.0. When two revisions have
// one version, the newer revision keeps it.
func PublishedVersions(ctx context.Context, st store.Store, pkgPath string) ([]Versioned, error) {
	revs, err := st.ListPackage(ctx, pkgPath)
	if err != nil {
		return nil, err
	}
	tags, err := st.FloatingTags(ctx, pkgPath)
	if err != nil {
		return nil, err
	}
	tagged := map[int]*semver.Version{}
	for tag, n := range tags {
		v, err := semver.StrictNewVersion(strings.TrimPrefix(tag, "v"))
		if err != nil || n == 0 {
			continue
		}
		if cur := tagged[n]; cur == nil || v.GreaterThan(cur) {
			tagged[n] = v
		}
	}
	byVersion := map[string]Versioned{}
	for _, r := range revs {
		if r.Lifecycle != porchv1alpha1.LifecyclePublished && r.Lifecycle != porchv1alpha1.LifecycleDeletionProposed {
			continue
		}
		v := tagged[r.Revision]
		if v == nil {
			v = semver.New(uint64(r.Revision), 0, 0, "", "")
		}
		if o, ok := byVersion[v.String()]; ok && o.Revision.Revision > r.Revision {
			continue
		}
		byVersion[v.String()] = Versioned{Revision: r, Version: v}
	}
	out := make([]Versioned, 0, len(byVersion))
	for _, v := range byVersion {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version.LessThan(out[j].Version) })
	return out, nil
}

// NewestInRange returns the published revision of a package with the
// highest version in a semver range (pre-releases only when the range
// names one), or store.ErrNotFound.
func NewestInRange(ctx context.Context, st store.Store, pkgPath, rng string) (Versioned, error) {
	c, err := semver.NewConstraint(rng)
	if err != nil {
		return Versioned{}, fmt.Errorf("spec.upstream.versionRange %q: %w", rng, err)
	}
	vs, err := PublishedVersions(ctx, st, pkgPath)
	if err != nil {
		return Versioned{}, err
	}
	for i := len(vs) - 1; i >= 0; i-- {
		if c.Check(vs[i].Version) {
			return vs[i], nil
		}
	}
	return Versioned{}, fmt.Errorf("no published revision of %s in range %s: %w", pkgPath, rng, store.ErrNotFound)
}
