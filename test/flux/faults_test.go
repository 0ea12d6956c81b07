package flux_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/testutil/flux"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// Target clusters that cannot be read: one whose API server never
// answers (a tarpit), a kubeconfig that would run a program, a Secret
// that does not exist. Each says why in its Repository's status.cluster
// (the hanging one within the read's timeout), and none holds another:
// a reachable cluster's Repository shows what it runs meanwhile, and
// shows it NotDeployed once its Kustomization is deleted.
func TestFlux_clustersThatCannotBeRead(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "flux-faults")
	root := gitserver.Root(t)
	srv := gitserver.NewServer(t, root)
	tarpit := gitserver.NewTarpit(t)
	secret := func(name string, kubeconfig []byte) {
		g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{"value": kubeconfig}})).To(Succeed())
	}
	hanging := rest.CopyConfig(env.Config)
	hanging.Host = "https://" + tarpit.Addr
	secret("hanging-kubeconfig", flux.Kubeconfig(hanging, "token"))
	secret("exec-kubeconfig", []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, "touch /tmp/pwned"]}}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`))
	good := newTarget(t, ns, "good")
	clusters := map[string]*configv1alpha1.TargetCluster{
		"good":    good.cluster(),
		"hanging": {KubeConfig: configv1alpha1.KubeConfigReference{SecretRef: configv1alpha1.KubeConfigSecretRef{Name: "hanging-kubeconfig"}}},
		"exec":    {KubeConfig: configv1alpha1.KubeConfigReference{SecretRef: configv1alpha1.KubeConfigSecretRef{Name: "exec-kubeconfig"}}},
		"missing": {KubeConfig: configv1alpha1.KubeConfigReference{SecretRef: configv1alpha1.KubeConfigSecretRef{Name: "nowhere"}}},
	}
	for name, cl := range clusters {
		gitserver.InitBare(t, root, name+".git")
		g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: &configv1alpha1.GitRepository{Repo: srv.URLFor(name + ".git"), CreateBranch: true}, Cluster: cl}})).To(Succeed())
	}
	for name := range clusters {
		publish(t, ns, name, "app", "v1", map[string]string{"a.yaml": configMap("a", "one")}, "")
	}
	apply(t, gitSource(good, "good", srv.URLFor("good.git"), "./app"))

	clusterError := func(name string) func() string {
		return func() string {
			r := &configv1alpha1.Repository{}
			if err := env.Storage.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, r); err != nil || r.Status.Cluster == nil {
				return ""
			}
			return r.Status.Cluster.Error
		}
	}
	g.Eventually(clusterError("hanging")).WithTimeout(time.Minute).Should(ContainSubstring("reading Kustomization flux-system/hanging in the cluster of repository hanging"))
	g.Eventually(clusterError("exec")).WithTimeout(time.Minute).Should(And(ContainSubstring("secret "+ns+"/exec-kubeconfig named by spec.cluster.kubeConfig.secretRef"),
		ContainSubstring("exec (a program to run)")))
	g.Eventually(clusterError("missing")).WithTimeout(time.Minute).Should(ContainSubstring("secret " + ns + "/nowhere named by spec.cluster.kubeConfig.secretRef does not exist"))
	g.Expect(deployed(ns, "hanging", "app")()).To(HaveField("State", configv1alpha1.DeployUnknown))
	// A Repository that names another Secret is read with that one's.
	exec := &configv1alpha1.Repository{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "exec"}, exec)).To(Succeed())
	exec.Spec.Cluster.KubeConfig.SecretRef.Name = "hanging-kubeconfig"
	g.Expect(k8sClient.Update(ctx, exec)).To(Succeed())
	g.Eventually(clusterError("exec")).WithTimeout(time.Minute).Should(ContainSubstring("reading Kustomization flux-system/exec in the cluster of repository exec"))
	g.Eventually(deployed(ns, "good", "app")).WithTimeout(time.Minute).Should(And(HaveField("State", configv1alpha1.DeployCurrent), HaveField("Revision", 1)),
		"the reachable cluster is read meanwhile")

	k := &unstructured.Unstructured{}
	k.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
	k.SetKind("Kustomization")
	k.SetNamespace(good.fluxNS)
	k.SetName("good")
	g.Expect(env.Client.Delete(ctx, k)).To(Succeed())
	g.Eventually(deployed(ns, "good", "app")).WithTimeout(time.Minute).Should(And(HaveField("State", configv1alpha1.DeployNotDeployed),
		HaveField("Message", "no Kustomization applies it")))
}

// Flux down: the Flux that deploys one cluster stops mid-rollout. The
// rollout waits, naming that target and what its cluster runs; the other
// target, deployed by a Flux that runs, is published and healthy
// meanwhile, and nothing else of Scion waits (its Repository is read on).
// Once Flux is back, the waiting cluster deploys the release and the
// rollout completes.
func TestFlux_fluxDown(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "flux-down")
	root := gitserver.Root(t)
	srv := gitserver.NewServer(t, root)
	shard := "down-" + ns
	down := flux.StartShard(t, env.Config, env.Client, fluxConfig, shard)
	targets := map[string]target{}
	for _, name := range []string{"up", "down"} {
		gitserver.InitBare(t, root, name+".git")
		tg := newTarget(t, ns, name)
		targets[name] = tg
		g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: &configv1alpha1.GitRepository{Repo: srv.URLFor(name + ".git"), CreateBranch: true}, Cluster: tg.cluster()}})).To(Succeed())
		publish(t, ns, name, "app", "v1", map[string]string{"a.yaml": configMap("a", "one")}, "")
		objs := gitSource(tg, name, srv.URLFor(name+".git"), "./app")
		if name == "down" {
			objs = strings.ReplaceAll(objs, "metadata: {name: down,", "metadata: {labels: {"+flux.ShardLabel+": "+shard+"}, name: down,")
		}
		apply(t, objs)
	}
	for name, tg := range targets {
		g.Eventually(value(tg.appNS, "a")).WithTimeout(time.Minute).Should(Equal("one"), name)
		g.Eventually(deployed(ns, name, "app")).WithTimeout(time.Minute).Should(And(HaveField("State", configv1alpha1.DeployCurrent), HaveField("Revision", 1)), name)
	}

	down.Stop()
	for name := range targets {
		propose(t, ns, name, "app", "v2", map[string]string{"a.yaml": configMap("a", "two")}, name+".app.v1")
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + ".app.v2"}, pr)).To(Succeed())
		pr.Labels = map[string]string{"release": "two"}
		g.Expect(k8sClient.Update(ctx, pr)).To(Succeed())
	}
	g.Expect(k8sClient.Create(ctx, &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Name: "two", Namespace: ns}, Spec: configv1alpha1.PackageRolloutSpec{
		RevisionSelector: metav1.LabelSelector{MatchLabels: map[string]string{"release": "two"}},
		Waves:            []configv1alpha1.RolloutWave{{Name: "all"}},
		Health:           &configv1alpha1.RolloutHealth{Engine: configv1alpha1.HealthEngineFlux},
		ProgressDeadline: &metav1.Duration{Duration: 10 * time.Minute},
	}})).To(Succeed())
	rollout := func() *configv1alpha1.PackageRollout {
		ro := &configv1alpha1.PackageRollout{}
		_ = k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "two"}, ro)
		return ro
	}
	g.Eventually(deployed(ns, "up", "app")).WithTimeout(time.Minute).Should(And(HaveField("State", configv1alpha1.DeployCurrent), HaveField("Revision", 2)),
		"the cluster whose Flux runs deploys the release meanwhile")
	g.Eventually(func() string { return rollout().Status.Blocked }).WithTimeout(time.Minute).Should(
		And(ContainSubstring("1 healthy"), MatchRegexp(`down spec.health.engine is False: \S+/down runs revision 1`)),
		"the rollout waits, naming the target whose Flux is down and what its cluster runs")
	g.Expect(deployed(ns, "down", "app")()).To(And(HaveField("State", configv1alpha1.DeployBehind), HaveField("Revision", 1), HaveField("Latest", 2),
		HaveField("Message", "runs revision 1; revision 2 is published and Flux has not applied it yet")))
	out, err := scion(ns, "rollout", "status", "two")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`down\.app\.v2 .*published, health Flux, cluster runs revision 1 of 2 \(Behind\)`))
	g.Consistently(func() bool { return readyTrue(rollout().Status.Conditions) }).WithTimeout(5*time.Second).Should(BeFalse(),
		"not Ready while a cluster has not deployed it")

	flux.StartShard(t, env.Config, env.Client, fluxConfig, shard)
	g.Eventually(value(targets["down"].appNS, "a")).WithTimeout(time.Minute).Should(Equal("two"), "Flux, back, deploys the release")
	g.Eventually(func() bool { return readyTrue(rollout().Status.Conditions) }).WithTimeout(2*time.Minute).Should(BeTrue(),
		func() string { return rollout().Status.Blocked })
}
