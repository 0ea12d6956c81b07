package packagevariant_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/engine"
	"github.com/scion-dev/scion/internal/metrics"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/variant"
)

func appPackage(replicas string) *pkg.Package {
	return pkg.New(map[string][]byte{
		"Kptfile":       []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"),
		"ns.yaml":       []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: example\n"),
		"app.yaml":      []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: example\nspec:\n  replicas: " + replicas + "\n"),
		"settings.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  annotations:\n    kpt.dev/config-injection: required\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  color: placeholder\n"),
	})
}

// publish writes a published revision of app into the catalog with the
// store, as a blueprint author would.
func publish(t testing.TB, bare, ws string, p *pkg.Package) {
	t.Helper()
	ctx := context.Background()
	r, err := store.Open(ctx, store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: ws, Contents: p})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Propose(ctx, "app", ws, d.Commit, store.Proposal{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Publish(ctx, "app", ws, "", "author", ""); err != nil {
		t.Fatal(err)
	}
}

func setup(t *testing.T) (ns, catalog, cluster string) {
	t.Helper()
	ctx := context.Background()
	ns = env.Namespace(t, "pv")
	root := t.TempDir()
	catalog = gitserver.InitBare(t, root, "catalog.git")
	cluster = gitserver.InitBare(t, root, "cluster.git")
	publish(t, catalog, "v1", appPackage("1"))
	for name, bare := range map[string]string{"catalog": catalog, "cluster-01": cluster} {
		repo := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: configv1alpha1.RepositorySpec{Deployment: name == "cluster-01", Git: &configv1alpha1.GitRepository{Repo: "file://" + bare, CreateBranch: true}}}
		if err := k8sClient.Create(ctx, repo); err != nil {
			t.Fatal(err)
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "useast1-settings", Namespace: ns}, Data: map[string]string{"color": "green"}}
	if err := k8sClient.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	return ns, catalog, cluster
}

func newVariant(ns string, policy configv1alpha1.DeletionPolicy) *configv1alpha1.PackageVariant {
	return &configv1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant.a", Namespace: ns},
		Spec: configv1alpha1.PackageVariantSpec{
			Upstream:       &configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "1"},
			Downstream:     &configv1alpha1.Downstream{Repo: "cluster-01", Package: "tenant-a"},
			DeletionPolicy: policy,
			Labels:         map[string]string{"team": "a"},
			PackageContext: &configv1alpha1.PackageContext{Data: map[string]string{"region": "useast1"}},
			Pipeline: &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{
				{Image: "remove-resources", Name: "drop-ns", Selectors: []kptfilev1.Selector{{Kind: "Namespace"}}},
				{Image: "gcr.io/kpt-fn/set-namespace:v0.4", ConfigMap: map[string]string{"namespace": "tenant-a"}},
			}},
			Injectors: []configv1alpha1.InjectionSelector{{Name: "useast1-settings"}},
		},
	}
}

func ready(g Gomega, pv *configv1alpha1.PackageVariant) *configv1alpha1.PackageVariant {
	got := &configv1alpha1.PackageVariant{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pv), got)).To(Succeed())
	g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	c := meta.FindStatusCondition(got.Status.Conditions, configv1alpha1.ReadyCondition)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	return got
}

// stalled reads pv and expects it Stalled with reason.
func stalled(g Gomega, pv *configv1alpha1.PackageVariant, reason string) (*configv1alpha1.PackageVariant, *metav1.Condition) {
	got := &configv1alpha1.PackageVariant{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pv), got)).To(Succeed())
	c := meta.FindStatusCondition(got.Status.Conditions, configv1alpha1.StalledCondition)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(c.Reason).To(Equal(reason))
	return got, c
}

func drafts(t *testing.T, bare string) []string {
	return strings.Fields(gitserver.Git(t, bare, "for-each-ref", "--format=%(refname:short)", "refs/heads/drafts/"))
}

func TestPackageVariant(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, catalog, cluster := setup(t)
	pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
	g.Expect(k8sClient.Create(ctx, pv)).To(Succeed())

	var got *configv1alpha1.PackageVariant
	g.Eventually(func(g Gomega) { got = ready(g, pv) }, timeout, interval).Should(Succeed())
	for _, c := range []string{configv1alpha1.ValidCondition, configv1alpha1.ContextInjectedCondition, configv1alpha1.ConfigInjectedCondition, configv1alpha1.DownstreamEnsuredCondition} {
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, c)).To(BeTrue(), c)
	}
	g.Expect(got.Status.DownstreamTargets).To(HaveLen(1))
	g.Expect(got.Status.DownstreamTargets[0].Name).To(Equal("cluster-01.tenant-a.packagevariant-1"))

	// One draft, in one commit, recording the variant; mutated as asked.
	g.Expect(drafts(t, cluster)).To(Equal([]string{"drafts/tenant-a/packagevariant-1"}))
	ref := "drafts/tenant-a/packagevariant-1"
	g.Expect(gitserver.Git(t, cluster, "log", "--format=%s", "main.."+ref)).To(Equal("Create from PackageVariant tenant.a"))
	g.Expect(gitserver.Git(t, cluster, "log", "-1", "--format=%B", ref)).To(ContainSubstring(store.TrailerPackageVariantUID + ": " + string(got.UID)))
	g.Expect(gitserver.Git(t, cluster, "ls-tree", "--name-only", ref, "tenant-a/")).NotTo(ContainSubstring("ns.yaml"))
	g.Expect(gitserver.Git(t, cluster, "show", ref+":tenant-a/app.yaml")).To(ContainSubstring("namespace: tenant-a"))
	g.Expect(gitserver.Git(t, cluster, "show", ref+":tenant-a/settings.yaml")).To(ContainSubstring("color: green"))
	g.Expect(gitserver.Git(t, cluster, "show", ref+":tenant-a/package-context.yaml")).To(ContainSubstring("region: useast1"))
	kf := gitserver.Git(t, cluster, "show", ref+":tenant-a/Kptfile")
	g.Expect(kf).To(ContainSubstring("name: PackageVariant.tenant.a.drop-ns.0"))
	g.Expect(kf).To(ContainSubstring("conditionType: config.porch.kpt.dev/packagevariant"))

	pr := &porchv1alpha1.PackageRevision{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-01.tenant-a.packagevariant-1"}, pr)).To(Succeed())
		g.Expect(metav1.IsControlledBy(pr, got)).To(BeTrue())
		g.Expect(pr.Labels).To(HaveKeyWithValue("team", "a"), "spec.labels at creation")
		g.Expect(pr.Labels).To(HaveKeyWithValue(configv1alpha1.PackageVariantLabel, "tenant.a"))
		// The variant's readiness gate is on the object, and met: approval
		// automation may act.
		g.Expect(pr.Spec.ReadinessGates).To(ContainElement(kptfilev1.ReadinessGate{ConditionType: configv1alpha1.PackageVariantReadinessGate}))
		g.Expect(pr.Status.Conditions).To(ContainElement(And(
			HaveField("Type", configv1alpha1.PackageVariantReadinessGate), HaveField("Status", porchv1alpha1.ConditionStatus("True")))))
	}, timeout, interval).Should(Succeed())

	// A change of the variant that does not change the package writes nothing.
	head := gitserver.Git(t, cluster, "rev-parse", ref)
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Labels = map[string]string{"team": "b"}
	g.Expect(k8sClient.Patch(ctx, got, patch)).To(Succeed())
	g.Eventually(func(g Gomega) { ready(g, pv) }, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, cluster, "rev-parse", ref)).To(Equal(head))
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pr), pr)).To(Succeed())
	g.Expect(pr.Labels).To(HaveKeyWithValue("team", "a"), "labels are set at creation only")

	// Someone edits the draft; the upstream moves to v2: the draft is
	// 3-way updated in place and keeps the edit.
	r, err := store.Open(ctx, store.Options{URL: "file://" + cluster, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	d, err := r.Get(ctx, "tenant-a", "packagevariant-1", 0)
	g.Expect(err).NotTo(HaveOccurred())
	content, err := r.Read(ctx, d)
	g.Expect(err).NotTo(HaveOccurred())
	app, _ := content.File("app.yaml")
	g.Expect(content.SetFile("app.yaml", []byte(strings.Replace(string(app), "spec:\n", "spec:\n  paused: true\n", 1)))).To(Succeed())
	_, err = r.WriteDraft(ctx, store.DraftWrite{Package: "tenant-a", Workspace: "packagevariant-1", Expected: d.Commit, Contents: content, Trailers: d.Trailers, Message: "pause"})
	g.Expect(err).NotTo(HaveOccurred())
	publish(t, catalog, "v2", appPackage("3"))
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
	patch = client.MergeFrom(got.DeepCopy())
	got.Spec.Upstream.Revision = "2"
	g.Expect(k8sClient.Patch(ctx, got, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		ready(g, pv)
		g.Expect(gitserver.Git(t, cluster, "show", ref+":tenant-a/Kptfile")).To(ContainSubstring("ref: app/v2"))
	}, timeout, interval).Should(Succeed())
	updated := gitserver.Git(t, cluster, "show", ref+":tenant-a/app.yaml")
	g.Expect(updated).To(ContainSubstring("replicas: 3"))
	g.Expect(updated).To(ContainSubstring("paused: true"), "the downstream edit survives")
	g.Expect(updated).To(ContainSubstring("namespace: tenant-a"))
	g.Expect(drafts(t, cluster)).To(HaveLen(1), "still exactly one draft")

	// Deleting the variant (policy delete) keeps the draft, which holds
	// someone else's edit (TestPackageVariant_deleteFailure deletes one
	// that does not).
	g.Expect(k8sClient.Delete(ctx, got)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), &configv1alpha1.PackageVariant{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	g.Expect(drafts(t, cluster)).To(Equal([]string{ref}))
}

func TestPackageVariant_orphan(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, cluster := setup(t)
	pv := newVariant(ns, configv1alpha1.DeletionPolicyOrphan)
	createReady(t, pv)
	g.Expect(k8sClient.Delete(ctx, pv)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), &configv1alpha1.PackageVariant{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-01.tenant-a.packagevariant-1"}, pr)).To(Succeed())
		g.Expect(metav1.GetControllerOf(pr)).To(BeNil(), "orphaned")
	}, timeout, interval).Should(Succeed())
	g.Expect(drafts(t, cluster)).To(HaveLen(1), "the draft stays")
}

func TestPackageVariant_invalidAndMissingUpstream(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, _ := setup(t)
	pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
	pv.Spec.Upstream.Revision = "7"
	g.Expect(k8sClient.Create(ctx, pv)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &configv1alpha1.PackageVariant{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
		c := meta.FindStatusCondition(got.Status.Conditions, configv1alpha1.StalledCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal("UpstreamNotFound"))
		g.Expect(c.Message).To(Equal("spec.upstream.revision: Repository " + pv.Spec.Upstream.Repo + " has no revision 7 of package app (published revisions: 1)"))
	}, timeout, interval).Should(Succeed())
}

// A label the PackageRevision object cannot carry (a 70,000-character
// value) stalls the variant naming the field, before anything is written
// to git, with one short message.
func TestPackageVariant_labelRefusedBeforeWrite(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, cluster := setup(t)
	pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
	pv.Spec.Labels = map[string]string{"team": strings.Repeat("x", 70000)}
	g.Expect(k8sClient.Create(ctx, pv)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got, c := stalled(g, pv, configv1alpha1.ValidationErrorReason)
		g.Expect(c.Message).To(ContainSubstring("spec.labels: Invalid value:"))
		g.Expect(c.Message).To(ContainSubstring("(69900 bytes more)"))
		g.Expect(len(c.Message)).To(BeNumerically("<", 500))
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	}, timeout, interval).Should(Succeed())
	g.Expect(drafts(t, cluster)).To(BeEmpty(), "nothing was written to git")
}

// One variant per package: a second variant whose downstream is a package
// another variant has is stalled naming it, and writes nothing; when the
// first goes, the second takes the package.
func TestPackageVariant_oneVariantPerPackage(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, cluster := setup(t)
	first := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
	createReady(t, first)
	head := gitserver.Git(t, cluster, "rev-parse", "drafts/tenant-a/packagevariant-1")

	second := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
	second.Name = "tenant.a-again"
	second.Spec.Upstream.Package = "other" // what would be recorded in the Kptfile
	second.Spec.PackageContext = nil
	g.Expect(k8sClient.Create(ctx, second)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got, c := stalled(g, second, configv1alpha1.DownstreamOwnedReason)
		g.Expect(c.Message).To(Equal("spec.downstream: package tenant-a of repository cluster-01 is the downstream of PackageVariant tenant.a; one variant per package: change this variant's downstream, or delete one of them"))
		g.Expect(meta.IsStatusConditionFalse(got.Status.Conditions, configv1alpha1.ReadyCondition)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	g.Expect(drafts(t, cluster)).To(HaveLen(1))
	g.Expect(gitserver.Git(t, cluster, "rev-parse", "drafts/tenant-a/packagevariant-1")).To(Equal(head), "nothing written by the second")
	ready(g, first)

	// The first goes (its draft with it): the second takes the package.
	g.Expect(k8sClient.Delete(ctx, first)).To(Succeed())
	second.Spec.Upstream.Package = "app"
	g.Eventually(func(g Gomega) {
		cur := &configv1alpha1.PackageVariant{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(second), cur)).To(Succeed())
		if cur.Spec.Upstream.Package != "app" {
			patch := client.MergeFrom(cur.DeepCopy())
			cur.Spec.Upstream.Package = "app"
			g.Expect(k8sClient.Patch(ctx, cur, patch)).To(Succeed())
		}
		ready(g, second)
	}, timeout, interval).Should(Succeed())
	g.Expect(drafts(t, cluster)).To(HaveLen(1), "the second's own draft")
}

func TestPackageVariant_floatingTag(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, catalog, cluster := setup(t)
	r, err := store.Open(ctx, store.Options{URL: "file://" + catalog, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.SetFloatingTag(ctx, "app", "stable", 1)).To(Equal(0))

	pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
	pv.Spec.Upstream.Revision, pv.Spec.Upstream.Tag = "", "stable"
	createReady(t, pv)
	ref := "drafts/tenant-a/packagevariant-1"
	g.Expect(gitserver.Git(t, cluster, "show", ref+":tenant-a/app.yaml")).To(ContainSubstring("replicas: 1"))

	// The upstream author moves the tag; the variant follows without being touched.
	publish(t, catalog, "v2", appPackage("5"))
	g.Expect(r.Fetch(ctx)).To(Succeed())
	g.Expect(r.SetFloatingTag(ctx, "app", "stable", 2)).To(Equal(1))
	g.Eventually(func(g Gomega) {
		g.Expect(gitserver.Git(t, cluster, "show", ref+":tenant-a/app.yaml")).To(ContainSubstring("replicas: 5"))
	}, timeout, interval).Should(Succeed())
	g.Expect(drafts(t, cluster)).To(HaveLen(1))
}

func TestPackageVariant_adoption(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, cluster := setup(t)
	// A draft somebody made by hand, with the package context the variant edits.
	r, err := store.Open(ctx, store.Options{URL: "file://" + cluster, CreateBranch: true, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	manual := appPackage("1")
	g.Expect(manual.SetFile("package-context.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  name: tenant-a\n"))).To(Succeed())
	_, err = r.WriteDraft(ctx, store.DraftWrite{Package: "tenant-a", Workspace: "manual", Contents: manual})
	g.Expect(err).NotTo(HaveOccurred())

	// adoptNone (the default) leaves it alone and makes its own draft.
	pv := newVariant(ns, configv1alpha1.DeletionPolicyOrphan)
	createReady(t, pv)
	g.Expect(drafts(t, cluster)).To(ConsistOf("drafts/tenant-a/manual", "drafts/tenant-a/packagevariant-1"))
	g.Expect(k8sClient.Delete(ctx, pv)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), &configv1alpha1.PackageVariant{}))).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	gitserver.Git(t, cluster, "branch", "-D", "drafts/tenant-a/packagevariant-1")

	// adoptExisting takes the manual draft over and updates it.
	pv2 := newVariant(ns, configv1alpha1.DeletionPolicyOrphan)
	pv2.Name = "adopter"
	pv2.Spec.AdoptionPolicy = configv1alpha1.AdoptionPolicyAdoptExisting
	g.Expect(k8sClient.Create(ctx, pv2)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := ready(g, pv2)
		g.Expect(gitserver.Git(t, cluster, "log", "-1", "--format=%B", "drafts/tenant-a/manual")).To(ContainSubstring(store.TrailerPackageVariantUID + ": " + string(got.UID)))
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, cluster, "show", "drafts/tenant-a/manual:tenant-a/app.yaml")).To(ContainSubstring("namespace: tenant-a"))
	g.Expect(drafts(t, cluster)).To(Equal([]string{"drafts/tenant-a/manual"}))
}

// TestPackageVariant_injectedObjectEdited: editing the in-cluster object a
// variant injected updates the draft, without touching the variant.
func TestPackageVariant_injectedObjectEdited(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, cluster := setup(t)
	pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
	createReady(t, pv)
	ref := "drafts/tenant-a/packagevariant-1"
	g.Expect(gitserver.Git(t, cluster, "show", ref+":tenant-a/settings.yaml")).To(ContainSubstring("color: green"))

	cm := &corev1.ConfigMap{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "useast1-settings"}, cm)).To(Succeed())
	cm.Data["color"] = "purple"
	g.Expect(k8sClient.Update(ctx, cm)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(gitserver.Git(t, cluster, "show", ref+":tenant-a/settings.yaml")).To(ContainSubstring("color: purple"))
	}, timeout, interval).Should(Succeed())
	got := &configv1alpha1.PackageVariant{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
	g.Expect(got.Generation).To(Equal(int64(1)), "the variant itself was not touched")
}

// TestPackageVariant_crashAfterGitWrite: a draft the variant wrote to git
// before a crash (no PackageRevision object yet, nothing in the
// controller's memory) is found through its git trailer: no second draft.
func TestPackageVariant_crashAfterGitWrite(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "pv")
	root := t.TempDir()
	catalog := gitserver.InitBare(t, root, "catalog.git")
	cluster := gitserver.InitBare(t, root, "cluster.git")
	publish(t, catalog, "v1", appPackage("1"))
	g.Expect(k8sClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "useast1-settings", Namespace: ns}, Data: map[string]string{"color": "green"}})).To(Succeed())
	g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "catalog", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file://" + catalog}}})).To(Succeed())

	// The variant exists before its downstream Repository, so it waits.
	pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
	g.Expect(k8sClient.Create(ctx, pv)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &configv1alpha1.PackageVariant{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
		g.Expect(meta.FindStatusCondition(got.Status.Conditions, configv1alpha1.ReadyCondition)).NotTo(BeNil())
		g.Expect(meta.FindStatusCondition(got.Status.Conditions, configv1alpha1.ReadyCondition).Reason).To(Equal(porchv1alpha1.RepositoryNotFoundReason))
	}, timeout, interval).Should(Succeed())
	uid := func() string {
		got := &configv1alpha1.PackageVariant{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
		return string(got.UID)
	}()

	// What a controller that crashed right after its git write left behind.
	r, err := store.Open(ctx, store.Options{URL: "file://" + cluster, CreateBranch: true, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	leftover, err := engine.Clone(appPackage("1"), engine.Origin{Repo: "file://" + catalog, Directory: "app", Ref: "app/v1"}, engine.CloneOptions{PackagePath: "tenant-a", ForDeployment: true})
	g.Expect(err).NotTo(HaveOccurred())
	left, err := r.WriteDraft(ctx, store.DraftWrite{Package: "tenant-a", Workspace: "packagevariant-1", Contents: leftover,
		Trailers: store.Trailers{store.TrailerPackageVariantUID: uid, store.TrailerPackageVariant: ns + "/tenant.a"}})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "cluster-01", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: &configv1alpha1.GitRepository{Repo: "file://" + cluster}}})).To(Succeed())
	g.Eventually(func(g Gomega) { ready(g, pv) }, timeout, interval).Should(Succeed())
	g.Expect(drafts(t, cluster)).To(Equal([]string{"drafts/tenant-a/packagevariant-1"}), "the draft is found, not duplicated")
	g.Expect(gitserver.Git(t, cluster, "rev-list", "--count", left.Commit+"..drafts/tenant-a/packagevariant-1")).To(Equal("1"), "the variant finished its work on that draft with one commit")
	pr := &porchv1alpha1.PackageRevision{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-01.tenant-a.packagevariant-1"}, pr)).To(Succeed())
		g.Expect(metav1.GetControllerOf(pr)).NotTo(BeNil())
		g.Expect(metav1.GetControllerOf(pr).UID).To(BeEquivalentTo(uid))
	}, timeout, interval).Should(Succeed())
}

// TestPackageVariant_chain: two variants chain their pipeline functions
// into one package (catalog -> mid -> cluster).
func TestPackageVariant_chain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, cluster := setup(t)
	mid := gitserver.InitBare(t, t.TempDir(), "mid.git")
	g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "mid", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file://" + mid, CreateBranch: true}}})).To(Succeed())

	first := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: "first", Namespace: ns}, Spec: configv1alpha1.PackageVariantSpec{
		Upstream:   &configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "1"},
		Downstream: &configv1alpha1.Downstream{Repo: "mid", Package: "app-mid"},
		Pipeline:   &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{{Image: "set-labels", ConfigMap: map[string]string{"layer": "mid"}}}},
		Injectors:  []configv1alpha1.InjectionSelector{{Name: "useast1-settings"}},
	}}
	createReady(t, first)

	// Publish the first variant's draft.
	name := client.ObjectKey{Namespace: ns, Name: "mid.app-mid.packagevariant-1"}
	for _, lc := range []porchv1alpha1.Lifecycle{porchv1alpha1.LifecycleProposed, porchv1alpha1.LifecyclePublished} {
		g.Eventually(func(g Gomega) {
			pr := &porchv1alpha1.PackageRevision{}
			g.Expect(k8sClient.Get(ctx, name, pr)).To(Succeed())
			if pr.Spec.Lifecycle != lc {
				patch := client.MergeFrom(pr.DeepCopy())
				pr.Spec.Lifecycle = lc
				g.Expect(k8sClient.Patch(ctx, pr, patch)).To(Succeed())
			}
			g.Expect(pr.Labels).To(HaveKeyWithValue(porchv1alpha1.LifecycleLabel, string(lc)))
		}, timeout, interval).Should(Succeed())
	}

	second := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: "second", Namespace: ns}, Spec: configv1alpha1.PackageVariantSpec{
		Upstream:   &configv1alpha1.Upstream{Repo: "mid", Package: "app-mid", Revision: "1"},
		Downstream: &configv1alpha1.Downstream{Repo: "cluster-01", Package: "tenant-b"},
		Pipeline:   &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{{Image: "set-annotations", Name: "owner", ConfigMap: map[string]string{"owner": "tenant-b"}}}},
		Injectors:  []configv1alpha1.InjectionSelector{{Name: "useast1-settings"}},
	}}
	createReady(t, second)
	ref := "drafts/tenant-b/packagevariant-1"
	kf := gitserver.Git(t, cluster, "show", ref+":tenant-b/Kptfile")
	iSecond, iFirst := strings.Index(kf, "name: PackageVariant.second.owner.0"), strings.Index(kf, "name: PackageVariant.first.0")
	g.Expect(iSecond).To(BeNumerically(">", 0), kf)
	g.Expect(iFirst).To(BeNumerically(">", iSecond), "the second variant's functions come first, the first's stay")
	app := gitserver.Git(t, cluster, "show", ref+":tenant-b/app.yaml")
	g.Expect(app).To(ContainSubstring("layer: mid"))
	g.Expect(app).To(ContainSubstring("owner: tenant-b"))
}

// TestPackageVariant_deleteFailure: when git refuses to delete the
// variant's draft, the variant keeps its finalizer and says why; once git
// accepts, it goes.
func TestPackageVariant_deleteFailure(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, cluster := setup(t)
	pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
	createReady(t, pv)

	hook := cluster + "/hooks/pre-receive"
	g.Expect(os.WriteFile(hook, []byte("#!/bin/sh\necho 'deletions are frozen' >&2\nexit 1\n"), 0o755)).To(Succeed())
	g.Expect(k8sClient.Delete(ctx, pv)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &configv1alpha1.PackageVariant{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
		c := meta.FindStatusCondition(got.Status.Conditions, configv1alpha1.ReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal("Deleting"))
		g.Expect(c.Message).To(ContainSubstring("cluster-01.tenant-a.packagevariant-1: removing the revision from git"))
	}, timeout, interval).Should(Succeed())
	g.Expect(drafts(t, cluster)).To(HaveLen(1), "nothing is lost")

	g.Expect(os.Remove(hook)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), &configv1alpha1.PackageVariant{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		g.Expect(drafts(t, cluster)).To(BeEmpty())
	}, timeout, interval).Should(Succeed())
}

// createReady creates a variant and waits until it is Ready.
func createReady(t *testing.T, pv *configv1alpha1.PackageVariant) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(k8sClient.Create(context.Background(), pv)).To(Succeed())
	g.Eventually(func(g Gomega) { ready(g, pv) }, timeout, interval).Should(Succeed())
}

// A variant moved into this replica's shard is reconciled here, though a
// label change moves no generation; one deleted while it was another
// shard's (whose replica is not running) and moved here is deleted here,
// its draft with it, instead of keeping its finalizer for good.
func TestPackageVariant_movedIntoTheShard(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, cluster := setup(t)
	pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
	pv.Labels = map[string]string{configv1alpha1.ShardLabel: "nobody"} // no replica of this suite
	g.Expect(k8sClient.Create(ctx, pv)).To(Succeed())
	move := func(shard string) {
		t.Helper()
		cur := &configv1alpha1.PackageVariant{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), cur)).To(Succeed())
		patch := client.MergeFrom(cur.DeepCopy())
		if shard == "" {
			delete(cur.Labels, configv1alpha1.ShardLabel)
		} else {
			cur.Labels = map[string]string{configv1alpha1.ShardLabel: shard}
		}
		g.Expect(k8sClient.Patch(ctx, cur, patch)).To(Succeed())
	}

	move("")
	g.Eventually(func(g Gomega) { ready(g, pv) }, timeout, interval).Should(Succeed())
	g.Expect(drafts(t, cluster)).To(HaveLen(1))

	move("nobody")
	g.Expect(k8sClient.Delete(ctx, pv)).To(Succeed())
	got := &configv1alpha1.PackageVariant{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
	g.Expect(got.DeletionTimestamp).NotTo(BeNil(), "held by its finalizer: its shard's replica is not running")
	move("")
	g.Eventually(func(g Gomega) {
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), &configv1alpha1.PackageVariant{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		g.Expect(drafts(t, cluster)).To(BeEmpty())
	}, timeout, interval).Should(Succeed())
}

// A pipeline function the controller's policy refuses stalls the variant
// before anything is written to git: an image an administrator did not
// allow (--function-images; none here, as by default), refused before
// looking for a container runtime, naming the image and the flag; an exec
// function (the controller runs none), naming the Kptfile's entry.
func TestPackageVariant_functionRefusedBeforeWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   kptfilev1.Function
		want string
	}{
		{"image not allowed", kptfilev1.Function{Image: "evil.example.com/rm-rf:latest", ConfigMap: map[string]string{"path": "/"}},
			"image evil.example.com/rm-rf:latest is not a builtin and is not allowed to run as a container here: an administrator lets images run with --function-images"},
		{"exec", kptfilev1.Function{Exec: "/bin/sh"}, "Kptfile: pipeline.mutators[0] (exec: /bin/sh): exec functions are disabled; nothing is written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns, _, cluster := setup(t)
			pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
			pv.Spec.Pipeline.Mutators = append([]kptfilev1.Function{tc.fn}, pv.Spec.Pipeline.Mutators...)
			g.Expect(k8sClient.Create(ctx, pv)).To(Succeed())
			g.Eventually(func(g Gomega) {
				_, c := stalled(g, pv, variant.FunctionRefusedReason)
				g.Expect(c.Message).To(ContainSubstring(tc.want))
			}, timeout, interval).Should(Succeed())
			g.Expect(drafts(t, cluster)).To(BeEmpty(), "nothing was written to git")
		})
	}
}

// A pipeline that fails to render stalls the variant with the function's
// message (the draft shows the results); fixing the spec recovers it.
func TestPackageVariant_renderFailureStalls(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, _ := setup(t)
	pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
	pv.Spec.Pipeline.Mutators[1].ConfigMap = nil // set-namespace without its namespace
	g.Expect(k8sClient.Create(ctx, pv)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &configv1alpha1.PackageVariant{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
		stalled := meta.FindStatusCondition(got.Status.Conditions, configv1alpha1.StalledCondition)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(stalled.Reason).To(Equal("RenderFailed"))
		g.Expect(stalled.Message).To(ContainSubstring("set-namespace: functionConfig data.namespace is required"))
		g.Expect(meta.IsStatusConditionFalse(got.Status.Conditions, configv1alpha1.ReadyCondition)).To(BeTrue())
		g.Expect(meta.IsStatusConditionFalse(got.Status.Conditions, configv1alpha1.ReconcilingCondition)).To(BeTrue(), "nothing is retried")
	}, timeout, interval).Should(Succeed())

	got := &configv1alpha1.PackageVariant{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Pipeline.Mutators[1].ConfigMap = map[string]string{"namespace": "tenant-a"}
	g.Expect(k8sClient.Patch(ctx, got, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		ready(g, pv)
		g.Expect(meta.IsStatusConditionFalse(ready(g, pv).Status.Conditions, configv1alpha1.StalledCondition)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
}

func setLifecycle(g Gomega, ns, name string, lc porchv1alpha1.Lifecycle) {
	pr := &porchv1alpha1.PackageRevision{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pr)).To(Succeed())
		patch := client.MergeFromWithOptions(pr.DeepCopy(), client.MergeFromWithOptimisticLock{})
		pr.Spec.Lifecycle = lc
		g.Expect(k8sClient.Patch(context.Background(), pr, patch)).To(Succeed())
	}, timeout, interval).Should(Succeed())
}

// A variant whose revision is Proposed writes nothing: it says what waits,
// and once the proposal is published, its next draft starts from the
// published revision, keeping a person's edit. One draft, always.
func TestPackageVariant_proposedRevision(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, cluster := setup(t)
	pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
	createReady(t, pv)
	const name = "cluster-01.tenant-a.packagevariant-1"

	// A person edits the draft, then proposes it.
	r, err := store.Open(ctx, store.Options{URL: "file://" + cluster, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	d, err := r.Get(ctx, "tenant-a", "packagevariant-1", 0)
	g.Expect(err).NotTo(HaveOccurred())
	content, err := r.Read(ctx, d)
	g.Expect(err).NotTo(HaveOccurred())
	app, _ := content.File("app.yaml")
	g.Expect(content.SetFile("app.yaml", []byte(strings.Replace(string(app), "replicas: 1", "replicas: 7", 1)))).To(Succeed())
	_, err = r.WriteDraft(ctx, store.DraftWrite{Package: "tenant-a", Workspace: "packagevariant-1", Expected: d.Commit, Contents: content, Message: "seven replicas", Author: "alice"})
	g.Expect(err).NotTo(HaveOccurred())
	setLifecycle(g, ns, name, porchv1alpha1.LifecycleProposed)
	g.Eventually(func() string {
		return gitserver.Git(t, cluster, "for-each-ref", "--format=%(refname:short)", "refs/heads/proposed/")
	}, timeout, interval).Should(Equal("proposed/tenant-a/packagevariant-1"))

	// The injected object changes while the revision is proposed.
	cm := &corev1.ConfigMap{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "useast1-settings"}, cm)).To(Succeed())
	cm.Data["color"] = "blue"
	g.Expect(k8sClient.Update(ctx, cm)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &configv1alpha1.PackageVariant{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
		c := meta.FindStatusCondition(got.Status.Conditions, configv1alpha1.DownstreamEnsuredCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(configv1alpha1.ProposalPendingReason))
		g.Expect(c.Message).To(ContainSubstring("the downstream revision " + name + " is Proposed"))
		g.Expect(meta.IsStatusConditionFalse(got.Status.Conditions, configv1alpha1.ReadyCondition)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	g.Expect(drafts(t, cluster)).To(BeEmpty(), "nothing is written while the revision is proposed")

	// Published: the next draft starts from it, with the edit, and takes
	// the change that waited.
	setLifecycle(g, ns, name, porchv1alpha1.LifecyclePublished)
	g.Eventually(func(g Gomega) {
		g.Expect(drafts(t, cluster)).To(Equal([]string{"drafts/tenant-a/packagevariant-2"}))
		ready(g, pv)
	}, timeout, interval).Should(Succeed())
	next := "drafts/tenant-a/packagevariant-2"
	g.Expect(gitserver.Git(t, cluster, "show", next+":tenant-a/app.yaml")).To(ContainSubstring("replicas: 7"), "the person's edit is kept")
	g.Expect(gitserver.Git(t, cluster, "show", next+":tenant-a/settings.yaml")).To(ContainSubstring("color: blue"), "the change that waited is written")
	g.Expect(gitserver.Git(t, cluster, "show", "tenant-a/v1:tenant-a/settings.yaml")).To(ContainSubstring("color: green"), "the published revision is what was approved")
}

// A person's plain git commit on the variant's draft leaves the draft the
// variant's (no second draft), the next update keeps the edit, and
// deleting the variant keeps the draft, saying so.
func TestPackageVariant_personsCommitOnDraft(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, cluster := setup(t)
	pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
	createReady(t, pv)

	personCommits(t, cluster, "drafts/tenant-a/packagevariant-1", "Add on-call notes", func(w string) {
		g.Expect(os.WriteFile(w+"/tenant-a/notes.md", []byte("# on call: alice\n"), 0o644)).To(Succeed())
	})

	// The variant updates its draft (an injected object changed): same
	// draft, the person's file kept.
	cm := &corev1.ConfigMap{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "useast1-settings"}, cm)).To(Succeed())
	cm.Data["color"] = "blue"
	g.Expect(k8sClient.Update(ctx, cm)).To(Succeed())
	ref := "drafts/tenant-a/packagevariant-1"
	g.Eventually(func(g Gomega) {
		g.Expect(gitserver.Git(t, cluster, "show", ref+":tenant-a/settings.yaml")).To(ContainSubstring("color: blue"))
	}, timeout, interval).Should(Succeed())
	g.Expect(drafts(t, cluster)).To(Equal([]string{ref}), "still one draft")
	g.Expect(gitserver.Git(t, cluster, "show", ref+":tenant-a/notes.md")).To(Equal("# on call: alice"))

	// Deleting the variant keeps the person's work.
	g.Expect(k8sClient.Delete(ctx, pv)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), &configv1alpha1.PackageVariant{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	g.Expect(drafts(t, cluster)).To(Equal([]string{ref}), "the draft with someone else's commit is kept")
	pr := &porchv1alpha1.PackageRevision{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-01.tenant-a.packagevariant-1"}, pr)).To(Succeed())
	g.Expect(metav1.GetControllerOf(pr)).To(BeNil(), "no longer the variant's")
	g.Eventually(func(g Gomega) {
		events := &eventsv1.EventList{}
		g.Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
		g.Expect(events.Items).To(ContainElement(And(HaveField("Reason", "DraftKept"),
			HaveField("Note", MatchRegexp(`cluster-01.tenant-a.packagevariant-1 is kept, no longer the variant's: it has commits by others \([0-9a-f]{12} test: Add on-call notes\)`)))))
	}, timeout, interval).Should(Succeed())
}

// publishedWithDraft makes the variant, publishes its revision v1 (the
// injected color green), then has it write a draft with color blue; it
// returns the variant and how to set the injected color.
func publishedWithDraft(t *testing.T, g Gomega, ns, cluster string) (*configv1alpha1.PackageVariant, func(string)) {
	ctx := context.Background()
	pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
	createReady(t, pv)
	setLifecycle(g, ns, "cluster-01.tenant-a.packagevariant-1", porchv1alpha1.LifecycleProposed)
	setLifecycle(g, ns, "cluster-01.tenant-a.packagevariant-1", porchv1alpha1.LifecyclePublished)
	g.Eventually(func() string { return gitserver.Git(t, cluster, "tag") }, timeout, interval).Should(Equal("tenant-a/v1"))
	setColor := func(color string) {
		cm := &corev1.ConfigMap{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "useast1-settings"}, cm)).To(Succeed())
		cm.Data["color"] = color
		g.Expect(k8sClient.Update(ctx, cm)).To(Succeed())
	}
	setColor("blue")
	g.Eventually(func() []string { return drafts(t, cluster) }, timeout, interval).Should(ContainElement("drafts/tenant-a/packagevariant-2"))
	return pv, setColor
}

// A revision of the downstream package published while the variant has a
// draft (someone's hotfix) is brought into the draft, so publishing the
// draft reverts nothing.
func TestPackageVariant_draftOntoNewerPublished(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, cluster := setup(t)
	_, setColor := publishedWithDraft(t, g, ns, cluster)
	next := "drafts/tenant-a/packagevariant-2"
	g.Eventually(func(g Gomega) {
		g.Expect(gitserver.Git(t, cluster, "show", next+":tenant-a/settings.yaml")).To(ContainSubstring("color: blue"))
	}, timeout, interval).Should(Succeed())

	// Someone publishes a hotfix of v1 meanwhile.
	r, err := store.Open(ctx, store.Options{URL: "file://" + cluster, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	v1, err := r.Get(ctx, "tenant-a", "", 1)
	g.Expect(err).NotTo(HaveOccurred())
	hotfix, err := r.Read(ctx, v1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hotfix.SetFile("hotfix.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hotfix\n  namespace: tenant-a\ndata:\n  fixed: \"true\"\n"))).To(Succeed())
	d, err := r.WriteDraft(ctx, store.DraftWrite{Package: "tenant-a", Workspace: "hotfix", Contents: hotfix, Message: "hotfix", Author: "bob"})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = r.Propose(ctx, "tenant-a", "hotfix", d.Commit, store.Proposal{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = r.Publish(ctx, "tenant-a", "hotfix", "", "bob", "")
	g.Expect(err).NotTo(HaveOccurred())
	repo := &configv1alpha1.Repository{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-01"}, repo)).To(Succeed())
	patch := client.MergeFrom(repo.DeepCopy())
	repo.Annotations = map[string]string{configv1alpha1.SyncRequestedAnnotation: "hotfix"} // as scion rpkg does after a git write
	g.Expect(k8sClient.Patch(ctx, repo, patch)).To(Succeed())
	g.Eventually(func() int {
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-01"}, repo)).To(Succeed())
		return repo.Status.RevisionCount
	}, timeout, interval).Should(Equal(3), "the controller has seen the hotfix")

	// The variant's next write brings its draft onto the hotfix.
	setColor("red")
	g.Eventually(func(g Gomega) {
		g.Expect(gitserver.Git(t, cluster, "show", next+":tenant-a/settings.yaml")).To(ContainSubstring("color: red"))
		g.Expect(gitserver.Git(t, cluster, "ls-tree", "--name-only", next, "tenant-a/")).To(ContainSubstring("tenant-a/hotfix.yaml"), "the hotfix is in the draft")
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, cluster, "show", next+":tenant-a/hotfix.yaml")).To(ContainSubstring(`fixed: "true"`))
	g.Expect(drafts(t, cluster)).To(Equal([]string{next}), "one draft")
}

// A draft that would equal the published revision changes nothing: once
// what it was written for is undone (the injected value back to what v1
// has), the variant removes it and says so, and writes none while that
// holds.
func TestPackageVariant_draftThatChangesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, cluster := setup(t)
	pv, setColor := publishedWithDraft(t, g, ns, cluster)
	setColor("green") // what v1 has
	g.Eventually(func() []string { return drafts(t, cluster) }, timeout, interval).Should(BeEmpty())
	g.Eventually(func(g Gomega) {
		got := ready(g, pv)
		c := meta.FindStatusCondition(got.Status.Conditions, configv1alpha1.ReadyCondition)
		g.Expect(c.Message).To(Or(
			Equal("the published revision v1 reflects the variant: draft cluster-01.tenant-a.packagevariant-2, which would have changed nothing, was removed"),
			Equal("the published revision v1 reflects the variant: no draft is needed")))
		g.Expect(got.Status.DownstreamTargets).To(ConsistOf(HaveField("Name", "cluster-01.tenant-a.packagevariant-1")))
	}, timeout, interval).Should(Succeed())
	events := &eventsv1.EventList{}
	g.Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
	g.Expect(events.Items).To(ContainElement(And(HaveField("Reason", "DraftRemoved"),
		HaveField("Note", "draft cluster-01.tenant-a.packagevariant-2 removed: it would equal the published revision v1"))))
	g.Consistently(func() []string { return drafts(t, cluster) }, 2*time.Second, interval).Should(BeEmpty())
	g.Eventually(func() error {
		return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-01.tenant-a.packagevariant-2"}, &porchv1alpha1.PackageRevision{})
	}, timeout, interval).Should(MatchError(ContainSubstring("not found")), "its PackageRevision is gone too")
}

// A variant whose drafts are annotated for auto-propose (spec.annotations)
// has its draft proposed once it is Ready and every gate is True; the
// variant then writes nothing more.
func TestPackageVariant_autoPropose(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, cluster := setup(t)
	pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
	pv.Spec.Annotations = map[string]string{porchv1alpha1.AutoLifecycleAnnotation: "true"}
	g.Expect(k8sClient.Create(ctx, pv)).To(Succeed())
	g.Eventually(func() string {
		return gitserver.Git(t, cluster, "for-each-ref", "--format=%(refname:short)", "refs/heads/proposed/")
	}, timeout, interval).Should(Equal("proposed/tenant-a/packagevariant-1"))
	g.Eventually(func(g Gomega) { ready(g, pv) }, timeout, interval).Should(Succeed())
	g.Expect(drafts(t, cluster)).To(BeEmpty(), "no second draft")
	events := &eventsv1.EventList{}
	g.Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
	g.Expect(events.Items).To(ContainElement(And(HaveField("Reason", "AutoProposed"),
		HaveField("Note", ContainSubstring("every readiness gate is True, PackageVariant tenant.a is Ready")))))
}

// personCommits commits what edit changes in a clone of branch of bare,
// and pushes it, as a person would.
func personCommits(t *testing.T, bare, branch, message string, edit func(dir string)) {
	t.Helper()
	work := t.TempDir()
	gitserver.Git(t, work, "clone", "-q", "-b", branch, bare, "w")
	w := work + "/w"
	edit(w)
	gitserver.Git(t, w, "add", ".")
	gitserver.Git(t, w, "commit", "-q", "-m", message)
	gitserver.Git(t, w, "push", "-q", "origin", "HEAD:"+branch)
}

// productions reads how many PackageVariant reconciles produced their
// package and how many reused the last production (all variants).
func productions(t *testing.T) (produced, reused float64) {
	t.Helper()
	for _, result := range []string{"produced", "reused"} {
		m := &dto.Metric{}
		if err := metrics.VariantProductions.WithLabelValues(result).Write(m); err != nil {
			t.Fatal(err)
		}
		if result == "produced" {
			produced = m.GetCounter().GetValue()
		} else {
			reused = m.GetCounter().GetValue()
		}
	}
	return produced, reused
}

// An event that changes nothing the variant is made from (someone labels
// its draft's PackageRevision, after a ConfigMap it does not inject
// changed) shows the draft without producing it
// again; a person's commit on the draft is not hidden by that: once the
// repository has synced, the variant produces anew and puts back what
// it injects, keeping the person's other change.
func TestPackageVariant_reusesItsProduction(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, cluster := setup(t)
	pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
	createReady(t, pv)
	ref := "drafts/tenant-a/packagevariant-1"
	head := gitserver.Git(t, cluster, "rev-parse", ref)

	// A ConfigMap no injector names changes meanwhile: it is not an input.
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: ns}, Data: map[string]string{"a": "1"}}
	g.Expect(k8sClient.Create(ctx, other)).To(Succeed())
	// Each label change is an event for the variant. The first may come
	// before the variant's last write is remembered (the production that
	// follows a write is made once more), so label again until one is
	// reused.
	key := client.ObjectKey{Namespace: ns, Name: "cluster-01.tenant-a.packagevariant-1"}
	round := 0
	g.Eventually(func(g Gomega) {
		_, reused := productions(t)
		round++
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, key, pr)).To(Succeed())
		patch := client.MergeFrom(pr.DeepCopy())
		pr.Labels["example.com/reviewed"] = strconv.Itoa(round)
		g.Expect(k8sClient.Patch(ctx, pr, patch)).To(Succeed())
		g.Eventually(func(g Gomega) {
			_, now := productions(t)
			g.Expect(now).To(BeNumerically(">", reused), "the variant looked again, and reused its production")
		}, 5*time.Second, interval).Should(Succeed())
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, cluster, "rev-parse", ref)).To(Equal(head), "nothing written")
	got := ready(g, pv)
	g.Expect(got.Status.DownstreamTargets).To(HaveLen(1))
	g.Expect(got.Status.DownstreamTargets[0].Name).To(Equal(key.Name))
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, configv1alpha1.ConfigInjectedCondition)).To(BeTrue(), "the reused conditions are shown")

	// A person overwrites the injected value and adds a file.
	personCommits(t, cluster, ref, "Paint it red", func(w string) {
		settings, err := os.ReadFile(w + "/tenant-a/settings.yaml")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(os.WriteFile(w+"/tenant-a/settings.yaml", []byte(strings.Replace(string(settings), "color: green", "color: red", 1)), 0o644)).To(Succeed())
		g.Expect(os.WriteFile(w+"/tenant-a/notes.md", []byte("# on call: bob\n"), 0o644)).To(Succeed())
	})
	repo := &configv1alpha1.Repository{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-01"}, repo)).To(Succeed())
	rpatch := client.MergeFrom(repo.DeepCopy())
	repo.Annotations = map[string]string{configv1alpha1.SyncRequestedAnnotation: "person-pushed"}
	g.Expect(k8sClient.Patch(ctx, repo, rpatch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(gitserver.Git(t, cluster, "show", ref+":tenant-a/settings.yaml")).To(ContainSubstring("color: green"), "the variant injects again")
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, cluster, "show", ref+":tenant-a/notes.md")).To(Equal("# on call: bob"), "the person's file is kept")
	g.Expect(drafts(t, cluster)).To(Equal([]string{ref}))
}

// A variant deleted with its downstream Repository goes without a
// complaint: the Repository's revisions go with it, so there is nothing
// of anyone's to keep and nothing to report (no DeleteFailed event).
func TestPackageVariant_deletedWithItsRepository(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, _ := setup(t)
	pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
	createReady(t, pv)
	repo := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-01"}}
	g.Expect(k8sClient.Delete(ctx, repo)).To(Succeed())
	g.Expect(k8sClient.Delete(ctx, pv)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), &configv1alpha1.PackageVariant{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	events := &eventsv1.EventList{}
	g.Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
	g.Expect(events.Items).NotTo(ContainElement(HaveField("Reason", "DeleteFailed")))
}

// revision: -1, as Porch writes it, follows the latest published upstream
// revision: the draft moves when a new one is published, with nobody
// editing the variant.
func TestPackageVariant_latestRevision(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, catalog, cluster := setup(t)
	pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
	pv.Spec.Upstream.Revision = configv1alpha1.LatestRevision
	createReady(t, pv)
	ref := "drafts/tenant-a/packagevariant-1"
	g.Expect(gitserver.Git(t, cluster, "show", ref+":tenant-a/Kptfile")).To(ContainSubstring("ref: app/v1"))

	publish(t, catalog, "v2", appPackage("3"))
	repo := &configv1alpha1.Repository{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "catalog"}, repo)).To(Succeed())
	patch := client.MergeFrom(repo.DeepCopy())
	repo.Annotations = map[string]string{configv1alpha1.SyncRequestedAnnotation: "published v2"} // as scion rpkg does after a git write
	g.Expect(k8sClient.Patch(ctx, repo, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(gitserver.Git(t, cluster, "show", ref+":tenant-a/Kptfile")).To(ContainSubstring("ref: app/v2"))
		ready(g, pv)
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, cluster, "show", ref+":tenant-a/app.yaml")).To(ContainSubstring("replicas: 3"))
	got := &configv1alpha1.PackageVariant{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
	g.Expect(got.Generation).To(Equal(int64(1)), "nobody edited the variant")
}
