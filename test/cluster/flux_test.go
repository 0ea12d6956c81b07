package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/demo"
	"github.com/scion-dev/scion/internal/testutil/cluster"
	"github.com/scion-dev/scion/internal/testutil/flux"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/testutil/scionbin"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

// deployWithFlux is the last mile on the node: Flux's controllers (run
// beside the node, as an administrator) deploy a deployment repository
// Scion publishes into; Scion, as Pods, reads the cluster's Kustomization
// through the health reader of config/target-cluster. A good release's
// Deployment runs (the node's pause image); a bad one's crash-loops (a
// command that does not exist), Flux reports it, the rollout judged by
// Flux rolls back, Flux deploys the revision before, and its Pods are
// Ready again.
func deployWithFlux(t *testing.T, c, porch client.Client, server *gitserver.Server, gitRoot string) {
	ctx := context.Background()
	fx := flux.Start(t, node.Config, c, node.Kubeconfig)
	kc := flux.TargetCluster(t, node.Config, c, flux.Namespace, time.Hour)
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-01-kubeconfig", Namespace: ns}, Data: map[string][]byte{"value": kc}}); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "", "create", "namespace", "web")
	gitserver.InitBare(t, gitRoot, "prod-01.git")
	repo := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "prod-01", Namespace: ns}, Spec: configv1alpha1.RepositorySpec{
		Deployment: true, Git: &configv1alpha1.GitRepository{Repo: server.URLFor("prod-01.git"), CreateBranch: true},
		Cluster: &configv1alpha1.TargetCluster{KubeConfig: configv1alpha1.KubeConfigReference{SecretRef: configv1alpha1.KubeConfigSecretRef{Name: "prod-01-kubeconfig"}}}}}
	if err := c.Create(ctx, repo); err != nil {
		t.Fatal(err)
	}
	pkgs := flux.Packages{Kubeconfig: node.Kubeconfig, Namespace: ns}
	pause := cluster.PauseImage
	pkgs.Publish(t, "prod-01", "web", "v1", map[string]string{"deployment.yaml": webDeployment(pause, "")}, "")
	kubectl(t, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: prod-01, namespace: %[1]s}
spec:
  url: %[2]s
  ref: {branch: main}
  interval: 5s
---
`, flux.Namespace, server.URLFor("prod-01.git"))+kustomization("prod-01", "GitRepository", "./web", "web"), "apply", "-f", "-")
	defer func() {
		if t.Failed() {
			t.Log(fx.Logs())
		}
	}()
	running := func(rev int) func() error {
		return func() error {
			r := &configv1alpha1.Repository{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prod-01"}, r); err != nil {
				return err
			}
			if r.Status.Cluster == nil || len(r.Status.Cluster.Packages) == 0 {
				return fmt.Errorf("status.cluster not read yet")
			}
			if d := r.Status.Cluster.Packages[0]; d.Revision != rev || d.State != configv1alpha1.DeployCurrent {
				return fmt.Errorf("status.cluster: %+v (error %q)", d, r.Status.Cluster.Error)
			}
			return nil
		}
	}
	podsReady := func() error {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "web", Name: "web"}, d); err != nil {
			return err
		}
		if d.Status.ObservedGeneration != d.Generation || d.Status.UpdatedReplicas != 1 || d.Status.AvailableReplicas != 1 || d.Status.Replicas != 1 {
			return fmt.Errorf("Deployment web: %d updated, %d available of %d", d.Status.UpdatedReplicas, d.Status.AvailableReplicas, d.Status.Replicas)
		}
		return nil
	}
	waitFor(t, "Flux deploys revision 1, read by Scion's Pods from the cluster", 3*time.Minute, running(1))
	waitFor(t, "revision 1's Pod Ready", time.Minute, podsReady)

	// A bad release, rolled out judged by Flux.
	pkgs.Propose(t, "prod-01", "web", "v2", map[string]string{"deployment.yaml": webDeployment(pause, "/no-such-command")}, "prod-01.web.v1")
	pr := &porchv1alpha1.PackageRevision{}
	if err := porch.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prod-01.web.v2"}, pr); err != nil {
		t.Fatal(err)
	}
	pr.Labels["release"] = "web-v2"
	if err := porch.Update(ctx, pr); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Name: "web-v2", Namespace: ns}, Spec: configv1alpha1.PackageRolloutSpec{
		RevisionSelector:  metav1.LabelSelector{MatchLabels: map[string]string{"release": "web-v2"}},
		Waves:             []configv1alpha1.RolloutWave{{Name: "canary", MaxTargets: ptr.To[int32](1)}},
		Health:            &configv1alpha1.RolloutHealth{Engine: configv1alpha1.HealthEngineFlux},
		ProgressDeadline:  &metav1.Duration{Duration: 75 * time.Second},
		RollbackOnFailure: true,
	}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "revision 2's Pod crash-loops", 2*time.Minute, func() error {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace("web")); err != nil {
			return err
		}
		for _, p := range pods.Items {
			for _, s := range p.Status.ContainerStatuses {
				if w := s.State.Waiting; w != nil && (w.Reason == "CrashLoopBackOff" || w.Reason == "RunContainerError" || w.Reason == "StartError") || s.RestartCount > 0 {
					return nil
				}
				if term := s.LastTerminationState.Terminated; term != nil {
					return nil
				}
			}
		}
		return fmt.Errorf("no container of Deployment web failing yet")
	})
	waitFor(t, "the rollout fails on Flux's word and rolls back", 4*time.Minute, func() error {
		ro := &configv1alpha1.PackageRollout{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-v2"}, ro); err != nil {
			return err
		}
		st := apimeta.FindStatusCondition(ro.Status.Conditions, "Stalled")
		if st == nil || st.Status != metav1.ConditionTrue || st.Reason != configv1alpha1.BudgetExceededReason {
			return fmt.Errorf("not stopped: %s", ro.Status.Blocked)
		}
		if !strings.Contains(st.Message, "prod-01") || !strings.Contains(st.Message, "HealthCheckFailed") {
			return fmt.Errorf("the message does not say Flux's reason: %s", st.Message)
		}
		if ro.Status.Waves[0].RolledBack != 1 {
			return fmt.Errorf("not rolled back yet: %s", st.Message)
		}
		return nil
	})
	waitFor(t, "Flux deploys the rollback (revision 3)", 3*time.Minute, running(3))
	waitFor(t, "the rollback's Pod Ready", 2*time.Minute, podsReady)
	out := kubectl(t, "", "-n", ns, "get", "repository", "prod-01", "-o", "jsonpath={.status.cluster.packages[0].state} {.status.cluster.packages[0].revision}")
	if out != "Current 3" {
		t.Errorf("kubectl get repository prod-01: %q, want Current 3", out)
	}

	t.Run("from an OCI deployment repository", func(t *testing.T) { deployFromOCI(t, c, pkgs) })
	t.Run("make demo's bad release on the node", func(t *testing.T) { demoOnTheNode(t, c, kc) })
}

// deployFromOCI: Scion's Pods publish into an OCI deployment repository
// in the node's registry (plain HTTP on a private address), and Flux's
// OCIRepository follows its latest tag: each published revision is
// applied on the node, and Scion reads it back by digest.
func deployFromOCI(t *testing.T, c client.Client, pkgs flux.Packages) {
	ctx := context.Background()
	prefix := cluster.RegistryHost + "/sites/prod-02"
	repo := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "prod-02", Namespace: ns}, Spec: configv1alpha1.RepositorySpec{
		Type: configv1alpha1.OCIRepositoryType, Deployment: true, OCI: &configv1alpha1.OCIRepository{Registry: prefix},
		Cluster: &configv1alpha1.TargetCluster{KubeConfig: configv1alpha1.KubeConfigReference{SecretRef: configv1alpha1.KubeConfigSecretRef{Name: "prod-01-kubeconfig"}}}}}
	if err := c.Create(ctx, repo); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "", "create", "namespace", "settings")
	settings := func(v string) map[string]string {
		return map[string]string{"settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  value: " + v + "\n"}
	}
	pkgs.Publish(t, "prod-02", "settings", "v1", settings("one"), "")
	kubectl(t, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: prod-02, namespace: %[1]s}
spec:
  url: oci://%[2]s/settings
  ref: {tag: latest}
  insecure: true
  interval: 5s
---
`, flux.Namespace, prefix)+kustomization("prod-02", "OCIRepository", "./", "settings"), "apply", "-f", "-")
	running := func(rev int, value string) func() error {
		return func() error {
			r := &configv1alpha1.Repository{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prod-02"}, r); err != nil {
				return err
			}
			d := r.Status.Cluster.Package("settings")
			if d == nil || d.Revision != rev || d.State != configv1alpha1.DeployCurrent || !strings.HasPrefix(d.AppliedRevision, "latest@sha256:") {
				return fmt.Errorf("status.cluster of prod-02: %+v", r.Status.Cluster)
			}
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "settings", Name: "settings"}, cm); err != nil {
				return err
			}
			if cm.Data["value"] != value {
				return fmt.Errorf("ConfigMap settings/settings: %q, want %q", cm.Data["value"], value)
			}
			return nil
		}
	}
	waitFor(t, "Flux deploys revision 1 from the OCI registry, read back by digest", 3*time.Minute, running(1, "one"))
	pkgs.Publish(t, "prod-02", "settings", "v2", settings("two"), "prod-02.settings.v1")
	waitFor(t, "Flux follows latest to revision 2", 3*time.Minute, running(2, "two"))
}

// demoOnTheNode runs `scion dev demo --target-cluster`, what make demo
// runs as root, with this node (and its Flux) as the target: cluster-06's
// bad release crash-loops here, Flux's word rolls it back, Flux deploys
// the rollback and its Pods are Ready again.
func demoOnTheNode(t *testing.T, c client.Client, reader []byte) {
	ctx := context.Background()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := scionbin.Build(t)
	dir := filepath.Join(t.TempDir(), "dev")
	if err := os.MkdirAll(filepath.Join(dir, "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Flux runs beside the node, on this machine: it reads the demo's
	// repositories over loopback, as hack/node start serves them.
	server := gitserver.NewServer(t, filepath.Join(dir, "git"))
	server.ReadOnly = true
	readerFile := filepath.Join(t.TempDir(), "reader.kubeconfig")
	if err := os.WriteFile(readerFile, reader, 0o600); err != nil {
		t.Fatal(err)
	}
	target, err := json.Marshal(demo.TargetCluster{Kubeconfig: node.Kubeconfig, ReaderKubeconfig: readerFile, GitURL: server.URL, FluxNamespace: flux.Namespace, Image: cluster.PauseImage})
	if err != nil {
		t.Fatal(err)
	}
	targetFile := filepath.Join(t.TempDir(), "target.json")
	if err := os.WriteFile(targetFile, target, 0o644); err != nil {
		t.Fatal(err)
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	t.Cleanup(func() { _ = exec.Command(bin, "dev", "down", "--dir", dir).Run() })
	cmd := exec.Command(bin, "dev", "demo", "--dir", dir, "--assets", assets, "--examples", filepath.Join(root, "examples"), "--target-cluster", targetFile)
	cmd.Dir = root
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	if err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "controller.log"))
		t.Fatalf("scion dev demo --target-cluster: %v\n%s\nthe controller's log ends:\n%s", err, out, b[max(0, len(b)-8000):])
	}
	// The tree's long lines are wrapped: one line each.
	flat := regexp.MustCompile(`\s*\n[│ ]*`).ReplaceAllString(out, " ")
	for _, want := range []string{
		`==> Flux deploys it: cluster-06 runs web revision (\d+) \(Current, main@sha1:[0-9a-f]{40}\)`,
		`==> Flux deploys v\d+ to cluster-06; the new Pod cannot start`,
		`web-\S+\s+0/1\s+(RunContainerError|CrashLoopBackOff|StartError|Error)\s`,
		`cluster-06 \(spec.health.engine is False: flux-system/cluster-06 runs revision \d+`,
		`HealthCheckFailed: health check failed after`,
		`Wave/canary  Failed  Ready=False  1 targets, 1 published, 0 healthy, 1 failed, 1 rolled back`,
		`==> Flux deploys the rollback: cluster-06 runs web revision \d+ \(Current\), and its Pods are Ready again`,
		`cluster-06: cluster runs revision (\d+) of (\d+) \(Current\)`,
		`the rollback sticks: PackageVariant regional-app-cluster-06-web has config.porch.kpt.dev/hold-upstream=`,
	} {
		if !regexp.MustCompile(want).MatchString(flat) {
			t.Errorf("the demo's output has no %q:\n%s", want, out)
		}
	}
	if m := regexp.MustCompile(`cluster runs revision (\d+) of (\d+) \(Current\)`).FindStringSubmatch(out); m != nil && m[1] != m[2] {
		t.Errorf("after the rollback the cluster runs revision %s, not the newest published %s", m[1], m[2])
	}
	// On the node: the rollback's Deployment (no bad command), all Pods
	// Ready, none of the bad release's left.
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "cluster-06", Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	if cmd := d.Spec.Template.Spec.Containers[0].Command; len(cmd) != 0 {
		t.Errorf("Deployment cluster-06/web runs command %v after the rollback", cmd)
	}
	if d.Status.AvailableReplicas != *d.Spec.Replicas || d.Status.UpdatedReplicas != *d.Spec.Replicas {
		t.Errorf("Deployment cluster-06/web: %d available, %d updated of %d", d.Status.AvailableReplicas, d.Status.UpdatedReplicas, *d.Spec.Replicas)
	}
}

// kustomization is a Flux Kustomization in flux-system applying path of
// the source kind/name into targetNamespace, waiting up to 40s for what it
// applied to be healthy (Flux's minimum is 30s).
func kustomization(name, kind, path, targetNamespace string) string {
	return fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  sourceRef: {kind: %[3]s, name: %[1]s}
  path: %[4]s
  interval: 10m
  retryInterval: 15s
  prune: true
  wait: true
  timeout: 40s
  targetNamespace: %[5]s
`, name, flux.Namespace, kind, path, targetNamespace)
}

// webDeployment is a Deployment of one replica of image, with command
// when set (one that does not exist crash-loops).
func webDeployment(image, command string) string {
	cmd := ""
	if command != "" {
		cmd = "\n        command: [" + command + "]"
	}
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  progressDeadlineSeconds: 30
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: web
        image: ` + image + cmd + `
        securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
`
}
