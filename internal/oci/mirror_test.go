package oci_test

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/testutil/registry"
)

// publishRev publishes a revision of a one-file package with the store,
// as a blueprint author would.
func publishRev(t *testing.T, st *store.Repository, name, ws, data string) {
	t.Helper()
	ctx := context.Background()
	p := pkg.New(map[string][]byte{
		"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\n"),
		"cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  v: " + data + "\n"),
	})
	d, err := st.WriteDraft(ctx, store.DraftWrite{Package: name, Workspace: ws, Contents: p})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Propose(ctx, name, ws, d.Commit, store.Proposal{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, name, ws, "", "author", ""); err != nil {
		t.Fatal(err)
	}
}

// A git repository's published revisions copied into a registry for an
// air-gapped site: each at PREFIX/PACKAGE:vN with its content; again,
// nothing is pushed; a new revision alone is; a tag moved behind Scion's
// back is left alone and reported, the rest still copied; drafts are not
// copied.
func TestMirrorGit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := registry.Start(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, reg.Password))
	o := oci.Options{Transport: reg.Transport}
	bare := gitserver.InitBare(t, t.TempDir(), "blueprints.git")
	st, err := store.Open(ctx, store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	publishRev(t, st, "app", "v1", "one")
	publishRev(t, st, "app", "v2", "two")
	publishRev(t, st, "platform/net", "v1", "net")
	_, err = st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "wip", Contents: testPackage()})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = st.SetFloatingTag(ctx, "app", "stable", 2)
	g.Expect(err).NotTo(HaveOccurred())

	prefix := reg.Host + "/mirror"
	got, err := oci.MirrorGit(ctx, st, prefix, o)
	g.Expect(err).NotTo(HaveOccurred())
	type row struct {
		Ref    string
		Copied bool
	}
	rows := func(ms []oci.Mirrored) []row {
		var out []row
		for _, m := range ms {
			out = append(out, row{m.Ref, m.Copied})
		}
		return out
	}
	g.Expect(rows(got)).To(ConsistOf(row{"oci://" + prefix + "/app:v1", true}, row{"oci://" + prefix + "/app:v2", true}, row{"oci://" + prefix + "/platform/net:v1", true},
		row{"oci://" + prefix + "/app:stable", true}))
	// The floating tag names the same artifact as the revision it is on.
	_, _, stable, err := oci.Pull(ctx, ref(t, "oci://"+prefix+"/app:stable"), o)
	g.Expect(err).NotTo(HaveOccurred())
	p, name, digest, err := oci.Pull(ctx, ref(t, "oci://"+prefix+"/app:v2"), o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(name).To(Equal("app"))
	g.Expect(string(p.Files()["cm.yaml"])).To(ContainSubstring("v: two"))
	g.Expect(stable).To(Equal(digest))
	for _, m := range got {
		if m.Ref == "oci://"+prefix+"/app:v2" {
			g.Expect(m.Digest).To(Equal(digest))
		}
	}

	again, err := oci.MirrorGit(ctx, st, prefix, o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rows(again)).To(HaveEach(HaveField("Copied", false)), "idempotent")

	publishRev(t, st, "app", "v3", "three")
	_, err = st.SetFloatingTag(ctx, "app", "stable", 3)
	g.Expect(err).NotTo(HaveOccurred())
	// Someone pushes other content at app:v1.
	_, err = oci.Push(ctx, ref(t, "oci://"+prefix+"/app:v1"), "app", testPackage(), o)
	g.Expect(err).NotTo(HaveOccurred())
	third, err := oci.MirrorGit(ctx, st, prefix, o)
	g.Expect(errors.Is(err, oci.ErrTagTaken)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring("app revision 1: the tag holds other content: oci://" + prefix + "/app:v1 is sha256:")))
	g.Expect(rows(third)).To(ConsistOf(row{"oci://" + prefix + "/app:v2", false}, row{"oci://" + prefix + "/app:v3", true}, row{"oci://" + prefix + "/platform/net:v1", false},
		row{"oci://" + prefix + "/app:stable", true}))

	// A package whose name a registry cannot hold is reported, by name.
	publishRev(t, st, "Legacy", "v1", "old")
	_, err = oci.MirrorGit(ctx, st, prefix, o)
	g.Expect(err).To(MatchError(ContainSubstring("Legacy revision 1: " + prefix + "/Legacy:v1 cannot be an OCI reference (repository paths are lower case")))
}

// The way back, for a site whose git is fed from its registry: every vN
// tag under the prefix becomes revision N in git, with the same files;
// again, nothing is copied; a tag that would skip a number is reported
// and its package stops there.
func TestMirrorToGit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := registry.Start(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, reg.Password))
	o := oci.Options{Transport: reg.Transport}
	src, err := store.Open(ctx, store.Options{URL: "file://" + gitserver.InitBare(t, t.TempDir(), "src.git"), CreateBranch: true, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	publishRev(t, src, "app", "v1", "one")
	publishRev(t, src, "app", "v2", "two")
	publishRev(t, src, "platform/net", "v1", "net")
	_, err = src.SetFloatingTag(ctx, "app", "stable", 1)
	g.Expect(err).NotTo(HaveOccurred())
	prefix := reg.Host + "/site"
	_, err = oci.MirrorGit(ctx, src, prefix, o)
	g.Expect(err).NotTo(HaveOccurred())

	dstBare := gitserver.InitBare(t, t.TempDir(), "dst.git")
	dst, err := store.Open(ctx, store.Options{URL: "file://" + dstBare, CreateBranch: true, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	got, err := oci.MirrorToGit(ctx, prefix, dst, &pkgservice.Service{}, o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(HaveLen(4), "three revisions and the tag")
	g.Expect(got).To(HaveEach(HaveField("Copied", true)))
	tags, err := dst.FloatingTags(ctx, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags).To(Equal(map[string]int{"stable": 1}))
	for _, r := range []struct {
		pkg string
		n   int
	}{{"app", 1}, {"app", 2}, {"platform/net", 1}} {
		want, err := src.Get(ctx, r.pkg, "", r.n)
		g.Expect(err).NotTo(HaveOccurred())
		have, err := dst.Get(ctx, r.pkg, "", r.n)
		g.Expect(err).NotTo(HaveOccurred(), "%s revision %d in git", r.pkg, r.n)
		a, err := src.Read(ctx, want)
		g.Expect(err).NotTo(HaveOccurred())
		b, err := dst.Read(ctx, have)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(b.Files()).To(Equal(a.Files()))
	}
	again, err := oci.MirrorToGit(ctx, prefix, dst, &pkgservice.Service{}, o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(HaveEach(HaveField("Copied", false)), "idempotent")

	// v5 of app while git has 2: refused for app, nothing published.
	_, err = oci.Push(ctx, ref(t, "oci://"+prefix+"/app:v5"), "app", testPackage(), o)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = oci.MirrorToGit(ctx, prefix, dst, &pkgservice.Service{}, o)
	g.Expect(err).To(MatchError(ContainSubstring("app revision 5: git's latest revision of app is 2, so oci://" + prefix + "/app:v5 would not be revision 5 there")))
	_, err = dst.Get(ctx, "app", "", 3)
	g.Expect(err).To(HaveOccurred(), "nothing published")
}
