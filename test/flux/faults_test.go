package flux_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
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
