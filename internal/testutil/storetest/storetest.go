// Package storetest is the behaviour every store.Store keeps, run against
// each implementation (git in internal/store, OCI in internal/oci): the
// lifecycle, its compare-and-swap, floating tags, and what a second
// process sees.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
)

// Open opens a new handle on one empty store: the test calls it twice to
// play two processes sharing the remote.
type Open func(t *testing.T) store.Store

// Package is a small package named name whose files depend on version.
func Package(name string, version int) *pkg.Package {
	return pkg.New(map[string][]byte{
		"Kptfile":   []byte(fmt.Sprintf("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: %s\ninfo:\n  description: version %d\n", name, version)),
		"cm.yaml":   []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  version: \"%d\"\n", name, version)),
		"sub/a.txt": []byte("nested\n"),
	})
}

// Run runs the conformance tests; newStore returns an opener of a fresh
// empty store for each test.
func Run(t *testing.T, newStore func(t *testing.T) Open) {
	t.Run("lifecycle", func(t *testing.T) { lifecycle(t, newStore(t)) })
	t.Run("compareAndSwap", func(t *testing.T) { compareAndSwap(t, newStore(t)) })
	t.Run("deletion", func(t *testing.T) { deletion(t, newStore(t)) })
	t.Run("floatingTags", func(t *testing.T) { floatingTags(t, newStore(t)) })
}

// lifecycle: a draft written, updated, proposed, rejected, proposed and
// published twice; numbers, contents, trailers and what a second handle
// reads after a fetch.
func lifecycle(t *testing.T, open Open) {
	g := NewWithT(t)
	ctx := context.Background()
	st := open(t)
	v0 := st.RefsVersion()

	d, err := st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws1", Contents: Package("app", 1), Message: "first",
		Writer: store.WriterPerson, Trailers: store.Trailers{store.TrailerObjectUID: "uid-1"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Lifecycle).To(Equal(porchv1alpha1.LifecycleDraft))
	g.Expect(d.Commit).NotTo(BeEmpty())
	g.Expect(st.RefsVersion()).NotTo(Equal(v0), "a write changes what the store read")

	got, err := st.Get(ctx, "app", "ws1", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Commit).To(Equal(d.Commit))
	g.Expect(got.Trailers).To(HaveKeyWithValue(store.TrailerObjectUID, "uid-1"))
	g.Expect(got.Trailers).To(HaveKeyWithValue(store.TrailerWriter, store.WriterPerson))

	// An update keeps the trailers it does not set; the writer is the
	// update's own.
	d2, err := st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws1", Expected: d.Commit, Contents: Package("app", 2), Message: "second", Writer: store.WriterPackageRevision})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d2.Commit).NotTo(Equal(d.Commit))
	g.Expect(d2.Trailers).To(HaveKeyWithValue(store.TrailerObjectUID, "uid-1"))
	g.Expect(d2.Trailers).To(HaveKeyWithValue(store.TrailerWriter, store.WriterPackageRevision))
	files, err := st.Read(ctx, d2)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files.Equal(Package("app", 2))).To(BeTrue(), "the files written are read back whole")
	kf, err := st.ReadFile(ctx, d2, "Kptfile")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(kf)).To(ContainSubstring("version 2"))
	_, err = st.ReadFile(ctx, d2, "missing.yaml")
	g.Expect(errors.Is(err, store.ErrNotFound)).To(BeTrue(), "%v", err)
	history, err := st.DraftHistory(ctx, d2)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(history).NotTo(BeEmpty())
	g.Expect(history[0].Subject).To(Equal("second"))

	// A proposal records who proposed and when; a rejected draft does
	// not show it, and its next write drops it.
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	p, err := st.Propose(ctx, "app", "ws1", d2.Commit, store.Proposal{By: "carol", At: at})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Lifecycle).To(Equal(porchv1alpha1.LifecycleProposed))
	g.Expect(p.Proposed()).To(Equal(store.Proposal{By: "carol", At: at}))
	got, err = st.Get(ctx, "app", "ws1", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Proposed()).To(Equal(store.Proposal{By: "carol", At: at}), "read back")
	g.Expect(got.Trailers).To(HaveKeyWithValue(store.TrailerObjectUID, "uid-1"), "the draft's trailers stay")
	back, err := st.RejectProposal(ctx, "app", "ws1", p.Commit)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back.Lifecycle).To(Equal(porchv1alpha1.LifecycleDraft))
	g.Expect(back.Proposed()).To(BeZero())
	back, err = st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws1", Expected: back.Commit, Contents: Package("app", 2), Message: "again", Writer: store.WriterPerson})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back.Trailers).NotTo(HaveKey(store.TrailerProposedBy))
	p, err = st.Propose(ctx, "app", "ws1", back.Commit, store.Proposal{By: "dave", At: at.Add(time.Hour)})
	g.Expect(err).NotTo(HaveOccurred())
	same, err := st.SamePackage(ctx, "app", d2.Commit, p.Commit)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same).To(BeTrue(), "moving through the lifecycle keeps the files")

	pub, err := st.Publish(ctx, "app", "ws1", p.Commit, "alice", store.WriterPackageRevision)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pub.Revision).To(Equal(1))
	g.Expect(pub.Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished))
	g.Expect(pub.PublishedBy).To(Equal("alice"))
	g.Expect(pub.Trailers).To(HaveKeyWithValue(store.TrailerApprovedBy, "alice"))
	g.Expect(pub.Proposed()).To(Equal(store.Proposal{By: "dave", At: at.Add(time.Hour)}), "publication keeps the proposal's record")
	got, err = st.Get(ctx, "app", "", 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Proposed().By).To(Equal("dave"))
	g.Expect(got.Trailers).To(HaveKeyWithValue(store.TrailerApprovedBy, "alice"))
	g.Expect(pub.PublishedAt.IsZero()).To(BeFalse())
	g.Expect(st.RefName(pub)).NotTo(BeEmpty())

	_, err = st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws2", Contents: Package("app", 3), Message: "third"})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = st.Propose(ctx, "app", "ws2", "", store.Proposal{})
	g.Expect(err).NotTo(HaveOccurred(), "\"\" accepts the current draft")
	// "" accepts what is proposed.
	pub2, err := st.Publish(ctx, "app", "ws2", "", "bob", store.WriterPackageRevision)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pub2.Revision).To(Equal(2))

	// Another package beside it.
	_, err = st.WriteDraft(ctx, store.DraftWrite{Package: "team/db", Workspace: "main", Contents: Package("db", 1), Message: "db"})
	g.Expect(err).NotTo(HaveOccurred())

	// A second handle (another process) sees it all after a fetch.
	other := open(t)
	g.Expect(other.Fetch(ctx)).To(Succeed())
	revs, err := other.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	type row struct {
		Package, Workspace string
		Revision           int
		Lifecycle          porchv1alpha1.Lifecycle
		Latest             bool
	}
	var rows []row
	for _, r := range revs {
		rows = append(rows, row{r.Package, r.Workspace, r.Revision, r.Lifecycle, r.Latest})
	}
	g.Expect(rows).To(ConsistOf(
		row{"app", "ws1", 1, porchv1alpha1.LifecyclePublished, false},
		row{"app", "ws2", 2, porchv1alpha1.LifecyclePublished, true},
		row{"team/db", "main", 0, porchv1alpha1.LifecycleDraft, false},
	))
	one, err := other.Get(ctx, "app", "", 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(one.PublishedBy).To(Equal("alice"))
	files, err = other.Read(ctx, one)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files.Equal(Package("app", 2))).To(BeTrue())
	_, err = other.Get(ctx, "app", "", 9)
	g.Expect(errors.Is(err, store.ErrNotFound)).To(BeTrue(), "%v", err)
	g.Expect(other.Head()).NotTo(BeEmpty())
}

// compareAndSwap: writes against a stale expected value, a taken
// workspace and a draft moved by another handle are conflicts, and
// nothing is written by them.
func compareAndSwap(t *testing.T, open Open) {
	g := NewWithT(t)
	ctx := context.Background()
	a, b := open(t), open(t)
	d, err := a.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Contents: Package("app", 1), Message: "a"})
	g.Expect(err).NotTo(HaveOccurred())

	// The workspace is taken, even for a handle that has not read it.
	_, err = b.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Contents: Package("app", 9), Message: "b"})
	g.Expect(errors.Is(err, store.ErrConflict)).To(BeTrue(), "%v", err)

	g.Expect(b.Fetch(ctx)).To(Succeed())
	bd, err := b.Get(ctx, "app", "ws", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bd.Commit).To(Equal(d.Commit))
	d2, err := b.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Expected: bd.Commit, Contents: Package("app", 2), Message: "b"})
	g.Expect(err).NotTo(HaveOccurred())

	// a still holds the first value: its update, proposal and publish
	// all lose.
	_, err = a.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Expected: d.Commit, Contents: Package("app", 3), Message: "a again"})
	g.Expect(errors.Is(err, store.ErrConflict)).To(BeTrue(), "%v", err)
	_, err = a.Propose(ctx, "app", "ws", d.Commit, store.Proposal{})
	g.Expect(errors.Is(err, store.ErrConflict)).To(BeTrue(), "%v", err)

	g.Expect(a.Fetch(ctx)).To(Succeed())
	cur, err := a.Get(ctx, "app", "ws", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cur.Commit).To(Equal(d2.Commit), "the losing writes left nothing behind")
	files, err := a.Read(ctx, cur)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files.Equal(Package("app", 2))).To(BeTrue())

	p, err := a.Propose(ctx, "app", "ws", cur.Commit, store.Proposal{})
	g.Expect(err).NotTo(HaveOccurred())
	// b read a draft, not this proposal: its publish is refused (a
	// conflict, or not found where the store goes by what it read).
	_, err = b.Publish(ctx, "app", "ws", d2.Commit, "b", store.WriterPerson)
	g.Expect(errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound)).To(BeTrue(), "publishing the draft's value after it was proposed: %v", err)
	pub, err := a.Publish(ctx, "app", "ws", p.Commit, "a", store.WriterPerson)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pub.Revision).To(Equal(1))
	// A published workspace is not free again.
	_, err = b.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Contents: Package("app", 4), Message: "again"})
	g.Expect(errors.Is(err, store.ErrConflict)).To(BeTrue(), "%v", err)
}

// deletion: proposing, rejecting and carrying out the deletion of a
// published revision, and deleting drafts and proposals.
func deletion(t *testing.T, open Open) {
	g := NewWithT(t)
	ctx := context.Background()
	st := open(t)
	var published store.Revision
	for i, ws := range []string{"one", "two"} {
		d, err := st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: ws, Contents: Package("app", i+1), Message: ws})
		g.Expect(err).NotTo(HaveOccurred())
		p, err := st.Propose(ctx, "app", ws, d.Commit, store.Proposal{})
		g.Expect(err).NotTo(HaveOccurred())
		published, err = st.Publish(ctx, "app", ws, p.Commit, "alice", store.WriterRelease)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(published.Revision).To(Equal(2))

	dp, err := st.ProposeDeletion(ctx, "app", 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dp.Lifecycle).To(Equal(porchv1alpha1.LifecycleDeletionProposed))
	got, err := st.Get(ctx, "app", "", 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Lifecycle).To(Equal(porchv1alpha1.LifecycleDeletionProposed))
	back, err := st.RejectDeletion(ctx, "app", 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back.Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished))
	_, err = st.ProposeDeletion(ctx, "app", 7)
	g.Expect(errors.Is(err, store.ErrNotFound)).To(BeTrue(), "%v", err)

	_, err = st.ProposeDeletion(ctx, "app", 1)
	g.Expect(err).NotTo(HaveOccurred())
	got, err = st.Get(ctx, "app", "", 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Delete(ctx, got, store.WriterPackageRevision)).To(Succeed())

	d, err := st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "three", Contents: Package("app", 3), Message: "three"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Delete(ctx, d, store.WriterPackageRevision)).To(Succeed())

	other := open(t)
	g.Expect(other.Fetch(ctx)).To(Succeed())
	revs, err := other.ListPackage(ctx, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revs).To(HaveLen(1))
	g.Expect(revs[0].Revision).To(Equal(2))
	g.Expect(revs[0].Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished))
	g.Expect(revs[0].Latest).To(BeTrue())
	_, err = other.Get(ctx, "app", "three", 0)
	g.Expect(errors.Is(err, store.ErrNotFound)).To(BeTrue(), "%v", err)
}

// floatingTags: a tag set, read, moved, resolved, seen by another handle;
// a tag on a revision that does not exist, or of a revision's form, is
// refused.
func floatingTags(t *testing.T, open Open) {
	g := NewWithT(t)
	ctx := context.Background()
	st := open(t)
	for i, ws := range []string{"one", "two"} {
		d, err := st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: ws, Contents: Package("app", i+1), Message: ws})
		g.Expect(err).NotTo(HaveOccurred())
		p, err := st.Propose(ctx, "app", ws, d.Commit, store.Proposal{})
		g.Expect(err).NotTo(HaveOccurred())
		_, err = st.Publish(ctx, "app", ws, p.Commit, "alice", store.WriterRelease)
		g.Expect(err).NotTo(HaveOccurred())
	}
	from, err := st.SetFloatingTag(ctx, "app", "stable", 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(from).To(Equal(0))
	_, err = st.SetFloatingTag(ctx, "app", "1.0.0", 1)
	g.Expect(err).NotTo(HaveOccurred())
	tags, err := st.FloatingTags(ctx, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags).To(Equal(map[string]int{"stable": 1, "1.0.0": 1}))
	from, err = st.SetFloatingTag(ctx, "app", "stable", 2)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(from).To(Equal(1))
	rev, err := st.ResolveFloatingTag(ctx, "app", "stable")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rev.Revision).To(Equal(2))
	_, err = st.ResolveFloatingTag(ctx, "app", "canary")
	g.Expect(errors.Is(err, store.ErrNotFound)).To(BeTrue(), "%v", err)
	_, err = st.SetFloatingTag(ctx, "app", "stable", 5)
	g.Expect(errors.Is(err, store.ErrNotFound)).To(BeTrue(), "%v", err)
	_, err = st.SetFloatingTag(ctx, "app", "v3", 1)
	g.Expect(err).To(HaveOccurred())

	other := open(t)
	g.Expect(other.Fetch(ctx)).To(Succeed())
	tags, err = other.FloatingTags(ctx, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags).To(Equal(map[string]int{"stable": 2, "1.0.0": 1}))
	revs, err := other.ListPackage(ctx, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revs).To(HaveLen(2), "floating tags are not revisions")
}
