package oci

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
)

// Mirrored is what a mirror did with one published revision, or one
// floating tag.
type Mirrored struct {
	// Package and Revision name the revision; Ref is where it is in the
	// registry, Digest its artifact's digest.
	Package  string
	Revision int
	// Tag is the floating tag (stable, v1.4.0, ...) for an entry of a
	// floating tag, pointing at Revision; "" for a revision.
	Tag    string
	Ref    string
	Digest string
	// Copied is false when the destination had it already.
	Copied bool
}

// ErrTagTaken is returned when a published revision's tag in the registry
// holds other content: published revisions are immutable, and a mirror
// never moves their tags.
var ErrTagTaken = errors.New("the tag holds other content")

// MirrorGit copies every published revision of the git repository st into
// the registry under prefix (REGISTRY/PATH): package P's revision N at
// PREFIX/P:vN. It is idempotent: a revision already there (same digest)
// is left alone; a tag holding other content is an ErrTagTaken error for
// that revision, and the others are still copied. Run it again to copy
// what was published since.
func MirrorGit(ctx context.Context, st store.Store, prefix string, o Options) ([]Mirrored, error) {
	if err := st.Fetch(ctx); err != nil {
		return nil, fmt.Errorf("fetching %s: %w", st.URL(), err)
	}
	revs, err := st.List(ctx)
	if err != nil {
		return nil, err
	}
	ctx, opts, cancel := o.session(ctx)
	defer cancel()
	var out []Mirrored
	var errs []error
	digests := map[string]map[int]string{} // package -> revision -> digest
	for _, rev := range revs {
		if rev.Lifecycle != porchv1alpha1.LifecyclePublished && rev.Lifecycle != porchv1alpha1.LifecycleDeletionProposed {
			continue
		}
		m, err := mirrorRevision(ctx, st, rev, prefix, o.maxLayer(), opts)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s revision %d: %w", rev.Package, rev.Revision, err))
			continue
		}
		out = append(out, m)
		if digests[m.Package] == nil {
			digests[m.Package] = map[int]string{}
		}
		digests[m.Package][m.Revision] = m.Digest
	}
	// Floating tags follow their revisions: moved in the registry to
	// where git has them (they are tags Scion moves).
	for _, pkgPath := range slices.Sorted(maps.Keys(digests)) {
		tags, err := st.FloatingTags(ctx, pkgPath)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, tag := range slices.Sorted(maps.Keys(tags)) {
			digest, ok := digests[pkgPath][tags[tag]]
			if !ok {
				continue // on no revision copied
			}
			m, err := moveRegistryTag(prefix, pkgPath, tag, tags[tag], digest, opts)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s tag %s: %w", pkgPath, tag, err))
				continue
			}
			out = append(out, m)
		}
	}
	return out, errors.Join(errs...)
}

// moveRegistryTag points PREFIX/P:TAG at the artifact of revision n
// (digest), unless it is there.
func moveRegistryTag(prefix, pkgPath, tag string, n int, digest string, opts []remote.Option) (Mirrored, error) {
	ref, err := name.NewTag(fmt.Sprintf("%s/%s:%s", strings.TrimSuffix(prefix, "/"), pkgPath, tag), name.StrictValidation)
	if err != nil {
		return Mirrored{}, err
	}
	m := Mirrored{Package: pkgPath, Revision: n, Tag: tag, Ref: Scheme + ref.String(), Digest: digest}
	if d, err := remote.Head(ref, opts...); err == nil && d.Digest.String() == digest {
		return m, nil
	}
	d, err := remote.Get(ref.Context().Digest(digest), opts...)
	if err != nil {
		return Mirrored{}, fmt.Errorf("reading %s@%s: %w", ref.Context(), digest, describe(err))
	}
	if err := remote.Tag(ref, d, opts...); err != nil {
		return Mirrored{}, fmt.Errorf("moving %s: %w", m.Ref, describe(err))
	}
	m.Copied = true
	return m, nil
}

// mirrorRevision copies one published revision unless it is there.
func mirrorRevision(ctx context.Context, st store.Store, rev store.Revision, prefix string, max int64, opts []remote.Option) (Mirrored, error) {
	tag := fmt.Sprintf("%s/%s:v%d", strings.TrimSuffix(prefix, "/"), rev.Package, rev.Revision)
	ref, err := name.ParseReference(tag, name.StrictValidation)
	if err != nil {
		return Mirrored{}, fmt.Errorf("%s cannot be an OCI reference (repository paths are lower case letters, digits and . _ -): %w", tag, err)
	}
	p, err := st.Read(ctx, rev)
	if err != nil {
		return Mirrored{}, err
	}
	a, err := build(rev.Package, p, max)
	if err != nil {
		return Mirrored{}, err
	}
	m := Mirrored{Package: rev.Package, Revision: rev.Revision, Ref: Scheme + ref.String(), Digest: a.digest}
	d, err := remote.Head(ref, opts...)
	switch {
	case err == nil && d.Digest.String() == a.digest:
		return m, nil
	case err == nil:
		return Mirrored{}, fmt.Errorf("%w: %s is %s, the revision makes %s; published revisions are immutable, so the tag is left as it is", ErrTagTaken, m.Ref, d.Digest, a.digest)
	case notFound(err):
	default:
		return Mirrored{}, fmt.Errorf("reading %s: %w", m.Ref, describe(err))
	}
	if err := a.push(ref, opts); err != nil {
		return Mirrored{}, err
	}
	m.Copied = true
	return m, nil
}

// revisionTag matches the tags a mirror writes: vN.
var revisionTag = regexp.MustCompile(`^v([1-9][0-9]{0,8})$`)

// MirrorToGit copies every package revision under prefix (REGISTRY/PATH;
// package P's revision N at PREFIX/P:vN, as MirrorGit writes them) into
// the git repository st as published revisions, each package's in order.
// It is idempotent: a revision git has with the same files is left alone.
// A revision git has with other files, or one that would not get its
// number (git's latest revision of the package is not N-1), is reported
// and that package's later revisions are not copied; an artifact that is
// not a package is reported; the other packages are still copied.
func MirrorToGit(ctx context.Context, prefix string, st store.Store, w Publisher, o Options) ([]Mirrored, error) {
	if err := st.Fetch(ctx); err != nil {
		return nil, fmt.Errorf("fetching %s: %w", st.URL(), err)
	}
	_, opts, cancel := o.session(ctx)
	defer cancel()
	pkgs, err := packagesUnder(prefix, opts)
	if err != nil {
		return nil, err
	}
	var out []Mirrored
	var errs []error
	for _, p := range pkgs {
		done, err := mirrorPackageToGit(ctx, p, st, w, o, opts)
		out = append(out, done...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// Publisher writes published revisions and floating tags into a store:
// pkgservice.Service, Scion's one write path (which imports this package
// for Repositories of type oci, so it is passed in).
type Publisher interface {
	PublishDirect(ctx context.Context, st store.Store, pkgPath, workspace string, contents *pkg.Package, message, publishedBy string) (store.Revision, error)
	SetFloatingTag(ctx context.Context, st store.Store, pkgPath, tag string, revision int) (int, error)
}

// registryPackage is a package under a prefix: its repository and its
// tags, the vN ones (sorted by N) and the floating ones (sorted).
type registryPackage struct {
	repo     name.Repository
	path     string
	numbers  []int
	floating []string
}

// packagesUnder lists the packages under prefix (REGISTRY/PATH): every
// repository of the registry's catalog below PATH, with its tags.
func packagesUnder(prefix string, opts []remote.Option) ([]registryPackage, error) {
	prefix = strings.TrimSuffix(prefix, "/")
	host, path, _ := strings.Cut(prefix, "/")
	reg, err := name.NewRegistry(host, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("%s%s: %w", Scheme, prefix, err)
	}
	repos, err := catalog(reg, opts)
	if err != nil {
		return nil, fmt.Errorf("listing the repositories of %s: %w", reg, describe(err))
	}
	var out []registryPackage
	for _, repo := range repos {
		pkgPath, ok := strings.CutPrefix(repo, path+"/")
		if path == "" {
			pkgPath, ok = repo, true
		}
		if !ok {
			continue
		}
		p := registryPackage{repo: reg.Repo(repo), path: pkgPath}
		tags, err := remote.List(p.repo, opts...)
		if err != nil {
			return nil, fmt.Errorf("listing the tags of %s: %w", p.repo, describe(err))
		}
		for _, t := range tags {
			if m := revisionTag.FindStringSubmatch(t); m != nil {
				n, _ := strconv.Atoi(m[1])
				p.numbers = append(p.numbers, n)
			} else if store.ValidateFloatingTag(t) == nil {
				p.floating = append(p.floating, t)
			}
		}
		slices.Sort(p.numbers)
		slices.Sort(p.floating)
		out = append(out, p)
	}
	return out, nil
}

// mirrorPackageToGit copies one package's vN tags into git, in order.
func mirrorPackageToGit(ctx context.Context, rp registryPackage, st store.Store, w Publisher, o Options, opts []remote.Option) ([]Mirrored, error) {
	repo, pkgPath, numbers, floating := rp.repo, rp.path, rp.numbers, rp.floating
	revs, err := st.ListPackage(ctx, pkgPath)
	if err != nil {
		return nil, err
	}
	inGit, latest := map[int]store.Revision{}, 0
	for _, r := range revs {
		if r.Lifecycle == porchv1alpha1.LifecyclePublished || r.Lifecycle == porchv1alpha1.LifecycleDeletionProposed {
			inGit[r.Revision] = r
			latest = max(latest, r.Revision)
		}
	}
	var out []Mirrored
	byDigest := map[string]int{}
	for _, n := range numbers {
		ref := repo.Tag(fmt.Sprintf("v%d", n))
		p, _, digest, err := Pull(ctx, ref, o)
		if err != nil {
			return out, fmt.Errorf("%s revision %d: %w", pkgPath, n, err)
		}
		m := Mirrored{Package: pkgPath, Revision: n, Ref: Scheme + ref.String(), Digest: digest}
		byDigest[digest] = n
		if have, ok := inGit[n]; ok {
			cur, err := st.Read(ctx, have)
			if err != nil {
				return out, err
			}
			if !cur.Equal(p) {
				return out, fmt.Errorf("%s revision %d: %w: git's revision %d has other files than %s; published revisions are immutable, so neither is changed", pkgPath, n, ErrTagTaken, n, m.Ref)
			}
			out = append(out, m)
			continue
		}
		if latest != n-1 {
			return out, fmt.Errorf("%s revision %d: git's latest revision of %s is %d, so %s would not be revision %d there; nothing more of %s is copied", pkgPath, n, pkgPath, latest, m.Ref, n, pkgPath)
		}
		rev, err := w.PublishDirect(ctx, st, pkgPath, fmt.Sprintf("v%d", n), p, "Mirrored from "+m.Ref, "scion repo mirror")
		if err != nil {
			return out, fmt.Errorf("%s revision %d: %w", pkgPath, n, err)
		}
		if rev.Revision != n {
			return out, fmt.Errorf("%s revision %d: git published it as revision %d (someone published meanwhile)", pkgPath, n, rev.Revision)
		}
		latest = n
		m.Copied = true
		out = append(out, m)
	}
	// Floating tags follow: pointed in git at the revision whose artifact
	// the registry's tag names.
	inGitTags, err := st.FloatingTags(ctx, pkgPath)
	if err != nil {
		return out, err
	}
	for _, tag := range floating {
		ref := repo.Tag(tag)
		d, err := remote.Head(ref, opts...)
		if err != nil {
			return out, fmt.Errorf("%s tag %s: reading %s: %w", pkgPath, tag, ref, describe(err))
		}
		n, ok := byDigest[d.Digest.String()]
		if !ok {
			return out, fmt.Errorf("%s tag %s: %s%s is %s, the artifact of no vN tag copied: not copied", pkgPath, tag, Scheme, ref, d.Digest)
		}
		m := Mirrored{Package: pkgPath, Revision: n, Tag: tag, Ref: Scheme + ref.String(), Digest: d.Digest.String()}
		if inGitTags[tag] != n {
			if _, err := w.SetFloatingTag(ctx, st, pkgPath, tag, n); err != nil {
				return out, fmt.Errorf("%s tag %s: %w", pkgPath, tag, err)
			}
			m.Copied = true
		}
		out = append(out, m)
	}
	return out, nil
}

// Listed is one published revision in a registry.
type Listed struct {
	// Package is its package's path, Revision its number (the vN tag).
	Package  string
	Revision int
	// Version is the semantic version it has: a floating tag on it that
	// is a version (v1.4.0), else vN.
	Version string
	// Files are its files.
	Files *pkg.Package
}

// ListRevisions reads every published revision under prefix (PREFIX/P:vN,
// as MirrorGit writes them): what a dependency catalog in a registry
// holds. A revision's version is a semver floating tag on the same
// artifact, else vN (N.0.0), as for git.
func ListRevisions(ctx context.Context, prefix string, o Options) ([]Listed, error) {
	_, opts, cancel := o.session(ctx)
	defer cancel()
	pkgs, err := packagesUnder(prefix, opts)
	if err != nil {
		return nil, err
	}
	var out []Listed
	for _, rp := range pkgs {
		versions := map[string]string{} // digest -> semver tag
		for _, t := range rp.floating {
			if _, err := semver.StrictNewVersion(strings.TrimPrefix(t, "v")); err != nil {
				continue
			}
			d, err := remote.Head(rp.repo.Tag(t), opts...)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", rp.repo.Tag(t), describe(err))
			}
			versions[d.Digest.String()] = t
		}
		for _, n := range rp.numbers {
			p, _, digest, err := Pull(ctx, rp.repo.Tag(fmt.Sprintf("v%d", n)), o)
			if err != nil {
				return nil, fmt.Errorf("%s revision %d: %w", rp.path, n, err)
			}
			out = append(out, Listed{Package: rp.path, Revision: n, Version: cmp.Or(versions[digest], fmt.Sprintf("v%d", n)), Files: p})
		}
	}
	return out, nil
}
