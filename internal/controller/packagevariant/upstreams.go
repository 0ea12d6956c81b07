package packagevariant

import (
	"context"
	"sync"

	"github.com/scion-dev/scion/internal/lru"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
)

// maxUpstreams bounds the upstream packages kept parsed: a fleet's
// variants derive from a few upstream revisions at a time (the one they
// are on and the one they move to).
const maxUpstreams = 32

// maxUpstreamBytes bounds the files of the upstream packages kept parsed,
// all together (their parse takes several times as much): a package
// larger than a quarter of it is not kept at all, so the memory a large
// package took is given back once its variants are done.
const maxUpstreamBytes = 32 << 20

// upstreamPackages shares the upstream packages variants are made from,
// parsed once: reading and parsing the same upstream revision (and the
// one a downstream was derived from, for the 3-way update) for every
// variant was the largest part of what producing a variant allocated.
// Each caller gets its own copy of the files; the parsed resources are
// immutable and shared. It is safe for concurrent use.
type upstreamPackages struct {
	once  sync.Once
	cache *lru.Cache[upstreamKey, *pkg.Package]
}

// upstreamKey names a package revision of one opened repository (a
// reopened repository is another store, so nothing stale is served).
type upstreamKey struct {
	store  store.Store
	pkg    string
	commit string
}

// read returns a copy of the package of rev in st.
func (u *upstreamPackages) read(ctx context.Context, st store.Store, rev store.Revision) (*pkg.Package, error) {
	u.once.Do(func() { u.cache = lru.New[upstreamKey, *pkg.Package](maxUpstreams, maxUpstreamBytes) })
	k := upstreamKey{store: st, pkg: rev.Package, commit: rev.Commit}
	if p, ok := u.cache.Get(k); ok {
		return p.DeepCopy(), nil
	}
	p, err := st.Read(ctx, rev)
	if err != nil {
		return nil, err
	}
	var size int64
	for _, data := range p.Files() {
		size += int64(len(data))
	}
	if size > maxUpstreamBytes/4 {
		return p, nil // not kept: this caller's alone
	}
	p.ResourceFiles() // parses every resource file, for the copies to share
	u.cache.Add(k, p, size)
	return p.DeepCopy(), nil
}
