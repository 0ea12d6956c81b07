package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/deps"
	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/testutil/registry"
)

// scion pkg push and pull against a real registry with TLS (a private CA,
// --ca-file) and htpasswd (credentials from the Docker config file), as a
// person at an air-gapped site would use them.
func TestPkgPushPull(t *testing.T) {
	g := NewWithT(t)
	reg := registry.Start(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, reg.Password))
	dir := t.TempDir()
	src := filepath.Join(dir, "app")
	writePkg(t, src, map[string]string{
		"Kptfile":         "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n",
		"deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n",
	})
	ref := "oci://" + reg.Host + "/platform/app:v1"
	out, err := run("pkg", "push", src, ref, "--ca-file", reg.CAFile)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`^pushed app to ` + ref + ` \(sha256:[0-9a-f]{64}\)\n$`))

	dst := filepath.Join(dir, "copy")
	out, err = run("pkg", "pull", ref, dst, "--ca-file", reg.CAFile)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`^pulled app from ` + ref + ` \(sha256:[0-9a-f]{64}\) into ` + dst + `\n$`))
	a, err := pkg.ReadDir(src)
	g.Expect(err).NotTo(HaveOccurred())
	b, err := pkg.ReadDir(dst)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.Files()).To(Equal(a.Files()))

	// Careless input: a folder with files, a reference without oci://,
	// the registry's CA not given.
	_, err = run("pkg", "pull", ref, src, "--ca-file", reg.CAFile)
	g.Expect(err).To(MatchError(src + " exists and is not empty: pull into a new folder"))
	_, err = run("pkg", "push", src, reg.Host+"/platform/app:v1")
	g.Expect(err).To(MatchError(ContainSubstring("is not an OCI reference: write oci://REGISTRY/REPOSITORY:TAG")))
	_, err = run("pkg", "pull", ref, filepath.Join(dir, "other"))
	g.Expect(err).To(MatchError(ContainSubstring("certificate signed by unknown authority")))
	_, err = os.Stat(filepath.Join(dir, "other"))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "nothing written")
}

// scion repo mirror copies a git repository's published revisions into a
// registry, and again copies nothing.
func TestRepoMirror(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := registry.Start(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, reg.Password))
	bare := gitserver.InitBare(t, t.TempDir(), "blueprints.git")
	st, err := store.Open(ctx, store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	p := pkg.New(map[string][]byte{"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n")})
	_, err = (&pkgservice.Service{}).PublishDirect(ctx, st, "app", "v1", p, "Blueprint app v1", "platform-team")
	g.Expect(err).NotTo(HaveOccurred())

	out, err := run("repo", "mirror", "file://"+bare, "oci://"+reg.Host+"/blueprints", "--ca-file", reg.CAFile)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`^app revision 1: copied oci://` + reg.Host + `/blueprints/app:v1 \(sha256:[0-9a-f]{64}\)\n1 published revisions, 1 copied; 0 floating tags, 0 moved\n$`))
	out, err = run("repo", "mirror", "file://"+bare, "oci://"+reg.Host+"/blueprints", "--ca-file", reg.CAFile)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(HaveSuffix("1 published revisions, 0 copied; 0 floating tags, 0 moved\n"))
	// And back, into another git repository.
	other := gitserver.InitBare(t, t.TempDir(), "site.git")
	out, err = run("repo", "mirror", "oci://"+reg.Host+"/blueprints", "file://"+other, "--ca-file", reg.CAFile)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(HaveSuffix("1 published revisions, 1 copied; 0 floating tags, 0 moved\n"))
	g.Expect(gitserver.Git(t, other, "tag", "--list")).To(ContainSubstring("app/v1"))
	_, err = run("repo", "mirror", "file://"+bare, reg.Host+"/blueprints")
	g.Expect(err).To(MatchError(ContainSubstring("is not an OCI prefix: write oci://REGISTRY/PREFIX")))
}

// scion deps resolve with a catalog in a registry: examples/deps/catalog
// pushed as PREFIX/P:vN with its semver tags resolves exactly as the folder
// does.
func TestDepsResolve_ociCatalog(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := registry.Start(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, reg.Password))
	o := oci.Options{Transport: reg.Transport}
	root := filepath.Join("..", "..", "examples", "deps", "catalog")
	pkgs, err := os.ReadDir(root)
	g.Expect(err).NotTo(HaveOccurred())
	for _, p := range pkgs {
		versions, err := os.ReadDir(filepath.Join(root, p.Name()))
		g.Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, v := range versions {
			names = append(names, v.Name())
		}
		slices.SortFunc(names, func(a, b string) int {
			va, _ := deps.ParseVersion(a)
			vb, _ := deps.ParseVersion(b)
			return va.Compare(vb)
		})
		for i, v := range names {
			files, err := pkg.ReadDir(filepath.Join(root, p.Name(), v))
			g.Expect(err).NotTo(HaveOccurred())
			r, err := oci.ParseReference(fmt.Sprintf("oci://%s/catalog/%s:v%d", reg.Host, p.Name(), i+1))
			g.Expect(err).NotTo(HaveOccurred())
			_, err = oci.Push(ctx, r, p.Name(), files, o)
			g.Expect(err).NotTo(HaveOccurred())
			if strings.Contains(v, ".") { // a semver tag on the revision, as a release would set
				tag := "v" + strings.TrimPrefix(v, "v")
				_, err = oci.Push(ctx, r.Context().Tag(tag), p.Name(), files, o)
				g.Expect(err).NotTo(HaveOccurred())
			}
		}
	}
	want, stderr, err := runStreams("deps", "resolve", "--catalog", root, "app")
	g.Expect(err).NotTo(HaveOccurred(), stderr)
	got, stderr, err := runStreams("deps", "resolve", "--catalog", "oci://"+reg.Host+"/catalog", "app", "--ca-file", reg.CAFile)
	g.Expect(err).NotTo(HaveOccurred(), stderr)
	g.Expect(got).To(Equal(want))
	g.Expect(got).To(ContainSubstring("app 2.1.0 (install): requested"))
}
