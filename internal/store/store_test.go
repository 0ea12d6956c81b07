package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

func testPackage(name string, resources int) *pkg.Package {
	files := map[string][]byte{
		"Kptfile":   []byte(fmt.Sprintf("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: %s\n", name)),
		"README.md": []byte("# " + name + "\n"),
	}
	for i := 0; i < resources; i++ {
		files[fmt.Sprintf("cm-%02d.yaml", i)] = []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  key: value-%d\n", i, i))
	}
	return pkg.New(files)
}

// newRemote creates an empty bare repository and returns its file:// URL
// and path.
func newRemote(t testing.TB) (string, string) {
	dir := gitserver.InitBare(t, t.TempDir(), "repo.git")
	return "file://" + dir, dir
}

func open(t testing.TB, opts Options) *Repository {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = filepath.Join(t.TempDir(), "cache")
	}
	r, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return r
}

func TestRepository_lifecycle(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	url, bare := newRemote(t)
	r := open(t, Options{URL: url, CreateBranch: true, Author: "Scion Test", Email: "scion@example.com"})

	revs, err := r.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revs).To(BeEmpty())

	// Create a draft, then update it against the commit read.
	draft, err := r.WriteDraft(ctx, DraftWrite{Package: "team/app", Workspace: "ws1", Contents: testPackage("app", 2), Trailers: Trailers{"Scion-Owner": "pv/default/app"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(draft.Lifecycle).To(Equal(porchv1alpha1.LifecycleDraft))
	edited := testPackage("app", 3)
	draft2, err := r.WriteDraft(ctx, DraftWrite{Package: "team/app", Workspace: "ws1", Expected: draft.Commit, Contents: edited, Message: "add cm-02"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gitserver.Git(t, bare, "log", "--format=%s", "drafts/team/app/ws1")).To(HavePrefix("add cm-02\nUpdate draft team/app/ws1\nInitialize branch main"))

	// Reading returns exactly the files written; trailers survive in git.
	got, err := r.Read(ctx, draft2)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Equal(edited)).To(BeTrue())
	rev, err := r.Get(ctx, "team/app", "ws1", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rev.Commit).To(Equal(draft2.Commit))
	g.Expect(rev.Trailers).To(HaveKeyWithValue(TrailerWorkspace, "ws1"))

	// A second draft in the same workspace is refused.
	_, err = r.WriteDraft(ctx, DraftWrite{Package: "team/app", Workspace: "ws1", Contents: edited})
	g.Expect(errors.Is(err, ErrConflict)).To(BeTrue(), "%v", err)

	// Propose, reject, propose again, publish.
	p, err := r.Propose(ctx, "team/app", "ws1", draft2.Commit, Proposal{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Lifecycle).To(Equal(porchv1alpha1.LifecycleProposed))
	_, err = r.RejectProposal(ctx, "team/app", "ws1", "")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = r.Propose(ctx, "team/app", "ws1", "", Proposal{})
	g.Expect(err).NotTo(HaveOccurred())
	pub, err := r.Publish(ctx, "team/app", "ws1", "", "jane@example.com", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pub.Revision).To(Equal(1))
	g.Expect(pub.PublishedBy).To(ContainSubstring("jane@example.com"))
	g.Expect(gitserver.Git(t, bare, "show", "main:team/app/cm-02.yaml")).To(ContainSubstring("cm-2"))
	g.Expect(gitserver.Git(t, bare, "cat-file", "-t", "team/app/v1")).To(Equal("tag"))
	g.Expect(gitserver.Git(t, bare, "branch", "--list", "proposed/*", "drafts/*")).To(BeEmpty())
	g.Expect(gitserver.Git(t, bare, "log", "--format=%s", "main")).To(ContainSubstring("add cm-02"), "the branch history keeps the draft's commits")

	// A second revision of the same package becomes the latest.
	d, err := r.WriteDraft(ctx, DraftWrite{Package: "team/app", Workspace: "ws2", Contents: testPackage("app", 1)})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = r.Propose(ctx, "team/app", "ws2", d.Commit, Proposal{})
	g.Expect(err).NotTo(HaveOccurred())
	pub2, err := r.Publish(ctx, "team/app", "ws2", "", "", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pub2.Revision).To(Equal(2))
	revs, err = r.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(summarize(revs)).To(Equal([]string{"team/app v1 ws1 Published", "team/app v2 ws2 Published latest"}))

	// A fresh cache sees the same revisions, with the metadata from git.
	r2 := open(t, Options{URL: url})
	revs2, err := r2.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(summarize(revs2)).To(Equal(summarize(revs)))
	g.Expect(revs2[0].PublishedBy).To(Equal("jane@example.com <scion@example.com>"))
	g.Expect(revs2[0].PublishedAt).NotTo(BeZero())

	// Floating tags follow published revisions.
	g.Expect(r.SetFloatingTag(ctx, "team/app", "stable", 1)).To(Equal(0), "a new tag")
	st, err := r.ResolveFloatingTag(ctx, "team/app", "stable")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Revision).To(Equal(1))
	g.Expect(r.SetFloatingTag(ctx, "team/app", "stable", 2)).To(Equal(1), "moved from revision 1")
	g.Expect(r2.Fetch(ctx)).To(Succeed())
	st, err = r2.ResolveFloatingTag(ctx, "team/app", "stable")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Revision).To(Equal(2))
	g.Expect(r.SetFloatingTag(ctx, "team/app", "v3", 2)).Error().To(MatchError(ContainSubstring("invalid floating tag")))

	// Deletion: propose, reject, propose, delete the latest.
	dp, err := r.ProposeDeletion(ctx, "team/app", 2)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dp.Lifecycle).To(Equal(porchv1alpha1.LifecycleDeletionProposed))
	back, err := r.RejectDeletion(ctx, "team/app", 2)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back.Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished))
	dp, err = r.ProposeDeletion(ctx, "team/app", 2)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Delete(ctx, dp, "")).To(Succeed())
	revs, err = r.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(summarize(revs)).To(Equal([]string{"team/app v1 ws1 Published latest"}))
	g.Expect(gitserver.Git(t, bare, "ls-tree", "main", "team/")).To(BeEmpty(), "deleting the latest revision removes the package from the branch")

	// The deleted revision's name is retired: a ref records it, holding
	// none of its content; its workspace takes no new draft, and the next
	// publication takes a new number, also in another mirror.
	retired := "refs/scion/retired/team%2Fapp/v2/ws2"
	g.Expect(gitserver.Git(t, bare, "rev-parse", retired+"^{tree}")).To(Equal(emptyTreeHash.String()))
	g.Expect(gitserver.Git(t, bare, "log", "--format=%B", retired)).To(HavePrefix("Retire team/app v2\n"))
	_, err = r.WriteDraft(ctx, DraftWrite{Package: "team/app", Workspace: "ws2", Contents: testPackage("app", 1)})
	var retiredErr *RetiredError
	g.Expect(errors.As(err, &retiredErr)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(`package team/app: workspace "ws2" was published revision v2, which was deleted; a revision's name is never used again for other content: choose another workspace`))
	r3 := open(t, Options{URL: url})
	_, err = r3.WriteDraft(ctx, DraftWrite{Package: "team/app", Workspace: "ws2", Contents: testPackage("app", 1)})
	g.Expect(errors.As(err, &retiredErr)).To(BeTrue(), "another mirror: %v", err)
	d4, err := r3.WriteDraft(ctx, DraftWrite{Package: "team/app", Workspace: "ws4", Contents: testPackage("app", 4)})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = r3.Propose(ctx, "team/app", "ws4", d4.Commit, Proposal{})
	g.Expect(err).NotTo(HaveOccurred())
	pub3, err := r3.Publish(ctx, "team/app", "ws4", "", "", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pub3.Revision).To(Equal(3), "v2 is not given to other content")
	g.Expect(r.Fetch(ctx)).To(Succeed())

	// Drafts are deleted against the commit read.
	d3, err := r.WriteDraft(ctx, DraftWrite{Package: "team/app", Workspace: "ws3", Contents: testPackage("app", 1)})
	g.Expect(err).NotTo(HaveOccurred())
	stale := d3
	stale.Commit = draft.Commit
	g.Expect(errors.Is(r.Delete(ctx, stale, ""), ErrConflict)).To(BeTrue())
	g.Expect(r.Delete(ctx, d3, "")).To(Succeed())
	_, err = r.Get(ctx, "team/app", "ws3", 0)
	g.Expect(errors.Is(err, ErrNotFound)).To(BeTrue())
}

func summarize(revs []Revision) []string {
	var out []string
	for _, r := range revs {
		s := fmt.Sprintf("%s v%d %s %s", r.Package, r.Revision, r.Workspace, r.Lifecycle)
		if r.Latest {
			s += " latest"
		}
		out = append(out, s)
	}
	return out
}

func TestRepository_concurrentDraftWriters(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	url, _ := newRemote(t)
	a := open(t, Options{URL: url, CreateBranch: true})
	b := open(t, Options{URL: url})

	base, err := a.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Contents: testPackage("app", 1)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.Fetch(ctx)).To(Succeed())

	// Two controllers (separate caches) both read the same draft commit and
	// write concurrently: exactly one wins.
	for round := 0; round < 5; round++ {
		var wg sync.WaitGroup
		results := make([]error, 2)
		commits := make([]string, 2)
		for i, r := range []*Repository{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rev, err := r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Expected: base.Commit, Contents: testPackage(fmt.Sprintf("writer-%d-%d", i, round), 2)})
				results[i], commits[i] = err, rev.Commit
			}()
		}
		wg.Wait()
		wins := 0
		for i, err := range results {
			if err == nil {
				wins++
				base.Commit = commits[i]
				continue
			}
			g.Expect(errors.Is(err, ErrConflict)).To(BeTrue(), "the loser gets a conflict, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring("refs/heads/drafts/app/ws"))
		}
		g.Expect(wins).To(Equal(1), "round %d: exactly one writer wins", round)
		g.Expect(a.Fetch(ctx)).To(Succeed())
		g.Expect(b.Fetch(ctx)).To(Succeed())
		rev, err := a.Get(ctx, "app", "ws", 0)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rev.Commit).To(Equal(base.Commit), "the winner's commit is the head")
	}
}

func TestRepository_concurrentPublish(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	url, bare := newRemote(t)
	const writers = 4
	repos := make([]*Repository, writers)
	repos[0] = open(t, Options{URL: url, CreateBranch: true})
	for i := 1; i < writers; i++ {
		repos[i] = open(t, Options{URL: url})
	}
	for i, r := range repos {
		ws := fmt.Sprintf("ws%d", i)
		d, err := r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: ws, Contents: testPackage(ws, 1)})
		g.Expect(err).NotTo(HaveOccurred())
		_, err = r.Propose(ctx, "app", ws, d.Commit, Proposal{})
		g.Expect(err).NotTo(HaveOccurred())
	}
	var wg sync.WaitGroup
	revisions := make([]int, writers)
	errs := make([]error, writers)
	for i, r := range repos {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rev, err := r.Publish(ctx, "app", fmt.Sprintf("ws%d", i), "", "", "")
			revisions[i], errs[i] = rev.Revision, err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(revisions).To(ConsistOf(1, 2, 3, 4), "every publish gets its own revision number")
	// Nothing is lost: every revision tag holds its own workspace's content.
	for i := range repos {
		tag := fmt.Sprintf("app/v%d", revisions[i])
		g.Expect(gitserver.Git(t, bare, "show", tag+":app/Kptfile")).To(ContainSubstring(fmt.Sprintf("name: ws%d", i)))
		g.Expect(gitserver.Git(t, bare, "merge-base", "--is-ancestor", tag, "main")).To(BeEmpty())
	}
}

func TestRepository_smartHTTP(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	gitserver.InitBare(t, root, "pkgs.git")
	srv := gitserver.NewServer(t, root)
	srv.Username, srv.Password = "scion", "s3cret-password"

	t.Run("basic auth", func(t *testing.T) {
		g := NewWithT(t)
		r := open(t, Options{URL: srv.URLFor("pkgs.git"), CreateBranch: true, Credentials: Credentials{Username: "scion", Password: "s3cret-password"}})
		d, err := r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Contents: testPackage("app", 3)})
		g.Expect(err).NotTo(HaveOccurred())
		_, err = r.Propose(ctx, "app", "ws", d.Commit, Proposal{})
		g.Expect(err).NotTo(HaveOccurred())
		pub, err := r.Publish(ctx, "app", "ws", "", "", "")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pub.Revision).To(Equal(1))
		files, err := r.Read(ctx, pub)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(files.Len()).To(Equal(5))
	})

	t.Run("wrong credentials", func(t *testing.T) {
		g := NewWithT(t)
		_, err := Open(ctx, Options{URL: srv.URLFor("pkgs.git"), CacheDir: t.TempDir(), Credentials: Credentials{Username: "scion", Password: "wrong-password"}})
		g.Expect(errors.Is(err, ErrAuthentication)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring("the remote refused the credentials (basic auth for scion)"))
		g.Expect(err.Error()).To(ContainSubstring(srv.URLFor("pkgs.git")))
		g.Expect(err.Error()).NotTo(ContainSubstring("wrong-password"))

		_, err = Open(ctx, Options{URL: srv.URLFor("pkgs.git"), CacheDir: t.TempDir()})
		g.Expect(errors.Is(err, ErrAuthentication)).To(BeTrue(), "no credentials: %v", err)
		g.Expect(err.Error()).To(ContainSubstring("the remote refused the credentials (none)"))

		// Credentials in the URL are named as such (never printed).
		inURL := strings.Replace(srv.URLFor("pkgs.git"), "http://", "http://scion:wrong-in-url@", 1)
		_, err = Open(ctx, Options{URL: inURL, CacheDir: t.TempDir()})
		g.Expect(errors.Is(err, ErrAuthentication)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring("the remote refused the credentials (the user and password in the URL)"))
		g.Expect(err.Error()).NotTo(ContainSubstring("wrong-in-url"))
	})

	t.Run("read but not push", func(t *testing.T) {
		g := NewWithT(t)
		roRoot := t.TempDir()
		bare := gitserver.InitBare(t, roRoot, "ro.git")
		gitserver.SeedRevisions(t, bare, 1, 1, 1)
		ro := gitserver.NewServer(t, roRoot)
		ro.ReadOnly = true
		r := open(t, Options{URL: ro.URLFor("ro.git")})
		_, err := r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Contents: testPackage("app", 1)})
		g.Expect(errors.Is(err, ErrAuthentication)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring("the remote refused the push (credentials: none; reading may be allowed)"))
	})

	t.Run("bearer token", func(t *testing.T) {
		g := NewWithT(t)
		tokenRoot := t.TempDir()
		gitserver.InitBare(t, tokenRoot, "t.git")
		ts := gitserver.NewServer(t, tokenRoot)
		ts.Token = "tok-123"
		r := open(t, Options{URL: ts.URLFor("t.git"), CreateBranch: true, Credentials: Credentials{BearerToken: "tok-123"}})
		_, err := r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Contents: testPackage("app", 1)})
		g.Expect(err).NotTo(HaveOccurred())
		_, err = Open(ctx, Options{URL: ts.URLFor("t.git"), CacheDir: t.TempDir(), Credentials: Credentials{BearerToken: "nope"}})
		g.Expect(errors.Is(err, ErrAuthentication)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring("(bearer token)"))
	})

	t.Run("missing repository", func(t *testing.T) {
		g := NewWithT(t)
		_, err := Open(ctx, Options{URL: srv.URLFor("absent.git"), CacheDir: t.TempDir(), Credentials: Credentials{Username: "scion", Password: "s3cret-password"}})
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(ContainSubstring("absent.git"))
	})
}

func TestRepository_emptyAndMissingBranch(t *testing.T) {
	ctx := context.Background()
	t.Run("empty repository without createBranch", func(t *testing.T) {
		g := NewWithT(t)
		url, _ := newRemote(t)
		_, err := Open(ctx, Options{URL: url, CacheDir: t.TempDir()})
		g.Expect(errors.Is(err, ErrBranchNotFound)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring(`branch "main" does not exist`))
		g.Expect(err.Error()).To(ContainSubstring("createBranch"))
	})
	t.Run("empty repository with createBranch", func(t *testing.T) {
		g := NewWithT(t)
		url, bare := newRemote(t)
		r := open(t, Options{URL: url, CreateBranch: true})
		g.Expect(gitserver.Git(t, bare, "log", "--format=%s", "main")).To(Equal("Initialize branch main"))
		revs, err := r.List(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(revs).To(BeEmpty())
	})
	t.Run("missing branch in a non-empty repository", func(t *testing.T) {
		g := NewWithT(t)
		url, bare := newRemote(t)
		open(t, Options{URL: url, CreateBranch: true})
		_, err := Open(ctx, Options{URL: url, Branch: "deploy", CacheDir: t.TempDir()})
		g.Expect(errors.Is(err, ErrBranchNotFound)).To(BeTrue(), "%v", err)
		r := open(t, Options{URL: url, Branch: "deploy", CreateBranch: true})
		g.Expect(r.Head()).To(Equal(gitserver.Git(t, bare, "rev-parse", "deploy")))
	})
	t.Run("missing repository on disk", func(t *testing.T) {
		g := NewWithT(t)
		_, err := Open(ctx, Options{URL: "file://" + filepath.Join(t.TempDir(), "nope.git"), CacheDir: t.TempDir()})
		g.Expect(errors.Is(err, ErrRepositoryNotFound)).To(BeTrue(), "%v", err)
	})
}

func TestRepository_externalChangesAndDirectory(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	url, bare := newRemote(t)
	r := open(t, Options{URL: url, CreateBranch: true, Directory: "deploy"})
	_, err := r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Contents: testPackage("app", 1)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gitserver.Git(t, bare, "ls-tree", "-r", "--name-only", "drafts/deploy/app/ws")).To(ContainSubstring("deploy/app/Kptfile"))
	// The refs a Kptfile's upstream records are the layout's, with the
	// directory.
	g.Expect(r.RefName(Revision{Package: "app", Workspace: "ws", Lifecycle: porchv1alpha1.LifecycleDraft})).To(Equal("drafts/deploy/app/ws"))
	g.Expect(r.RefName(Revision{Package: "app", Workspace: "ws", Lifecycle: porchv1alpha1.LifecycleProposed})).To(Equal("proposed/deploy/app/ws"))
	g.Expect(r.RefName(Revision{Package: "app", Workspace: "ws", Revision: 3, Lifecycle: porchv1alpha1.LifecyclePublished})).To(Equal("deploy/app/v3"))

	// Someone pushes a package with plain git: a draft outside the
	// directory (ignored) and a published tag inside it.
	work := t.TempDir()
	gitserver.Git(t, work, "clone", "-q", bare, "w")
	w := filepath.Join(work, "w")
	for _, dir := range []string{"deploy/db", "other/x"} {
		p := testPackage(filepath.Base(dir), 1)
		g.Expect(p.WriteDir(filepath.Join(w, dir))).To(Succeed())
	}
	gitserver.Git(t, w, "add", "-A")
	gitserver.Git(t, w, "commit", "-q", "-m", "add db")
	gitserver.Git(t, w, "tag", "deploy/db/v1")
	gitserver.Git(t, w, "push", "-q", "origin", "HEAD:main", "deploy/db/v1", "HEAD:refs/heads/drafts/other/x/ws")

	g.Expect(r.Fetch(ctx)).To(Succeed())
	revs, err := r.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(summarize(revs)).To(Equal([]string{"app v0 ws Draft", "db v1 v1 Published latest"}))
	db, err := r.Read(ctx, revs[1])
	g.Expect(err).NotTo(HaveOccurred())
	kf, err := db.Kptfile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kf.Metadata.Name).To(Equal("db"))

	// A revision deleted outside Scion disappears after a fetch.
	gitserver.Git(t, bare, "tag", "-d", "deploy/db/v1")
	g.Expect(r.Fetch(ctx)).To(Succeed())
	revs, err = r.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(summarize(revs)).To(Equal([]string{"app v0 ws Draft"}))

	// Writes against a stale cache are refused, not merged blindly.
	gitserver.Git(t, w, "push", "-q", "-f", "origin", "HEAD:refs/heads/drafts/deploy/app/ws")
	_, err = r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Expected: revs[0].Commit, Contents: testPackage("app", 2)})
	g.Expect(errors.Is(err, ErrConflict)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("re-read and retry"))
}

func TestValidation(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ValidateWorkspace("v1-draft")).To(Succeed())
	g.Expect(ValidateWorkspace("Upper")).To(HaveOccurred())
	g.Expect(ValidateWorkspace(strings.Repeat("a", 64))).To(HaveOccurred())
}

func TestTrailers(t *testing.T) {
	g := NewWithT(t)
	msg, err := formatMessage("Subject line", Trailers{"B-Key": "2", "A-Key": "1 with spaces"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(msg).To(Equal("Subject line\n\nA-Key: 1 with spaces\nB-Key: 2\n"))
	g.Expect(parseTrailers(msg)).To(Equal(Trailers{"A-Key": "1 with spaces", "B-Key": "2"}))
	g.Expect(parseTrailers("just a subject\n")).To(BeNil())
	g.Expect(parseTrailers("subject\n\nbody text, not trailers\n")).To(BeNil())
	_, err = formatMessage("s", Trailers{"bad key": "x"})
	g.Expect(err).To(HaveOccurred())
	_, err = formatMessage("s", Trailers{"K": "two\nlines"})
	g.Expect(err).To(HaveOccurred())
}

func TestConflictError(t *testing.T) {
	g := NewWithT(t)
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	for _, tc := range []struct {
		err  ConflictError
		want string
	}{
		{ConflictError{Ref: "refs/heads/x", Expected: a, Actual: b}, "conflict: refs/heads/x changed concurrently (expected aaaaaaaaaaaa, found bbbbbbbbbbbb); re-read and retry"},
		{ConflictError{Ref: "refs/heads/x", Actual: b}, "conflict: refs/heads/x changed concurrently (expected absent, found bbbbbbbbbbbb); re-read and retry"},
		{ConflictError{Ref: "refs/heads/x", Expected: a}, "conflict: refs/heads/x changed concurrently (expected aaaaaaaaaaaa, found absent); re-read and retry"},
		{ConflictError{Ref: "refs/heads/x", Expected: a, Detail: "failed to lock"}, "conflict: refs/heads/x changed concurrently (expected aaaaaaaaaaaa): failed to lock; re-read and retry"},
		{ConflictError{Ref: "refs/heads/x, refs/tags/y", Detail: "atomic transaction failed"}, "conflict: refs/heads/x, refs/tags/y changed concurrently: atomic transaction failed; re-read and retry"},
	} {
		g.Expect(tc.err.Error()).To(Equal(tc.want))
		g.Expect(errors.Is(&tc.err, ErrConflict)).To(BeTrue())
	}
}

func TestRepository_readFile(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	url, _ := newRemote(t)
	r := open(t, Options{URL: url, CreateBranch: true, Directory: "pkgs"})
	rev, err := r.WriteDraft(ctx, DraftWrite{Package: "team/app", Workspace: "ws", Contents: testPackage("app", 1)})
	g.Expect(err).NotTo(HaveOccurred())
	kf, err := r.ReadFile(ctx, rev, "Kptfile")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(kf)).To(ContainSubstring("name: app"))
	_, err = r.ReadFile(ctx, rev, "missing.yaml")
	g.Expect(errors.Is(err, ErrNotFound)).To(BeTrue())
}

// TestOpen_createBranchRace: several writers opening an empty repository
// with createBranch at once all succeed on the one branch that wins.
func TestOpen_createBranchRace(t *testing.T) {
	g := NewWithT(t)
	url, bare := newRemote(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = Open(context.Background(), Options{URL: url, CreateBranch: true, CacheDir: t.TempDir()})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(gitserver.Git(t, bare, "rev-list", "--count", "main")).To(Equal("1"), "one initial commit")
}

// An update of a draft keeps the trailers of its head it does not set, so
// a person's push or a condition written into the Kptfile leaves the draft
// with its owner; a trailer the writer sets wins.
func TestRepository_updateKeepsTrailers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	url, _ := newRemote(t)
	r := open(t, Options{URL: url, CreateBranch: true})
	d, err := r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Contents: testPackage("app", 1), Trailers: Trailers{"Scion-PackageVariant-UID": "uid-1", "Scion-Object": "a"}})
	g.Expect(err).NotTo(HaveOccurred())
	d, err = r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Expected: d.Commit, Contents: testPackage("app", 2)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Trailers).To(HaveKeyWithValue("Scion-PackageVariant-UID", "uid-1"))
	g.Expect(d.Trailers).To(HaveKeyWithValue("Scion-Object", "a"))
	d, err = r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Expected: d.Commit, Contents: testPackage("app", 3), Trailers: Trailers{"Scion-PackageVariant-UID": "uid-2"}})
	g.Expect(err).NotTo(HaveOccurred())
	got, err := r.Get(ctx, "app", "ws", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Trailers).To(HaveKeyWithValue("Scion-PackageVariant-UID", "uid-2"))
	g.Expect(got.Trailers).To(HaveKeyWithValue("Scion-Object", "a"))
	// The writer speaks of one commit: set when given, never carried over.
	d, err = r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Expected: got.Commit, Contents: testPackage("app", 4), Writer: WriterPackageVariant})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Trailers).To(HaveKeyWithValue(TrailerWriter, WriterPackageVariant))
	d, err = r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Expected: d.Commit, Contents: testPackage("app", 5)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Trailers).NotTo(HaveKey(TrailerWriter))
	g.Expect(d.Trailers).To(HaveKeyWithValue("Scion-PackageVariant-UID", "uid-2"))
	// A new draft of another workspace starts from the branch: nothing is
	// inherited.
	n, err := r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "other", Contents: testPackage("app", 1)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Trailers).NotTo(HaveKey("Scion-PackageVariant-UID"))
}

// TestRepository_checkRemote: a new draft written with CheckRemote is not
// pushed while the remote has a revision of the package the mirror has
// not fetched (the writer would otherwise miss a draft to update or
// adopt); the failed write fetches it. Other packages' refs do not count.
func TestRepository_checkRemote(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	url, bare := newRemote(t)
	stale := open(t, Options{URL: url, CreateBranch: true})
	other := open(t, Options{URL: url})

	// Somebody else makes a draft of tenant-a.
	manual, err := other.WriteDraft(ctx, DraftWrite{Package: "tenant-a", Workspace: "manual", Contents: testPackage("tenant-a", 1)})
	g.Expect(err).NotTo(HaveOccurred())

	// Without the check the stale mirror would push a second draft.
	_, err = stale.WriteDraft(ctx, DraftWrite{Package: "tenant-a", Workspace: "mine", Contents: testPackage("tenant-a", 2), CheckRemote: true})
	var conflict *ConflictError
	g.Expect(errors.As(err, &conflict)).To(BeTrue(), "%v", err)
	g.Expect(conflict.Ref).To(Equal("refs/heads/drafts/tenant-a/manual"))
	g.Expect(err.Error()).To(ContainSubstring("this mirror had not fetched"))
	g.Expect(gitserver.Git(t, bare, "branch", "--list", "drafts/tenant-a/*")).NotTo(ContainSubstring("mine"))

	// The failed write fetched: the mirror now sees the draft, and the
	// same write goes through.
	rev, err := stale.Get(ctx, "tenant-a", "manual", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rev.Commit).To(Equal(manual.Commit))
	_, err = stale.WriteDraft(ctx, DraftWrite{Package: "tenant-a", Workspace: "mine", Contents: testPackage("tenant-a", 2), CheckRemote: true})
	g.Expect(err).NotTo(HaveOccurred())

	// Other packages' new revisions, even one nested in tenant-a, do not
	// stop a new draft.
	_, err = other.WriteDraft(ctx, DraftWrite{Package: "tenant-b", Workspace: "ws", Contents: testPackage("tenant-b", 1)})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = other.WriteDraft(ctx, DraftWrite{Package: "tenant-a/nested", Workspace: "ws", Contents: testPackage("nested", 1)})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = stale.WriteDraft(ctx, DraftWrite{Package: "tenant-a", Workspace: "second", Contents: testPackage("tenant-a", 3), CheckRemote: true})
	g.Expect(err).NotTo(HaveOccurred())
}

// TestRepository_objectsOnDisk: the objects the mirror writes (one pack
// per push, small packs merged once there are many) are git's: git reads
// and checks them, and a new process (without the object cache) reads
// every draft back.
func TestRepository_objectsOnDisk(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	url, _ := newRemote(t)
	cacheDir := filepath.Join(t.TempDir(), "cache")
	r := open(t, Options{URL: url, CreateBranch: true, CacheDir: cacheDir})
	var drafts []Revision
	for i := 0; i < maxSmallPacks+8; i++ {
		rev, err := r.WriteDraft(ctx, DraftWrite{Package: fmt.Sprintf("app-%d", i), Workspace: "ws", Contents: testPackage(fmt.Sprintf("app-%d", i), 3)})
		g.Expect(err).NotTo(HaveOccurred())
		drafts = append(drafts, rev)
	}
	g.Expect(len(packFiles(t, cacheDir))).To(BeNumerically("<=", maxSmallPacks+1), "small packs are merged")

	// fsck exits non-zero (failing the test) on a corrupt or missing object.
	last := drafts[len(drafts)-1]
	g.Expect(gitserver.Git(t, cacheDir, "fsck", "--strict", "--no-dangling", drafts[0].Commit, last.Commit)).NotTo(ContainSubstring("error"))
	g.Expect(gitserver.Git(t, cacheDir, "show", last.Commit+":app-"+fmt.Sprint(len(drafts)-1)+"/cm-02.yaml")).To(ContainSubstring("value-2"))

	reopened := open(t, Options{URL: url, CacheDir: cacheDir})
	for i, rev := range drafts {
		got, err := reopened.Read(ctx, rev)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Equal(testPackage(fmt.Sprintf("app-%d", i), 3))).To(BeTrue(), "draft %d", i)
	}
}

// TestRepository_groupCommit: concurrent draft writes to one repository
// share receive-pack sessions, and each still succeeds or fails on its
// own: every new draft lands with its commit, and of two writers of one
// new draft exactly one wins.
func TestRepository_groupCommit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	url, bare := newRemote(t)
	// The server counts its receive-pack sessions.
	g.Expect(os.WriteFile(filepath.Join(bare, "hooks", "post-receive"), []byte("#!/bin/sh\necho x >> \"$GIT_DIR/sessions\"\n"), 0o755)).To(Succeed())
	r := open(t, Options{URL: url, CreateBranch: true})

	const writers = 24
	var wg sync.WaitGroup
	revs := make([]Revision, writers)
	errs := make([]error, writers)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Writers 0 and 1 both create tenant-0/ws; the others their own.
			n := max(i-1, 0)
			revs[i], errs[i] = r.WriteDraft(ctx, DraftWrite{Package: fmt.Sprintf("tenant-%d", n), Workspace: "ws", Contents: testPackage(fmt.Sprintf("tenant-%d-%d", n, i), 2), CheckRemote: true})
		}()
	}
	wg.Wait()
	for i := 2; i < writers; i++ {
		g.Expect(errs[i]).NotTo(HaveOccurred())
		g.Expect(gitserver.Git(t, bare, "rev-parse", fmt.Sprintf("drafts/tenant-%d/ws", i-1))).To(Equal(revs[i].Commit))
	}
	winner := 0
	if errs[0] != nil {
		winner = 1
	}
	g.Expect(errs[winner]).NotTo(HaveOccurred())
	g.Expect(errors.Is(errs[1-winner], ErrConflict)).To(BeTrue(), "the loser gets a conflict, got %v", errs[1-winner])
	g.Expect(gitserver.Git(t, bare, "rev-parse", "drafts/tenant-0/ws")).To(Equal(revs[winner].Commit))

	sessions, err := os.ReadFile(filepath.Join(bare, "sessions"))
	g.Expect(err).NotTo(HaveOccurred())
	// One session per write would be 24 (23 successful writes); the
	// first write is alone, the others queue behind it.
	g.Expect(strings.Count(string(sessions), "x")).To(BeNumerically("<", writers-1))
	t.Logf("%d writes in %d receive-pack sessions", writers, strings.Count(string(sessions), "x"))
}

// publishNew drafts, proposes and publishes a new revision of a package.
func publishNew(t *testing.T, r *Repository, p, ws string) Revision {
	t.Helper()
	ctx := context.Background()
	d, err := r.WriteDraft(ctx, DraftWrite{Package: p, Workspace: ws, Contents: testPackage(path.Base(p), 1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Propose(ctx, p, ws, d.Commit, Proposal{}); err != nil {
		t.Fatal(err)
	}
	pub, err := r.Publish(ctx, p, ws, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// A floating tag and a package of the same path coexist (app's tag stable
// and the package app/stable); a tag made the old way, in refs/tags, is
// read and moved out of refs/tags when next set; a writer reads the remote
// before it moves a tag, and of writers racing, each lands or gets a
// conflict.
func TestRepository_floatingTags(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	url, bare := newRemote(t)
	r := open(t, Options{URL: url, CreateBranch: true})
	publishNew(t, r, "app", "ws1")
	publishNew(t, r, "app", "ws2")
	g.Expect(r.SetFloatingTag(ctx, "app", "stable", 1)).To(Equal(0))
	sub := publishNew(t, r, "app/stable", "ws1")
	g.Expect(sub.Revision).To(Equal(1), "the package app/stable publishes beside app's tag stable")
	st, err := r.ResolveFloatingTag(ctx, "app", "stable")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Package).To(Equal("app"))
	g.Expect(st.Revision).To(Equal(1))
	g.Expect(gitserver.Git(t, bare, "for-each-ref", "--format=%(refname)", "refs/scion/")).To(Equal("refs/scion/floating/app/stable"))

	// A tag made by hand in refs/tags, as before.
	g.Expect(gitserver.Git(t, bare, "tag", "canary", "app/v2^{commit}")).To(BeEmpty())
	g.Expect(gitserver.Git(t, bare, "update-ref", "refs/tags/app/canary", "refs/tags/canary")).To(BeEmpty())
	g.Expect(r.Fetch(ctx)).To(Succeed())
	st, err = r.ResolveFloatingTag(ctx, "app", "canary")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Revision).To(Equal(2))
	tags, err := r.FloatingTags(ctx, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags).To(Equal(map[string]int{"stable": 1, "canary": 2}))
	g.Expect(r.SetFloatingTag(ctx, "app", "canary", 1)).To(Equal(2), "the tag in refs/tags pointed at revision 2")
	g.Expect(gitserver.Git(t, bare, "for-each-ref", "--format=%(refname)", "refs/tags/app/canary")).To(BeEmpty(), "moved out of refs/tags")
	st, err = r.ResolveFloatingTag(ctx, "app", "canary")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Revision).To(Equal(1))

	// Someone else moves stable: a writer whose view is older reads the
	// remote before it writes, so "stable is already at 1" is never
	// believed from a stale mirror.
	other := open(t, Options{URL: url})
	g.Expect(other.SetFloatingTag(ctx, "app", "stable", 2)).To(Equal(1))
	g.Expect(r.SetFloatingTag(ctx, "app", "stable", 1)).To(Equal(2), "the writer sees the other's move")
	g.Expect(gitserver.Git(t, bare, "rev-parse", "refs/scion/floating/app/stable")).To(Equal(gitserver.Git(t, bare, "rev-parse", "app/v1^{commit}")))

	// Many writers at once: every move is a compare-and-swap, so each one
	// either lands or says it lost; the tag ends where the last landing
	// move put it.
	var wg sync.WaitGroup
	results := make([]error, 6)
	for i := range results {
		w := open(t, Options{URL: url})
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, results[i] = w.SetFloatingTag(ctx, "app", "stable", 1+i%2)
		}()
	}
	wg.Wait()
	landed := 0
	for _, err := range results {
		if err == nil {
			landed++
		} else {
			g.Expect(errors.Is(err, ErrConflict)).To(BeTrue(), "a lost race is a conflict: %v", err)
		}
	}
	g.Expect(landed).To(BeNumerically(">=", 1))
	g.Expect(other.Fetch(ctx)).To(Succeed())
	final, err := other.ResolveFloatingTag(ctx, "app", "stable")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(final.Revision).To(BeElementOf(1, 2))
}

// No error of any git path shows a credential: embedded in the URL or
// given as Credentials, on open, fetch, push (draft, atomic lifecycle
// move, floating tag), whether the remote refuses or is gone.
func TestRepository_errorsNeverShowCredentials(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const secret = "s3cret-Pa55word"
	root := t.TempDir()
	gitserver.InitBare(t, root, "pkgs.git")
	srv := gitserver.NewServer(t, root)
	srv.Username, srv.Password = "scion", secret
	withCreds := strings.Replace(srv.URLFor("pkgs.git"), "http://", "http://scion:"+secret+"@", 1)
	var errs []error
	check := func(err error) {
		t.Helper()
		g.Expect(err).To(HaveOccurred())
		errs = append(errs, err)
	}

	// Credentials in the URL work, and show nowhere.
	r := open(t, Options{URL: withCreds, CreateBranch: true})
	g.Expect(r.URL()).NotTo(ContainSubstring(secret))
	d, err := r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Contents: testPackage("app", 1)})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = r.Propose(ctx, "app", "ws", d.Commit, Proposal{})
	g.Expect(err).NotTo(HaveOccurred())

	// The remote refuses: a wrong password in the URL, and as Credentials.
	_, err = Open(ctx, Options{URL: strings.Replace(withCreds, secret, secret+"-wrong", 1), CacheDir: t.TempDir()})
	check(err)
	_, err = Open(ctx, Options{URL: srv.URLFor("pkgs.git"), CacheDir: t.TempDir(), Credentials: Credentials{Username: "scion", Password: secret + "-wrong"}})
	check(err)

	// The remote is gone: every write path fails.
	srv.Close()
	_, err = r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws2", Contents: testPackage("app", 2)})
	check(err)
	_, err = r.Publish(ctx, "app", "ws", "", "", "")
	check(err)
	check(r.Fetch(ctx))
	_, err = r.SetFloatingTag(ctx, "app", "stable", 1)
	check(err)
	_, err = Open(ctx, Options{URL: withCreds, CacheDir: t.TempDir()})
	check(err)

	// A server that answers with an error status (go-git quotes the
	// request URL, password included, in that error).
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream is down", http.StatusBadGateway)
	}))
	defer broken.Close()
	_, err = Open(ctx, Options{URL: strings.Replace(broken.URL, "http://", "http://scion:"+secret+"@", 1) + "/pkgs.git", CacheDir: t.TempDir()})
	check(err)

	for _, err := range errs {
		g.Expect(err.Error()).NotTo(ContainSubstring(secret), "%v", err)
		g.Expect(fmt.Sprintf("%+v", err)).NotTo(ContainSubstring(secret))
	}
}

// A remote's error loses any secret of the repository, whichever
// library wrote its text.
func TestRepository_scrub(t *testing.T) {
	g := NewWithT(t)
	r := &Repository{opts: Options{URL: "https://bob:pa%2Fss-word@git.example.com/x.git", Credentials: Credentials{BearerToken: "tok-abcdef"}}}
	cause := errors.New("dial https://bob:pa/ss-word@git.example.com and https://bob:pa%2Fss-word@git.example.com with tok-abcdef")
	err := r.remoteError("fetching", cause)
	g.Expect(err.Error()).To(HaveSuffix(": dial https://bob:REDACTED@git.example.com and https://REDACTED@git.example.com with REDACTED"))
	g.Expect(err.Error()).NotTo(Or(ContainSubstring("ss-word"), ContainSubstring("tok-abcdef")))
	g.Expect(errors.Is(err, cause)).To(BeTrue())
}

// A remote that accepts connections and never answers fails an
// operation after the repository's timeout, with an error that says so,
// instead of holding it (and every writer queued behind it) forever.
func TestRepository_tarpitTimesOut(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	url := gitserver.NewTarpit(t).URLFor("pkgs.git")
	done := make(chan error, 1)
	go func() {
		_, err := Open(ctx, Options{URL: url, CacheDir: t.TempDir(), Timeout: 300 * time.Millisecond})
		done <- err
	}()
	var openErr error
	g.Eventually(done, "20s").Should(Receive(&openErr), "the open returns")
	g.Expect(errors.Is(openErr, ErrTimeout)).To(BeTrue(), "%v", openErr)
	g.Expect(openErr.Error()).To(Equal("fetching " + url + ": the remote did not answer within 300ms: timed out"))

	// A push to a remote that stops answering times out too.
	root := t.TempDir()
	gitserver.InitBare(t, root, "pkgs.git")
	var hang atomic.Bool
	backend := gitserver.NewServer(t, root)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if hang.Load() {
			<-req.Context().Done()
			return
		}
		backend.Config.Handler.ServeHTTP(w, req)
	}))
	defer proxy.Close()
	r := open(t, Options{URL: proxy.URL + "/pkgs.git", CreateBranch: true, Timeout: 300 * time.Millisecond})
	hang.Store(true)
	_, err := r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Contents: testPackage("app", 1)})
	g.Expect(errors.Is(err, ErrTimeout)).To(BeTrue(), "%v", err)
}

// RefsVersion moves with every change of the refs, ours or fetched, and
// stays when a fetch brings nothing.
func TestRepository_refsVersion(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	url, _ := newRemote(t)
	r := open(t, Options{URL: url, CreateBranch: true})
	other := open(t, Options{URL: url})
	v0 := r.RefsVersion()
	_, err := r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Contents: testPackage("app", 1)})
	g.Expect(err).NotTo(HaveOccurred())
	v1 := r.RefsVersion()
	g.Expect(v1).NotTo(Equal(v0))
	g.Expect(r.Fetch(ctx)).To(Succeed())
	g.Expect(r.RefsVersion()).To(Equal(v1), "a fetch that brings nothing")
	before := other.RefsVersion()
	g.Expect(other.Fetch(ctx)).To(Succeed())
	g.Expect(other.RefsVersion()).NotTo(Equal(before), "a fetch that brings the other's draft")
}

// TestRepository_mergesFetchedPacks: packs fetched from the remote (which
// git writes with deltas) are merged with the mirror's own once there are
// many, by the fetches themselves (a mirror that is only read keeps few
// packs too), and every object stays readable, by git and by a new
// process.
func TestRepository_mergesFetchedPacks(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	url, bare := newRemote(t)
	cacheDir := filepath.Join(t.TempDir(), "cache")
	r := open(t, Options{URL: url, CreateBranch: true, CacheDir: cacheDir})
	first, err := r.WriteDraft(ctx, DraftWrite{Package: "mine", Workspace: "ws", Contents: testPackage("mine", 3)})
	g.Expect(err).NotTo(HaveOccurred())

	// A person pushes, again and again, files much alike (git packs them
	// as deltas of each other); the mirror fetches each push.
	work := filepath.Join(t.TempDir(), "work")
	gitserver.Git(t, "", "clone", "-q", bare, work)
	body := strings.Repeat("  line: the same words on every line of every file\n", 60)
	var commits []string
	for i := 0; i < maxSmallPacks+3; i++ {
		for f := 0; f < 4; f++ {
			data := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d-%d\ndata:\n%s  push: \"%d\"\n", i, f, body, i)
			g.Expect(os.MkdirAll(filepath.Join(work, "theirs"), 0o755)).To(Succeed())
			g.Expect(os.WriteFile(filepath.Join(work, "theirs", fmt.Sprintf("cm-%d.yaml", f)), []byte(data), 0o644)).To(Succeed())
		}
		gitserver.Git(t, work, "add", "-A")
		gitserver.Git(t, work, "commit", "-q", "-m", fmt.Sprintf("push %d", i))
		gitserver.Git(t, work, "push", "-q", "origin", "HEAD:refs/heads/people")
		commits = append(commits, gitserver.Git(t, work, "rev-parse", "HEAD"))
		g.Expect(r.Fetch(ctx)).To(Succeed())
		g.Expect(len(packFiles(t, cacheDir))).To(BeNumerically("<=", maxSmallPacks), "fetch %d: fetched packs are merged", i)
	}

	// The mirror's own writes merge with them.
	last, err := r.WriteDraft(ctx, DraftWrite{Package: "mine-2", Workspace: "ws", Contents: testPackage("mine-2", 3)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(packFiles(t, cacheDir))).To(BeNumerically("<=", maxSmallPacks), "small packs are merged")

	// fsck fails the test on a missing or corrupt object.
	args := append([]string{"fsck", "--strict", "--no-dangling", first.Commit, last.Commit}, commits...)
	g.Expect(gitserver.Git(t, cacheDir, args...)).NotTo(ContainSubstring("error"))
	g.Expect(gitserver.Git(t, cacheDir, "show", commits[3]+":theirs/cm-2.yaml")).To(ContainSubstring("push: \"3\""))
	reopened := open(t, Options{URL: url, CacheDir: cacheDir})
	for i, rev := range []Revision{first, last} {
		got, err := reopened.Read(ctx, rev)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Equal(testPackage([]string{"mine", "mine-2"}[i], 3))).To(BeTrue())
	}
}

// packFiles lists the pack files of a mirror.
func packFiles(t *testing.T, cacheDir string) []string {
	t.Helper()
	packs, err := filepath.Glob(filepath.Join(cacheDir, "objects", "pack", "*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	return packs
}

// TestRepository_draftMetaPerDraft: the facts kept of drafts are those of
// each draft's current head: a draft written again and again keeps one
// entry, however many commits it has had, and what List shows follows
// the head.
func TestRepository_draftMetaPerDraft(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	url, _ := newRemote(t)
	repo := open(t, Options{URL: url, CreateBranch: true})
	var last Revision
	for i := 0; i < 5; i++ {
		rev, err := repo.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Contents: testPackage(fmt.Sprintf("app-%d", i), 2), Expected: last.Commit,
			Trailers: map[string]string{TrailerObject: fmt.Sprintf("object-%d", i)}})
		g.Expect(err).NotTo(HaveOccurred())
		last = rev
		revs, err := repo.List(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(revs).To(HaveLen(1))
		g.Expect(revs[0].Commit).To(Equal(rev.Commit))
		g.Expect(revs[0].Trailers[TrailerObject]).To(Equal(fmt.Sprintf("object-%d", i)))
	}
	repo.mu.Lock()
	defer repo.mu.Unlock()
	g.Expect(repo.draftMeta).To(HaveLen(1), "one entry per draft")
	g.Expect(repo.meta).To(BeEmpty(), "draft heads are not kept by hash")
}

// TestRepository_packsStayFew: a mirror written to again and again keeps
// few packs, however large each write: packs roll up geometrically (the
// merge of packs of one large draft each used to be skipped once a pack
// passed 256 KiB, one more pack, and one more index in memory, for
// every such write, forever).
func TestRepository_packsStayFew(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	url, _ := newRemote(t)
	cacheDir := filepath.Join(t.TempDir(), "cache")
	r := open(t, Options{URL: url, CreateBranch: true, CacheDir: cacheDir})
	rnd := rand.New(rand.NewPCG(3, 4))
	large := func(i int) *pkg.Package {
		// Random text of 36 letters compresses to about 65 %: each
		// write is a pack of about 330 KiB.
		b := make([]byte, 500<<10)
		for j := range b {
			b[j] = "abcdefghijklmnopqrstuvwxyz0123456789"[rnd.IntN(36)]
		}
		return pkg.New(map[string][]byte{
			"Kptfile":  []byte(fmt.Sprintf("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: big-%d\n", i)),
			"data.txt": b,
		})
	}
	var drafts []Revision
	want := map[string]*pkg.Package{}
	most := 0
	for i := 0; i < 30; i++ {
		p := large(i)
		rev, err := r.WriteDraft(ctx, DraftWrite{Package: fmt.Sprintf("big-%d", i), Workspace: "ws", Contents: p})
		g.Expect(err).NotTo(HaveOccurred())
		drafts = append(drafts, rev)
		want[rev.Commit] = p
		most = max(most, len(packFiles(t, cacheDir)))
	}
	// 30 packs of 330 KiB: a doubling progression up to 8 MiB has about
	// five, plus up to maxSmallPacks waiting for the next roll-up.
	g.Expect(most).To(BeNumerically("<=", maxSmallPacks+6), "packs roll up")

	args := []string{"fsck", "--strict", "--no-dangling"}
	for _, rev := range drafts {
		args = append(args, rev.Commit)
	}
	g.Expect(gitserver.Git(t, cacheDir, args...)).NotTo(ContainSubstring("error"))
	reopened := open(t, Options{URL: url, CacheDir: cacheDir})
	for _, rev := range drafts {
		got, err := reopened.Read(ctx, rev)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Equal(want[rev.Commit])).To(BeTrue(), "draft %s", rev.Package)
	}
}

// TestRollUp: which of the packs, smallest first, are merged.
func TestRollUp(t *testing.T) {
	sized := func(sizes ...int64) []sizedPack {
		var out []sizedPack
		for _, s := range sizes {
			out = append(out, sizedPack{size: s})
		}
		return out
	}
	for _, c := range []struct {
		sizes []int64
		want  int
	}{
		{[]int64{1, 2, 4, 8, 16}, 0},       // already doubling
		{[]int64{1, 1, 1, 1}, 4},           // equal packs: all
		{[]int64{1, 1, 4, 8, 16}, 2},       // the two smallest make 2: 4 is twice that
		{[]int64{1, 1, 3, 8, 16}, 5},       // merged 2: 3 < 2*2, then 8 < 2*5, then 16 < 2*13: all
		{[]int64{10, 10, 10, 10, 1000}, 4}, // the large pack stays
		{[]int64{1, 2, 4, 8, 9}, 5},        // the progression breaks at the top: all
	} {
		if got := rollUp(sized(c.sizes...)); got != c.want {
			t.Errorf("rollUp(%v) = %d, want %d", c.sizes, got, c.want)
		}
	}
}

// A write that lost a race brings the mirror up to date itself: the
// writer's retry decides with what git has, without a fetch of its own,
// for draft writes and lifecycle moves alike.
func TestRepository_conflictFetches(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	url, _ := newRemote(t)
	a := open(t, Options{URL: url, CreateBranch: true})
	b := open(t, Options{URL: url, CreateBranch: true})
	d, err := a.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Contents: testPackage("app", 1)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.Fetch(ctx)).To(Succeed())
	moved, err := b.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Expected: d.Commit, Contents: testPackage("app", 2)})
	g.Expect(err).NotTo(HaveOccurred())

	_, err = a.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Expected: d.Commit, Contents: testPackage("app", 3)})
	g.Expect(errors.Is(err, ErrConflict)).To(BeTrue(), "%v", err)
	got, err := a.Get(ctx, "app", "ws", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Commit).To(Equal(moved.Commit), "the mirror has what git has after the lost race")

	// A lifecycle move against what the mirror had: the same.
	proposed, err := b.Propose(ctx, "app", "ws", moved.Commit, Proposal{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = a.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Expected: moved.Commit, Contents: testPackage("app", 4)})
	g.Expect(errors.Is(err, ErrConflict)).To(BeTrue(), "%v", err)
	got, err = a.Get(ctx, "app", "ws", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Lifecycle).To(Equal(porchv1alpha1.LifecycleProposed))
	g.Expect(got.Commit).To(Equal(proposed.Commit))
}

// TestRepository_trim: a repository that read nothing since the last Trim
// drops its pack indexes, one in use or just read keeps them, and what
// it holds reads back whole afterwards; Trim running all the time beside
// writers and readers loses nothing (run with -race).
func TestRepository_trim(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	url, _ := newRemote(t)
	// A cache far smaller than the drafts: reads go to the packs.
	r := open(t, Options{URL: url, CreateBranch: true, Objects: NewObjectCache(1)})
	var drafts []Revision
	for i := 0; i < maxSmallPacks+3; i++ {
		rev, err := r.WriteDraft(ctx, DraftWrite{Package: fmt.Sprintf("app-%d", i), Workspace: "ws", Contents: testPackage(fmt.Sprintf("app-%d", i), 3)})
		g.Expect(err).NotTo(HaveOccurred())
		drafts = append(drafts, rev)
	}
	readAll := func() {
		for i, rev := range drafts {
			got, err := r.Read(ctx, rev)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Equal(testPackage(fmt.Sprintf("app-%d", i), 3))).To(BeTrue(), "draft %d", i)
		}
	}
	readAll()
	g.Expect(r.Trim()).To(BeFalse(), "read since the last Trim: kept")
	g.Expect(r.Trim()).To(BeTrue(), "idle for a whole period: dropped")
	r.mu.Lock()
	g.Expect(r.Trim()).To(BeFalse(), "in use: left alone, without waiting")
	r.mu.Unlock()
	readAll()

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				r.Trim()
				r.Trim()
			}
		}
	}()
	for i := 0; i < 6; i++ {
		p := fmt.Sprintf("more-%d", i)
		rev, err := r.WriteDraft(ctx, DraftWrite{Package: p, Workspace: "ws", Contents: testPackage(p, 2)})
		g.Expect(err).NotTo(HaveOccurred())
		_, err = r.Propose(ctx, p, "ws", rev.Commit, Proposal{})
		g.Expect(err).NotTo(HaveOccurred())
		_, err = r.Publish(ctx, p, "ws", "", "", "")
		g.Expect(err).NotTo(HaveOccurred())
		readAll()
	}
	close(stop)
	wg.Wait()
	revs, err := r.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(summarize(revs)).To(ContainElement(HavePrefix("more-5 v1 ")))
}
