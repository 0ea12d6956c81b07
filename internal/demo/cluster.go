package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// TargetCluster is a real cluster with Flux that the demo deploys
// sickCluster's regional-app to, so that its bad release crash-loops for
// real and Flux's word judges the rollout. hack/node start (make demo, as
// root) writes it as JSON.
type TargetCluster struct {
	// Kubeconfig is the path of an administrator's kubeconfig of the
	// cluster: the demo makes Flux's objects and the workload's namespace
	// with it.
	Kubeconfig string `json:"kubeconfig"`
	// ReaderKubeconfig is the path of the kubeconfig Scion reads the
	// cluster with: a token of config/target-cluster's health reader.
	ReaderKubeconfig string `json:"readerKubeconfig"`
	// GitURL is where Flux reaches the fleet's git repositories:
	// GitURL/<name>.git.
	GitURL string `json:"gitURL"`
	// FluxNamespace is where Flux runs and keeps its objects.
	FluxNamespace string `json:"fluxNamespace"`
	// Image is an image the cluster runs, standing in for the fleet's
	// registry.example.com/web (its command is /pause: a release that
	// runs another crash-loops).
	Image string `json:"image"`
}

// ReadTargetCluster reads a TargetCluster file.
func ReadTargetCluster(path string) (*TargetCluster, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the target cluster: %w", err)
	}
	t := &TargetCluster{}
	if err := json.Unmarshal(data, t); err != nil {
		return nil, fmt.Errorf("the target cluster %s: %w", path, err)
	}
	var empty []string
	for _, f := range []struct{ name, value string }{{"kubeconfig", t.Kubeconfig}, {"readerKubeconfig", t.ReaderKubeconfig}, {"gitURL", t.GitURL}, {"fluxNamespace", t.FluxNamespace}, {"image", t.Image}} {
		if f.value == "" {
			empty = append(empty, f.name)
		}
	}
	if len(empty) > 0 {
		return nil, fmt.Errorf("the target cluster %s: %s empty", path, strings.Join(empty, ", "))
	}
	return t, nil
}

// The names of what deploys sickCluster's regional-app on the target
// cluster.
const (
	// webImage is the image regional-app's Deployment names; the target's
	// Kustomization maps it to TargetCluster.Image.
	webImage = "registry.example.com/web"
	// webPackage is regional-app's package in each deployment repository.
	webPackage = "web"
	// badCommand is the bad release's command: the image has no such file.
	badCommand = "/usr/bin/web-server"
)

// kubeconfigSecret is the Secret with the kubeconfig Scion reads
// sickCluster's cluster with.
func kubeconfigSecret(repo string) string { return repo + "-kubeconfig" }

// clusterSpec is sickCluster's spec.cluster: the reader's kubeconfig and
// the Kustomization (named like the Repository) that deploys its
// regional-app.
func (o *Options) clusterSpec(repo string) *configv1alpha1.TargetCluster {
	return &configv1alpha1.TargetCluster{
		KubeConfig: configv1alpha1.KubeConfigReference{SecretRef: configv1alpha1.KubeConfigSecretRef{Name: kubeconfigSecret(repo)}},
		Flux:       configv1alpha1.FluxDeployment{Namespace: o.Target.FluxNamespace, Kustomizations: []configv1alpha1.FluxKustomization{{Name: repo, Packages: []string{webPackage}}}},
	}
}

// storeReaderKubeconfig writes the Secret spec.cluster names.
func (o *Options) storeReaderKubeconfig(ctx context.Context, ns, repo string) error {
	kc, err := os.ReadFile(o.Target.ReaderKubeconfig)
	if err != nil {
		return fmt.Errorf("the target cluster's reader kubeconfig: %w", err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: kubeconfigSecret(repo), Namespace: ns}}
	return createOrUpdate(ctx, o.Client, s, func() { s.Data = map[string][]byte{"value": kc} })
}

// targetClient is an administrator's client of the target cluster.
func (o *Options) targetClient() (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Target.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("the target cluster's kubeconfig: %w", err)
	}
	return client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
}

// deployWithFlux has Flux on the target cluster deploy sickCluster's
// regional-app (its web package) into namespace sickCluster, and waits
// until Scion reads that the cluster runs its newest published revision
// and its Pods are Ready.
func (o *Options) deployWithFlux(ctx context.Context, ns string) (client.Client, error) {
	tc, err := o.targetClient()
	if err != nil {
		return nil, err
	}
	image, tag, _ := strings.Cut(o.Target.Image, ":")
	fluxNS := o.Target.FluxNamespace
	objs := []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": sickCluster}}},
		{Object: map[string]any{
			"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
			"metadata": map[string]any{"name": sickCluster, "namespace": fluxNS},
			"spec":     map[string]any{"url": o.Target.GitURL + "/" + sickCluster + ".git", "ref": map[string]any{"branch": "main"}, "interval": "5s"},
		}},
		{Object: map[string]any{
			"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
			"metadata": map[string]any{"name": sickCluster, "namespace": fluxNS},
			"spec": map[string]any{
				"sourceRef": map[string]any{"kind": "GitRepository", "name": sickCluster},
				"path":      "./" + webPackage, "targetNamespace": sickCluster,
				"interval": "1m", "retryInterval": "15s", "timeout": "45s", "prune": true, "wait": true,
				"images": []any{map[string]any{"name": webImage, "newName": image, "newTag": tag}},
			},
		}},
	}
	for _, u := range objs {
		if err := tc.Patch(ctx, u, client.Apply, client.FieldOwner("scion-demo"), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("the target cluster: %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	o.say("")
	o.say("==> %s is a real cluster: a node of containerd and runc with Flux (%s), from `make demo` as root", sickCluster, o.Target.Kubeconfig)
	o.say("    Flux's GitRepository %s/%s reads %s every 5s; its Kustomization %s/%s applies ./%s into namespace %s and waits for it to be healthy", fluxNS, sickCluster, o.Target.GitURL+"/"+sickCluster+".git", fluxNS, sickCluster, webPackage, sickCluster)
	o.say("    (its spec.images maps %s to %s, an image this node has)", webImage, o.Target.Image)
	o.say("    Repository %s: spec.cluster names the Secret %s (a token of config/target-cluster's scion-health-reader) and that Kustomization", sickCluster, kubeconfigSecret(sickCluster))
	d, err := o.waitRunning(ctx, ns, tc, 0)
	if err != nil {
		return nil, err
	}
	o.say("==> Flux deploys it: %s runs %s revision %d (%s, %s)", sickCluster, webPackage, d.Revision, d.State, d.AppliedRevision)
	return tc, o.printPods(ctx, tc)
}

// waitRunning waits until Scion reads (Repository status.cluster) that
// sickCluster runs its newest published web revision, or revision rev
// when not 0, and the Deployment's Pods on the cluster are all Ready and
// updated.
func (o *Options) waitRunning(ctx context.Context, ns string, tc client.Client, rev int) (*configv1alpha1.DeployedPackage, error) {
	var d *configv1alpha1.DeployedPackage
	last := "nothing read yet"
	err := wait.PollUntilContextTimeout(ctx, time.Second, o.timeout(), true, func(ctx context.Context) (bool, error) {
		repo := &configv1alpha1.Repository{}
		if err := o.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: sickCluster}, repo); err != nil {
			return false, nil
		}
		d = repo.Status.Cluster.Package(webPackage)
		if d == nil {
			if repo.Status.Cluster != nil && repo.Status.Cluster.Error != "" {
				last = repo.Status.Cluster.Error
			}
			return false, nil
		}
		last = fmt.Sprintf("%s: revision %d of %d, %s", d.State, d.Revision, d.Latest, d.Message)
		if d.State != configv1alpha1.DeployCurrent || rev != 0 && d.Revision != rev {
			return false, nil
		}
		dep := &appsv1.Deployment{}
		if err := tc.Get(ctx, types.NamespacedName{Namespace: sickCluster, Name: "web"}, dep); err != nil {
			last = err.Error()
			return false, nil
		}
		st := dep.Status
		last = fmt.Sprintf("Deployment web: %d of %d replicas updated and available", st.AvailableReplicas, st.Replicas)
		return st.ObservedGeneration == dep.Generation && st.Replicas == *dep.Spec.Replicas && st.UpdatedReplicas == st.Replicas && st.AvailableReplicas == st.Replicas, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s running its %s revision (Repository %s status.cluster): %w (last: %s)", sickCluster, webPackage, sickCluster, err, last)
	}
	return d, nil
}

// printPods prints the Pods of the web Deployment on the target cluster,
// as kubectl get pods does.
func (o *Options) printPods(ctx context.Context, tc client.Client) error {
	pods := &corev1.PodList{}
	if err := tc.List(ctx, pods, client.InNamespace(sickCluster), client.MatchingLabels{"app": "web"}); err != nil {
		return fmt.Errorf("the target cluster: pods of %s: %w", sickCluster, err)
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	o.say("==> kubectl --kubeconfig %s -n %s get pods", o.Target.Kubeconfig, sickCluster)
	o.say("    %-32s %-6s %-20s %s", "NAME", "READY", "STATUS", "RESTARTS")
	for _, p := range pods.Items {
		ready, restarts, status := 0, int32(0), string(p.Status.Phase)
		for _, s := range p.Status.ContainerStatuses {
			if s.Ready {
				ready++
			}
			restarts += s.RestartCount
			if s.State.Waiting != nil && s.State.Waiting.Reason != "" {
				status = s.State.Waiting.Reason
			} else if s.State.Terminated != nil && s.State.Terminated.Reason != "" {
				status = s.State.Terminated.Reason
			}
		}
		if p.DeletionTimestamp != nil {
			status = "Terminating"
		}
		o.say("    %-32s %d/%-4d %-20s %d", p.Name, ready, len(p.Spec.Containers), status, restarts)
	}
	return nil
}

// waitCrashLoop waits until a Pod of the web Deployment on the target
// cluster fails to start or restarts: the bad release, deployed.
func (o *Options) waitCrashLoop(ctx context.Context, tc client.Client) error {
	err := wait.PollUntilContextTimeout(ctx, time.Second, o.timeout(), true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := tc.List(ctx, pods, client.InNamespace(sickCluster), client.MatchingLabels{"app": "web"}); err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			for _, s := range p.Status.ContainerStatuses {
				if s.RestartCount > 0 || s.LastTerminationState.Terminated != nil {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("no Pod of %s's web crash-looping: %w", sickCluster, err)
	}
	return nil
}
