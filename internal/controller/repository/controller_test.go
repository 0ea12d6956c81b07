package repository_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

func kptPackage(name string) *pkg.Package {
	return pkg.New(map[string][]byte{
		"Kptfile":   []byte(fmt.Sprintf("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: %s\ninfo:\n  readinessGates:\n  - conditionType: example.com/reviewed\nstatus:\n  conditions:\n  - type: example.com/reviewed\n    status: \"False\"\n    reason: Pending\n", name)),
		"cm.yaml":   []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"),
		"README.md": []byte("# " + name + "\n"),
	})
}

// seed writes revisions into a fresh bare repository with the store: a
// published package (two revisions) and a draft.
func seed(t *testing.T, bare string) {
	t.Helper()
	ctx := context.Background()
	r, err := store.Open(ctx, store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, ws := range []string{"v1", "v2"} {
		d, err := r.WriteDraft(ctx, store.DraftWrite{Package: "team/app", Workspace: ws, Contents: kptPackage("app")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Propose(ctx, "team/app", ws, d.Commit, store.Proposal{}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Publish(ctx, "team/app", ws, "", "jane", ""); err != nil {
			t.Fatal(err)
		}
	}
	db := kptPackage("db")
	kf, _ := db.File("Kptfile")
	_ = db.SetFile("Kptfile", append(kf, []byte("  - type: config.porch.kpt.dev/packagevariant\n    status: \"True\"\n    reason: Done\n")...))
	if _, err := r.WriteDraft(ctx, store.DraftWrite{Package: "db", Workspace: "draft-1", Contents: db}); err != nil {
		t.Fatal(err)
	}
}

func newRepository(ns, name, url string, secret string) *configv1alpha1.Repository {
	r := &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{
			Deployment: true,
			Git:        &configv1alpha1.GitRepository{Repo: url},
			Sync:       &configv1alpha1.RepositorySync{Period: &metav1.Duration{Duration: time.Second}},
		},
	}
	if secret != "" {
		r.Spec.Git.SecretRef = &configv1alpha1.SecretRef{Name: secret}
	}
	return r
}

func readyCondition(g Gomega, key client.ObjectKey) *metav1.Condition {
	repo := &configv1alpha1.Repository{}
	g.Expect(k8sClient.Get(context.Background(), key, repo)).To(Succeed())
	return meta.FindStatusCondition(repo.Status.Conditions, configv1alpha1.ReadyCondition)
}

func listRevisions(g Gomega, ns string) map[string]porchv1alpha1.PackageRevision {
	list := &porchv1alpha1.PackageRevisionList{}
	g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	out := map[string]porchv1alpha1.PackageRevision{}
	for _, pr := range list.Items {
		out[pr.Name] = pr
	}
	return out
}

func TestRepository_projectsRevisions(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	bare := gitserver.InitBare(t, t.TempDir(), "deploy.git")
	seed(t, bare)

	repo := newRepository(ns, "deploy", "file://"+bare, "")
	g.Expect(k8sClient.Create(ctx, repo)).To(Succeed())
	key := client.ObjectKeyFromObject(repo)
	g.Eventually(func(g Gomega) {
		c := readyCondition(g, key)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(configv1alpha1.SyncedReason))
	}, timeout, interval).Should(Succeed())

	var revs map[string]porchv1alpha1.PackageRevision
	g.Eventually(func(g Gomega) {
		revs = listRevisions(g, ns)
		g.Expect(revs).To(HaveLen(3))
	}, timeout, interval).Should(Succeed())
	v2 := revs["deploy.team.app.v2"]
	g.Expect(v2.Spec).To(Equal(porchv1alpha1.PackageRevisionSpec{
		PackageName: "team/app", Repository: "deploy", WorkspaceName: "v2", Revision: 2, Lifecycle: porchv1alpha1.LifecyclePublished,
		ReadinessGates: v2.Spec.ReadinessGates,
	}))
	g.Expect(v2.Spec.ReadinessGates).To(HaveLen(1))
	g.Expect(v2.Labels).To(HaveKeyWithValue(porchv1alpha1.LatestRevisionLabel, "true"))
	g.Expect(v2.Labels).To(HaveKeyWithValue(porchv1alpha1.PackageLabel, "team.app"))
	g.Expect(v2.Status.PublishedBy).To(Equal("jane"))
	g.Expect(v2.Status.PublishTimestamp).NotTo(BeNil())
	g.Expect(v2.Status.Deployment).To(BeTrue())
	g.Expect(v2.Status.Commit).To(Equal(gitserver.Git(t, bare, "rev-parse", "team/app/v2^{commit}")))
	g.Expect(v2.Status.Conditions).To(ContainElement(HaveField("Type", "example.com/reviewed")), "Kptfile conditions are mirrored")
	g.Expect(v2.OwnerReferences).To(ContainElement(HaveField("Name", "deploy")))
	g.Expect(revs["deploy.team.app.v1"].Labels).NotTo(HaveKey(porchv1alpha1.LatestRevisionLabel), "only one revision is latest")
	g.Expect(revs["deploy.db.draft-1"].Spec.Lifecycle).To(Equal(porchv1alpha1.LifecycleDraft))
	// A draft shown first by the sync has the conditions a variant writes
	// to git (a proposal's gates would stay unset otherwise), and not the
	// others: a draft's Kptfile may carry copies from the revision it was
	// made from, and people set those on the object.
	g.Expect(revs["deploy.db.draft-1"].Status.Conditions).To(ContainElement(And(HaveField("Type", configv1alpha1.PackageVariantReadinessGate), HaveField("Status", porchv1alpha1.ConditionStatus("True")))))
	g.Expect(revs["deploy.db.draft-1"].Status.Conditions).NotTo(ContainElement(HaveField("Type", "example.com/reviewed")))

	repoObj := &configv1alpha1.Repository{}
	g.Expect(k8sClient.Get(ctx, key, repoObj)).To(Succeed())
	g.Expect(repoObj.Status.PackageCount).To(Equal(2), "team/app and db")
	g.Expect(repoObj.Status.RevisionCount).To(Equal(3))
	g.Expect(repoObj.Status.Commit).To(Equal(gitserver.Git(t, bare, "rev-parse", "main")))

	// Resyncs of an unchanged repository write nothing.
	versions := map[string]string{}
	for name, pr := range revs {
		versions[name] = pr.ResourceVersion
	}
	repoVersion := repoObj.ResourceVersion
	g.Consistently(func(g Gomega) {
		for name, pr := range listRevisions(g, ns) {
			g.Expect(pr.ResourceVersion).To(Equal(versions[name]), name)
		}
		r := &configv1alpha1.Repository{}
		g.Expect(k8sClient.Get(ctx, key, r)).To(Succeed())
		g.Expect(r.ResourceVersion).To(Equal(repoVersion))
	}, 3500*time.Millisecond, 500*time.Millisecond).Should(Succeed(), "several sync periods pass without writes")

	// A package published outside Scion appears; one deleted disappears.
	work := t.TempDir()
	gitserver.Git(t, work, "clone", "-q", bare, "w")
	w := filepath.Join(work, "w")
	g.Expect(kptPackage("web").WriteDir(filepath.Join(w, "web"))).To(Succeed())
	gitserver.Git(t, w, "add", "-A")
	gitserver.Git(t, w, "commit", "-q", "-m", "add web")
	gitserver.Git(t, w, "tag", "web/v1")
	gitserver.Git(t, w, "push", "-q", "origin", "HEAD:main", "web/v1")
	gitserver.Git(t, bare, "branch", "-D", "drafts/db/draft-1")
	g.Eventually(func(g Gomega) {
		revs := listRevisions(g, ns)
		g.Expect(revs).To(HaveKey("deploy.web.v1"))
		g.Expect(revs).NotTo(HaveKey("deploy.db.draft-1"))
		g.Expect(revs["deploy.web.v1"].Spec.Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished))
	}, timeout, interval).Should(Succeed())

	// Deleting the Repository removes its PackageRevisions, not git.
	g.Expect(k8sClient.Delete(ctx, repoObj)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(listRevisions(g, ns)).To(BeEmpty())
		err := k8sClient.Get(ctx, key, &configv1alpha1.Repository{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, bare, "tag")).To(ContainSubstring("team/app/v2"))
}

// privateServer serves a seeded repository private.git that needs the
// user scion with password.
func privateServer(t *testing.T, password string) *gitserver.Server {
	t.Helper()
	root := t.TempDir()
	seed(t, gitserver.InitBare(t, root, "private.git"))
	srv := gitserver.NewServer(t, root)
	srv.Username, srv.Password = "scion", password
	return srv
}

func TestRepository_credentials(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	srv := privateServer(t, "right-password")

	// The Secret does not exist yet.
	repo := newRepository(ns, "private", srv.URLFor("private.git"), "git-creds")
	g.Expect(k8sClient.Create(ctx, repo)).To(Succeed())
	key := client.ObjectKeyFromObject(repo)
	g.Eventually(func(g Gomega) {
		c := readyCondition(g, key)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(configv1alpha1.SecretErrorReason))
		g.Expect(c.Message).To(ContainSubstring("secret " + ns + "/git-creds named by spec.git.secretRef does not exist"))
	}, timeout, interval).Should(Succeed())

	// Wrong password: Ready=False naming the Secret, never the password.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "git-creds", Namespace: ns},
		Data: map[string][]byte{"username": []byte("scion"), "password": []byte("wrong-password")}}
	g.Expect(k8sClient.Create(ctx, secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := readyCondition(g, key)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(configv1alpha1.AuthenticationFailedReason))
		g.Expect(c.Message).To(ContainSubstring("check the credentials in secret " + ns + "/git-creds"))
		g.Expect(c.Message).NotTo(ContainSubstring("wrong-password"))
	}, timeout, interval).Should(Succeed())

	// Fixing the Secret recovers without touching the Repository.
	secret.Data["password"] = []byte("right-password")
	g.Expect(k8sClient.Update(ctx, secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := readyCondition(g, key)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(listRevisions(g, ns)).To(HaveLen(3))
	}, timeout, interval).Should(Succeed())
}

// Credentials in the URL work, draw a Warning event, and show in no
// status or event.
func TestRepository_credentialsInURL(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	srv := privateServer(t, "in-url-s3cret")
	url := strings.Replace(srv.URLFor("private.git"), "http://", "http://scion:in-url-s3cret@", 1)
	repo := newRepository(ns, "private", url, "")
	g.Expect(k8sClient.Create(ctx, repo)).To(Succeed())
	key := client.ObjectKeyFromObject(repo)
	g.Eventually(func(g Gomega) {
		c := readyCondition(g, key)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		events := &eventsv1.EventList{}
		g.Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
		var warned bool
		for _, e := range events.Items {
			g.Expect(e.Note).NotTo(ContainSubstring("in-url-s3cret"))
			warned = warned || (e.Reason == configv1alpha1.CredentialsInURLReason && e.Type == corev1.EventTypeWarning)
		}
		g.Expect(warned).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	got := &configv1alpha1.Repository{}
	g.Expect(k8sClient.Get(ctx, key, got)).To(Succeed())
	for _, c := range got.Status.Conditions {
		g.Expect(c.Message).NotTo(ContainSubstring("in-url-s3cret"))
	}
}

func TestRepository_missingBranch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	bare := gitserver.InitBare(t, t.TempDir(), "empty.git")
	repo := newRepository(ns, "empty", "file://"+bare, "")
	g.Expect(k8sClient.Create(ctx, repo)).To(Succeed())
	key := client.ObjectKeyFromObject(repo)
	g.Eventually(func(g Gomega) {
		c := readyCondition(g, key)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(configv1alpha1.BranchNotFoundReason))
		g.Expect(c.Message).To(ContainSubstring(`branch "main" does not exist`))
	}, timeout, interval).Should(Succeed())

	// Setting createBranch creates it.
	g.Expect(k8sClient.Get(ctx, key, repo)).To(Succeed())
	patch := client.MergeFrom(repo.DeepCopy())
	repo.Spec.Git.CreateBranch = true
	g.Expect(k8sClient.Patch(ctx, repo, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(readyCondition(g, key).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, bare, "log", "--format=%s", "main")).To(Equal("Initialize branch main"))
}

// revisionHistoryLimit deletes the published revisions beyond the limit,
// except the latest, one a floating tag points at and one a
// PackageVariant names; their objects go with them.
func TestRepository_revisionHistoryLimit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	bare := gitserver.InitBare(t, t.TempDir(), "catalog.git")
	gitserver.SeedRevisions(t, bare, 1, 5, 1) // pkg-0000 v1..v5 and a draft
	st, err := store.Open(ctx, store.Options{URL: "file://" + bare, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = st.SetFloatingTag(ctx, "pkg-0000", "stable", 3)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(k8sClient.Create(ctx, &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: "pinned", Namespace: ns}, Spec: configv1alpha1.PackageVariantSpec{
		Upstream:   &configv1alpha1.Upstream{Repo: "catalog", Package: "pkg-0000", Revision: "v2"},
		Downstream: &configv1alpha1.Downstream{Repo: "nowhere", Package: "app"},
	}})).To(Succeed())
	repo := newRepository(ns, "catalog", "file://"+bare, "")
	repo.Spec.Deployment = false
	repo.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	g.Expect(k8sClient.Create(ctx, repo)).To(Succeed())
	published := func(g Gomega) []int {
		var out []int
		for _, pr := range listRevisions(g, ns) {
			if pr.Spec.Lifecycle == porchv1alpha1.LifecyclePublished {
				out = append(out, pr.Spec.Revision)
			}
		}
		return out
	}
	g.Eventually(func(g Gomega) {
		g.Expect(published(g)).To(ConsistOf(2, 3, 5), "v1 and v4 deleted; v2 (a variant's), v3 (stable), v5 (the latest) kept")
	}, timeout, interval).Should(Succeed())
	g.Expect(st.Fetch(ctx)).To(Succeed())
	_, err = st.Get(ctx, "pkg-0000", "", 1)
	g.Expect(err).To(MatchError(store.ErrNotFound), "gone from git")
	_, err = st.Get(ctx, "pkg-0000", "", 5)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		events := &eventsv1.EventList{}
		g.Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
		var notes []string
		for _, e := range events.Items {
			if e.Reason == "HistoryPruned" {
				notes = append(notes, e.Note)
			}
		}
		g.Expect(notes).To(ContainElement("revisionHistoryLimit 1: deleted pkg-0000 v1, pkg-0000 v4"))
	}, timeout, interval).Should(Succeed())
}
