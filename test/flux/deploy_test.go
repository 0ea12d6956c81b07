package flux_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/testutil/flux"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/testutil/registry"
)

// target is one target cluster of a test: the namespace holding its
// Flux objects (as flux-system does in a cluster of its own) and the
// namespace its packages are applied to.
type target struct {
	name, fluxNS, appNS string
}

// newTarget makes a target cluster's namespaces, installs the health
// reader there (config/target-cluster) and stores its kubeconfig in a
// Secret of the tenant's namespace ns, as an administrator registering
// the cluster does.
func newTarget(t testing.TB, ns, name string) target {
	t.Helper()
	ctx := context.Background()
	tg := target{name: name, fluxNS: name + "-flux-" + rand.String(5), appNS: name + "-apps-" + rand.String(5)}
	for _, n := range []string{tg.fluxNS, tg.appNS} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	kc := flux.TargetCluster(t, env.Config, env.Client, tg.fluxNS, time.Hour)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: ns}, Data: map[string][]byte{"value": kc}}
	if err := env.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	return tg
}

// cluster is a Repository's spec.cluster for the target: one
// Kustomization named like the repository.
func (tg target) cluster() *configv1alpha1.TargetCluster {
	return &configv1alpha1.TargetCluster{
		KubeConfig: configv1alpha1.KubeConfigReference{SecretRef: configv1alpha1.KubeConfigSecretRef{Name: tg.name + "-kubeconfig"}},
		Flux:       configv1alpha1.FluxDeployment{Namespace: tg.fluxNS},
	}
}

// apply creates the objects of a YAML stream as an administrator.
func apply(t testing.TB, stream string) {
	t.Helper()
	for _, doc := range strings.Split(stream, "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(context.Background(), u); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// gitSource is Flux's GitRepository following the branch of a
// deployment repository, and a Kustomization applying one package of it
// into the target's apps namespace, waiting for what it applied to be
// healthy.
func gitSource(tg target, name, url, path string) string {
	return `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: ` + name + `, namespace: ` + tg.fluxNS + `}
spec:
  url: ` + url + `
  ref: {branch: main}
  interval: 1s
---
` + kustomization(tg, name, "GitRepository", path)
}

func kustomization(tg target, name, kind, path string) string {
	return `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: ` + name + `, namespace: ` + tg.fluxNS + `}
spec:
  sourceRef: {kind: ` + kind + `, name: ` + name + `}
  path: ` + path + `
  interval: 2s
  retryInterval: 2s
  prune: true
  wait: true
  targetNamespace: ` + tg.appNS
}

// publish writes files into a new draft of pkg in repo (init for the
// first revision, a copy of from after) and publishes it.
func publish(t testing.TB, ns, repo, pkg, ws string, files map[string]string, from string) {
	t.Helper()
	flux.Packages{Kubeconfig: kubeconfig, Namespace: ns}.Publish(t, repo, pkg, ws, files, from)
}

// propose writes files into a new draft and proposes it.
func propose(t testing.TB, ns, repo, pkg, ws string, files map[string]string, from string) {
	t.Helper()
	flux.Packages{Kubeconfig: kubeconfig, Namespace: ns}.Propose(t, repo, pkg, ws, files, from)
}

func configMap(name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  value: " + value + "\n"
}

// deployed is what status.cluster of a Repository says of a package.
func deployed(ns, repo, pkg string) func() configv1alpha1.DeployedPackage {
	return func() configv1alpha1.DeployedPackage {
		r := &configv1alpha1.Repository{}
		if err := env.Storage.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: repo}, r); err != nil || r.Status.Cluster == nil {
			return configv1alpha1.DeployedPackage{}
		}
		for _, p := range r.Status.Cluster.Packages {
			if p.Package == pkg {
				if r.Status.Cluster.Error != "" {
					p.Message += " (the cluster: " + r.Status.Cluster.Error + ")" // shown when the test fails
				}
				return p
			}
		}
		return configv1alpha1.DeployedPackage{}
	}
}

// fluxStatus is the status of one of a target's Flux objects, for a
// failing test's output.
func fluxStatus(tg target, kind, name string) string {
	u := &unstructured.Unstructured{}
	group := "source.toolkit.fluxcd.io/v1"
	if kind == "Kustomization" {
		group = "kustomize.toolkit.fluxcd.io/v1"
	}
	u.SetAPIVersion(group)
	u.SetKind(kind)
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: tg.fluxNS, Name: name}, u); err != nil {
		return kind + ": " + err.Error() + "\n"
	}
	st, _ := yaml.Marshal(u.Object["status"])
	return "\n" + kind + " " + name + " status:\n" + string(st)
}

// value reads data.value of a ConfigMap Flux applied ("" when absent).
func value(ns, name string) func() string {
	return func() string {
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
			if apierrors.IsNotFound(err) {
				return ""
			}
			return "error: " + err.Error()
		}
		return cm.Data["value"]
	}
}

// Flux deploys a git deployment repository as Scion lays it out: the
// published revisions of a package on the branch (a Kustomization's path
// is the package's folder; the Kptfile is not applied). The Repository's
// status.cluster follows: revision 1 Current, then revision 2 once Flux
// applied it (an object dropped from the package pruned), then Drifted
// once someone pushes content to the branch that Scion never published.
func TestFlux_gitDeploymentRepository(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "flux-git")
	root := gitserver.Root(t)
	bare := gitserver.InitBare(t, root, "cluster-01.git")
	srv := gitserver.NewServer(t, root)
	tg := newTarget(t, ns, "cluster-01")
	g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "cluster-01", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: &configv1alpha1.GitRepository{Repo: srv.URLFor("cluster-01.git"), CreateBranch: true},
			Cluster: tg.cluster()}})).To(Succeed())

	publish(t, ns, "cluster-01", "app", "v1", map[string]string{"a.yaml": configMap("a", "one"), "b.yaml": configMap("b", "one")}, "")
	apply(t, gitSource(tg, "cluster-01", srv.URLFor("cluster-01.git"), "./app"))
	start := time.Now()
	t.Logf("published at %s", start)
	g.Eventually(value(tg.appNS, "a")).WithTimeout(time.Minute).Should(Equal("one"), "Flux applied revision 1")
	t.Logf("applied after %s", time.Since(start))
	g.Eventually(func() string { return fluxStatus(tg, "Kustomization", "cluster-01") }).WithTimeout(3 * time.Minute).Should(ContainSubstring("Applied revision"))
	t.Logf("Ready after %s\n%s", time.Since(start), fluxStatus(tg, "Kustomization", "cluster-01"))
	g.Eventually(deployed(ns, "cluster-01", "app")).WithTimeout(time.Minute).Should(And(
		HaveField("State", configv1alpha1.DeployCurrent), HaveField("Revision", 1), HaveField("Latest", 1), HaveField("HealthChecked", true),
		HaveField("Kustomization", tg.fluxNS+"/cluster-01"), HaveField("AppliedRevision", HavePrefix("main@sha1:"))), func() string { return fmt.Sprintf("%+v", deployed(ns, "cluster-01", "app")()) })

	publish(t, ns, "cluster-01", "app", "v2", map[string]string{"a.yaml": configMap("a", "two")}, "cluster-01.app.v1")
	g.Eventually(value(tg.appNS, "a")).WithTimeout(time.Minute).Should(Equal("two"), "Flux applied revision 2")
	g.Eventually(value(tg.appNS, "b")).WithTimeout(time.Minute).Should(BeEmpty(), "what revision 2 dropped is pruned")
	g.Eventually(deployed(ns, "cluster-01", "app")).WithTimeout(time.Minute).Should(And(
		HaveField("State", configv1alpha1.DeployCurrent), HaveField("Revision", 2), HaveField("Latest", 2)))

	// Someone pushes to the branch past Scion.
	work := filepath.Join(t.TempDir(), "work")
	gitserver.Git(t, "", "clone", "-q", bare, work)
	g.Expect(os.WriteFile(filepath.Join(work, "app", "a.yaml"), []byte(configMap("a", "hand-edited")), 0o644)).To(Succeed())
	gitserver.Git(t, work, "-c", "user.name=someone", "-c", "user.email=someone@example.com", "commit", "-qam", "edit by hand")
	gitserver.Git(t, work, "push", "-q", "origin", "main")
	g.Eventually(value(tg.appNS, "a")).WithTimeout(time.Minute).Should(Equal("hand-edited"))
	g.Eventually(deployed(ns, "cluster-01", "app")).WithTimeout(time.Minute).Should(And(
		HaveField("State", configv1alpha1.DeployDrifted), HaveField("Revision", 0), HaveField("Latest", 2),
		HaveField("Message", ContainSubstring("Scion never published"))))
}

// Flux's OCIRepository reads Scion's published artifacts as they are:
// following the newest published revision of a package (the latest tag
// Scion keeps on it; Flux's semver takes no vN), the Kustomization applies
// the artifact's files (the Kptfile is no .yaml: not applied), and the
// Repository's status.cluster names the revision by its digest.
func TestFlux_ociDeploymentRepository(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "flux-oci")
	reg := registry.StartPlain(t)
	tg := newTarget(t, ns, "cluster-02")
	prefix := reg.Host + "/fleet/cluster-02"
	g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "cluster-02", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.OCIRepositoryType, Deployment: true, OCI: &configv1alpha1.OCIRepository{Registry: prefix},
			Cluster: tg.cluster()}})).To(Succeed())

	publish(t, ns, "cluster-02", "app", "v1", map[string]string{"a.yaml": configMap("a", "one")}, "")
	apply(t, `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: cluster-02, namespace: `+tg.fluxNS+`}
spec:
  url: oci://`+prefix+`/app
  ref: {tag: latest}
  insecure: true
  interval: 1s
---
`+kustomization(tg, "cluster-02", "OCIRepository", "./"))
	g.Eventually(value(tg.appNS, "a")).WithTimeout(time.Minute).Should(Equal("one"), func() string {
		return "Flux applied revision 1: " + fluxStatus(tg, "OCIRepository", "cluster-02") + fluxStatus(tg, "Kustomization", "cluster-02")
	})
	g.Eventually(deployed(ns, "cluster-02", "app")).WithTimeout(time.Minute).Should(And(
		HaveField("State", configv1alpha1.DeployCurrent), HaveField("Revision", 1), HaveField("AppliedRevision", HavePrefix("latest@sha256:"))),
		func() string { return fmt.Sprintf("%+v\n%s", deployed(ns, "cluster-02", "app")(), running.Logs()) })

	publish(t, ns, "cluster-02", "app", "v2", map[string]string{"a.yaml": configMap("a", "two")}, "cluster-02.app.v1")
	g.Eventually(value(tg.appNS, "a")).WithTimeout(time.Minute).Should(Equal("two"), "Flux took the newest published revision")
	g.Eventually(deployed(ns, "cluster-02", "app")).WithTimeout(time.Minute).Should(And(
		HaveField("State", configv1alpha1.DeployCurrent), HaveField("Revision", 2), HaveField("AppliedRevision", HavePrefix("latest@sha256:"))))
}
