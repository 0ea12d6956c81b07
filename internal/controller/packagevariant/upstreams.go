package packagevariant

import (
	"container/list"
	"context"
	"sync"

	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
)

// maxUpstreams bounds the upstream packages kept parsed: a fleet's
// variants derive from a few upstream revisions at a time (the one they
// are on and the one they move to).
const maxUpstreams = 32

// upstreamPackages shares the upstream packages variants are made from,
// parsed once: reading and parsing the same upstream revision (and the
// one a downstream was derived from, for the 3-way update) for every
// variant was the largest part of what producing a variant allocated.
// Each caller gets its own copy of the files; the parsed resources are
// immutable and shared. It is safe for concurrent use.
type upstreamPackages struct {
	mu      sync.Mutex
	lru     *list.List // of *upstreamPackage, most recently used first
	entries map[upstreamKey]*list.Element
}

// upstreamKey names a package revision of one opened repository (a
// reopened repository is another store, so nothing stale is served).
type upstreamKey struct {
	store  *store.Repository
	pkg    string
	commit string
}

type upstreamPackage struct {
	key upstreamKey
	p   *pkg.Package
}

// read returns a copy of the package of rev in st.
func (u *upstreamPackages) read(ctx context.Context, st *store.Repository, rev store.Revision) (*pkg.Package, error) {
	k := upstreamKey{store: st, pkg: rev.Package, commit: rev.Commit}
	u.mu.Lock()
	if u.entries == nil {
		u.lru, u.entries = list.New(), map[upstreamKey]*list.Element{}
	}
	if e, ok := u.entries[k]; ok {
		u.lru.MoveToFront(e)
		p := e.Value.(*upstreamPackage).p
		u.mu.Unlock()
		return p.DeepCopy(), nil
	}
	u.mu.Unlock()
	p, err := st.Read(ctx, rev)
	if err != nil {
		return nil, err
	}
	p.ResourceFiles() // parses every resource file, for the copies to share
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.entries[k]; !ok {
		u.entries[k] = u.lru.PushFront(&upstreamPackage{key: k, p: p})
		for u.lru.Len() > maxUpstreams {
			old := u.lru.Remove(u.lru.Back()).(*upstreamPackage)
			delete(u.entries, old.key)
		}
	}
	return p.DeepCopy(), nil
}
