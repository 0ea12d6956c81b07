package oci

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Catalogs shares the reads of registries' catalogs between the Stores
// of one process. A catalog lists every repository of a registry (a walk
// of its storage, from its start for every page in distribution's
// registry: a read costs the square of the registry's size): a thousand
// Repositories that are prefixes of one registry, each reading it on its
// own, made the registry walk its storage a thousand times per sync. A
// read is shared by the Stores of the same key (the registry and the
// credentials it is read with: a Store never sees a catalog read with
// another's credentials), for as long as they ask and at least
// catalogCostShare times as long as it took; a package a Store of the
// process makes is added to it. It is safe for concurrent use; the zero
// value is ready.
type Catalogs struct {
	mu    sync.Mutex
	reads map[string]*catalogRead
	// now is the clock (time.Now when nil).
	now func() time.Time
}

// catalogRead is one read of a catalog, done when done is closed.
type catalogRead struct {
	started time.Time
	// took is how long the read took (once done).
	took  time.Duration
	done  chan struct{}
	names []string
	err   error
	// added are the repositories Stores of the process made since the
	// read started; listed is names as a set (made when first needed).
	added  map[string]bool
	listed map[string]bool
}

// catalogCostShare bounds the registry's time spent listing its catalog
// for one process: a read is shared for at least this many times as long
// as it took (a twentieth of the registry's time at most, however large
// it grows: 10,000 repositories took 1.5 s of its CPU and 8 s to read on
// two busy cores, and are read every 2.6 minutes at most).
const catalogCostShare = 20

// maxCatalogKeys bounds the reads kept: past it, they are all dropped
// (each is read again when next needed).
const maxCatalogKeys = 1024

// clock is the time now.
func (c *Catalogs) clock() time.Time {
	if c != nil && c.now != nil {
		return c.now()
	}
	return time.Now()
}

// read returns the catalog of key: that of a read that started at or
// after notBefore (waiting for it when it is under way), or of one
// within catalogCostShare times its duration, but never of one that
// started before since; else of a new read made with fn; with the
// repositories Stores made since the read started. A read that failed
// is not shared: who waited for it reads on their own.
func (c *Catalogs) read(ctx context.Context, key string, notBefore, since time.Time, fn func() ([]string, error)) ([]string, error) {
	if c == nil {
		return fn()
	}
	c.mu.Lock()
	r := c.reads[key]
	if r == nil || r.started.Before(since) || !c.sharedLocked(r, notBefore) {
		if c.reads == nil || len(c.reads) >= maxCatalogKeys {
			c.reads = map[string]*catalogRead{}
		}
		r = &catalogRead{started: c.clock(), done: make(chan struct{})}
		c.reads[key] = r
		c.mu.Unlock()
		names, err := fn()
		c.mu.Lock()
		r.names, r.err, r.took = names, err, c.clock().Sub(r.started)
		if err != nil && c.reads[key] == r {
			delete(c.reads, key)
		}
		close(r.done)
		out := r.listLocked()
		c.mu.Unlock()
		return out, err
	}
	c.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if r.err != nil {
		return fn()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return r.listLocked(), nil
}

// sharedLocked says whether r may answer a read asking for one started
// at or after notBefore: it did, or it is under way, or it is done and
// younger than catalogCostShare times its duration.
func (c *Catalogs) sharedLocked(r *catalogRead, notBefore time.Time) bool {
	if !r.started.Before(notBefore) {
		return true
	}
	select {
	case <-r.done:
		return c.clock().Sub(r.started) < catalogCostShare*r.took
	default:
		return true // under way: its answer comes soonest
	}
}

// listLocked is what the read found and what was added since (the read
// done). A read lives for minutes on a large registry, and thousands of
// packages may be added meanwhile: both are looked up in sets, not
// searched.
func (r *catalogRead) listLocked() []string {
	if len(r.added) == 0 {
		return r.names
	}
	if r.listed == nil {
		r.listed = make(map[string]bool, len(r.names))
		for _, n := range r.names {
			r.listed[n] = true
		}
	}
	out := slices.Clone(r.names)
	for a := range r.added {
		if !r.listed[a] {
			out = append(out, a)
		}
	}
	return out
}

// added records that a Store of the process made repo (a package), which
// the read of key may not list: its readers get it too.
func (c *Catalogs) added(key, repo string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.reads[key]; r != nil {
		if r.added == nil {
			r.added = map[string]bool{}
		}
		r.added[repo] = true
	}
}
