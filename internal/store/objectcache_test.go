package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
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

// TestObjectCache: one bound in bytes for every repository, least
// recently used out first, and each repository sees only its own entries.
func TestObjectCache(t *testing.T) {
	g := NewWithT(t)
	c := NewObjectCache(100)
	a, b := c.view(), c.view()

	o1, o2, o3 := blob(fmt.Sprintf("%040d", 1)), blob(fmt.Sprintf("%040d", 2)), blob(fmt.Sprintf("%040d", 3))
	a.Put(o1)
	b.Put(o2)
	g.Expect(c.Size()).To(Equal(int64(80)))
	_, ok := b.Get(o1.Hash())
	g.Expect(ok).To(BeFalse(), "an object is served only to the repository that has it")
	got, ok := a.Get(o1.Hash())
	g.Expect(ok).To(BeTrue())
	g.Expect(got.Hash()).To(Equal(o1.Hash()))

	// o1 was used last: adding o3 evicts o2.
	a.Put(o3)
	g.Expect(c.Size()).To(Equal(int64(80)))
	_, ok = b.Get(o2.Hash())
	g.Expect(ok).To(BeFalse(), "the least recently used object is evicted")
	_, ok = a.Get(o1.Hash())
	g.Expect(ok).To(BeTrue())

	// Putting an object again does not count it twice.
	a.Put(o3)
	g.Expect(c.Size()).To(Equal(int64(80)))

	// An object larger than the whole cache is not kept.
	a.Put(blob(string(make([]byte, 101))))
	g.Expect(c.Size()).To(Equal(int64(80)))

	st := c.Stats()
	g.Expect(st.Hits).To(Equal(uint64(2)))
	g.Expect(st.Misses).To(Equal(uint64(2)))

	b.Put(o2)
	a.Clear()
	g.Expect(c.Size()).To(Equal(int64(40)), "Clear drops the repository's objects only")
	_, ok = b.Get(o2.Hash())
	g.Expect(ok).To(BeTrue())
}

// TestObjectCache_SetMax: a smaller bound evicts the least recently used
// objects at once, a larger one keeps more from then on.
func TestObjectCache_SetMax(t *testing.T) {
	g := NewWithT(t)
	c := NewObjectCache(200)
	v := c.view()
	objs := []plumbing.EncodedObject{blob(fmt.Sprintf("%040d", 1)), blob(fmt.Sprintf("%040d", 2)), blob(fmt.Sprintf("%040d", 3)), blob(fmt.Sprintf("%040d", 4))}
	for _, o := range objs {
		v.Put(o)
	}
	_, _ = v.Get(objs[0].Hash()) // most recently used: 0, 3, 2, 1
	c.SetMax(80)
	st := c.Stats()
	g.Expect(st.Max).To(Equal(int64(80)))
	g.Expect(st.Bytes).To(Equal(int64(80)))
	for i, want := range []bool{true, false, false, true} {
		_, ok := v.Get(objs[i].Hash())
		g.Expect(ok).To(Equal(want), "object %d", i)
	}
	c.SetMax(160)
	for _, o := range objs {
		v.Put(o)
	}
	g.Expect(c.Stats().Bytes).To(Equal(int64(160)), "a larger bound holds more")
	c.SetMax(0)
	g.Expect(c.Stats().Max).To(Equal(int64(DefaultObjectCacheSize)))
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
// over three repositories, against a plain list kept in order of use.
// The cache must hold exactly the objects the list does, in the same
// order of eviction, through slot reuse and clears.
func TestObjectCache_model(t *testing.T) {
	g := NewWithT(t)
	const bound = 1000
	c := NewObjectCache(bound)
	views := []*objectCacheView{c.view(), c.view(), c.view()}
	objs := make([]plumbing.EncodedObject, 40)
	for i := range objs {
		objs[i] = blob(strings.Repeat(string(rune('a'+i%26)), 20+i*7))
	}
	// model is most recently used first.
	var model []cacheKey
	sizes := map[cacheKey]int64{}
	index := func(k cacheKey) int {
		for i, m := range model {
			if m == k {
				return i
			}
		}
		return -1
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for step := 0; step < 20000; step++ {
		v := views[rnd.IntN(len(views))]
		o := objs[rnd.IntN(len(objs))]
		k := cacheKey{view: v.id, hash: o.Hash()}
		switch op := rnd.IntN(100); {
		case op < 50:
			v.Put(o)
			if i := index(k); i >= 0 {
				model = append(model[:i], model[i+1:]...)
			} else {
				sizes[k] = o.Size()
			}
			model = append([]cacheKey{k}, model...)
			var total int64
			for i, m := range model {
				if total+sizes[m] > bound {
					model = model[:i]
					break
				}
				total += sizes[m]
			}
		case op < 99:
			got, ok := v.Get(o.Hash())
			i := index(k)
			g.Expect(ok).To(Equal(i >= 0), "step %d: lookup of %v", step, k)
			if ok {
				g.Expect(got).To(BeIdenticalTo(o))
				model = append([]cacheKey{k}, append(model[:i:i], model[i+1:]...)...)
			}
		default:
			v.Clear()
			kept := model[:0:0]
			for _, m := range model {
				if m.view != v.id {
					kept = append(kept, m)
				}
			}
			model = kept
		}
		var total int64
		for _, m := range model {
			total += sizes[m]
		}
		st := c.Stats()
		g.Expect(st.Bytes).To(Equal(total), "step %d", step)
		g.Expect(st.Objects).To(Equal(len(model)), "step %d", step)
	}
	// Slots are reused: the cache never held more than fit in its bound
	// at once, however many were put.
	g.Expect(len(c.slots)).To(BeNumerically("<=", bound/20))
}
