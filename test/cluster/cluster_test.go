package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/manager"
	"github.com/scion-dev/scion/internal/scheme"
	"github.com/scion-dev/scion/internal/testutil/cluster"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

const (
	ns       = "fleet"
	repos    = 10
	packages = 2 // per repository: tenant-a, tenant-b
	variants = repos * packages
)

// TestScionOnANode is one story, in order, on one installation: install
// the previous commit, make the fleet, upgrade to this commit, bump the
// upstream while the controller's leader dies, approve through kubectl
// and the console, lose an API server replica.
func TestScionOnANode(t *testing.T) {
	ctx := context.Background()
	c, err := client.New(node.Config, client.Options{Scheme: scheme.NewStorage()})
	if err != nil {
		t.Fatal(err)
	}
	porch, err := client.New(node.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	gitRoot := t.TempDir()
	server := gitserver.NewServerOn(t, gitRoot, cluster.HostIP+":0")
	catalog := gitserver.InitBare(t, gitRoot, "catalog.git")
	gitserver.SeedRevisions(t, catalog, 1, 3, 5) // pkg-0000 v1, v2 and v3
	var downstreams []string
	for i := range repos {
		name := fmt.Sprintf("cluster-%02d", i)
		gitserver.InitBare(t, gitRoot, name+".git")
		downstreams = append(downstreams, name)
	}

	// 1. The previous commit, installed as its docs say, makes the fleet.
	previous, prevSrc := previousImage(t)
	if previous == "" {
		t.Log("no previous commit to upgrade from: installing this commit's image")
		install(t, filepath.Join(root, "config"), current)
	} else {
		install(t, filepath.Join(prevSrc, "config"), previous)
	}
	applyWhenServed(t, fleetYAML(server, downstreams))
	waitVariants(t, c, "every variant Ready at revision 1", variants, func(pv *configv1alpha1.PackageVariant) bool {
		return pv.Spec.Upstream.Revision == "1"
	})
	before := draftRefs(t, gitRoot, downstreams)
	oneDraftEach(t, c, gitRoot, downstreams)

	// 2. The upgrade: nothing lost, no draft written again.
	if previous != "" {
		t.Logf("upgrading from %s to %s", previous, current)
		install(t, filepath.Join(root, "config"), current)
		waitVariants(t, c, "every variant Ready after the upgrade", variants, func(pv *configv1alpha1.PackageVariant) bool {
			return pv.Spec.Upstream.Revision == "1"
		})
		// The new controller has looked at every variant (its own
		// count of reconciles): still the same drafts, at the same
		// commits.
		waitReconciled(t, c)
		if after := draftRefs(t, gitRoot, downstreams); !equalMaps(before, after) {
			t.Errorf("the upgrade changed the drafts in git:\nbefore %v\nafter  %v", before, after)
		}
		oneDraftEach(t, c, gitRoot, downstreams)
	}
	if out := kubectl(t, "", "-n", "scion-system", "get", "deployment", "scion-controller", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); out != current {
		t.Fatalf("the controller runs %s, want %s", out, current)
	}

	// 3. Two controller replicas; the upstream moves; the leader is
	// killed a third of the way through: its Pod force-deleted (the
	// kubelet stops it), then, on the next move, its process killed
	// outright (a crash: the lease must expire).
	kubectl(t, "", "-n", "scion-system", "scale", "deployment/scion-controller", "--replicas=2")
	waitRollout(t)
	t.Run("failover: leader Pod force-deleted", func(t *testing.T) {
		failover(t, c, "2", func(pod *corev1.Pod) {
			kubectl(t, "", "-n", "scion-system", "delete", "pod", pod.Name, "--grace-period=0", "--force", "--wait=false")
		})
	})
	oneDraftEach(t, c, gitRoot, downstreams)
	waitRollout(t)
	t.Run("failover: leader process killed", func(t *testing.T) {
		failover(t, c, "3", func(pod *corev1.Pod) {
			if len(pod.Status.ContainerStatuses) == 0 {
				t.Fatalf("the Pod %s has no container status", pod.Name)
			}
			if err := node.KillContainer(pod.Status.ContainerStatuses[0].ContainerID); err != nil {
				t.Fatal(err)
			}
		})
	})
	oneDraftEach(t, c, gitRoot, downstreams)

	// 4. Approvals, through kubectl and through the console in the
	// cluster; PackageRevisions through the aggregated API.
	t.Run("approve", func(t *testing.T) { approve(t, ctx, porch) })

	// 5. Scion's API server loses one of two replicas.
	t.Run("apiserver failover", func(t *testing.T) { apiserverFailover(t) })

	// 6. Function images run as Pods in scion-functions.
	t.Run("function runner", func(t *testing.T) { functionRunner(t, c, porch) })

	// 7. Flux deploys what Scion publishes; a rollout judged by Flux
	// rolls a crash-looping release back.
	t.Run("deploy with Flux", func(t *testing.T) { deployWithFlux(t, c, porch, server, gitRoot) })
}

// previousImage builds the image of the commit before HEAD
// ($SCION_UPGRADE_FROM names another) from its own source, and returns it
// and that source ("" when there is no such commit).
func previousImage(t *testing.T) (string, string) {
	t.Helper()
	from := os.Getenv("SCION_UPGRADE_FROM")
	if from == "" {
		from = "HEAD~1"
	}
	rev, err := exec.Command("git", "-C", root, "rev-parse", "--verify", "--quiet", from+"^{commit}").Output()
	if err != nil {
		return "", ""
	}
	commit := strings.TrimSpace(string(rev))
	src := filepath.Join(buildDir, "previous")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("sh", "-c", fmt.Sprintf("git -C %q archive %s | tar -x -C %q", root, commit, src))
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("unpacking %s: %v\n%s", commit, err, out)
	}
	start := time.Now()
	img, err := buildImage(context.Background(), src, "scion:previous", commit[:12])
	if err != nil {
		t.Fatalf("building the image of %s: %v", commit, err)
	}
	t.Logf("the previous commit %s built and pushed in %s", commit[:12], time.Since(start).Round(time.Second))
	return img, src
}

// install applies an overlay over configDir/default that sets the image
// (by digest), as docs/install.md shows, and waits for both Deployments
// and the APIService.
func install(t *testing.T, configDir, img string) {
	t.Helper()
	overlay := writeOverlay(t, filepath.Join(configDir, "default"), img, "")
	start := time.Now()
	kubectl(t, "", "apply", "--server-side", "--force-conflicts", "-k", overlay)
	kubectl(t, "", "wait", "--for=condition=Established", "crd", "--all", "--timeout=2m")
	waitRollout(t)
	t.Logf("installed %s in %s", img, time.Since(start).Round(time.Second))
}

// writeOverlay writes a kustomization over base (a folder of config/)
// that sets Scion's image to img (by digest), as docs/install.md shows,
// with more fields (extra, YAML), and returns its folder.
func writeOverlay(t *testing.T, base, img, extra string) string {
	t.Helper()
	name, digest, ok := strings.Cut(img, "@")
	if !ok {
		t.Fatalf("image %s is not by digest", img)
	}
	overlay := t.TempDir()
	// kustomize takes no absolute path.
	rel, err := filepath.Rel(overlay, base)
	if err != nil {
		t.Fatal(err)
	}
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
images:
- name: scion
  newName: %s
  digest: %s
%s`, rel, name, digest, extra)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	return overlay
}

// waitRollout waits for both Deployments to have rolled out and the
// APIService to be Available.
func waitRollout(t *testing.T) {
	t.Helper()
	for _, d := range []string{"scion-controller", "scion-apiserver"} {
		if out, err := kubectlErr("", "-n", "scion-system", "rollout", "status", "deployment/"+d, "--timeout=5m"); err != nil {
			t.Fatalf("deployment %s did not roll out: %v\n%s\n%s\n%s", d, err, out,
				kubectlOr("-n", "scion-system", "get", "pods", "-o", "wide"), kubectlOr("-n", "scion-system", "describe", "pods"))
		}
	}
	for _, v := range []string{"v1alpha1", "v1alpha2"} {
		if out, err := kubectlErr("", "wait", "--for=condition=Available", "apiservice/"+v+".porch.kpt.dev", "--timeout=3m"); err != nil {
			t.Fatalf("the APIService %s.porch.kpt.dev is not Available: %v\n%s\n%s", v, err, out, kubectlOr("get", "apiservice", v+".porch.kpt.dev", "-o", "yaml"))
		}
	}
}

// applyWhenServed applies objects of Scion's kinds right after an
// install, as docs/troubleshooting.md says to: for a few seconds after the
// CRDs are created, the API server's admission policies answer 503 "There
// can be a delay between when CustomResourceDefinitions are created and
// when they are available"; try again.
func applyWhenServed(t *testing.T, objects string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, err := kubectlErr(objects, "apply", "-f", "-")
		if err == nil {
			return
		}
		if !strings.Contains(out, "There can be a delay between when CustomResourceDefinitions are created") || time.Now().After(deadline) {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
		time.Sleep(2 * time.Second)
	}
}

// kubectlOr is kubectl's output, or its error, for a failure's message.
func kubectlOr(args ...string) string {
	out, err := kubectlErr("", args...)
	if err != nil {
		return fmt.Sprintf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return out
}

// fleetYAML is the fleet as a person applies it: the catalog, ten
// deployment repositories served by the test's git server (which the
// Pods reach at cluster.HostIP), a set that varies pkg-0000 into
// tenant-a and tenant-b of each.
func fleetYAML(server *gitserver.Server, downstreams []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns)
	fmt.Fprintf(&b, "---\napiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata: {name: catalog, namespace: %s}\nspec:\n  git: {repo: %q}\n", ns, server.URLFor("catalog.git"))
	for _, d := range downstreams {
		fmt.Fprintf(&b, "---\napiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata: {name: %s, namespace: %s, labels: {fleet: \"yes\"}}\nspec:\n  deployment: true\n  git: {repo: %q, createBranch: true}\n", d, ns, server.URLFor(d+".git"))
	}
	fmt.Fprintf(&b, `---
apiVersion: config.porch.kpt.dev/v1alpha2
kind: PackageVariantSet
metadata: {name: tenants, namespace: %s}
spec:
  upstream: {repo: catalog, package: pkg-0000, revision: "1"}
  targets:
  - repositorySelector:
      matchLabels: {fleet: "yes"}
      packageNames: [tenant-a, tenant-b]
`, ns)
	return b.String()
}

// waitVariants waits until the namespace has n variants, every one Ready
// at its generation and matching want.
func waitVariants(t *testing.T, c client.Client, what string, n int, want func(*configv1alpha1.PackageVariant) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		list := &configv1alpha1.PackageVariantList{}
		err := c.List(context.Background(), list, client.InNamespace(ns))
		done, reasons := 0, map[string]int{}
		if err == nil {
			for i := range list.Items {
				pv := &list.Items[i]
				ready := apimeta.FindStatusCondition(pv.Status.Conditions, "Ready")
				switch {
				case pv.Status.ObservedGeneration != pv.Generation:
					reasons["not observed"]++
				case ready == nil || ready.Status != metav1.ConditionTrue:
					r := "no Ready"
					if ready != nil {
						r = ready.Reason + ": " + ready.Message
					}
					reasons[r]++
				case !want(pv):
					reasons["not yet changed"]++
				default:
					done++
				}
			}
		}
		if err == nil && done == n && len(list.Items) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d after 5m (list error: %v); the others: %v\n%s", what, done, n, err, reasons,
				kubectlOr("-n", "scion-system", "logs", "deployment/scion-controller", "--tail=30"))
		}
		time.Sleep(time.Second)
	}
}

// waitReconciled waits until the controller that leads has reconciled
// every variant since it started, by its own metrics
// (controller_runtime_reconcile_total of the packagevariant controller).
func waitReconciled(t *testing.T, c client.Client) {
	t.Helper()
	var last string
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		time.Sleep(time.Second)
		l := &coordinationv1.Lease{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "scion-system", Name: manager.LeaderElectionID}, l); err != nil {
			last = err.Error()
			continue
		}
		podName, _, _ := strings.Cut(ptr.Deref(l.Spec.HolderIdentity, ""), "_")
		pod := &corev1.Pod{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "scion-system", Name: podName}, pod); err != nil || pod.Status.PodIP == "" {
			last = fmt.Sprintf("the leader's Pod %q: %v", podName, err)
			continue
		}
		resp, err := http.Get("http://" + pod.Status.PodIP + ":8080/metrics")
		if err != nil {
			last = err.Error()
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, `controller_runtime_reconcile_total{controller="packagevariant",result="success"} `) {
				fmt.Sscan(strings.Fields(line)[1], &n)
			}
		}
		if n >= variants {
			t.Logf("the controller %s has reconciled the variants %d times since it started", podName, n)
			return
		}
		last = fmt.Sprintf("%s has reconciled variants %d times", podName, n)
	}
	t.Fatalf("the new controller has not reconciled every variant within 3m: %s", last)
}

// draftRefs is every draft branch of the deployment repositories with
// its commit.
func draftRefs(t *testing.T, gitRoot string, downstreams []string) map[string]string {
	t.Helper()
	refs := map[string]string{}
	for _, d := range downstreams {
		out := gitserver.Git(t, filepath.Join(gitRoot, d+".git"), "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/drafts/")
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if ref, sha, ok := strings.Cut(line, " "); ok {
				refs[d+":"+ref] = sha
			}
		}
	}
	return refs
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// oneDraftEach checks that every variant has exactly one draft: one draft
// branch per package in git, and one unpublished PackageRevision per
// package in the cluster.
func oneDraftEach(t *testing.T, c client.Client, gitRoot string, downstreams []string) {
	t.Helper()
	perPackage := map[string]int{}
	for k := range draftRefs(t, gitRoot, downstreams) {
		repo, ref, _ := strings.Cut(k, ":")
		pkg, _, _ := strings.Cut(strings.TrimPrefix(ref, "refs/heads/drafts/"), "/")
		perPackage[repo+"/"+pkg]++
	}
	for k, n := range perPackage {
		if n != 1 {
			t.Errorf("%s has %d draft branches in git", k, n)
		}
	}
	if len(perPackage) != variants {
		t.Errorf("%d packages with a draft branch, want %d: %v", len(perPackage), variants, perPackage)
	}
	list := &porchv1alpha1.PackageRevisionList{}
	if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	inCluster := map[string]int{}
	for _, pr := range list.Items {
		if pr.Spec.Repository != "catalog" && pr.Spec.Lifecycle != porchv1alpha1.LifecyclePublished {
			inCluster[pr.Spec.Repository+"/"+pr.Spec.PackageName]++
		}
	}
	for k, n := range inCluster {
		if n != 1 {
			t.Errorf("%s has %d unpublished PackageRevisions", k, n)
		}
	}
}

// failover moves the set's upstream to revision and, once a third of the
// variants have moved, kills the controller that leads: the other
// replica takes the lease and finishes.
func failover(t *testing.T, c client.Client, revision string, kill func(*corev1.Pod)) {
	ctx := context.Background()
	// The lease's holder: the Pod's name and the process's own UID (a
	// restarted container is a new holder in the same Pod).
	leader := func() string {
		l := &coordinationv1.Lease{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "scion-system", Name: manager.LeaderElectionID}, l); err != nil {
			return ""
		}
		return ptr.Deref(l.Spec.HolderIdentity, "")
	}
	old := leader()
	oldPodName, _, _ := strings.Cut(old, "_")
	if !strings.HasPrefix(oldPodName, "scion-controller-") {
		t.Fatalf("the lease %s is held by %q, not a controller Pod", manager.LeaderElectionID, old)
	}
	oldPod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "scion-system", Name: oldPodName}, oldPod); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "", "-n", ns, "patch", "packagevariantset", "tenants", "--type=merge", "-p", `{"spec":{"upstream":{"revision":"`+revision+`"}}}`)
	bumped := func() int {
		list := &configv1alpha1.PackageVariantList{}
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return 0
		}
		n := 0
		for _, pv := range list.Items {
			if string(pv.Spec.Upstream.Revision) == revision && pv.Status.ObservedGeneration == pv.Generation {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(3 * time.Minute)
	for bumped() < variants/3 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d variants moved to revision %s in 3m", bumped(), revision)
		}
		time.Sleep(100 * time.Millisecond)
	}
	atKill := bumped()
	killed := time.Now()
	kill(oldPod)
	var moved time.Time
	leaseDeadline := killed.Add(3 * time.Minute)
	for {
		if l := leader(); l != "" && l != old {
			moved = time.Now()
			t.Logf("the lease moved from %s to %s", old, l)
			break
		}
		if time.Now().After(leaseDeadline) {
			t.Fatalf("the lease is still %s's 3m after it was killed", old)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The new leader's first write: one more variant at revision 2.
	start := bumped()
	var firstWrite time.Duration
	writeDeadline := killed.Add(4 * time.Minute)
	for {
		if n := bumped(); n > start || n == variants {
			firstWrite = time.Since(killed)
			break
		}
		if time.Now().After(writeDeadline) {
			t.Fatal("no variant moved within 4m of the kill")
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitVariants(t, c, "every variant Ready at revision "+revision+" after the failover", variants, func(pv *configv1alpha1.PackageVariant) bool {
		return string(pv.Spec.Upstream.Revision) == revision
	})
	t.Logf("failover: %d of %d variants had moved at the kill; kill → the standby holds the lease %s; kill → its first write %s; all moved %s after the kill",
		atKill, variants, moved.Sub(killed).Round(100*time.Millisecond), firstWrite.Round(100*time.Millisecond), time.Since(killed).Round(100*time.Millisecond))
}

// approve proposes two drafts, approves one through kubectl (the
// approval subresource) and the other through the console's API, the
// console running in the cluster in bearer mode with a ServiceAccount's
// token, and lists PackageRevisions through the aggregated API.
func approve(t *testing.T, ctx context.Context, porch client.Client) {
	drafts := map[string]string{} // repository → the tenant-a draft's name
	list := &porchv1alpha1.PackageRevisionList{}
	if err := porch.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, pr := range list.Items {
		if pr.Spec.PackageName == "tenant-a" && pr.Spec.Lifecycle == porchv1alpha1.LifecycleDraft {
			drafts[pr.Spec.Repository] = pr.Name
		}
	}
	byKubectl, byConsole := drafts["cluster-00"], drafts["cluster-01"]
	if byKubectl == "" || byConsole == "" {
		t.Fatalf("no tenant-a drafts in cluster-00 and cluster-01: %v", drafts)
	}
	// Propose both, as an editor's kubectl would: spec.lifecycle.
	for _, name := range []string{byKubectl, byConsole} {
		kubectl(t, "", "-n", ns, "patch", "packagerevisions.porch.kpt.dev", name, "--type=merge", "-p", `{"spec":{"lifecycle":"Proposed"}}`)
		waitShown(t, name, "Proposed")
	}

	// kubectl: the approval subresource, as porchctl's approve sends it.
	pr := kubectl(t, "", "-n", ns, "get", "packagerevisions.porch.kpt.dev", byKubectl, "-o", "json")
	approved := strings.Replace(pr, `"lifecycle": "Proposed"`, `"lifecycle": "Published"`, 1)
	kubectl(t, approved, "replace", "--subresource=approval", "-f", "-")
	waitShown(t, byKubectl, "Published")

	// The console in the cluster, bearer mode, as config/console deploys
	// it without its proxy (whose image cannot be had here).
	consoleIP := deployConsole(t)
	kubectl(t, "", "-n", ns, "create", "serviceaccount", "approver")
	kubectl(t, "", "-n", ns, "create", "rolebinding", "approver", "--clusterrole=scion-approver", "--serviceaccount="+ns+":approver")
	token := strings.TrimSpace(kubectl(t, "", "-n", ns, "create", "token", "approver"))
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	base := "http://" + consoleIP + ":8080"
	do := func(req *http.Request) (int, string) {
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", req.Method, req.URL, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/proposals", nil)
	code, page := do(req)
	if code != http.StatusOK || !strings.Contains(page, byConsole) {
		t.Fatalf("GET /proposals as system:serviceaccount:%s:approver: %d, the proposal %s shown: %v\n%.2000s", ns, code, byConsole, strings.Contains(page, byConsole), page)
	}
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no csrf token on the proposals page:\n%.2000s", page)
	}
	form := url.Values{"csrf": {m[1]}, "verb": {"approve"}, "revision": {byConsole}, "back": {"/proposals"}}
	req, _ = http.NewRequest(http.MethodPost, base+"/revisions", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	code, page = do(req)
	if code != http.StatusOK || !strings.Contains(page, "is Published") {
		t.Fatalf("approving %s through the console: %d\n%.3000s", byConsole, code, page)
	}
	waitShown(t, byConsole, "Published")
	// Recorded as the ServiceAccount, not as the console.
	by := kubectl(t, "", "-n", ns, "get", "packagerevisions.porch.kpt.dev", byConsole, "-o", `jsonpath={.metadata.annotations.porch\.kpt\.dev/approved-by}`)
	if by != "system:serviceaccount:"+ns+":approver" {
		t.Errorf("%s approved by %q, want the ServiceAccount", byConsole, by)
	}

	// The aggregated API lists every revision of the fleet.
	out := kubectl(t, "", "-n", ns, "get", "packagerevisions", "--no-headers")
	if n := len(strings.Split(strings.TrimSpace(out), "\n")); n < variants+2 {
		t.Errorf("kubectl get packagerevisions lists %d, want at least %d:\n%s", n, variants+2, out)
	}
	// And Porch's next version lists the same revisions (listed again
	// while a controller's write falls between the two lists).
	var out1, out2 string
	for deadline := time.Now().Add(time.Minute); ; {
		out2 = kubectl(t, "", "-n", ns, "get", "packagerevisions.v1alpha2.porch.kpt.dev", "-o", "name")
		out1 = kubectl(t, "", "-n", ns, "get", "packagerevisions.v1alpha1.porch.kpt.dev", "-o", "name")
		if out1 == out2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if out2 != out1 || out1 == "" {
		t.Errorf("v1alpha2 lists other revisions than v1alpha1:\n%s\n---\n%s", out2, out1)
	}
}

// waitShown waits until kubectl shows the revision's lifecycle as want
// (status: what git holds).
func waitShown(t *testing.T, name, want string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, _ := kubectlErr("", "-n", ns, "get", "packagerevisions.porch.kpt.dev", name, "-o", "jsonpath={.spec.lifecycle}/{.status.conditions}")
		if strings.HasPrefix(out, want+"/") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is not %s after 2m: %s", name, want, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// deployConsole applies config/console with the image under test, without
// its authenticating proxy and listening on the Pod's address, and
// returns the Pod's IP (the test reaches the Pod network).
func deployConsole(t *testing.T) string {
	t.Helper()
	overlay := writeOverlay(t, filepath.Join(root, "config", "console"), current, fmt.Sprintf(`patches:
- target: {kind: Deployment, name: scion-console}
  patch: |-
    - op: remove
      path: /spec/template/spec/containers/1
    - op: replace
      path: /spec/template/spec/containers/0/args
      value: [console, --auth=bearer, --listen=0.0.0.0:8080, --namespace=%s]
`, ns))
	kubectl(t, "", "apply", "-k", overlay)
	if out, err := kubectlErr("", "-n", "scion-system", "rollout", "status", "deployment/scion-console", "--timeout=3m"); err != nil {
		t.Fatalf("the console did not roll out: %v\n%s\n%s", err, out, kubectlOr("-n", "scion-system", "describe", "pods", "-l", "app.kubernetes.io/component=console"))
	}
	var pods corev1.PodList
	if err := json.Unmarshal([]byte(kubectl(t, "", "-n", "scion-system", "get", "pods", "-l", "app.kubernetes.io/component=console", "-o", "json")), &pods); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" && p.Status.Phase == corev1.PodRunning {
			// Wait for it to answer.
			deadline := time.Now().Add(time.Minute)
			for {
				resp, err := http.Get("http://" + p.Status.PodIP + ":8080/static/")
				if err == nil {
					resp.Body.Close()
					return p.Status.PodIP
				}
				if time.Now().After(deadline) {
					t.Fatalf("the console Pod %s does not answer: %v\n%s", p.Name, err, kubectlOr("-n", "scion-system", "logs", p.Name))
				}
				time.Sleep(500 * time.Millisecond)
			}
		}
	}
	t.Fatalf("no running console Pod:\n%s", kubectlOr("-n", "scion-system", "get", "pods", "-o", "wide"))
	return ""
}

// apiserverFailover runs two API server replicas and force-deletes one
// while kubectl lists PackageRevisions every 200 ms: kubectl keeps
// working. It reports how many requests failed during the switch.
func apiserverFailover(t *testing.T) {
	kubectl(t, "", "-n", "scion-system", "scale", "deployment/scion-apiserver", "--replicas=2")
	waitRollout(t)
	// The rollout is done when two replicas are available; a Pod of an
	// earlier rollout (the upgrade's) may still be terminating: it once
	// made three in fresh-clone CI.
	var live []corev1.Pod
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var pods corev1.PodList
		if err := json.Unmarshal([]byte(kubectl(t, "", "-n", "scion-system", "get", "pods", "-l", "app.kubernetes.io/component=apiserver", "-o", "json")), &pods); err != nil {
			t.Fatal(err)
		}
		live = live[:0]
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
				live = append(live, p)
			}
		}
		if len(live) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d API server Pods not being deleted, want 2:\n%s", len(live), kubectlOr("-n", "scion-system", "get", "pods", "-o", "wide"))
		}
		time.Sleep(time.Second)
	}
	var ok, failed atomic.Int32
	var mu sync.Mutex
	var failures []string
	var lastFailure atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if out, err := kubectlErr("", "-n", ns, "get", "packagerevisions", "--no-headers"); err != nil {
				failed.Add(1)
				lastFailure.Store(time.Now().UnixNano())
				mu.Lock()
				failures = append(failures, strings.TrimSpace(out))
				mu.Unlock()
			} else {
				ok.Add(1)
			}
		}
	}()
	time.Sleep(2 * time.Second)
	killed := time.Now()
	kubectl(t, "", "-n", "scion-system", "delete", "pod", live[0].Name, "--grace-period=0", "--force", "--wait=false")
	time.Sleep(20 * time.Second)
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	sort.Strings(failures)
	window := time.Duration(0)
	if n := lastFailure.Load(); n > 0 {
		window = time.Unix(0, n).Sub(killed)
	}
	t.Logf("API server failover: %d kubectl get packagerevisions answered, %d failed (the last %s after the kill): %v", ok.Load(), failed.Load(), window.Round(100*time.Millisecond), failures)
	if ok.Load() == 0 {
		t.Fatal("no kubectl request succeeded")
	}
	// After the switch, every request is answered.
	if out, err := kubectlErr("", "-n", ns, "get", "packagerevisions", "--no-headers"); err != nil {
		t.Fatalf("kubectl after the API server failover: %v\n%s", err, out)
	}
}
