package flux_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/console"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// A rollout judged by Flux (spec.health.engine: Flux): each wave goes on
// once the Kustomizations of its targets' clusters run the new revision
// and are Ready (waiting for what they applied to be healthy). A good
// release goes everywhere. A bad one (a Deployment that never becomes
// available: no node runs it here) fails on the canary as Flux reports it
// (HealthCheckFailed), the rollout rolls back, Flux deploys the revision
// before, and the other cluster is never touched.
func TestFlux_rolloutJudgedByFlux(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "flux-rollout")
	root := gitserver.Root(t)
	srv := gitserver.NewServer(t, root)
	clusters := []string{"cluster-01", "cluster-02"}
	targets := map[string]target{}
	for _, c := range clusters {
		gitserver.InitBare(t, root, c+".git")
		tg := newTarget(t, ns, c)
		targets[c] = tg
		g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: c, Namespace: ns},
			Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: &configv1alpha1.GitRepository{Repo: srv.URLFor(c + ".git"), CreateBranch: true},
				Cluster: tg.cluster()}})).To(Succeed())
		publish(t, ns, c, "app", "v1", map[string]string{"a.yaml": configMap("a", "one")}, "")
		apply(t, gitSource(tg, c, srv.URLFor(c+".git"), "./app"))
	}
	for _, c := range clusters {
		g.Eventually(value(targets[c].appNS, "a")).WithTimeout(time.Minute).Should(Equal("one"))
	}

	release := func(name, ws string, files map[string]string, fromWS string) {
		for _, c := range clusters {
			propose(t, ns, c, "app", ws, files, c+".app."+fromWS)
			pr := &porchv1alpha1.PackageRevision{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: c + ".app." + ws}, pr)).To(Succeed())
			pr.Labels = map[string]string{"release": name}
			g.Expect(k8sClient.Update(ctx, pr)).To(Succeed())
		}
		g.Expect(k8sClient.Create(ctx, &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: configv1alpha1.PackageRolloutSpec{
			RevisionSelector:  metav1.LabelSelector{MatchLabels: map[string]string{"release": name}},
			Waves:             []configv1alpha1.RolloutWave{{Name: "canary", MaxTargets: ptr.To[int32](1)}},
			Health:            &configv1alpha1.RolloutHealth{Engine: configv1alpha1.HealthEngineFlux},
			ProgressDeadline:  &metav1.Duration{Duration: 90 * time.Second}, // past the Kustomization's health check timeout (30s at least)
			RollbackOnFailure: true,
		}})).To(Succeed())
	}
	rollout := func(name string) func() *configv1alpha1.PackageRollout {
		return func() *configv1alpha1.PackageRollout {
			ro := &configv1alpha1.PackageRollout{}
			_ = k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ro)
			return ro
		}
	}
	describe := func(name string) func() string {
		return func() string {
			prs := &porchv1alpha1.PackageRevisionList{}
			_ = k8sClient.List(ctx, prs, client.InNamespace(ns))
			out := ""
			for _, pr := range prs.Items {
				out += fmt.Sprintf("%s %s rev %d labels %v\n", pr.Name, pr.Spec.Lifecycle, pr.Spec.Revision, pr.Labels)
			}
			return fmt.Sprintf("%+v\n%+v\n%+v\n%s", rollout(name)().Status, deployed(ns, "cluster-01", "app")(), deployed(ns, "cluster-02", "app")(), out)
		}
	}

	// A good release: both clusters run it, and the rollout completes.
	release("good", "v2", map[string]string{"a.yaml": configMap("a", "two")}, "v1")
	g.Eventually(func() bool { return readyTrue(rollout("good")().Status.Conditions) }).WithTimeout(2*time.Minute).Should(BeTrue(), describe("good"))
	for _, c := range clusters {
		g.Expect(value(targets[c].appNS, "a")()).To(Equal("two"), "%s runs the release before the rollout completes", c)
		g.Expect(deployed(ns, c, "app")()).To(And(HaveField("State", configv1alpha1.DeployCurrent), HaveField("Revision", 2)))
	}

	// A bad release: its Deployment never becomes available.
	bad := map[string]string{"a.yaml": configMap("a", "three"), "web.yaml": deployment("web")}
	release("bad", "v3", bad, "v2")
	// The canary (cluster-01, by name) is published, Flux applies it and
	// reports the Deployment unhealthy; past the deadline the rollout stops
	// and rolls back.
	g.Eventually(func() *configv1alpha1.PackageRollout { return rollout("bad")() }).WithTimeout(3*time.Minute).Should(
		HaveField("Status.Conditions", ContainElement(And(HaveField("Type", "Stalled"), HaveField("Status", metav1.ConditionTrue),
			HaveField("Reason", configv1alpha1.BudgetExceededReason), HaveField("Message", And(ContainSubstring("cluster-01"), ContainSubstring("HealthCheckFailed")))))),
		describe("bad"))
	g.Eventually(deployed(ns, "cluster-01", "app")).WithTimeout(time.Minute).Should(And(HaveField("State", configv1alpha1.DeployCurrent), HaveField("Revision", 4)),
		"the rollback (revision 4, the content of revision 2) deployed")
	g.Expect(value(targets["cluster-01"].appNS, "a")()).To(Equal("two"))
	g.Eventually(func() bool {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: targets["cluster-01"].appNS, Name: "web"}, &appsv1.Deployment{})
		return err != nil
	}).WithTimeout(time.Minute).Should(BeTrue(), "the bad release's Deployment is pruned")
	pr := &porchv1alpha1.PackageRevision{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-02.app.v3"}, pr)).To(Succeed())
	g.Expect(pr.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecycleProposed), "the second cluster never got the bad release")
	g.Expect(deployed(ns, "cluster-02", "app")()).To(HaveField("Revision", 2))

	// What runs where, as people look at it (Flux reconciles each
	// Kustomization again every interval, Progressing for a moment: the
	// status is read until both say Current).
	g.Eventually(func(g Gomega) {
		out, err := scion(ns, "rollout", "status", "bad")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(MatchRegexp(`cluster-01\.app\.v3 .*repository cluster-01, revision 3, published, health Flux, cluster runs revision 4 of 4 \(Current\)`))
		g.Expect(out).To(MatchRegexp(`cluster-02\.app\.v3 .*repository cluster-02, not published, health Flux, cluster runs revision 2 of 2 \(Current\)`))
	}).WithTimeout(time.Minute).Should(Succeed())
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: k8sClient.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	con, err := console.New(console.Options{Client: c, Namespace: ns})
	g.Expect(err).NotTo(HaveOccurred())
	web := httptest.NewServer(con)
	defer func() { web.Close(); con.Close() }()
	page := get(t, web.URL+"/targets")
	g.Expect(page).To(MatchRegexp(`(?s)cluster-01</td>.*>v4</span>.*title="cluster runs revision 4 of 4 \(Current\)">runs v4</span>`))
	g.Expect(page).To(MatchRegexp(`(?s)cluster-02</td>.*>v2</span>.*runs v2</span>`))
	page = get(t, web.URL+"/rollout?name=bad")
	g.Expect(page).To(ContainSubstring("the Flux Kustomizations of each target"))
}

// get reads a page of the console.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s\n%s", url, resp.Status, b)
	}
	return string(b)
}

func readyTrue(conds []metav1.Condition) bool {
	for _, c := range conds {
		if c.Type == "Ready" {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

func deployment(name string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
spec:
  replicas: 1
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `}}
    spec:
      containers:
      - {name: web, image: registry.example.com/web:bad}
`
}
