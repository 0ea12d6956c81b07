package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"path"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
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
	objects *objectCacheView
	// pending are the objects written since the last Flush.
	pending map[plumbing.Hash]plumbing.EncodedObject
	order   []plumbing.Hash
	// read says an object was looked up since the last
	// forgetIdleIndexes.
	read bool
}

func newCachedStorage(fs *filesystem.Storage, objects *objectCacheView) *cachedStorage {
	return &cachedStorage{Storage: fs, objects: objects, pending: map[plumbing.Hash]plumbing.EncodedObject{}}
}

// EncodedObject returns the object from memory, or from the disk.
func (s *cachedStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	s.read = true
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
	s.read = true
	if _, ok := s.pending[h]; ok {
		return nil
	}
	if s.objects.Has(h) {
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

// forgetIdleIndexes drops the in-memory indexes of the packs when no
// object was looked up since the last call, and says whether it did.
// go-git keeps the index of every pack it has read or written (a few KiB
// each, up to maxSmallPacks+1 packs a repository): with a thousand
// repositories that is tens of MiB held for repositories nothing reads
// between two bumps. The indexes are read again from disk when next
// needed (Reindex).
func (s *cachedStorage) forgetIdleIndexes() bool {
	if s.read {
		s.read = false
		return false
	}
	s.Reindex()
	return true
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
// together. go-git's own cache is bounded per repository, so a controller
// with a thousand repositories could hold a thousand times its bound,
// and its heap (and the garbage collector's work) grew with every
// repository written to.
//
// Entries are per repository: an object is served only to the repository
// that read or wrote it, so a repository never takes an object it does
// not have for one it has (git objects with the same hash are the same,
// but HasEncodedObject must stay true to the repository's own store).
//
// The cache holds hundreds of thousands of small objects, so it holds
// them without pointers: each is copied into a segment (byte slices of
// about a sixty-fourth of the bound each, filled in turn, counted whole
// from when they are made) as a record of its key (repository and hash)
// and contents, and the map from a 64-bit digest of the key to the
// record's place holds no pointers either. A lookup checks the record's
// key: two keys with one digest share a slot, the later one's, and the
// other is a miss, never the wrong object. An object costs its contents,
// its record's header (recordHeader) and about entryOverhead bytes of
// map, all counted in the bound, and the collector marks no cached
// object. Eviction drops the oldest segment whole; an object
// found in the older half of the segments is copied into the newest, so
// what is used stays (an approximation of least recently used that
// needs no list).
//
// The segments are outside the Go heap (anonymous mappings, on systems
// that have them): the heap's growth between two collections is as large
// as what was live after the first (GOGC=100), so a cache of 150 MiB on
// the heap let the heap grow by 150 MiB more before each collection, and
// cost twice its bound at the peak. An object handed out is a copy of its
// contents (they are read once, to be decoded, and the copy is what
// go-git would have read from the disk), so that a segment is returned
// to the system as soon as it is evicted. What the cache holds is counted
// by the scion_git_object_cache_bytes metric, not by the runtime's heap
// figures, and the controller leaves room for its bound under the Go
// memory limit it sets in a container (memlimit.OffHeap).
//
// It is safe for concurrent use.
type ObjectCache struct {
	mu sync.Mutex
	// max is written under mu, and read without it by put's first
	// check.
	max  atomic.Int64
	size int64
	// mem holds the segments, oldest first (and so their mappings, for
	// the cleanup that returns them when the cache is no longer used);
	// first is the sequence number of the oldest.
	mem   *segments
	first uint32
	// entries maps a key's digest (cacheKey.digest) to its record.
	entries map[uint64]cacheLoc
	views   uint32
	// hits and misses count lookups (guarded by mu).
	hits, misses uint64
}

// ObjectCacheStats is what an ObjectCache holds and how often it had
// what was asked.
type ObjectCacheStats struct {
	// Bytes held: the segments (whole, including room not filled yet
	// and copies of objects since moved to a newer segment) and the
	// entries' bookkeeping.
	Bytes int64
	// Max is the bound on Bytes.
	Max int64
	// Hits and Misses count lookups since the cache was made.
	Hits, Misses uint64
	// Objects is the number of objects held.
	Objects int
}

// cacheKey names a cached object: a repository's view of the cache and
// the object's hash.
type cacheKey struct {
	view uint32
	hash plumbing.Hash
}

// digest is the key of k's map slot: the hash's first eight bytes (a
// SHA-1's, uniformly spread) mixed with the view.
func (k cacheKey) digest() uint64 {
	return binary.LittleEndian.Uint64(k.hash[:8]) ^ (uint64(k.view) * 0x9e3779b97f4a7c15)
}

// A record in a segment is a header, then the object's contents:
//
//	view uint32 | contents' length uint32 | hash [20]byte | contents
const recordHeader = 4 + 4 + 20

// A record header holds a whole hash.
var _ [recordHeader - 8]byte = plumbing.ZeroHash

// cacheLoc is where an object's record is: segment seg (a sequence
// number), from off, with n bytes of contents.
type cacheLoc struct {
	seg, off, n uint32
	typ         plumbing.ObjectType
}

// cacheSegment holds records, one after the other.
type cacheSegment struct {
	seq uint32
	buf []byte
	// mapped says buf is a mapping, returned to the system on eviction.
	mapped bool
}

// key reads the key of the record at off.
func (s *cacheSegment) key(off uint32) cacheKey {
	k := cacheKey{view: binary.LittleEndian.Uint32(s.buf[off:])}
	copy(k.hash[:], s.buf[off+8:off+recordHeader])
	return k
}

// length reads the contents' length of the record at off.
func (s *cacheSegment) length(off uint32) uint32 {
	return binary.LittleEndian.Uint32(s.buf[off+4:])
}

// segments is a cache's segments, oldest first (guarded by the cache's
// mu while it is used).
type segments struct {
	segs []*cacheSegment
}

// free returns every segment to the system: the cache's cleanup.
func (m *segments) free() {
	for _, seg := range m.segs {
		freeSegmentBuf(seg.buf, seg.mapped)
	}
	m.segs = nil
}

// entryOverhead is the memory an entry costs besides its record: its map
// slot with the map's spare room (BenchmarkObjectCacheBookkeeping
// measures it).
const entryOverhead = 48

// Segment sizes: a sixty-fourth of the bound, within these limits (an
// object larger than a segment gets one of its own).
const (
	minSegment = 1 << 10
	maxSegment = 4 << 20
)

// NewObjectCache returns a cache holding at most maxBytes
// (DefaultObjectCacheSize when maxBytes <= 0).
func NewObjectCache(maxBytes int64) *ObjectCache {
	if maxBytes <= 0 {
		maxBytes = DefaultObjectCacheSize
	}
	c := &ObjectCache{entries: map[uint64]cacheLoc{}, mem: &segments{}}
	c.max.Store(maxBytes)
	runtime.AddCleanup(c, (*segments).free, c.mem)
	return c
}

// Size returns the bytes held.
func (c *ObjectCache) Size() int64 {
	return c.Stats().Bytes
}

// Stats returns the bytes held and the lookups so far.
func (c *ObjectCache) Stats() ObjectCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ObjectCacheStats{Bytes: c.size, Max: c.max.Load(), Hits: c.hits, Misses: c.misses, Objects: len(c.entries)}
}

// SetMax changes the bound (DefaultObjectCacheSize when maxBytes <= 0),
// evicting the oldest segments down to a smaller one.
func (c *ObjectCache) SetMax(maxBytes int64) {
	if maxBytes <= 0 {
		maxBytes = DefaultObjectCacheSize
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.max.Store(maxBytes)
	c.evict()
}

// evict drops the oldest segments until the cache is within its bound.
func (c *ObjectCache) evict() {
	for c.size > c.max.Load() && len(c.mem.segs) > 0 {
		old := c.mem.segs[0]
		for off := uint32(0); int(off) < len(old.buf); off += recordHeader + old.length(off) {
			d := old.key(off).digest()
			if loc, ok := c.entries[d]; ok && loc.seg == old.seq && loc.off == off {
				delete(c.entries, d)
				c.size -= entryOverhead
			}
		}
		c.size -= int64(cap(old.buf))
		freeSegmentBuf(old.buf, old.mapped)
		old.buf = nil
		c.mem.segs[0] = nil
		c.mem.segs = c.mem.segs[1:]
		c.first++
	}
}

// segmentSize is the size of a new segment.
func (c *ObjectCache) segmentSize() int {
	return int(min(max(c.max.Load()/64, minSegment), maxSegment))
}

// store copies contents into a record of k in the newest segment (a new
// one when it is full), then evicts down to the bound.
func (c *ObjectCache) store(k cacheKey, typ plumbing.ObjectType, contents []byte) {
	c.storeFrom(k, typ, len(contents), func(dst []byte) error { copy(dst, contents); return nil })
}

// storeFrom stores the n bytes fill writes as k's contents (nothing when
// it fails).
func (c *ObjectCache) storeFrom(k cacheKey, typ plumbing.ObjectType, n int, fill func([]byte) error) {
	var seg *cacheSegment
	if len(c.mem.segs) > 0 {
		seg = c.mem.segs[len(c.mem.segs)-1]
	}
	size := recordHeader + n
	if seg == nil || len(seg.buf)+size > cap(seg.buf) {
		buf, mapped := newSegmentBuf(max(c.segmentSize(), size))
		seg = &cacheSegment{seq: c.first + uint32(len(c.mem.segs)), buf: buf[:0], mapped: mapped}
		c.mem.segs = append(c.mem.segs, seg)
		c.size += int64(cap(seg.buf))
	}
	off := len(seg.buf)
	rec := seg.buf[off : off+size]
	if err := fill(rec[recordHeader:]); err != nil {
		return
	}
	binary.LittleEndian.PutUint32(rec, k.view)
	binary.LittleEndian.PutUint32(rec[4:], uint32(n))
	copy(rec[8:recordHeader], k.hash[:])
	seg.buf = seg.buf[:off+size]
	d := k.digest()
	if _, ok := c.entries[d]; !ok {
		c.size += entryOverhead
	}
	c.entries[d] = cacheLoc{seg: seg.seq, off: uint32(off), n: uint32(n), typ: typ}
	c.evict()
}

// contents returns the contents at loc, which must be held.
func (c *ObjectCache) contents(loc cacheLoc) []byte {
	seg := c.mem.segs[loc.seg-c.first]
	from := loc.off + recordHeader
	return seg.buf[from : from+loc.n : from+loc.n]
}

// find returns k's record, if it is held.
func (c *ObjectCache) find(k cacheKey) (cacheLoc, bool) {
	loc, ok := c.entries[k.digest()]
	if !ok || c.mem.segs[loc.seg-c.first].key(loc.off) != k {
		return cacheLoc{}, false // not held, or the slot is another key's
	}
	return loc, true
}

// old says whether loc is in the older half of the segments, where it
// would soon be evicted.
func (c *ObjectCache) old(loc cacheLoc) bool {
	return int(loc.seg-c.first) < len(c.mem.segs)/2
}

func (c *ObjectCache) put(k cacheKey, obj plumbing.EncodedObject) {
	size := obj.Size()
	if size+entryOverhead > c.max.Load() || size > math.MaxUint32 {
		return
	}
	// An object in memory is copied straight into its segment, under the
	// lock; any other (one that reads a file) is read before.
	fill := func(dst []byte) error { return readInto(obj, dst) }
	if _, inMemory := obj.(*plumbing.MemoryObject); !inMemory {
		contents := make([]byte, size)
		if err := readInto(obj, contents); err != nil {
			return
		}
		fill = func(dst []byte) error { copy(dst, contents); return nil }
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if loc, ok := c.find(k); ok {
		if c.old(loc) {
			c.store(k, loc.typ, c.contents(loc))
		}
		return
	}
	c.storeFrom(k, obj.Type(), int(size), fill)
}

// readInto reads an object's contents into dst, exactly its size.
func readInto(obj plumbing.EncodedObject, dst []byte) error {
	r, err := obj.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.ReadFull(r, dst)
	return err
}

// view returns the cache of one repository.
func (c *ObjectCache) view() *objectCacheView {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.views++
	return &objectCacheView{c: c, id: c.views}
}

func (c *ObjectCache) get(k cacheKey) (plumbing.EncodedObject, bool) {
	var obj *cachedObject
	found := c.lookup(k, func(loc cacheLoc, contents []byte) {
		obj = &cachedObject{hash: k.hash, typ: loc.typ, contents: bytes.Clone(contents)}
	})
	return obj, found
}

// has says whether k is held, without copying its contents out.
func (c *ObjectCache) has(k cacheKey) bool {
	return c.lookup(k, nil)
}

// lookup finds k, counting the lookup, calls found (when given) with its
// contents in their segment (valid only during the call), and moves an
// object found in the older half of the segments into the newest.
func (c *ObjectCache) lookup(k cacheKey, found func(cacheLoc, []byte)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	loc, ok := c.find(k)
	if !ok {
		c.misses++
		return false
	}
	c.hits++
	if found != nil {
		found(loc, c.contents(loc))
	}
	if c.old(loc) {
		// Used again: copied where it stays longest (before the segment
		// it leaves may be evicted).
		c.store(k, loc.typ, c.contents(loc))
	}
	return true
}

// clear drops a view's objects. go-git never clears its object cache;
// this serves Clear's contract, at the cost of a walk over the cache.
// Their contents stay in their segments until those are evicted.
func (c *ObjectCache) clear(view uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for d, loc := range c.entries {
		if c.mem.segs[loc.seg-c.first].key(loc.off).view == view {
			delete(c.entries, d)
			c.size -= entryOverhead
		}
	}
}

// cachedObject is an object served from an ObjectCache: read-only, a
// copy of its contents.
type cachedObject struct {
	hash     plumbing.Hash
	typ      plumbing.ObjectType
	contents []byte
}

var _ plumbing.EncodedObject = (*cachedObject)(nil)

func (o *cachedObject) Hash() plumbing.Hash           { return o.hash }
func (o *cachedObject) Type() plumbing.ObjectType     { return o.typ }
func (o *cachedObject) SetType(t plumbing.ObjectType) { o.typ = t }
func (o *cachedObject) Size() int64                   { return int64(len(o.contents)) }
func (o *cachedObject) SetSize(int64)                 {}
func (o *cachedObject) Reader() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(o.contents)), nil
}

// Writer refuses: a cached object is never written to.
func (o *cachedObject) Writer() (io.WriteCloser, error) {
	return nil, fmt.Errorf("git object %s from the object cache is read-only", o.hash)
}

// objectCacheView is one repository's go-git cache.Object, backed by a
// shared ObjectCache.
type objectCacheView struct {
	c  *ObjectCache
	id uint32
}

var _ cache.Object = (*objectCacheView)(nil)

func (v *objectCacheView) Put(o plumbing.EncodedObject) {
	v.c.put(cacheKey{view: v.id, hash: o.Hash()}, o)
}

func (v *objectCacheView) Get(h plumbing.Hash) (plumbing.EncodedObject, bool) {
	return v.c.get(cacheKey{view: v.id, hash: h})
}

func (v *objectCacheView) Clear() { v.c.clear(v.id) }

// Has says whether the repository's object h is held, without copying it.
func (v *objectCacheView) Has(h plumbing.Hash) bool {
	return v.c.has(cacheKey{view: v.id, hash: h})
}
