package repocache

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

func repository(url string) *configv1alpha1.Repository {
	return &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "r"},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: url, CreateBranch: true}}}
}

// file:// URLs are a trust boundary: off unless allowed, and never into
// the controller's own state, where other tenants' mirrors live.
func TestCache_fileURLs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bare := gitserver.InitBare(t, t.TempDir(), "pkgs.git")

	off := &Cache{Dir: t.TempDir()}
	_, err := off.Open(ctx, repository("file://"+bare))
	g.Expect(errors.Is(err, ErrURLNotAllowed)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("file:// repositories are turned off in this controller (--allow-file-repositories is for development)"))

	on := &Cache{Dir: t.TempDir(), AllowFileRepositories: true}
	_, err = on.Open(ctx, repository("file://"+bare))
	g.Expect(err).NotTo(HaveOccurred())

	// Another tenant's mirror, by its path or through a link to it.
	mirrors, err := filepath.Glob(filepath.Join(on.Dir, "[0-9a-f]*"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mirrors).To(HaveLen(1))
	_, err = on.Open(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: "steal"},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file://" + mirrors[0]}}})
	g.Expect(errors.Is(err, ErrURLNotAllowed)).To(BeTrue(), "%v", err)
	link := filepath.Join(t.TempDir(), "innocent.git")
	g.Expect(os.Symlink(mirrors[0], link)).To(Succeed())
	_, err = on.Open(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: "steal"},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file://" + link}}})
	g.Expect(errors.Is(err, ErrURLNotAllowed)).To(BeTrue(), "through a symbolic link: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("is inside the controller's own state"))
}

// Mirror folders are named by a keyed hash: nothing a tenant can read
// (namespace, name, URL) tells where another's mirror is, and the key
// outlives a restart, so mirrors are reused.
func TestCache_mirrorDirNotDerivable(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	r := repository("https://git.example.com/pkgs.git")
	a := &Cache{Dir: dir}
	got, err := a.mirrorDir(r)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(filepath.Dir(got)).To(Equal(dir))
	g.Expect(filepath.Base(got)).To(MatchRegexp(`^[0-9a-f]{32}$`))
	info, err := os.Stat(filepath.Join(dir, keyFile))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)), "only the controller reads the key")

	restarted := &Cache{Dir: dir}
	g.Expect(restarted.mirrorDir(r)).To(Equal(got), "the key is kept: the mirror is reused")
	elsewhere := &Cache{Dir: t.TempDir()}
	other, err := elsewhere.mirrorDir(r)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(filepath.Base(other)).NotTo(Equal(filepath.Base(got)), "another key, another name")
	renamed := r.DeepCopy()
	renamed.Name = "other"
	g.Expect(a.mirrorDir(renamed)).NotTo(Equal(got))

	g.Expect(os.WriteFile(filepath.Join(dir, keyFile), []byte("short"), 0o600)).To(Succeed())
	_, err = (&Cache{Dir: dir}).mirrorDir(r)
	g.Expect(err).To(MatchError(ContainSubstring("is damaged: remove it")))
}

// A Repository whose remote hangs holds only the worker opening it: the
// others that need it get ErrBusy after OpenWait and can come back later,
// instead of queueing behind the open.
func TestCache_busyWhileOpening(t *testing.T) {
	g := NewWithT(t)
	tarpit := gitserver.NewTarpit(t)
	c := &Cache{Dir: t.TempDir(), Timeout: 3 * time.Second, OpenWait: 100 * time.Millisecond}
	repo := repository(tarpit.URLFor("pkgs.git"))
	first := make(chan error, 1)
	go func() {
		_, err := c.Open(context.Background(), repo)
		first <- err
	}()
	// Once the first open holds the Repository, ask again.
	g.Eventually(func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		if e := c.repos[types.NamespacedName{Namespace: repo.Namespace, Name: repo.Name}]; e != nil {
			return len(e.lock)
		}
		return 0
	}, "2s", "5ms").Should(Equal(1))
	_, err := c.Open(context.Background(), repo)
	g.Expect(errors.Is(err, store.ErrBusy)).To(BeTrue(), "a second open does not wait for the hung one: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("is being opened by another reconcile (its remote " + tarpit.URLFor("pkgs.git") + " is slow)"))
	var err1 error
	g.Eventually(first, "10s").Should(Receive(&err1))
	g.Expect(errors.Is(err1, store.ErrTimeout)).To(BeTrue(), "%v", err1)
}

// A clone from a git URL reads a plain repository (no Scion layout) at a
// branch, a tag (annotated or not), a full ref or a commit, in a folder or
// at the root; it keeps nothing of it, never writes to it, and follows
// the rules of Repositories' URLs.
func TestCache_readSource(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	b := gitserver.NewBlueprints(t, t.TempDir(), "blueprints.git")
	srv := gitserver.NewServer(t, filepath.Dir(b.Bare))
	c := &Cache{Dir: t.TempDir()}
	src := GitSource{Namespace: "tenant-a", URL: srv.URLFor("blueprints.git"), Directory: "blueprints/app", Field: "spec.tasks[0].clone.upstreamRef.git"}
	for ref, want := range map[string]string{"": b.V2, "main": b.V2, "refs/heads/main": b.V2, "app-v1.0": b.V1, "refs/tags/app-v1.0": b.V1, "v1-light": b.V1, b.V1: b.V1} {
		s := src
		s.Ref = ref
		p, commit, err := c.ReadSource(ctx, s)
		g.Expect(err).NotTo(HaveOccurred(), "ref %q", ref)
		g.Expect(commit).To(Equal(want), "ref %q", ref)
		color := "green"
		if want == b.V1 {
			color = "blue"
		}
		cm, _ := p.File("cm.yaml")
		g.Expect(string(cm)).To(ContainSubstring("color: "+color), "ref %q", ref)
		g.Expect(p.Paths()).To(ConsistOf("Kptfile", "cm.yaml"))
	}
	root := src
	root.Directory = ""
	p, _, err := c.ReadSource(ctx, root)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Paths()).To(ConsistOf("Kptfile", "blueprints/app/Kptfile", "blueprints/app/cm.yaml"), "the whole repository")
	left, err := filepath.Glob(filepath.Join(c.Dir, sourcePrefix+"*"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(left).To(BeEmpty(), "nothing of a source is kept")

	// What is not there is named.
	for _, c2 := range []struct {
		ref, dir, want string
	}{
		{"v9", "blueprints/app", `spec.tasks[0].clone.upstreamRef.git.ref: ` + srv.URLFor("blueprints.git") + ` has no branch, tag or commit "v9"`},
		{b.V1[:12], "blueprints/app", `has no branch, tag or commit "` + b.V1[:12] + `" (a commit must be given in full`},
		{"main", "blueprints/db", "spec.tasks[0].clone.upstreamRef.git.directory: reading blueprints/db"},
	} {
		s := src
		s.Ref, s.Directory = c2.ref, c2.dir
		_, _, err := c.ReadSource(ctx, s)
		g.Expect(err).To(MatchError(ContainSubstring(c2.want)))
	}
	missing := src
	missing.URL = srv.URLFor("missing.git")
	_, _, err = c.ReadSource(ctx, missing)
	g.Expect(errors.Is(err, store.ErrRepositoryNotFound)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.tasks[0].clone.upstreamRef.git.repo"))

	// file:// as for Repositories: off unless allowed, never into the
	// controller's own state.
	file := src
	file.URL = "file://" + b.Bare
	_, _, err = c.ReadSource(ctx, file)
	g.Expect(errors.Is(err, ErrURLNotAllowed)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.tasks[0].clone.upstreamRef.git.repo: file:// repositories are turned off"))
	c.AllowFileRepositories = true
	_, commit, err := c.ReadSource(ctx, file)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(commit).To(Equal(b.V2))
	_, err = c.Open(ctx, repository("file://"+b.Bare))
	g.Expect(err).NotTo(HaveOccurred())
	mirrors, err := filepath.Glob(filepath.Join(c.Dir, "[0-9a-f]*"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mirrors).To(HaveLen(1))
	file.URL = "file://" + mirrors[0]
	_, _, err = c.ReadSource(ctx, file)
	g.Expect(errors.Is(err, ErrURLNotAllowed)).To(BeTrue(), "another tenant's mirror: %v", err)

	// A source is never written to.
	ro, err := store.Open(ctx, store.Options{URL: srv.URLFor("blueprints.git"), Branch: "gone", ReadOnly: true, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred(), "a source needs no branch of Scion's")
	_, err = ro.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Contents: p, Message: "m"})
	g.Expect(errors.Is(err, store.ErrReadOnly)).To(BeTrue(), "%v", err)
	g.Expect(gitserver.Git(t, b.Bare, "for-each-ref", "--format=%(refname)")).To(Equal("refs/heads/main\nrefs/tags/app-v1.0\nrefs/tags/v1-light"))
}

// Trim reaches every open repository: one read since the last Trim keeps
// its pack indexes, those idle a whole period free them, and a
// repository trimmed still serves what it holds.
func TestCache_trim(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := &Cache{Dir: t.TempDir(), AllowFileRepositories: true}
	var repos []store.Store
	for _, name := range []string{"a", "b"} {
		r := repository("file://" + gitserver.InitBare(t, t.TempDir(), name+".git"))
		r.Name = name
		repo, err := c.Open(ctx, r)
		g.Expect(err).NotTo(HaveOccurred())
		repos = append(repos, repo)
	}
	draft, err := repos[0].WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Contents: pkg.New(map[string][]byte{"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n")})})
	g.Expect(err).NotTo(HaveOccurred())
	c.Trim()
	g.Expect(c.Trim()).To(Equal(2), "both idle for a period")
	_, err = repos[0].Read(ctx, draft)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Trim()).To(Equal(1), "the one just read keeps its indexes")
}
