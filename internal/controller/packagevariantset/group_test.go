package packagevariantset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// groupFleet is a namespace with a blueprints repository publishing app,
// app-config, app-policy and app-dashboards (v1 each) and twelve
// deployment repositories labelled fleet=group, all real git; it returns
// the bare repository of each deployment repository by name.
func groupFleet(t *testing.T) (*fleet, map[string]string) {
	t.Helper()
	f := &fleet{ns: env.Namespace(t, "group"), root: gitRoot(t)}
	up := gitserver.InitBare(t, f.root, "blueprints.git")
	for _, p := range []string{"app", "app-config", "app-policy", "app-dashboards"} {
		publish(t, up, p, "v1")
	}
	f.addRepository(t, "blueprints", up, false, nil)
	bares := map[string]string{}
	for i := 1; i <= 12; i++ {
		name := fmt.Sprintf("site-%02d", i)
		bares[name] = gitserver.InitBare(t, f.root, name+".git")
		f.addRepository(t, name, bares[name], true, map[string]string{"fleet": "group"})
	}
	return f, bares
}

func groupSet(ns string, packages ...string) *configv1alpha2.PackageVariantSet {
	pvs := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "platform", Namespace: ns}, Spec: configv1alpha2.PackageVariantSetSpec{
		Targets: []configv1alpha2.Target{{RepositorySelector: &configv1alpha2.RepositorySelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "group"}}},
			Template: &configv1alpha2.PackageVariantTemplate{LabelExprs: []configv1alpha2.MapExpr{{Key: ptr("upstream"), ValueExpr: ptr("upstream.package + '-v' + upstream.revision")}}}}},
	}}
	for _, p := range packages {
		pvs.Spec.Upstreams = append(pvs.Spec.Upstreams, configv1alpha1.Upstream{Repo: "blueprints", Package: p, Revision: "v1"})
	}
	return pvs
}

// A group of three upstreams over twelve repositories: 36 variants, each
// from its own upstream, Ready, counted per upstream; an upstream removed
// deletes exactly its variants (and their drafts), one added creates its
// own, and the others are left as they were.
func TestGroup(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	f, bares := groupFleet(t)
	pvs := groupSet(f.ns, "app", "app-config", "app-policy")
	g.Expect(k8sClient.Create(ctx, pvs)).To(Succeed())

	ready := func(g Gomega, want map[string]int) {
		got := &configv1alpha2.PackageVariantSet{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pvs), got)).To(Succeed())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.Summary).NotTo(BeNil())
		counts := map[string]int{}
		for _, u := range got.Status.Summary.Upstreams {
			g.Expect(u.Ready).To(Equal(u.Desired), u.Package)
			counts[u.Package] = u.Desired
		}
		g.Expect(counts).To(Equal(want))
		g.Expect(condition(g, pvs, configv1alpha2.VariantsReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}
	var before map[string]configv1alpha1.PackageVariant
	g.Eventually(func(g Gomega) {
		var pairs []string
		before, pairs = variants(g, pvs)
		g.Expect(pairs).To(HaveLen(36))
		ready(g, map[string]int{"app": 12, "app-config": 12, "app-policy": 12})
	}, timeout, interval).Should(Succeed())
	// kubectl get's UPSTREAM column (the API server's table of the CRD's
	// printer columns) names the three.
	g.Expect(upstreamColumn(t, pvs)).To(Equal("app, app-config, app-policy"))
	for pair, pv := range before {
		repo, pkg, _ := strings.Cut(pair, "/")
		g.Expect(pv.Name).To(Equal("platform-" + repo + "-" + pkg))
		g.Expect(pv.Spec.Upstream).To(Equal(&configv1alpha1.Upstream{Repo: "blueprints", Package: pkg, Revision: "v1"}))
		g.Expect(pv.Spec.Labels).To(Equal(map[string]string{"upstream": pkg + "-v1"}))
	}
	drafts := func(g Gomega, repo, pkg string) int {
		st, err := store.Open(ctx, store.Options{URL: "file://" + bares[repo], CacheDir: t.TempDir()})
		g.Expect(err).NotTo(HaveOccurred())
		revs, err := st.ListPackage(ctx, pkg)
		g.Expect(err).NotTo(HaveOccurred())
		return len(revs)
	}
	g.Expect(drafts(g, "site-07", "app-policy")).To(Equal(1))

	// app-policy out, app-dashboards in.
	g.Eventually(func() error {
		cur := &configv1alpha2.PackageVariantSet{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pvs), cur); err != nil {
			return err
		}
		cur.Spec.Upstreams = slices.DeleteFunc(cur.Spec.Upstreams, func(u configv1alpha1.Upstream) bool { return u.Package == "app-policy" })
		cur.Spec.Upstreams = append(cur.Spec.Upstreams, configv1alpha1.Upstream{Repo: "blueprints", Package: "app-dashboards", Revision: "v1"})
		return k8sClient.Update(ctx, cur)
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		after, pairs := variants(g, pvs)
		g.Expect(pairs).To(HaveLen(36))
		for pair, pv := range after {
			_, pkg, _ := strings.Cut(pair, "/")
			g.Expect(pkg).NotTo(Equal("app-policy"))
			if pkg != "app-dashboards" {
				g.Expect(pv.UID).To(Equal(before[pair].UID), pair)
			}
		}
		ready(g, map[string]int{"app": 12, "app-config": 12, "app-dashboards": 12})
		// Deleted whole: the variant (finalizer included) and its draft.
		list := &configv1alpha1.PackageVariantList{}
		g.Expect(k8sClient.List(ctx, list, client.InNamespace(f.ns))).To(Succeed())
		for _, pv := range list.Items {
			g.Expect(pv.Spec.Upstream.Package).NotTo(Equal("app-policy"), pv.Name)
		}
		g.Expect(drafts(g, "site-07", "app-policy")).To(Equal(0))
		g.Expect(drafts(g, "site-07", "app-dashboards")).To(Equal(1))
	}, timeout, interval).Should(Succeed())
}

// What a group cannot be is refused when applied, naming the field; an
// upstream of the group git does not have stalls the set naming which.
func TestGroup_badInput(t *testing.T) {
	ctx := context.Background()
	f, _ := groupFleet(t)
	for _, tc := range []struct {
		name string
		edit func(*configv1alpha2.PackageVariantSet)
		want string
	}{
		{"the same package twice", func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Upstreams = append(s.Spec.Upstreams, configv1alpha1.Upstream{Repo: "other", Package: "app", Revision: "1"})
		}, `spec.upstreams[2]: Duplicate value: {"package":"app"}`},
		{"upstream and upstreams", func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Upstream = &configv1alpha1.Upstream{Repo: "blueprints", Package: "app", Revision: "1"}
		}, "spec: Invalid value: exactly one of upstream and upstreams must be set"},
		{"neither", func(s *configv1alpha2.PackageVariantSet) { s.Spec.Upstreams = nil }, "exactly one of upstream and upstreams must be set"},
		{"more than 20", func(s *configv1alpha2.PackageVariantSet) {
			for i := range 19 {
				s.Spec.Upstreams = append(s.Spec.Upstreams, configv1alpha1.Upstream{Repo: "blueprints", Package: fmt.Sprintf("extra-%d", i), Revision: "1"})
			}
		}, "spec.upstreams: Too many: 21: must have at most 20 items"},
		{"package names", func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Targets[0].RepositorySelector.PackageNames = []string{"a"}
		}, "with upstreams, targets set no packageNames"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pvs := groupSet(f.ns, "app", "app-config")
			tc.edit(pvs)
			err := k8sClient.Create(ctx, pvs)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("create: %v, want Invalid with %q", err, tc.want)
			}
		})
	}

	g := NewWithT(t)
	pvs := groupSet(f.ns, "app", "app-config")
	pvs.Spec.Upstreams[1].Revision = "9"
	g.Expect(k8sClient.Create(ctx, pvs)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := condition(g, pvs, configv1alpha1.StalledCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Message).To(Equal("spec.upstreams[1].revision: Repository blueprints has no revision 9 of package app-config (published revisions: 1)"))
	}, timeout, interval).Should(Succeed())
	_, pairs := variants(g, pvs)
	g.Expect(pairs).To(BeEmpty()) // nothing written for half a group
}

// upstreamColumn is the Upstream cell of the set's row in the table the
// API server prints for kubectl get.
func upstreamColumn(t *testing.T, pvs *configv1alpha2.PackageVariantSet) string {
	t.Helper()
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(env.Config.Host, "/")+"/apis/config.porch.kpt.dev/v1alpha2/namespaces/"+pvs.Namespace+"/packagevariantsets/"+pvs.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(body, table); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	for i, c := range table.ColumnDefinitions {
		if c.Name == "Upstream" && len(table.Rows) == 1 {
			v, _ := table.Rows[0].Cells[i].(string)
			return v
		}
	}
	t.Fatalf("no Upstream column in %+v", table)
	return ""
}
