package store

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/scion-dev/scion/internal/testutil/cpustat"
)

// BenchmarkWriteDraft measures draft updates of a 20-resource package, one
// commit and one compare-and-swap push each.
func BenchmarkWriteDraft(b *testing.B) {
	ctx := context.Background()
	url, _ := newRemote(b)
	r := open(b, Options{URL: url, CreateBranch: true})
	rev, err := r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Contents: testPackage("app", 20)})
	if err != nil {
		b.Fatal(err)
	}
	p := testPackage("app", 20)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Change one resource per commit, as a controller edit would.
		if err := p.SetFile("cm-00.yaml", []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-0\ndata:\n  n: %q\n", fmt.Sprint(i)))); err != nil {
			b.Fatal(err)
		}
		rev, err = r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Expected: rev.Commit, Contents: p})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}

// BenchmarkNewDraft measures new drafts of a 20-resource package whose
// resources are all new (as a variant's are: its namespace is in each),
// one commit and one push each, with the processor time of this process
// and of the git server's processes per draft.
func BenchmarkNewDraft(b *testing.B) {
	ctx := context.Background()
	url, _ := newRemote(b)
	r := open(b, Options{URL: url, CreateBranch: true})
	before := cpustat.Read()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := testPackage("app", 0)
		for n := 0; n < 20; n++ {
			if err := p.SetFile(fmt.Sprintf("cm-%02d.yaml", n), []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: tenant-%d\n", n, i))); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := r.WriteDraft(ctx, DraftWrite{Package: fmt.Sprintf("tenant-%d", i), Workspace: "ws", Contents: p, CheckRemote: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	used := cpustat.Read().Sub(before)
	b.ReportMetric(float64(used.Self.Milliseconds())/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(used.Children.Milliseconds())/float64(b.N), "git-server-cpu-ms/op")
}

// seedRevisions pushes packages*(published+1) revisions into the remote
// behind r in a single push: per package, `published` tagged revisions and
// one draft.
func seedRevisions(b *testing.B, r *Repository, packages, published int) {
	b.Helper()
	ctx := context.Background()
	r.mu.Lock()
	defer r.mu.Unlock()
	head := r.ref(r.branchRef())
	var updates []refUpdate
	for i := 0; i < packages; i++ {
		name := fmt.Sprintf("pkg-%04d", i)
		sub, err := r.writePackageTree(testPackage(name, 3))
		if err != nil {
			b.Fatal(err)
		}
		tree, err := r.replaceSubtree(plumbing.ZeroHash, name, sub)
		if err != nil {
			b.Fatal(err)
		}
		for n := 1; n <= published; n++ {
			msg, _ := formatMessage("Publish", Trailers{TrailerPackage: name, TrailerWorkspace: fmt.Sprintf("ws%d", n), TrailerRevision: fmt.Sprint(n)})
			c, err := r.writeCommit(tree, []plumbing.Hash{head}, msg, r.signature(""))
			if err != nil {
				b.Fatal(err)
			}
			tag, err := r.writeTag(fmt.Sprintf("%s/v%d", name, n), c, r.signature("publisher"), "published\n")
			if err != nil {
				b.Fatal(err)
			}
			updates = append(updates, refUpdate{Name: revisionTagRef(name, n), New: tag})
		}
		msg, _ := formatMessage("Draft", Trailers{TrailerPackage: name, TrailerWorkspace: "draft"})
		c, err := r.writeCommit(tree, []plumbing.Hash{head}, msg, r.signature(""))
		if err != nil {
			b.Fatal(err)
		}
		updates = append(updates, refUpdate{Name: draftRef(name, "draft"), New: c})
	}
	if err := r.push(ctx, updates); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkList1000 lists a repository of 1,000 package revisions (250
// packages with 3 published revisions and a draft each) from a warm cache.
func BenchmarkList1000(b *testing.B) {
	ctx := context.Background()
	url, _ := newRemote(b)
	r := open(b, Options{URL: url, CreateBranch: true})
	seedRevisions(b, r, 250, 3)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		revs, err := r.List(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(revs) != 1000 {
			b.Fatalf("listed %d revisions, want 1000", len(revs))
		}
	}
}

// BenchmarkOpenList1000 opens a fresh cache of the same repository (a full
// fetch) and lists it: the cost of a controller's first sync.
func BenchmarkOpenList1000(b *testing.B) {
	ctx := context.Background()
	url, _ := newRemote(b)
	seedRevisions(b, open(b, Options{URL: url, CreateBranch: true}), 250, 3)
	dir := b.TempDir()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := Open(ctx, Options{URL: url, CacheDir: filepath.Join(dir, fmt.Sprint(i))})
		if err != nil {
			b.Fatal(err)
		}
		revs, err := r.List(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(revs) != 1000 {
			b.Fatalf("listed %d revisions, want 1000", len(revs))
		}
	}
}

// BenchmarkGet1000 looks up one revision in a repository of 1,000.
func BenchmarkGet1000(b *testing.B) {
	ctx := context.Background()
	url, _ := newRemote(b)
	r := open(b, Options{URL: url, CreateBranch: true})
	seedRevisions(b, r, 250, 3)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Get(ctx, "pkg-0123", "draft", 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkObjectCacheBookkeeping fills a cache with many small objects
// (the trees and small blobs of drafts) and reports what the Go heap holds
// for each beside its contents, which are outside it.
func BenchmarkObjectCacheBookkeeping(b *testing.B) {
	const objects = 200_000
	blobs := make([]plumbing.EncodedObject, objects)
	for i := range blobs {
		o := &plumbing.MemoryObject{}
		o.SetType(plumbing.BlobObject)
		_, _ = fmt.Fprintf(o, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n", i)
		blobs[i] = o
	}
	b.ReportAllocs()
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c := NewObjectCache(1 << 30)
		v := c.view()
		for _, o := range blobs {
			v.Put(o)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if n := c.Stats().Objects; n != objects {
			b.Fatalf("%d objects held, want %d", n, objects)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/objects, "heap-B/object")
		runtime.KeepAlive(c)
	}
}
