package dependencies

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/manager"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/testutil/suite"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

var (
	env       *testenv.Env
	k8sClient client.Client
)

// TestMain runs the whole manager against a real API server.
func TestMain(m *testing.M) {
	os.Exit(suite.Run(m, manager.Options{RepositoryWorkers: 2, PackageRevisionWorkers: 4, PackageVariantWorkers: 8, SyncPeriod: 5 * time.Minute, TagPollPeriod: time.Second}, nil, func(e *testenv.Env) {
		env, k8sClient = e, e.Storage
	}))
}

const (
	timeout  = 60 * time.Second
	interval = 100 * time.Millisecond
)

// catalog is an upstream repository the tests publish packages into, as
// a blueprint author would.
type catalog struct {
	t    testing.TB
	bare string
	st   *store.Repository
}

func newCatalog(t testing.TB, root string) *catalog {
	bare := gitserver.InitBare(t, root, "catalog.git")
	st, err := store.Open(context.Background(), store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return &catalog{t: t, bare: bare, st: st}
}

// requires is a PackageDependencies requirement line.
type requires struct{ name, version string }

// publish publishes a revision of a package requiring others and
// providing kinds (as CRDs), and returns its revision number; tag, when
// set, is a semver floating tag for it. reqs nil: no PackageDependencies
// object.
func (c *catalog) publish(name, tag string, reqs []requires, crdKinds ...string) int {
	c.t.Helper()
	ctx := context.Background()
	files := map[string][]byte{
		"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\n"),
		"cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  tag: \"" + tag + "\"\n"),
	}
	if reqs != nil { // an empty list declares the package, requiring nothing
		var b strings.Builder
		b.WriteString("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageDependencies\nmetadata:\n  name: dependencies\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nspec:\n  requires:")
		if len(reqs) == 0 {
			b.WriteString(" []")
		}
		b.WriteString("\n")
		for _, r := range reqs {
			fmt.Fprintf(&b, "  - package: {name: %s, version: %q}\n", r.name, r.version)
		}
		files["dependencies.yaml"] = []byte(b.String())
	}
	for _, k := range crdKinds {
		plural := strings.ToLower(k) + "s"
		files["crd-"+plural+".yaml"] = []byte(fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %s.example.com
spec:
  group: example.com
  names: {kind: %s, plural: %s}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object}}
`, plural, k, plural))
	}
	ws := fmt.Sprintf("ws-%d", time.Now().UnixNano())
	d, err := c.st.WriteDraft(ctx, store.DraftWrite{Package: name, Workspace: ws, Contents: pkg.New(files)})
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.st.Propose(ctx, name, ws, d.Commit, store.Proposal{}); err != nil {
		c.t.Fatal(err)
	}
	rev, err := c.st.Publish(ctx, name, ws, "", "author", "")
	if err != nil {
		c.t.Fatal(err)
	}
	if tag != "" {
		if _, err := c.st.SetFloatingTag(ctx, name, tag, rev.Revision); err != nil {
			c.t.Fatal(err)
		}
	}
	return rev.Revision
}

// setup makes a namespace with the catalog and a deployment repository
// cluster-01 (and returns the cluster's bare repository).
func setup(t *testing.T) (ns string, cat *catalog, cluster string) {
	t.Helper()
	ns = env.Namespace(t, "deps")
	root := gitserver.Root(t)
	cat = newCatalog(t, root)
	cluster = gitserver.InitBare(t, root, "cluster.git")
	for name, bare := range map[string]string{"catalog": cat.bare, "cluster-01": cluster} {
		repo := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: configv1alpha1.RepositorySpec{Deployment: name == "cluster-01", Git: &configv1alpha1.GitRepository{Repo: "file://" + bare, CreateBranch: true}}}
		if err := k8sClient.Create(context.Background(), repo); err != nil {
			t.Fatal(err)
		}
	}
	return ns, cat, cluster
}

// variant is a PackageVariant of a catalog package into cluster-01.
func variant(ns, name, upstream, revision string, d *configv1alpha1.Dependencies) *configv1alpha1.PackageVariant {
	return &configv1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: configv1alpha1.PackageVariantSpec{
			Upstream:     &configv1alpha1.Upstream{Repo: "catalog", Package: upstream, Revision: configv1alpha1.RevisionNumber(revision)},
			Downstream:   &configv1alpha1.Downstream{Repo: "cluster-01", Package: upstream},
			Dependencies: d,
		},
	}
}

func getPV(g Gomega, ns, name string) *configv1alpha1.PackageVariant {
	pv := &configv1alpha1.PackageVariant{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pv)).To(Succeed())
	return pv
}

// condition returns a variant's condition of a type, failing when absent.
func condition(g Gomega, pv *configv1alpha1.PackageVariant, t string) metav1.Condition {
	c := meta.FindStatusCondition(pv.Status.Conditions, t)
	g.Expect(c).NotTo(BeNil(), "%s has no %s condition: %v", pv.Name, t, pv.Status.Conditions)
	return *c
}

// draftOf returns the PackageRevision a variant shows.
func draftOf(g Gomega, ns, pvName string) *porchv1alpha1.PackageRevision {
	pv := getPV(g, ns, pvName)
	g.Expect(pv.Status.DownstreamTargets).NotTo(BeEmpty(), "%s shows no downstream yet", pvName)
	pr := &porchv1alpha1.PackageRevision{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: pv.Status.DownstreamTargets[0].Name}, pr)).To(Succeed())
	return pr
}

// prCondition returns a PackageRevision's condition of a type.
func prCondition(pr *porchv1alpha1.PackageRevision, t string) *porchv1alpha1.Condition {
	for i := range pr.Status.Conditions {
		if pr.Status.Conditions[i].Type == t {
			return &pr.Status.Conditions[i]
		}
	}
	return nil
}

// publishVariant proposes and publishes the draft a variant shows, and
// waits until it is Published.
func publishVariant(t *testing.T, ns, pvName string) {
	t.Helper()
	g := NewWithT(t)
	var name string
	g.Eventually(func(g Gomega) { name = draftOf(g, ns, pvName).Name }, timeout, interval).Should(Succeed())
	for _, lc := range []porchv1alpha1.Lifecycle{porchv1alpha1.LifecycleProposed, porchv1alpha1.LifecyclePublished} {
		setLifecycle(g, ns, name, lc)
	}
	g.Eventually(func(g Gomega) {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pr)).To(Succeed())
		g.Expect(pr.Labels).To(HaveKeyWithValue(porchv1alpha1.LifecycleLabel, string(porchv1alpha1.LifecyclePublished)), "%s: %v", name, pr.Status.Conditions)
	}, timeout, interval).Should(Succeed())
}

func setLifecycle(g Gomega, ns, name string, lc porchv1alpha1.Lifecycle) {
	g.Eventually(func(g Gomega) {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pr)).To(Succeed())
		if pr.Spec.Lifecycle == lc {
			return
		}
		patch := client.MergeFromWithOptions(pr.DeepCopy(), client.MergeFromWithOptimisticLock{})
		pr.Spec.Lifecycle = lc
		g.Expect(k8sClient.Patch(context.Background(), pr, patch)).To(Succeed())
	}, timeout, interval).Should(Succeed())
}

// lock returns a repository's PackageLock.
func lock(g Gomega, ns, repo string) *configv1alpha1.PackageLock {
	l := &configv1alpha1.PackageLock{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: repo}, l)).To(Succeed())
	return l
}

// drafts lists the draft branches of a bare repository.
func drafts(t *testing.T, bare string) []string {
	return strings.Fields(gitserver.Git(t, bare, "for-each-ref", "--format=%(refname:short)", "refs/heads/drafts/"))
}
