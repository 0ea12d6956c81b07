package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

func blob(content string) plumbing.EncodedObject {
	o := &plumbing.MemoryObject{}
	o.SetType(plumbing.BlobObject)
	_, _ = o.Write([]byte(content))
	return o
}

// TestObjectCache: one bound in bytes for every repository, counting
// contents and bookkeeping; each repository sees only its own entries,
// with the contents it put; the oldest go first, and what is used again
// stays.
func TestObjectCache(t *testing.T) {
	g := NewWithT(t)
	const bound = 64 << 10 // segments of minSegment: 64 of them
	c := NewObjectCache(bound)
	a, b := c.view(), c.view()

	o1, o2 := blob(fmt.Sprintf("%0200d", 1)), blob(fmt.Sprintf("%0200d", 2))
	a.Put(o1)
	b.Put(o2)
	g.Expect(c.Size()).To(Equal(int64(minSegment+2*entryOverhead)), "one segment, two entries")
	_, ok := b.Get(o1.Hash())
	g.Expect(ok).To(BeFalse(), "an object is served only to the repository that has it")
	got, ok := a.Get(o1.Hash())
	g.Expect(ok).To(BeTrue())
	g.Expect(got.Hash()).To(Equal(o1.Hash()))
	g.Expect(got.Type()).To(Equal(plumbing.BlobObject))
	g.Expect(contents(t, got)).To(Equal(fmt.Sprintf("%0200d", 1)))

	// Putting an object again does not count it twice.
	a.Put(o1)
	g.Expect(c.Stats().Objects).To(Equal(2))

	// An object larger than the whole cache is not kept.
	a.Put(blob(string(make([]byte, bound))))
	g.Expect(c.Size()).To(Equal(int64(minSegment + 2*entryOverhead)))

	st := c.Stats()
	g.Expect(st.Hits).To(Equal(uint64(1)))
	g.Expect(st.Misses).To(Equal(uint64(1)))
	g.Expect(st.Objects).To(Equal(2))

	// Fill the cache twice over, using o1 all along: o2 goes, o1 stays.
	for i := 0; i < 2*bound/(200+entryOverhead); i++ {
		a.Put(blob(fmt.Sprintf("%0200d", 1000+i)))
		_, ok := a.Get(o1.Hash())
		g.Expect(ok).To(BeTrue(), "used all along: %d", i)
		g.Expect(c.Size()).To(BeNumerically("<=", bound))
	}
	_, ok = b.Get(o2.Hash())
	g.Expect(ok).To(BeFalse(), "the oldest are evicted")

	b.Put(o2)
	a.Clear()
	g.Expect(c.Stats().Objects).To(Equal(1), "Clear drops the repository's objects only")
	_, ok = b.Get(o2.Hash())
	g.Expect(ok).To(BeTrue())
}

func contents(t *testing.T, o plumbing.EncodedObject) string {
	t.Helper()
	r, err := o.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestObjectCache_SetMax: a smaller bound evicts at once, down to it; a
// larger one keeps more from then on.
func TestObjectCache_SetMax(t *testing.T) {
	g := NewWithT(t)
	c := NewObjectCache(256 << 10)
	v := c.view()
	for i := 0; i < 1000; i++ {
		v.Put(blob(fmt.Sprintf("%0100d", i)))
	}
	g.Expect(c.Stats().Objects).To(Equal(1000))
	c.SetMax(64 << 10)
	st := c.Stats()
	g.Expect(st.Max).To(Equal(int64(64 << 10)))
	g.Expect(st.Bytes).To(BeNumerically("<=", 64<<10))
	g.Expect(st.Objects).To(BeNumerically("<", 1000))
	_, ok := v.Get(blob(fmt.Sprintf("%0100d", 999)).Hash())
	g.Expect(ok).To(BeTrue(), "the newest stay")
	_, ok = v.Get(blob(fmt.Sprintf("%0100d", 0)).Hash())
	g.Expect(ok).To(BeFalse(), "the oldest go")
	c.SetMax(256 << 10)
	for i := 0; i < 1000; i++ {
		v.Put(blob(fmt.Sprintf("%0100d", i)))
	}
	g.Expect(c.Stats().Objects).To(Equal(1000), "a larger bound holds more")
	c.SetMax(0)
	g.Expect(c.Stats().Max).To(Equal(int64(DefaultObjectCacheSize)))
}

// TestObjectCache_segmentsReturned: the segments are returned to the
// system as they are evicted (outside the Go heap, where the system has
// mappings), and an object handed out stays whole after its segment has
// gone: it is a copy. Has finds an object without copying it.
func TestObjectCache_segmentsReturned(t *testing.T) {
	g := NewWithT(t)
	c := NewObjectCache(64 << 10)
	v := c.view()
	first := blob(fmt.Sprintf("%0500d", 0))
	v.Put(first)
	c.mu.Lock()
	firstSeg := c.mem.segs[0]
	c.mu.Unlock()
	got, ok := v.Get(first.Hash())
	g.Expect(ok).To(BeTrue())
	g.Expect(v.Has(first.Hash())).To(BeTrue())
	g.Expect(v.Has(blob("not there").Hash())).To(BeFalse())
	for i := 1; i < 2000; i++ {
		v.Put(blob(fmt.Sprintf("%0500d", i)))
	}
	g.Expect(v.Has(first.Hash())).To(BeFalse(), "evicted long since")
	g.Expect(contents(t, got)).To(Equal(fmt.Sprintf("%0500d", 0)), "the copy handed out outlives its segment")

	c.mu.Lock()
	held := slices.Clone(c.mem.segs)
	mapped := 0
	for _, seg := range held {
		if seg.mapped {
			mapped++
		}
	}
	g.Expect(firstSeg.buf).To(BeNil(), "the evicted segment was returned")
	c.mu.Unlock()
	g.Expect(len(held)).To(BeNumerically("<=", 64), "within the bound")
	if runtime.GOOS == "linux" || runtime.GOOS == "darwin" {
		g.Expect(mapped).To(Equal(len(held)), "every segment held is a mapping")
	}
	c.SetMax(1)
	c.mu.Lock()
	g.Expect(c.mem.segs).To(BeEmpty())
	for _, seg := range held {
		g.Expect(seg.buf).To(BeNil(), "a smaller bound returns what it evicts")
	}
	c.mu.Unlock()
}

// TestObjectCache_digestCollision: two keys whose digests are equal share
// one map slot, the later one's; the other is a miss, never the other's
// object, and its Put takes the slot back.
func TestObjectCache_digestCollision(t *testing.T) {
	g := NewWithT(t)
	c := NewObjectCache(64 << 10)
	one, two := blob("one"), blob("two")
	k1 := cacheKey{view: 1, hash: one.Hash()}
	k2 := cacheKey{view: 2, hash: two.Hash()}
	// The same first eight bytes, once the views are mixed in.
	mix := func(view uint64) uint64 { return view * 0x9e3779b97f4a7c15 }
	binary.LittleEndian.PutUint64(k2.hash[:8], binary.LittleEndian.Uint64(k1.hash[:8])^mix(1)^mix(2))
	g.Expect(k2.digest()).To(Equal(k1.digest()))
	get := func(k cacheKey) string {
		o, ok := c.get(k)
		if !ok {
			return "(miss)"
		}
		return contents(t, o)
	}
	c.put(k1, one)
	g.Expect(get(k1)).To(Equal("one"))
	g.Expect(get(k2)).To(Equal("(miss)"))
	c.put(k2, two)
	g.Expect(get(k2)).To(Equal("two"))
	g.Expect(get(k1)).To(Equal("(miss)"), "not the other key's object")
	g.Expect(c.has(k1)).To(BeFalse())
	c.put(k1, one)
	g.Expect(get(k1)).To(Equal("one"))
	g.Expect(get(k2)).To(Equal("(miss)"))
	g.Expect(c.Stats().Objects).To(Equal(1), "one slot")
	c.clear(2)
	g.Expect(get(k1)).To(Equal("one"), "clearing the other view leaves this one's")
	c.clear(1)
	g.Expect(get(k1)).To(Equal("(miss)"))
}

// TestRepository_sharedObjectCache: repositories sharing a cache far too
// small for their objects stay within it, and every draft they write is
// pushed whole and reads back, from memory or from disk.
func TestRepository_sharedObjectCache(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const bound = 4 << 10 // a few objects: most writes overflow it
	objects := NewObjectCache(bound)
	type written struct {
		repo *Repository
		rev  Revision
		name string
	}
	var all []written
	var dirs []string
	for r := 0; r < 2; r++ {
		url, remote := newRemote(t)
		dirs = append(dirs, remote)
		repo := open(t, Options{URL: url, CreateBranch: true, Objects: objects})
		for i := 0; i < maxSmallPacks+4; i++ {
			name := fmt.Sprintf("app-%d-%d", r, i)
			rev, err := repo.WriteDraft(ctx, DraftWrite{Package: name, Workspace: "ws", Contents: testPackage(name, 5)})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(objects.Size()).To(BeNumerically("<=", bound))
			all = append(all, written{repo, rev, name})
		}
	}
	g.Expect(objects.Size()).To(BeNumerically(">", 0), "the cache holds recent objects")
	for _, w := range all {
		got, err := w.repo.Read(ctx, w.rev)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Equal(testPackage(w.name, 5))).To(BeTrue(), "draft %s", w.name)
	}
	// The remotes have every object of every draft (fsck fails the test
	// otherwise).
	for i, dir := range dirs {
		last := all[(i+1)*(len(all)/2)-1]
		out := gitserver.Git(t, dir, "fsck", "--strict", "--no-dangling", last.rev.Commit)
		g.Expect(out).NotTo(ContainSubstring("error"))
	}
}

// TestObjectCache_model: a long random sequence of puts, gets and clears
// of objects of many sizes over three repositories, against what each
// repository put. Every object served has the contents put under its
// hash by that repository; the cache stays within its bound; an object
// used while less than half the bound was stored since is still held;
// and objects handed out stay whole after their segment is evicted.
func TestObjectCache_model(t *testing.T) {
	g := NewWithT(t)
	const bound = 32 << 10
	c := NewObjectCache(bound)
	views := []*objectCacheView{c.view(), c.view(), c.view()}
	objs := make([]plumbing.EncodedObject, 30)
	for i := range objs {
		objs[i] = blob(strings.Repeat(string(rune('a'+i%26)), 1+(i*37)%300) + fmt.Sprint(i))
	}
	lastUse := map[cacheKey]int64{}
	var stored int64 // bytes (contents and overhead) stored so far
	var served []plumbing.EncodedObject
	var want []string
	rnd := rand.New(rand.NewPCG(1, 2))
	for step := 0; step < 50000; step++ {
		v := views[rnd.IntN(len(views))]
		o := objs[rnd.IntN(len(objs))]
		k := cacheKey{view: v.id, hash: o.Hash()}
		switch op := rnd.IntN(100); {
		case op < 50:
			v.Put(o)
			stored += o.Size() + entryOverhead + recordHeader
			lastUse[k] = stored
		case op < 99:
			got, ok := v.Get(o.Hash())
			at, used := lastUse[k]
			if used && stored-at < bound/2 {
				g.Expect(ok).To(BeTrue(), "step %d: used %d bytes ago", step, stored-at)
			}
			if !used {
				g.Expect(ok).To(BeFalse(), "step %d: never put by this repository", step)
			}
			if ok {
				g.Expect(got.Hash()).To(Equal(o.Hash()))
				g.Expect(contents(t, got)).To(Equal(contents(t, o)), "step %d", step)
				stored += o.Size() + entryOverhead + recordHeader // a move to the newest segment, at most
				lastUse[k] = stored
				if step%100 == 0 {
					served, want = append(served, got), append(want, contents(t, o))
				}
			}
		default:
			v.Clear()
			for key := range lastUse {
				if key.view == v.id {
					delete(lastUse, key)
				}
			}
		}
		g.Expect(c.Size()).To(BeNumerically("<=", bound), "step %d", step)
	}
	g.Expect(len(c.mem.segs)).To(BeNumerically("<=", bound/minSegment+1))
	for i, o := range served {
		g.Expect(contents(t, o)).To(Equal(want[i]), "served object %d, long evicted", i)
	}
	st := c.Stats()
	g.Expect(st.Hits).To(BeNumerically(">", st.Misses), "a cache about the size of what is used")
}

// TestObjectCache_concurrent: repositories put and get while the bound
// moves (the manager resizes it as variants come and go); run with
// -race, every object served is whole and the bound holds at the end.
func TestObjectCache_concurrent(t *testing.T) {
	c := NewObjectCache(64 << 10)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		v := c.view()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				o := blob(fmt.Sprintf("%0300d", i%300))
				v.Put(o)
				if got, ok := v.Get(o.Hash()); ok && contents(t, got) != fmt.Sprintf("%0300d", i%300) {
					t.Errorf("object %d served with other contents", i)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			c.SetMax(int64(32<<10 + (i%4)*16<<10))
			_ = c.Stats()
		}
	}()
	wg.Wait()
	c.SetMax(32 << 10)
	if st := c.Stats(); st.Bytes > 32<<10 {
		t.Errorf("%d bytes held over a bound of %d", st.Bytes, 32<<10)
	}
}
