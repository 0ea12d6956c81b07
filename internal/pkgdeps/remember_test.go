package pkgdeps

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// A revision written in process is remembered with what it declares; the
// lock then reads the same declaration as from git, without reading git.
func TestReader_remember(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	root := t.TempDir()
	bare := gitserver.InitBare(t, root, "cluster.git")
	st, err := store.Open(ctx, store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: filepath.Join(root, "cache")})
	g.Expect(err).NotTo(HaveOccurred())
	p := pkg.New(map[string][]byte{
		"Kptfile":   []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\nupstreamLock:\n  type: git\n  git:\n    repo: file:///catalog.git\n    directory: app\n    ref: app/v1\n    commit: \"1111111111111111111111111111111111111111\"\n"),
		"crd.yaml":  []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  versions: [{name: v1, served: true, storage: true}]\n"),
		"deps.yaml": []byte("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageDependencies\nmetadata:\n  name: deps\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nspec:\n  requires:\n  - package: {name: lib, version: \">=1.2.0 <2.0.0\"}\n"),
	})
	written, err := st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Contents: p})
	g.Expect(err).NotTo(HaveOccurred())

	remembered := NewReader()
	remembered.Remember(st, written, p)
	fromGit := NewReader()
	want, err := fromGit.declaration(ctx, st, written)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(want.decl.Provides).To(Equal([]string{"example.com/v1/Widget"}))
	g.Expect(want.origin).To(Equal("1111111111111111111111111111111111111111"))
	got, err := remembered.declaration(ctx, st, written)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(want))

	// What is remembered is not read: a commit git does not have reads
	// as remembered, and fails to read otherwise.
	unknown := store.Revision{Package: "app", Workspace: "ws", Commit: strings.Repeat("f", 40)}
	_, err = fromGit.Declaration(ctx, st, unknown)
	g.Expect(err).To(HaveOccurred())
	remembered.Remember(st, unknown, p)
	d, err := remembered.Declaration(ctx, st, unknown)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Provides).To(Equal(want.decl.Provides))

	// A new commit of the revision replaces what was remembered of the
	// old one: it is read (its declaration changed), and the reader keeps
	// one entry for the draft.
	next := pkg.New(map[string][]byte{"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n")})
	rewritten, err := st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Contents: next, Expected: written.Commit})
	g.Expect(err).NotTo(HaveOccurred())
	d, err = remembered.Declaration(ctx, st, rewritten)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Provides).To(BeEmpty(), "the new commit's declaration, not the remembered one")
	g.Expect(remembered.decls).To(HaveLen(1))
}
