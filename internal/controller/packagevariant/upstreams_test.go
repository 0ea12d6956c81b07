package packagevariant

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// TestUpstreamPackages: every reader gets a package of its own (changing
// one changes no other, nor what the next reader gets), the same as git
// has, for each revision.
func TestUpstreamPackages(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bare := gitserver.InitBare(t, t.TempDir(), "catalog.git")
	st, err := store.Open(ctx, store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	write := func(ws, replicas string) store.Revision {
		rev, err := st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: ws, Contents: pkg.New(map[string][]byte{
			"Kptfile":     []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"),
			"deploy.yaml": []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: " + replicas + "\n"),
		})})
		g.Expect(err).NotTo(HaveOccurred())
		return rev
	}
	one, two := write("one", "1"), write("two", "2")

	var u upstreamPackages
	_, err = u.read(ctx, st, one)
	g.Expect(err).NotTo(HaveOccurred())
	a, err := u.read(ctx, st, one)
	g.Expect(err).NotTo(HaveOccurred())
	res, err := a.Resources()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(HaveLen(1))
	g.Expect(res[0].PipeE(yaml.Lookup("spec"), yaml.SetField("replicas", yaml.NewScalarRNode("5")))).To(Succeed())
	g.Expect(a.SetResources(res)).To(Succeed())
	g.Expect(a.SetFile("notes.md", []byte("mine"))).To(Succeed())

	b, err := u.read(ctx, st, one)
	g.Expect(err).NotTo(HaveOccurred())
	fromGit, err := st.Read(ctx, one)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.Equal(fromGit)).To(BeTrue(), "the next reader gets what git has")
	res, err = b.Resources()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res[0].MustString()).To(ContainSubstring("replicas: 1"))

	c, err := u.read(ctx, st, two)
	g.Expect(err).NotTo(HaveOccurred())
	data, _ := c.File("deploy.yaml")
	g.Expect(string(data)).To(ContainSubstring("replicas: 2"), "another revision is another package")

	_, err = u.read(ctx, st, store.Revision{Package: "app", Commit: "0123456789012345678901234567890123456789"})
	g.Expect(err).To(HaveOccurred())
}

// A large upstream package is not kept parsed (its memory is given back
// once its variants are done), and what is kept stays within the bound.
func TestUpstreamPackages_bytes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bare := gitserver.InitBare(t, t.TempDir(), "catalog.git")
	st, err := store.Open(ctx, store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	write := func(ws string, size int) store.Revision {
		rev, err := st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: ws, Contents: pkg.New(map[string][]byte{
			"Kptfile":  []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"),
			"big.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  x: " + strings.Repeat("z", size) + "\n"),
		})})
		g.Expect(err).NotTo(HaveOccurred())
		return rev
	}
	var u upstreamPackages
	large := write("large", maxUpstreamBytes/4+1)
	p, err := u.read(ctx, st, large)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Len()).To(Equal(2))
	g.Expect(u.cache.Len()).To(BeZero(), "a package over a quarter of the bound is not kept")
	for i := range 6 {
		_, err := u.read(ctx, st, write(fmt.Sprintf("mid-%d", i), maxUpstreamBytes/5))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(u.cache.Size()).To(BeNumerically("<=", maxUpstreamBytes))
	}
	g.Expect(u.cache.Len()).To(Equal(4), "five would be over the bound")
}
