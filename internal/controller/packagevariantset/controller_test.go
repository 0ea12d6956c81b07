package packagevariantset_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/tree"
)

const (
	timeout  = 60 * time.Second
	interval = 100 * time.Millisecond
)

// publish writes a published revision of a one-resource package with the
// store, as a blueprint author would.
func publish(t testing.TB, bare, name, ws string) {
	t.Helper()
	ctx := context.Background()
	r, err := store.Open(ctx, store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p := pkg.New(map[string][]byte{
		"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\n"),
		"cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  revision: " + ws + "\n"),
	})
	d, err := r.WriteDraft(ctx, store.DraftWrite{Package: name, Workspace: ws, Contents: p})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Propose(ctx, name, ws, d.Commit, store.Proposal{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Publish(ctx, name, ws, "", "author", ""); err != nil {
		t.Fatal(err)
	}
}

// fleet is a namespace with the spec's repositories: the example-repo and
// platform-catalog upstreams (foo and base-ns published as v1) and
// cluster-01..04 labelled as in the spec's tables, all real git.
type fleet struct {
	ns, root string
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	f := &fleet{ns: env.Namespace(t, "pvs"), root: gitRoot(t)}
	up := gitserver.InitBare(t, f.root, "example-repo.git")
	publish(t, up, "foo", "v1")
	f.addRepository(t, "example-repo", up, false, nil)
	cat := gitserver.InitBare(t, f.root, "platform-catalog.git")
	publish(t, cat, "base-ns", "v1")
	f.addRepository(t, "platform-catalog", cat, false, nil)
	for name, l := range map[string]map[string]string{
		"cluster-01": {"region": "useast1", "env": "prod", "org": "hr"},
		"cluster-02": {"region": "uswest1", "env": "prod", "org": "finance"},
		"cluster-03": {"region": "useast2", "env": "prod", "org": "hr"},
		"cluster-04": {"region": "uswest1", "env": "prod", "org": "hr"},
	} {
		f.addRepository(t, name, gitserver.InitBare(t, f.root, name+".git"), true, l)
	}
	return f
}

// gitRoot is a folder for the test's bare repositories. The variants'
// controller may still be writing drafts into them when a test ends, so
// its removal is retried rather than failing the test.
func gitRoot(t testing.TB) string {
	dir, err := os.MkdirTemp("", "pvs-git")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for i := 0; i < 50 && os.RemoveAll(dir) != nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	return dir
}

func (f *fleet) addRepository(t *testing.T, name, bare string, deployment bool, labels map[string]string) {
	t.Helper()
	repo := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: labels},
		Spec: configv1alpha1.RepositorySpec{Deployment: deployment, Git: &configv1alpha1.GitRepository{Repo: "file://" + bare, CreateBranch: true}}}
	if err := k8sClient.Create(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
}

// applySet creates the set of a file of internal/variantset/testdata in
// the fleet's namespace, under name.
func (f *fleet) applySet(t *testing.T, file, name string) *configv1alpha2.PackageVariantSet {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "variantset", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	pvs := &configv1alpha2.PackageVariantSet{}
	if err := yaml.UnmarshalStrict(data, pvs); err != nil {
		t.Fatal(err)
	}
	pvs.Namespace, pvs.Name = f.ns, name
	if err := k8sClient.Create(context.Background(), pvs); err != nil {
		t.Fatal(err)
	}
	return pvs
}

// variants returns the set's PackageVariants as sorted repo/package pairs.
func variants(g Gomega, pvs *configv1alpha2.PackageVariantSet) (map[string]configv1alpha1.PackageVariant, []string) {
	list := &configv1alpha1.PackageVariantList{}
	g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(pvs.Namespace))).To(Succeed())
	out := map[string]configv1alpha1.PackageVariant{}
	var pairs []string
	for _, pv := range list.Items {
		if ref := metav1.GetControllerOf(&pv); ref == nil || ref.Name != pvs.Name || !pv.DeletionTimestamp.IsZero() {
			continue
		}
		p := pv.Spec.Downstream.Repo + "/" + pv.Spec.Downstream.Package
		out[p] = pv
		pairs = append(pairs, p)
	}
	slices.Sort(pairs)
	return out, pairs
}

func condition(g Gomega, pvs *configv1alpha2.PackageVariantSet, typ string) *metav1.Condition {
	got := &configv1alpha2.PackageVariantSet{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pvs), got)).To(Succeed())
	g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	c := meta.FindStatusCondition(got.Status.Conditions, typ)
	g.Expect(c).NotTo(BeNil())
	return c
}

func sorted(s ...string) []string { slices.Sort(s); return s }

// The spec's examples on the cluster: the repository list (7 pairs), the
// repository selector (9 pairs), the CEL labels and injectors, and the
// namespace-per-tenant labels; each variant owned, labelled and with the
// PackageVariant finalizer; the selector example all the way to Ready
// drafts in git.
func TestSpecExamples(t *testing.T) {
	f := newFleet(t)
	t.Run("repository list", func(t *testing.T) {
		g := NewWithT(t)
		pvs := f.applySet(t, "list.yaml", "example")
		want := sorted("cluster-01/foo", "cluster-02/foo", "cluster-03/foo-a", "cluster-03/foo-b", "cluster-03/foo-c", "cluster-04/foo-a", "cluster-04/foo-b")
		g.Eventually(func(g Gomega) {
			_, pairs := variants(g, pvs)
			g.Expect(pairs).To(Equal(want))
		}, timeout, interval).Should(Succeed())
		got := &configv1alpha2.PackageVariantSet{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pvs), got)).To(Succeed())
		byPair, _ := variants(g, pvs)
		pv := byPair["cluster-03/foo-b"]
		g.Expect(pv.Name).To(Equal("example-cluster-03-foo-b"))
		g.Expect(pv.Labels).To(HaveKeyWithValue(configv1alpha2.PackageVariantSetLabel, string(got.UID)))
		g.Expect(pv.Finalizers).To(ContainElement(configv1alpha1.PackageVariantFinalizer))
		g.Expect(*metav1.GetControllerOf(&pv)).To(MatchFields(got.UID))
		g.Expect(pv.Spec.Upstream).To(Equal(&configv1alpha1.Upstream{Repo: "example-repo", Package: "foo", Revision: "v1"}))
		g.Expect(k8sClient.Delete(context.Background(), pvs)).To(Succeed())
		g.Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pvs), &configv1alpha2.PackageVariantSet{}))
		}, timeout, interval).Should(BeTrue())
	})
	t.Run("repository selector to Ready drafts", func(t *testing.T) {
		g := NewWithT(t)
		pvs := f.applySet(t, "selector.yaml", "selector")
		// The set is Ready (reconciled) long before its variants are: a
		// user waits for VariantsReady, which names what it waits on.
		var first *metav1.Condition
		g.Eventually(func(g Gomega) {
			got := &configv1alpha2.PackageVariantSet{}
			g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pvs), got)).To(Succeed())
			first = meta.FindStatusCondition(got.Status.Conditions, configv1alpha2.VariantsReadyCondition)
			g.Expect(first).NotTo(BeNil())
		}, timeout, 20*time.Millisecond).Should(Succeed())
		g.Expect(first.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(first.Reason).To(Equal(configv1alpha2.VariantsNotReadyReason))
		g.Expect(first.Message).To(MatchRegexp(`^\d of 9 PackageVariants are Ready; waiting for selector-cluster-0`))
		want := sorted("cluster-01/foo", "cluster-03/foo", "cluster-04/foo", "cluster-02/foo-a", "cluster-02/foo-b", "cluster-02/foo-c", "cluster-04/foo-a", "cluster-04/foo-b", "cluster-04/foo-c")
		g.Eventually(func(g Gomega) {
			_, pairs := variants(g, pvs)
			g.Expect(pairs).To(Equal(want))
		}, timeout, interval).Should(Succeed())
		// Every variant reaches Ready with a draft in git, and the set
		// counts them.
		g.Eventually(func(g Gomega) {
			got := &configv1alpha2.PackageVariantSet{}
			g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pvs), got)).To(Succeed())
			g.Expect(got.Status.Summary).NotTo(BeNil())
			g.Expect(got.Status.Summary.Desired).To(Equal(9))
			g.Expect(got.Status.Summary.Ready).To(Equal(9))
			c := meta.FindStatusCondition(got.Status.Conditions, configv1alpha1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(configv1alpha2.ReconciledReason))
			g.Expect(c.Message).To(Equal("9 PackageVariants, 9 ready"))
			vr := meta.FindStatusCondition(got.Status.Conditions, configv1alpha2.VariantsReadyCondition)
			g.Expect(vr).NotTo(BeNil())
			g.Expect(vr.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(vr.Reason).To(Equal(configv1alpha2.AllVariantsReadyReason))
			g.Expect(vr.Message).To(Equal("all 9 PackageVariants are Ready"))
			// The counts of the change that created them stand after
			// the reconciles that changed nothing.
			g.Expect(got.Status.Summary.Created).To(Equal(9))
			g.Expect(got.Status.Summary.Updated).To(Equal(0))
			g.Expect(got.Status.Summary.Deleted).To(Equal(0))
		}, 2*timeout, interval).Should(Succeed())
		// VariantsReady said so truthfully: every variant is Ready.
		byPair, _ := variants(g, pvs)
		for pair, pv := range byPair {
			c := meta.FindStatusCondition(pv.Status.Conditions, configv1alpha1.ReadyCondition)
			g.Expect(c).NotTo(BeNil(), pair)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), pair)
		}
		// scion tree shows the set, its variants and their drafts.
		var n *tree.Node
		g.Eventually(func(g Gomega) {
			var err error
			n, err = tree.Build(context.Background(), k8sClient, f.ns, "pvs", "selector", tree.Options{})
			g.Expect(err).NotTo(HaveOccurred())
			for _, pv := range n.Children {
				g.Expect(pv.Children).To(HaveLen(1), pv.Name)
				g.Expect(pv.Children[0].Gates).To(HaveLen(1))
				g.Expect(pv.Children[0].Gates[0].Status).To(Equal("True"), "the drafts' projections catch up")
			}
		}, timeout, interval).Should(Succeed())
		g.Expect(n.Summary).To(Equal("9/9 ready"))
		g.Expect(n.Children).To(HaveLen(9))
		for _, pv := range n.Children {
			g.Expect(pv.Ready).To(Equal("True"), pv.Name)
			g.Expect(pv.Children).To(HaveLen(1), pv.Name)
			g.Expect(pv.Children[0].Lifecycle).To(Equal("Draft"))
			g.Expect(pv.Children[0].Gates).To(Equal([]tree.Gate{{ConditionType: configv1alpha1.PackageVariantReadinessGate, Status: "True"}}))
		}
		var out strings.Builder
		g.Expect(tree.Print(&out, n, false)).To(Succeed())
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		g.Expect(lines).To(HaveLen(1 + 9*2))
		g.Expect(lines[0]).To(Equal("PackageVariantSet/selector  Ready=True  9/9 ready"))
		g.Expect(lines[1]).To(Equal("├─PackageVariant/selector-cluster-01-foo  Ready=True"))
		g.Expect(lines[2]).To(Equal("│ └─PackageRevision/cluster-01.foo.packagevariant-1  Draft  Ready=True  gate config.porch.kpt.dev/packagevariant=True"))
		g.Expect(lines[18]).To(Equal("  └─PackageRevision/cluster-04.foo-c.packagevariant-1  Draft  Ready=True  gate config.porch.kpt.dev/packagevariant=True"))
		drafts := gitserver.Git(t, filepath.Join(f.root, "cluster-04.git"), "for-each-ref", "--format=%(refname:short)", "refs/heads/drafts/")
		for _, p := range []string{"foo", "foo-a", "foo-b", "foo-c"} {
			g.Expect(drafts).To(ContainSubstring("drafts/"+p+"/"), drafts)
		}
		g.Expect(k8sClient.Delete(context.Background(), pvs)).To(Succeed())
	})
	t.Run("CEL labels and injectors", func(t *testing.T) {
		g := NewWithT(t)
		pvs := f.applySet(t, "cel.yaml", "cel")
		g.Eventually(func(g Gomega) {
			byPair, pairs := variants(g, pvs)
			g.Expect(pairs).To(Equal([]string{"cluster-01/foo", "cluster-03/foo", "cluster-04/foo"}))
			for pair, region := range map[string]string{"cluster-01/foo": "useast1", "cluster-03/foo": "useast2", "cluster-04/foo": "uswest1"} {
				pv := byPair[pair]
				g.Expect(pv.Spec.Labels).To(Equal(map[string]string{"org": "hr"}))
				g.Expect(pv.Spec.Injectors).To(Equal([]configv1alpha1.InjectionSelector{{Name: region + "-endpoints"}}))
			}
		}, timeout, interval).Should(Succeed())
		g.Expect(k8sClient.Delete(context.Background(), pvs)).To(Succeed())
	})
	t.Run("namespace per tenant", func(t *testing.T) {
		g := NewWithT(t)
		pvs := f.applySet(t, "namespaces.yaml", "tenants")
		g.Eventually(func(g Gomega) {
			byPair, pairs := variants(g, pvs)
			g.Expect(pairs).To(Equal([]string{"cluster-01/ns-1", "cluster-01/ns-2", "cluster-01/ns-3"}))
			for _, pv := range byPair {
				g.Expect(pv.Spec.Labels).To(Equal(map[string]string{"package-type": "namespace", "org": "hr"}))
				g.Expect(pv.Spec.Upstream.Repo).To(Equal("platform-catalog"))
			}
		}, timeout, interval).Should(Succeed())
	})
}

// MatchFields matches an owner reference to the set with controller=true.
func MatchFields(uid types.UID) OmegaMatcher {
	return And(
		WithTransform(func(r metav1.OwnerReference) types.UID { return r.UID }, Equal(uid)),
		WithTransform(func(r metav1.OwnerReference) string { return r.Kind }, Equal("PackageVariantSet")),
		WithTransform(func(r metav1.OwnerReference) bool { return r.Controller != nil && *r.Controller }, BeTrue()),
	)
}

// Changing the template updates the variants in place; removing a
// repository from the list deletes exactly its variant; labelling a new
// Repository adds exactly one variant.
func TestSetChanges(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	f := newFleet(t)
	pvs := f.applySet(t, "list.yaml", "example")
	var before map[string]configv1alpha1.PackageVariant
	g.Eventually(func(g Gomega) {
		var pairs []string
		before, pairs = variants(g, pvs)
		g.Expect(pairs).To(HaveLen(7))
	}, timeout, interval).Should(Succeed())

	// Template change: in place, same UIDs.
	g.Eventually(func() error {
		cur := &configv1alpha2.PackageVariantSet{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pvs), cur); err != nil {
			return err
		}
		cur.Spec.Targets[0].Template = &configv1alpha2.PackageVariantTemplate{
			LabelExprs: []configv1alpha2.MapExpr{{Key: ptr("cluster"), ValueExpr: ptr("repository.name")}},
		}
		return k8sClient.Update(ctx, cur)
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		after, _ := variants(g, pvs)
		g.Expect(after).To(HaveLen(7))
		for pair, pv := range after {
			g.Expect(pv.UID).To(Equal(before[pair].UID), pair)
			g.Expect(pv.Spec.Labels).To(Equal(map[string]string{"cluster": pv.Spec.Downstream.Repo}), pair)
		}
	}, timeout, interval).Should(Succeed())

	// Remove cluster-02 from the list: exactly its variant goes.
	g.Eventually(func() error {
		cur := &configv1alpha2.PackageVariantSet{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pvs), cur); err != nil {
			return err
		}
		cur.Spec.Targets[0].Repositories = slices.DeleteFunc(cur.Spec.Targets[0].Repositories, func(r configv1alpha2.RepositoryTarget) bool { return r.Name == "cluster-02" })
		return k8sClient.Update(ctx, cur)
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		after, pairs := variants(g, pvs)
		g.Expect(pairs).To(Equal(sorted("cluster-01/foo", "cluster-03/foo-a", "cluster-03/foo-b", "cluster-03/foo-c", "cluster-04/foo-a", "cluster-04/foo-b")))
		for pair, pv := range after {
			g.Expect(pv.UID).To(Equal(before[pair].UID), pair)
		}
	}, timeout, interval).Should(Succeed())

	// A selector set; a fifth Repository labelled to match adds one variant.
	sel := f.applySet(t, "cel.yaml", "selector")
	g.Eventually(func(g Gomega) {
		_, pairs := variants(g, sel)
		g.Expect(pairs).To(HaveLen(3))
	}, timeout, interval).Should(Succeed())
	bare := gitserver.InitBare(t, f.root, "cluster-05.git")
	f.addRepository(t, "cluster-05", bare, true, map[string]string{"region": "euwest1", "env": "prod"})
	repo := &configv1alpha1.Repository{}
	g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: "cluster-05"}, repo)).To(Succeed())
	patch := client.MergeFrom(repo.DeepCopy())
	repo.Labels["org"] = "hr"
	g.Expect(k8sClient.Patch(ctx, repo, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		byPair, pairs := variants(g, sel)
		g.Expect(pairs).To(Equal([]string{"cluster-01/foo", "cluster-03/foo", "cluster-04/foo", "cluster-05/foo"}))
		g.Expect(byPair["cluster-05/foo"].Spec.Injectors).To(Equal([]configv1alpha1.InjectionSelector{{Name: "euwest1-endpoints"}}))
	}, timeout, interval).Should(Succeed())
}

// Invalid sets, missing upstreams, kinds the cluster does not serve and
// names taken by someone else's variant: Stalled or not Ready, with
// messages naming what is wrong.
func TestErrors(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t)
	t.Run("validation error", func(t *testing.T) {
		g := NewWithT(t)
		pvs := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "bad-cel", Namespace: f.ns}, Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: "example-repo", Package: "foo", Revision: "v1"},
			Targets: []configv1alpha2.Target{{Repositories: []configv1alpha2.RepositoryTarget{{Name: "cluster-01"}},
				Template: &configv1alpha2.PackageVariantTemplate{
					Downstream: &configv1alpha2.DownstreamTemplate{RepoExpr: ptr("repository.name")},
					LabelExprs: []configv1alpha2.MapExpr{{Key: ptr("a"), ValueExpr: ptr("1 + ")}},
				}}},
		}}
		g.Expect(k8sClient.Create(ctx, pvs)).To(Succeed())
		g.Eventually(func(g Gomega) {
			c := condition(g, pvs, configv1alpha1.StalledCondition)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(configv1alpha1.ValidationErrorReason))
			g.Expect(c.Message).To(ContainSubstring("spec.targets[0].template.downstream.repoExpr: Invalid value: \"repository.name\": ERROR: <input>:1:1: undeclared reference to 'repository'"))
			g.Expect(c.Message).To(ContainSubstring("spec.targets[0].template.labelExprs[0].valueExpr: Invalid value: \"1 + \""))
			r := condition(g, pvs, configv1alpha1.ReadyCondition)
			g.Expect(r.Status).To(Equal(metav1.ConditionFalse))
		}, timeout, interval).Should(Succeed())
		// The stall is also a Warning event, once.
		g.Eventually(func(g Gomega) {
			g.Expect(warnings(g, f.ns, "bad-cel", configv1alpha1.ValidationErrorReason)).To(ConsistOf(ContainSubstring("spec.targets[0].template.downstream.repoExpr: Invalid value")))
		}, timeout, interval).Should(Succeed())
	})
	t.Run("upstream not found, then published", func(t *testing.T) {
		g := NewWithT(t)
		pvs := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: f.ns}, Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: "example-repo", Package: "bar", Revision: "1"},
			Targets:  []configv1alpha2.Target{{Repositories: []configv1alpha2.RepositoryTarget{{Name: "cluster-02"}}}},
		}}
		g.Expect(k8sClient.Create(ctx, pvs)).To(Succeed())
		g.Eventually(func(g Gomega) {
			c := condition(g, pvs, configv1alpha1.StalledCondition)
			g.Expect(c.Reason).To(Equal(configv1alpha1.UpstreamNotFoundReason))
			g.Expect(c.Message).To(Equal("spec.upstream.revision: Repository example-repo has no revision 1 of package bar (the package is not in that repository)"))
		}, timeout, interval).Should(Succeed())
		publish(t, filepath.Join(f.root, "example-repo.git"), "bar", "v1")
		// The Repository's next sync projects bar; ask for it now.
		repo := &configv1alpha1.Repository{}
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: "example-repo"}, repo)).To(Succeed())
		patch := client.MergeFrom(repo.DeepCopy())
		if repo.Annotations == nil {
			repo.Annotations = map[string]string{}
		}
		repo.Annotations[configv1alpha1.SyncRequestedAnnotation] = time.Now().String()
		g.Expect(k8sClient.Patch(ctx, repo, patch)).To(Succeed())
		g.Eventually(func(g Gomega) {
			c := condition(g, pvs, configv1alpha1.ReadyCondition)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
			_, pairs := variants(g, pvs)
			g.Expect(pairs).To(Equal([]string{"cluster-02/bar"}))
		}, timeout, interval).Should(Succeed())
	})
	t.Run("a kind the cluster does not serve", func(t *testing.T) {
		g := NewWithT(t)
		pvs := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "teams", Namespace: f.ns}, Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: "example-repo", Package: "foo", Revision: "1"},
			Targets:  []configv1alpha2.Target{{ObjectSelector: &configv1alpha2.ObjectSelector{APIVersion: "krm-platform.bigco.com/v1", Kind: "Team"}}},
		}}
		g.Expect(k8sClient.Create(ctx, pvs)).To(Succeed())
		g.Eventually(func(g Gomega) {
			c := condition(g, pvs, configv1alpha1.StalledCondition)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(configv1alpha2.NoMatchingTargetsReason))
			g.Expect(c.Message).To(ContainSubstring("spec.targets[0].objectSelector: listing Team.v1.krm-platform.bigco.com: no matches for kind \"Team\" in version \"krm-platform.bigco.com/v1\""))
		}, timeout, interval).Should(Succeed())
	})
	t.Run("a kind the controller may not read", func(t *testing.T) {
		g := NewWithT(t)
		pvs := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "deployments", Namespace: f.ns}, Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: "example-repo", Package: "foo", Revision: "1"},
			Targets:  []configv1alpha2.Target{{ObjectSelector: &configv1alpha2.ObjectSelector{APIVersion: "apps/v1", Kind: "Deployment"}}},
		}}
		g.Expect(k8sClient.Create(ctx, pvs)).To(Succeed())
		g.Eventually(func(g Gomega) {
			c := condition(g, pvs, configv1alpha1.StalledCondition)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(configv1alpha2.KindNotAllowedReason))
			g.Expect(c.Message).To(Equal("spec.targets[0].objectSelector: listing Deployment.v1.apps: this controller does not read Deployment.apps objects (it reads ConfigMap,*.krm-platform.bigco.com); an administrator can add the kind to --readable-kinds and to the controller's ClusterRole"))
		}, timeout, interval).Should(Succeed())
	})
	t.Run("a selector matching nothing", func(t *testing.T) {
		g := NewWithT(t)
		pvs := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "mars", Namespace: f.ns}, Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: "example-repo", Package: "foo", Revision: "1"},
			Targets: []configv1alpha2.Target{{RepositorySelector: &configv1alpha2.RepositorySelector{
				LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "mars"}}}}},
		}}
		g.Expect(k8sClient.Create(ctx, pvs)).To(Succeed())
		g.Eventually(func(g Gomega) {
			c := condition(g, pvs, configv1alpha1.ReadyCondition)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(Equal("0 PackageVariants, 0 ready"))
			events := &eventsv1.EventList{}
			g.Expect(k8sClient.List(ctx, events, client.InNamespace(f.ns))).To(Succeed())
			var notes []string
			for _, e := range events.Items {
				if e.Regarding.Name == "mars" && e.Reason == "NoTargets" && e.Type == corev1.EventTypeWarning {
					notes = append(notes, e.Note)
				}
			}
			g.Expect(notes).To(ContainElement("spec.targets[0].repositorySelector selects no Repository"))
			// Ready, and saying why there is nothing to do.
			nt := condition(g, pvs, configv1alpha2.NoTargetsCondition)
			g.Expect(nt.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(nt.Reason).To(Equal(configv1alpha2.NoTargetsReason))
			g.Expect(nt.Message).To(Equal("spec.targets[0].repositorySelector selects no Repository"))
		}, timeout, interval).Should(Succeed())
		// Once the selector matches, the condition goes.
		cur := &configv1alpha2.PackageVariantSet{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pvs), cur)).To(Succeed())
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.Targets[0].RepositorySelector = nil
		cur.Spec.Targets[0].Repositories = []configv1alpha2.RepositoryTarget{{Name: "cluster-01"}}
		g.Expect(k8sClient.Patch(ctx, cur, patch)).To(Succeed())
		g.Eventually(func(g Gomega) {
			got := &configv1alpha2.PackageVariantSet{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pvs), got)).To(Succeed())
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, configv1alpha2.NoTargetsCondition)).To(BeNil())
		}, timeout, interval).Should(Succeed())
	})
	t.Run("a name taken by someone else's variant", func(t *testing.T) {
		g := NewWithT(t)
		theirs := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: "taken-cluster-01-foo", Namespace: f.ns}, Spec: configv1alpha1.PackageVariantSpec{
			Upstream:   &configv1alpha1.Upstream{Repo: "example-repo", Package: "foo", Revision: "1"},
			Downstream: &configv1alpha1.Downstream{Repo: "cluster-03", Package: "mine"},
		}}
		g.Expect(k8sClient.Create(ctx, theirs)).To(Succeed())
		pvs := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: f.ns}, Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: "example-repo", Package: "foo", Revision: "1"},
			Targets:  []configv1alpha2.Target{{Repositories: []configv1alpha2.RepositoryTarget{{Name: "cluster-01"}, {Name: "cluster-02"}}}},
		}}
		g.Expect(k8sClient.Create(ctx, pvs)).To(Succeed())
		g.Eventually(func(g Gomega) {
			c := condition(g, pvs, configv1alpha1.ReadyCondition)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(configv1alpha2.VariantNameTakenReason))
			g.Expect(c.Message).To(ContainSubstring("creating PackageVariant taken-cluster-01-foo: PackageVariant taken-cluster-01-foo exists and is not owned by this set"))
			g.Expect(condition(g, pvs, configv1alpha1.StalledCondition).Status).To(Equal(metav1.ConditionTrue))
			_, pairs := variants(g, pvs)
			g.Expect(pairs).To(Equal([]string{"cluster-02/foo"}))
		}, timeout, interval).Should(Succeed())
		// Theirs is untouched.
		got := &configv1alpha1.PackageVariant{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(theirs), got)).To(Succeed())
		g.Expect(got.Spec.Downstream.Package).To(Equal("mine"))
		g.Expect(metav1.GetControllerOf(got)).To(BeNil())
	})
}

// objectSelector over ConfigMaps: the kind is watched once the set selects
// it, so a new labelled object adds a variant and a relabelled one
// removes its variant, without touching the set.
func TestObjectSelectorWatch(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	f := newFleet(t)
	mk := func(name, cluster string) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: map[string]string{"tenant": "true"}, Annotations: map[string]string{"cluster": cluster}}}
		g.Expect(k8sClient.Create(ctx, cm)).To(Succeed())
	}
	mk("alpha", "cluster-01")
	pvs := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "tenants", Namespace: f.ns}, Spec: configv1alpha2.PackageVariantSetSpec{
		Upstream: &configv1alpha1.Upstream{Repo: "platform-catalog", Package: "base-ns", Revision: "1"},
		Targets: []configv1alpha2.Target{{
			ObjectSelector: &configv1alpha2.ObjectSelector{APIVersion: "v1", Kind: "ConfigMap", LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "true"}}},
			Template: &configv1alpha2.PackageVariantTemplate{Downstream: &configv1alpha2.DownstreamTemplate{
				RepoExpr:    ptr("target.annotations['cluster']"),
				PackageExpr: ptr("'ns-' + target.name"),
			}},
		}},
	}}
	g.Expect(k8sClient.Create(ctx, pvs)).To(Succeed())
	g.Eventually(func(g Gomega) {
		_, pairs := variants(g, pvs)
		g.Expect(pairs).To(Equal([]string{"cluster-01/ns-alpha"}))
	}, timeout, interval).Should(Succeed())
	mk("beta", "cluster-02")
	g.Eventually(func(g Gomega) {
		_, pairs := variants(g, pvs)
		g.Expect(pairs).To(Equal([]string{"cluster-01/ns-alpha", "cluster-02/ns-beta"}))
	}, timeout, interval).Should(Succeed())
	cm := &corev1.ConfigMap{}
	g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: "alpha"}, cm)).To(Succeed())
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Labels["tenant"] = "false"
	g.Expect(k8sClient.Patch(ctx, cm, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		_, pairs := variants(g, pvs)
		g.Expect(pairs).To(Equal([]string{"cluster-02/ns-beta"}))
	}, timeout, interval).Should(Succeed())
}

// Deleting a set deletes its variants (no garbage collector runs here),
// each applying its deletion policy, and the set goes once they are gone.
func TestDeletion(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	f := newFleet(t)
	pvs := f.applySet(t, "namespaces.yaml", "tenants")
	g.Eventually(func(g Gomega) {
		got := &configv1alpha2.PackageVariantSet{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pvs), got)).To(Succeed())
		g.Expect(got.Status.Summary).NotTo(BeNil())
		g.Expect(got.Status.Summary.Ready).To(Equal(3))
	}, 2*timeout, interval).Should(Succeed())
	bare := filepath.Join(f.root, "cluster-01.git")
	g.Expect(strings.Fields(gitserver.Git(t, bare, "for-each-ref", "--format=%(refname:short)", "refs/heads/drafts/"))).To(HaveLen(3))
	g.Expect(k8sClient.Delete(ctx, pvs)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(pvs), &configv1alpha2.PackageVariantSet{}))).To(BeTrue())
		list := &configv1alpha1.PackageVariantList{}
		g.Expect(k8sClient.List(ctx, list, client.InNamespace(f.ns))).To(Succeed())
		g.Expect(list.Items).To(BeEmpty())
	}, timeout, interval).Should(Succeed())
	// The variants' deletion policy (delete) removed their drafts.
	g.Expect(strings.Fields(gitserver.Git(t, bare, "for-each-ref", "--format=%(refname:short)", "refs/heads/drafts/"))).To(BeEmpty())
}

func ptr(s string) *string { return &s }

// warnings returns the notes of the Warning events with reason about the
// named set.
func warnings(g Gomega, ns, name, reason string) []string {
	events := &eventsv1.EventList{}
	g.Expect(k8sClient.List(context.Background(), events, client.InNamespace(ns))).To(Succeed())
	var notes []string
	for _, e := range events.Items {
		if e.Regarding.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// A set moved to an upstream revision git has but no PackageRevision
// shows yet (published by a writer outside the Repository's sync, whose
// period here is 5 minutes) asks the Repository to sync and moves on, as
// its variants resolve the same revision from git.
func TestSet_upstreamAheadOfObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFleet(t)
	pvs := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "ahead", Namespace: f.ns}, Spec: configv1alpha2.PackageVariantSetSpec{
		Upstream: &configv1alpha1.Upstream{Repo: "example-repo", Package: "foo", Revision: "1"},
		Targets:  []configv1alpha2.Target{{Repositories: []configv1alpha2.RepositoryTarget{{Name: "cluster-01"}}}},
	}}
	g.Expect(k8sClient.Create(ctx, pvs)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(condition(g, pvs, configv1alpha2.VariantsReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, interval).Should(Succeed())
	publish(t, filepath.Join(f.root, "example-repo.git"), "foo", "v2")
	cur := &configv1alpha2.PackageVariantSet{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pvs), cur)).To(Succeed())
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Upstream.Revision = "2"
	g.Expect(k8sClient.Patch(ctx, cur, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := condition(g, pvs, configv1alpha2.VariantsReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		byPair, _ := variants(g, pvs)
		g.Expect(byPair["cluster-01/foo"].Spec.Upstream.Revision).To(BeEquivalentTo("2"))
	}, timeout, interval).Should(Succeed())
	repo := &configv1alpha1.Repository{}
	g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: "example-repo"}, repo)).To(Succeed())
	g.Expect(repo.Annotations).To(HaveKey(configv1alpha1.SyncRequestedAnnotation), "the set asked the Repository to sync, rather than wait for its period")
}

// reconciles reads the manager's reconcile count of a controller.
func reconciles(g Gomega, controller string) float64 {
	families, err := crmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// Variants becoming Ready are counted without expanding the set again:
// the set's own reconciler does not run for them, its readiness
// reconciler does, and VariantsReady ends True.
func TestSet_readyFlipsDoNotReexpand(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFleet(t)
	pvs := fourClusterSet(f.ns, "flips")
	var before float64
	g.Expect(k8sClient.Create(ctx, pvs)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &configv1alpha2.PackageVariantSet{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pvs), got)).To(Succeed())
		g.Expect(got.Status.Summary).NotTo(BeNil())
		g.Expect(got.Status.Summary.Desired).To(Equal(4))
		before = reconciles(g, "packagevariantset")
	}, timeout, interval).Should(Succeed())
	readinessBefore := reconciles(g, "packagevariantset-readiness")
	g.Eventually(func(g Gomega) {
		c := condition(g, pvs, configv1alpha2.VariantsReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	}, timeout, interval).Should(Succeed())
	after := reconciles(g, "packagevariantset")
	g.Expect(reconciles(g, "packagevariantset-readiness")).To(BeNumerically(">", readinessBefore), "the readiness reconciler counted the flips")
	g.Expect(after-before).To(BeNumerically("<=", 1), "Ready flips do not expand the set again")
}

// fourClusterSet is a set of foo revision 1 over cluster-01 to cluster-04.
func fourClusterSet(ns, name string) *configv1alpha2.PackageVariantSet {
	return &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: configv1alpha2.PackageVariantSetSpec{
		Upstream: &configv1alpha1.Upstream{Repo: "example-repo", Package: "foo", Revision: "1"},
		Targets:  []configv1alpha2.Target{{Repositories: []configv1alpha2.RepositoryTarget{{Name: "cluster-01"}, {Name: "cluster-02"}, {Name: "cluster-03"}, {Name: "cluster-04"}}}},
	}}
}

// scion tree of a set larger than a list per variant is worth: the
// revisions of every variant read at once and each shown under its own
// variant, as for a small set.
func TestTree_bigSet(t *testing.T) {
	g := NewWithT(t)
	f := newFleet(t)
	var repos []configv1alpha2.RepositoryTarget
	for _, r := range []string{"cluster-01", "cluster-02", "cluster-03", "cluster-04"} {
		repos = append(repos, configv1alpha2.RepositoryTarget{Name: r, PackageNames: []string{"p0", "p1", "p2", "p3", "p4", "p5"}})
	}
	// Two variants into a Repository whose remote does not exist: never
	// Ready.
	f.addRepository(t, "nowhere", filepath.Join(f.root, "missing.git"), true, nil)
	repos = append(repos, configv1alpha2.RepositoryTarget{Name: "nowhere", PackageNames: []string{"p0", "p1"}})
	pvs := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: f.ns}, Spec: configv1alpha2.PackageVariantSetSpec{
		Upstream: &configv1alpha1.Upstream{Repo: "example-repo", Package: "foo", Revision: "v1"},
		Targets:  []configv1alpha2.Target{{Repositories: repos}},
	}}
	g.Expect(k8sClient.Create(context.Background(), pvs)).To(Succeed())
	var n *tree.Node
	g.Eventually(func(g Gomega) {
		var err error
		n, err = tree.Build(context.Background(), k8sClient, f.ns, "pvs", "big", tree.Options{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n.Children).To(HaveLen(26))
		for _, pv := range n.Children {
			if !strings.HasPrefix(pv.Name, "big-nowhere-") {
				g.Expect(pv.Children).To(HaveLen(1), pv.Name)
			}
		}
		g.Expect(n.Summary).To(Equal("24/26 ready"))
	}, 2*timeout, interval).Should(Succeed())

	// Above BigSet variants, the tree is the variants the set's status
	// names as not Ready; --all (All) is every variant.
	set := &configv1alpha2.PackageVariantSet{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pvs), set)).To(Succeed())
	g.Expect(set.Status.Summary.NotReady).To(Equal([]string{"big-nowhere-p0", "big-nowhere-p1"}))
	small, err := tree.Build(context.Background(), k8sClient, f.ns, "pvs", "big", tree.Options{BigSet: 20})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(small.Summary).To(Equal("24/26 ready; the variants not Ready shown (--all shows every variant)"))
	var shown []string
	for _, pv := range small.Children {
		shown = append(shown, pv.Name)
		g.Expect(pv.Ready).NotTo(Equal("True"), pv.Name)
	}
	g.Expect(shown).To(Equal([]string{"big-nowhere-p0", "big-nowhere-p1"}))
	all, err := tree.Build(context.Background(), k8sClient, f.ns, "pvs", "big", tree.Options{BigSet: 20, All: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(all.Children).To(HaveLen(26))

	for _, pv := range n.Children {
		if strings.HasPrefix(pv.Name, "big-nowhere-") {
			continue
		}
		// big-cluster-03-p4 made cluster-03.p4.packagevariant-1.
		repo, pkg, _ := strings.Cut(strings.TrimPrefix(pv.Name, "big-"), "-p")
		g.Expect(pv.Children[0].Name).To(Equal(repo+".p"+pkg+".packagevariant-1"), pv.Name)
		g.Expect(pv.Children[0].Kind).To(Equal("PackageRevision"))
		g.Expect(pv.Children[0].Lifecycle).To(Equal("Draft"))
	}
}
