package store

import (
	"bytes"
	"math/rand"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// TestWritePackfile: git itself accepts the packs (index-pack --strict
// checks every object and the trailer) and reads back every object, of
// every type and of sizes around the header's size boundaries; the
// pooled compressors carry nothing from one pack to the next.
func TestWritePackfile(t *testing.T) {
	g := NewWithT(t)
	st := memory.NewStorage()
	put := func(o plumbing.EncodedObject) plumbing.Hash {
		h, err := st.SetEncodedObject(o)
		g.Expect(err).NotTo(HaveOccurred())
		return h
	}
	random := make([]byte, 300_000)
	rand.New(rand.NewSource(1)).Read(random)
	var hashes []plumbing.Hash
	var entries []object.TreeEntry
	for i, size := range []int{0, 1, 15, 16, 127, 2047, 2048, 300_000} {
		o := blob(string(random[:size]))
		h := put(o)
		hashes = append(hashes, h)
		entries = append(entries, object.TreeEntry{Name: "f" + strings.Repeat("x", i), Mode: filemode.Regular, Hash: h})
	}
	tree := &object.Tree{Entries: entries}
	to := st.NewEncodedObject()
	g.Expect(tree.Encode(to)).To(Succeed())
	treeHash := put(to)
	sig := object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000, 0).UTC()}
	commit := &object.Commit{Author: sig, Committer: sig, Message: "packed\n", TreeHash: treeHash}
	co := st.NewEncodedObject()
	g.Expect(commit.Encode(co)).To(Succeed())
	commitHash := put(co)
	tag := &object.Tag{Name: "v1", Tagger: sig, Message: "v1\n", TargetType: plumbing.CommitObject, Target: commitHash}
	tago := st.NewEncodedObject()
	g.Expect(tag.Encode(tago)).To(Succeed())
	hashes = append(hashes, treeHash, commitHash, put(tago))

	for _, pack := range [][]plumbing.Hash{hashes, hashes[:3]} {
		var buf bytes.Buffer
		g.Expect(writePackfile(&buf, st, pack)).To(Succeed())
		bare := gitserver.InitBare(t, t.TempDir(), "r.git")
		cmd := exec.Command("git", "index-pack", "--stdin", "--strict")
		cmd.Dir, cmd.Stdin = bare, &buf
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), string(out))
		for _, h := range pack {
			want, err := st.EncodedObject(plumbing.AnyObject, h)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(gitserver.Git(t, bare, "cat-file", "-t", h.String())).To(Equal(want.Type().String()))
			cmd := exec.Command("git", "cat-file", want.Type().String(), h.String())
			cmd.Dir = bare
			got, err := cmd.Output()
			g.Expect(err).NotTo(HaveOccurred(), "git cat-file %s %s", want.Type(), h)
			r, _ := want.Reader()
			var content bytes.Buffer
			_, _ = content.ReadFrom(r)
			g.Expect(got).To(Equal(content.Bytes()), "object %s", h)
		}
	}

	// An object the store lacks is an error naming it, not a short pack.
	missing := plumbing.NewHash(strings.Repeat("ab", 20))
	err := writePackfile(&bytes.Buffer{}, st, []plumbing.Hash{missing})
	g.Expect(err).To(MatchError(ContainSubstring(missing.String())))
}
