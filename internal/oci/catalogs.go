package oci

import (
	"context"
	"sync"
	"time"
)

// Catalogs shares the reads of registries' catalogs between the Stores
// of one process. A catalog lists every repository of a registry (a walk
// of its storage): a thousand Repositories that are prefixes of one
// registry, each reading it on its own, made the registry walk its
// storage a thousand times per sync. A read is shared by the Stores of
// the same key (the registry and the credentials it is read with: a
// Store never sees a catalog read with another's credentials). A package
// a Store of the process makes drops the read, so that the others find
// it at their next fetch. It is safe for concurrent use; the zero value
// is ready.
type Catalogs struct {
	mu    sync.Mutex
	reads map[string]*catalogRead
}

// catalogRead is one read of a catalog, done when done is closed.
type catalogRead struct {
	started time.Time
	done    chan struct{}
	names   []string
	err     error
}

// maxCatalogKeys bounds the reads kept: past it, they are all dropped
// (each is read again when next needed).
const maxCatalogKeys = 1024

// read returns the catalog of key: that of a read that started at or
// after notBefore (waiting for it when it is under way), else of a new
// read made with fn. A read that failed is not shared: who waited for it
// reads on their own.
func (c *Catalogs) read(ctx context.Context, key string, notBefore time.Time, fn func() ([]string, error)) ([]string, error) {
	if c == nil {
		return fn()
	}
	c.mu.Lock()
	r := c.reads[key]
	if r == nil || r.started.Before(notBefore) {
		if c.reads == nil || len(c.reads) >= maxCatalogKeys {
			c.reads = map[string]*catalogRead{}
		}
		r = &catalogRead{started: time.Now(), done: make(chan struct{})}
		c.reads[key] = r
		c.mu.Unlock()
		r.names, r.err = fn()
		if r.err != nil {
			c.mu.Lock()
			if c.reads[key] == r {
				delete(c.reads, key)
			}
			c.mu.Unlock()
		}
		close(r.done)
		return r.names, r.err
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
	return r.names, nil
}

// changed drops the read of key: a Store of the process made a package
// the read does not list, which the next read must.
func (c *Catalogs) changed(key string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.reads, key)
}
