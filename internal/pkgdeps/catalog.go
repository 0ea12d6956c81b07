// Package pkgdeps resolves package dependencies in the cluster: the
// catalog of the namespace's upstream repositories, what a deployment
// repository holds, one variant's resolution, and the repository's lock.
// It reads git through the store and never writes; the controllers act on
// what it finds.
package pkgdeps

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/Masterminds/semver/v3"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/deps"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/store"
)

// Source is an upstream repository of the catalog.
type Source struct {
	// Name is the Repository's name.
	Name  string
	Store store.Store
}

// Location is where a catalog revision is: a Repository and a published
// revision in it.
type Location struct {
	Repo     string
	Revision store.Revision
}

// Catalog is the catalog of a namespace, with where each revision is.
type Catalog struct {
	*deps.Catalog
	where    map[string]Location
	byCommit map[string]*deps.Revision
	// Unavailable are the repositories whose packages are missing
	// because they cannot be read, each with the reason.
	Unavailable []string
}

// Location returns where a package's version is published.
func (c *Catalog) Location(pkgPath string, v *semver.Version) (Location, bool) {
	if c == nil || v == nil {
		return Location{}, false
	}
	l, ok := c.where[pkgPath+"\x00"+v.String()]
	return l, ok
}

// Reader reads declarations from git, caching them by commit (a commit's
// content never changes). It is safe for concurrent use.
type Reader struct {
	mu    sync.Mutex
	decls map[string]declared
	// catalogs are the catalogs built, by their sources' names, URLs and
	// refs versions: a catalog holds while no source's refs change.
	catalogs map[string]*Catalog
}

// maxCatalogs bounds the catalog cache; it starts over when full.
const maxCatalogs = 256

type declared struct {
	// commit is the revision's commit the declaration was read from.
	commit string
	decl   *deps.Declaration
	err    error
	// origin is the upstream commit the package records (its Kptfile's
	// upstreamLock), for packages of deployment repositories.
	origin string
}

// maxDecls bounds the declaration cache; it starts over when full.
const maxDecls = 50000

// NewReader returns a Reader.
func NewReader() *Reader { return &Reader{decls: map[string]declared{}} }

// declaration reads (or recalls) the declaration of a revision and the
// upstream commit it records.
func (r *Reader) declaration(ctx context.Context, st store.Store, rev store.Revision) (declared, error) {
	key := declKey(st, rev)
	r.mu.Lock()
	d, ok := r.decls[key]
	r.mu.Unlock()
	if ok && d.commit == rev.Commit {
		return d, nil
	}
	p, err := st.Read(ctx, rev)
	switch {
	case store.Unreadable(err):
		// A package no read of this commit will ever take (a path no
		// checkout holds, over a limit): it declares nothing and cannot
		// be used, and the repository's other packages go on.
		d = declared{commit: rev.Commit, err: err}
	case err != nil:
		return declared{}, err
	default:
		d = declare(rev, p)
	}
	r.remember(key, d)
	return d, nil
}

// Remember records the declaration of a revision just written with the
// content p, so that reading it (the lock's reconcile after a variant's
// write) does not read and parse the package from git again: a package
// written in process still holds its parse.
func (r *Reader) Remember(st store.Store, rev store.Revision, p *pkg.Package) {
	r.remember(declKey(st, rev), declare(rev, p))
}

// declKey names a revision, not a commit: the cache keeps the declaration
// of each revision's latest commit only, so a draft written again and
// again holds one entry, not one per commit it ever had.
func declKey(st store.Store, rev store.Revision) string {
	return st.URL() + "\x00" + rev.Package + "\x00" + rev.Workspace + "\x00" + strconv.Itoa(rev.Revision)
}

func declare(rev store.Revision, p *pkg.Package) declared {
	d := declared{commit: rev.Commit, origin: upstreamCommit(p)}
	d.decl, d.err = deps.ParsePackage(p)
	return d
}

func (r *Reader) remember(key string, d declared) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.decls) >= maxDecls {
		r.decls = map[string]declared{}
	}
	r.decls[key] = d
}

// upstreamCommit is the upstream commit a package's Kptfile records.
func upstreamCommit(p *pkg.Package) string {
	kf, err := p.Kptfile()
	if err != nil {
		return ""
	}
	return kf.UpstreamLock.Commit()
}

// Catalog reads every published revision of the sources' packages, with
// its version (pkgservice.PublishedVersions) and its declaration. A
// package in two sources is taken from the first by name; a revision
// whose declaration does not read is kept, unusable, with its error. The
// catalog is kept while no source's refs change (a Catalog is read-only
// once built), so resolutions and locks share it.
func (r *Reader) Catalog(ctx context.Context, sources []Source) (*Catalog, error) {
	sources = append([]Source(nil), sources...)
	sort.Slice(sources, func(i, j int) bool { return sources[i].Name < sources[j].Name })
	var key strings.Builder
	for _, src := range sources {
		fmt.Fprintf(&key, "%s\x00%s\x00%d\x00", src.Name, src.Store.URL(), src.Store.RefsVersion())
	}
	r.mu.Lock()
	c, ok := r.catalogs[key.String()]
	r.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err := r.buildCatalog(ctx, sources)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.catalogs == nil || len(r.catalogs) >= maxCatalogs {
		r.catalogs = map[string]*Catalog{}
	}
	r.catalogs[key.String()] = c
	r.mu.Unlock()
	return c, nil
}

// buildCatalog reads the sources' published revisions (sorted by name).
func (r *Reader) buildCatalog(ctx context.Context, sources []Source) (*Catalog, error) {
	c := &Catalog{Catalog: deps.NewCatalog(), where: map[string]Location{}, byCommit: map[string]*deps.Revision{}}
	seen := map[string]string{}
	for _, src := range sources {
		revs, err := src.Store.List(ctx)
		if err != nil {
			return nil, fmt.Errorf("repository %s: %w", src.Name, err)
		}
		pkgs := map[string]bool{}
		for _, rev := range revs {
			pkgs[rev.Package] = true
		}
		for p := range pkgs {
			if owner, ok := seen[p]; ok && owner != src.Name {
				continue
			}
			vs, err := pkgservice.PublishedVersions(ctx, src.Store, p)
			if err != nil {
				return nil, fmt.Errorf("repository %s: %w", src.Name, err)
			}
			for _, v := range vs {
				d, err := r.declaration(ctx, src.Store, v.Revision)
				if err != nil {
					return nil, fmt.Errorf("repository %s: %s v%d: %w", src.Name, p, v.Revision.Revision, err)
				}
				dr := &deps.Revision{Package: p, Version: v.Version, Decl: d.decl, Err: d.err}
				if err := c.Add(dr); err != nil {
					return nil, err
				}
				seen[p] = src.Name
				c.where[p+"\x00"+v.Version.String()] = Location{Repo: src.Name, Revision: v.Revision}
				c.byCommit[v.Revision.Commit] = dr
			}
		}
	}
	return c, nil
}

// OfflineCatalog wraps a catalog read from folders (deps.LoadCatalog):
// its revisions have no location in the cluster.
func OfflineCatalog(c *deps.Catalog) *Catalog {
	return &Catalog{Catalog: c, where: map[string]Location{}, byCommit: map[string]*deps.Revision{}}
}

// OfflineInstalled wraps packages read from a checkout
// (deps.LoadInstalled): each counts as Published at its version.
func OfflineInstalled(in []deps.Installed) []Package {
	out := make([]Package, 0, len(in))
	for _, i := range in {
		out = append(out, Package{Dir: i.Dir, Rev: i.Revision, Lifecycle: porchv1alpha1.LifecyclePublished, Published: i.Revision})
	}
	return out
}
