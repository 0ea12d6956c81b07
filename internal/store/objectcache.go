package store

import (
	"fmt"
	"io"
	"path"
	"sort"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Pack consolidation: once more than maxSmallPacks packs under
// maxMergedPackSize have accumulated (each flush and each fetch adds
// one), the smallest are merged so that the packs' sizes grow
// geometrically again, each at least twice the sum of those smaller
// (as git repack --geometric=2): the count of packs grows with the
// logarithm of what was written and fetched, not by one every few
// writes, and an object is rewritten once per doubling at most. go-git
// keeps the index of every pack of a repository it reads in memory (a
// few KiB even for a pack of one draft) and looks an object up in each
// of them, so the count is kept low: with a thousand repositories, 32
// small packs each held over 100 MiB of indexes. Packs over
// maxMergedPackSize (a first clone, a large fetch) are left alone:
// merging reads the merged packs into memory (at most about twice
// maxMergedPackSize, the sizes below it doubling).
const (
	maxSmallPacks     = 8
	maxMergedPackSize = 8 << 20
)

// cachedStorage is the local mirror's storage, with two changes to
// go-git's filesystem storage:
//
//   - its object cache is consulted first. go-git opens an object's file
//     before it looks in the cache, and never caches what it writes; a
//     variant's draft reads back the objects it has just written (to push
//     them) and the same upstream objects over and over.
//   - new objects are kept in memory until Flush writes them as one
//     packfile (push flushes before it sends anything, so a ref never
//     points at objects that are only in memory). A draft has a few dozen
//     new objects; as loose objects each would cost a file creation and a
//     rename, which dominated the time of writing drafts on this
//     project's machines.
//
// The caller serializes access (Repository.mu).
type cachedStorage struct {
	*filesystem.Storage
	objects cache.Object
	// pending are the objects written since the last Flush.
	pending map[plumbing.Hash]plumbing.EncodedObject
	order   []plumbing.Hash
}

func newCachedStorage(fs *filesystem.Storage, objects cache.Object) *cachedStorage {
	return &cachedStorage{Storage: fs, objects: objects, pending: map[plumbing.Hash]plumbing.EncodedObject{}}
}

// EncodedObject returns the object from memory, or from the disk.
func (s *cachedStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	obj, ok := s.pending[h]
	if !ok {
		obj, ok = s.objects.Get(h)
	}
	if ok {
		if t != plumbing.AnyObject && obj.Type() != t {
			return nil, plumbing.ErrObjectNotFound
		}
		return obj, nil
	}
	return s.Storage.EncodedObject(t, h)
}

// HasEncodedObject reports an object in memory without touching the disk.
func (s *cachedStorage) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := s.pending[h]; ok {
		return nil
	}
	if _, ok := s.objects.Get(h); ok {
		return nil
	}
	return s.Storage.HasEncodedObject(h)
}

// SetEncodedObject keeps the object for the next Flush.
func (s *cachedStorage) SetEncodedObject(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	if t := obj.Type(); t == plumbing.OFSDeltaObject || t == plumbing.REFDeltaObject {
		return plumbing.ZeroHash, plumbing.ErrInvalidType
	}
	h := obj.Hash()
	if _, ok := s.pending[h]; !ok {
		s.pending[h] = obj
		s.order = append(s.order, h)
	}
	s.objects.Put(obj)
	return h, nil
}

// Flush writes the pending objects as one packfile, then merges the small
// packs if there are too many.
func (s *cachedStorage) Flush() error {
	if len(s.order) == 0 {
		return nil
	}
	if err := s.writePack(s.order); err != nil {
		return fmt.Errorf("writing %d objects: %w", len(s.order), err)
	}
	s.pending, s.order = map[plumbing.Hash]plumbing.EncodedObject{}, nil
	return s.consolidate()
}

// writePack writes the objects as a packfile, without deltas, and
// indexes it.
func (s *cachedStorage) writePack(hashes []plumbing.Hash) error {
	return s.writePackFrom(s, hashes)
}

// writePackFrom writes the objects of src as a packfile, without deltas,
// and indexes it.
func (s *cachedStorage) writePackFrom(src objectSource, hashes []plumbing.Hash) error {
	w, err := s.PackfileWriter()
	if err != nil {
		return err
	}
	if err := writePackfile(w, src, hashes); err != nil {
		_ = w.Close()
		return err
	}
	return w.Close()
}

// packObjects are objects read from packs being merged.
type packObjects map[plumbing.Hash]plumbing.EncodedObject

// EncodedObject returns one of the objects.
func (m packObjects) EncodedObject(_ plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if obj, ok := m[h]; ok {
		return obj, nil
	}
	return nil, plumbing.ErrObjectNotFound
}

// consolidate merges the smallest packs into one when there are more
// than maxSmallPacks packs under maxMergedPackSize (see rollUp).
func (s *cachedStorage) consolidate() error {
	packs, err := s.ObjectPacks()
	if err != nil {
		return err
	}
	var candidates []sizedPack
	for _, h := range packs {
		fi, err := s.Filesystem().Stat(packPath(h) + ".pack")
		if err == nil && fi.Size() < maxMergedPackSize {
			candidates = append(candidates, sizedPack{h, fi.Size()})
		}
	}
	if len(candidates) <= maxSmallPacks {
		return nil
	}
	sort.Slice(candidates, func(i, j int) bool { return candidates[i].size < candidates[j].size })
	var merging []plumbing.Hash
	for _, p := range candidates[:rollUp(candidates)] {
		merging = append(merging, p.hash)
	}
	if len(merging) < 2 {
		return nil
	}
	// Each pack is read once, in one go: merging through the object
	// lookups reopened a pack for every object the object cache did not
	// hold, which with a thousand repositories was most of them.
	merged := packObjects{}
	var hashes []plumbing.Hash
	for _, h := range merging {
		if err := s.readPack(h, func(obj plumbing.EncodedObject) {
			if _, ok := merged[obj.Hash()]; !ok {
				merged[obj.Hash()] = obj
				hashes = append(hashes, obj.Hash())
			}
		}); err != nil {
			return fmt.Errorf("merging packs: %w", err)
		}
	}
	if err := s.writePackFrom(merged, hashes); err != nil {
		return fmt.Errorf("merging packs: %w", err)
	}
	// Everything is in the new pack: the old ones can go. The storage
	// forgets its indexes even when a removal fails, so that it never
	// looks for an object in a pack already removed.
	defer s.Reindex()
	for _, h := range merging {
		if err := s.DeleteOldObjectPackAndIndex(h, time.Time{}); err != nil {
			return fmt.Errorf("removing merged pack %s: %w", h, err)
		}
	}
	return nil
}

// packPath is the path of a pack's files in the mirror, without the
// extension (.pack, .idx).
func packPath(pack plumbing.Hash) string {
	return path.Join("objects", "pack", "pack-"+pack.String())
}

// sizedPack is a pack and the size of its file.
type sizedPack struct {
	hash plumbing.Hash
	size int64
}

// rollUp returns how many of the packs (smallest first) to merge so that
// every pack left is at least twice as large as the merged pack and the
// packs smaller than it together: the sizes then double from pack to
// pack. It is 0 when they already do.
func rollUp(packs []sizedPack) int {
	n := 0
	for i := len(packs) - 1; i > 0; i-- {
		if packs[i].size < 2*packs[i-1].size {
			n = i + 1
			break
		}
	}
	if n == 0 {
		return 0
	}
	var merged int64
	for _, p := range packs[:n] {
		merged += p.size
	}
	for n < len(packs) && packs[n].size < 2*merged {
		merged += packs[n].size
		n++
	}
	return n
}

// readPack calls fn with every object of a pack: from the object cache
// when it holds it (recent writes usually are), else read in memory from
// the pack file, opened once. An object the pack holds as a delta of an
// object of another pack is read through the storage.
func (s *cachedStorage) readPack(pack plumbing.Hash, fn func(plumbing.EncodedObject)) error {
	fs := s.Filesystem()
	base := packPath(pack)
	f, err := fs.Open(base + ".idx")
	if err != nil {
		return err
	}
	idx := idxfile.NewMemoryIndex()
	err = idxfile.NewDecoder(f).Decode(idx)
	_ = f.Close()
	if err != nil {
		return fmt.Errorf("reading the index of pack %s: %w", pack, err)
	}
	data, err := fs.Open(base + ".pack")
	if err != nil {
		return err
	}
	// Without a filesystem, the packfile reads objects into memory rather
	// than returning handles that reopen the file. What it reads goes into
	// the object cache, as reading through the storage did: the merged
	// objects are recent drafts, read again soon (without it, the bump at
	// 10,000 variants hit the cache 40 % of the time instead of 46 %).
	p := packfile.NewPackfileWithCache(idx, nil, data, s.objects, 0)
	defer p.Close()
	entries, err := idx.Entries()
	if err != nil {
		return err
	}
	defer entries.Close()
	for {
		e, err := entries.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if obj, ok := s.objects.Get(e.Hash); ok {
			fn(obj)
			continue
		}
		obj, err := p.Get(e.Hash)
		if err != nil {
			if obj, err = s.EncodedObject(plumbing.AnyObject, e.Hash); err != nil {
				return fmt.Errorf("object %s of pack %s: %w", e.Hash, pack, err)
			}
		}
		fn(obj)
	}
}

// DefaultObjectCacheSize is the memory an ObjectCache holds when it is
// given no size: about a thousand drafts' worth of objects, far more
// than the objects being written and pushed at any one time.
const DefaultObjectCacheSize = 32 << 20

// ObjectCache keeps recently read and written git objects in memory for
// any number of Repositories, within one bound in bytes for all of them
// together, evicting the least recently used. go-git's own cache is
// bounded per repository, so a controller with a thousand repositories
// could hold a thousand times its bound, and its heap (and the garbage
// collector's work) grew with every repository written to.
//
// Entries are per repository: an object is served only to the repository
// that read or wrote it, so a repository never takes an object it does
// not have for one it has (git objects with the same hash are the same,
// but HasEncodedObject must stay true to the repository's own store).
//
// The cache holds a hundred thousand small objects and more, so its own
// bookkeeping is laid out for the garbage collector: entries live in one
// slice, linked by index, and the map from key to entry holds no
// pointers; each entry costs the collector its object alone, where a
// list element, an entry struct and a map of pointers cost it three
// more objects to mark on every cycle.
//
// It is safe for concurrent use.
type ObjectCache struct {
	mu   sync.Mutex
	max  int64
	size int64
	// slots holds the entries; the used ones form a list from head (most
	// recently used) to tail, the free ones a list from free, both
	// linked through next.
	slots            []cacheSlot
	head, tail, free int32
	entries          map[cacheKey]int32
	views            uint64
	// hits and misses count lookups (guarded by mu).
	hits, misses uint64
}

// ObjectCacheStats is what an ObjectCache holds and how often it had
// what was asked.
type ObjectCacheStats struct {
	// Bytes of objects held.
	Bytes int64
	// Max is the bound on Bytes.
	Max int64
	// Hits and Misses count lookups since the cache was made.
	Hits, Misses uint64
	// Objects is the number of objects held.
	Objects int
}

type cacheKey struct {
	view uint64
	hash plumbing.Hash
}

// cacheSlot is one entry of an ObjectCache; prev and next are indexes of
// slots, none being -1.
type cacheSlot struct {
	key        cacheKey
	obj        plumbing.EncodedObject
	size       int64 // as counted when put
	prev, next int32
}

// none is the index of no slot.
const none = -1

// NewObjectCache returns a cache holding at most maxBytes of objects
// (DefaultObjectCacheSize when maxBytes <= 0).
func NewObjectCache(maxBytes int64) *ObjectCache {
	if maxBytes <= 0 {
		maxBytes = DefaultObjectCacheSize
	}
	return &ObjectCache{max: maxBytes, head: none, tail: none, free: none, entries: map[cacheKey]int32{}}
}

// Size returns the bytes of objects held.
func (c *ObjectCache) Size() int64 {
	return c.Stats().Bytes
}

// Stats returns the bytes held and the lookups so far.
func (c *ObjectCache) Stats() ObjectCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ObjectCacheStats{Bytes: c.size, Max: c.max, Hits: c.hits, Misses: c.misses, Objects: len(c.entries)}
}

// SetMax changes the bound (DefaultObjectCacheSize when maxBytes <= 0),
// evicting the least recently used objects down to a smaller one.
func (c *ObjectCache) SetMax(maxBytes int64) {
	if maxBytes <= 0 {
		maxBytes = DefaultObjectCacheSize
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.max = maxBytes
	c.evict()
}

// evict drops the least recently used objects until the cache is within
// its bound.
func (c *ObjectCache) evict() {
	for c.size > c.max {
		c.remove(c.tail)
	}
}

// view returns the cache of one repository.
func (c *ObjectCache) view() *objectCacheView {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.views++
	return &objectCacheView{c: c, id: c.views}
}

func (c *ObjectCache) put(k cacheKey, obj plumbing.EncodedObject) {
	size := obj.Size()
	c.mu.Lock()
	defer c.mu.Unlock()
	if i, ok := c.entries[k]; ok {
		c.moveToFront(i)
		return
	}
	if size > c.max {
		return
	}
	i := c.free
	if i != none {
		c.free = c.slots[i].next
	} else {
		i = int32(len(c.slots))
		c.slots = append(c.slots, cacheSlot{})
	}
	c.slots[i] = cacheSlot{key: k, obj: obj, size: size, prev: none, next: none}
	c.pushFront(i)
	c.entries[k] = i
	c.size += size
	c.evict()
}

func (c *ObjectCache) get(k cacheKey) (plumbing.EncodedObject, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, ok := c.entries[k]
	if !ok {
		c.misses++
		return nil, false
	}
	c.hits++
	c.moveToFront(i)
	return c.slots[i].obj, true
}

// clear drops a view's objects. go-git never clears its object cache;
// this serves Clear's contract, at the cost of a walk over the cache.
func (c *ObjectCache) clear(view uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := c.head; i != none; {
		next := c.slots[i].next
		if c.slots[i].key.view == view {
			c.remove(i)
		}
		i = next
	}
}

// unlink takes slot i out of the list of used slots.
func (c *ObjectCache) unlink(i int32) {
	s := &c.slots[i]
	if s.prev != none {
		c.slots[s.prev].next = s.next
	} else {
		c.head = s.next
	}
	if s.next != none {
		c.slots[s.next].prev = s.prev
	} else {
		c.tail = s.prev
	}
	s.prev, s.next = none, none
}

// pushFront makes slot i the most recently used.
func (c *ObjectCache) pushFront(i int32) {
	s := &c.slots[i]
	s.prev, s.next = none, c.head
	if c.head != none {
		c.slots[c.head].prev = i
	}
	c.head = i
	if c.tail == none {
		c.tail = i
	}
}

func (c *ObjectCache) moveToFront(i int32) {
	if c.head == i {
		return
	}
	c.unlink(i)
	c.pushFront(i)
}

// remove drops the entry of slot i and puts the slot on the free list
// (without its object, which the collector can then take).
func (c *ObjectCache) remove(i int32) {
	c.unlink(i)
	s := &c.slots[i]
	delete(c.entries, s.key)
	c.size -= s.size
	*s = cacheSlot{prev: none, next: c.free}
	c.free = i
}

// objectCacheView is one repository's go-git cache.Object, backed by a
// shared ObjectCache.
type objectCacheView struct {
	c  *ObjectCache
	id uint64
}

var _ cache.Object = (*objectCacheView)(nil)

func (v *objectCacheView) Put(o plumbing.EncodedObject) {
	v.c.put(cacheKey{view: v.id, hash: o.Hash()}, o)
}

func (v *objectCacheView) Get(h plumbing.Hash) (plumbing.EncodedObject, bool) {
	return v.c.get(cacheKey{view: v.id, hash: h})
}

func (v *objectCacheView) Clear() { v.c.clear(v.id) }
