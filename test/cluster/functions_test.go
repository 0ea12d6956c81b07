package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/api/porch/v1alpha1/content"
	"github.com/scion-dev/scion/internal/fn/podrunner"
	"github.com/scion-dev/scion/internal/image"
	"github.com/scion-dev/scion/internal/kptfile"
	"github.com/scion-dev/scion/internal/testutil/cluster"
	"github.com/scion-dev/scion/internal/testutil/fnprog"
)

// fanOut is how many variants the function fan-out makes: ten package
// names in each of the fleet's repositories.
const fanOut = repos * 10

// functionRunner checks the function runner in the cluster: an allowed
// image in a pipeline runs as a Pod in scion-functions (pushed through
// Scion's API server, and in a fan-out of variants through the
// controller), warm Pods are reused, every fault fails the render naming
// the function and leaves no Pod behind, an image outside the allow-list
// is refused before anything runs, and idle Pods go.
func functionRunner(t *testing.T, c, porch client.Client) {
	ctx := context.Background()
	ref := pushFnprog(t)
	allowed := cluster.RegistryHost + "/fns/*"
	for _, d := range []string{"scion-controller", "scion-apiserver"} {
		kubectl(t, "", "-n", "scion-system", "patch", "deployment", d, "--type=json", "-p",
			`[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--function-images=`+allowed+`"},`+
				`{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--function-timeout=15s"},`+
				`{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--function-pod-idle-ttl=40s"}]`)
	}
	waitRollout(t)

	drafts := fleetDrafts(t, porch)
	next := 0
	draft := func() *porchv1alpha1.PackageRevision {
		d := drafts[next%len(drafts)]
		next++
		return d
	}

	// Cold (a Pod is made: the image pulled, the wrapper copied in) and
	// warm (the Pod reused).
	var took []time.Duration
	for i := range 3 {
		pr := draft()
		start := time.Now()
		if err := renderWith(ctx, porch, pr, ref, "label"); err != nil {
			t.Fatalf("render %d through Scion's API server with %s: %v", i, ref, err)
		}
		took = append(took, time.Since(start))
		if !strings.Contains(resourcesOf(t, porch, pr), "touched-by: ") {
			t.Fatalf("%s: the function's label is not in the package after its render", pr.Name)
		}
	}
	t.Logf("a push through Scion's API server rendering one container function: cold %s, warm %s and %s",
		took[0].Round(time.Millisecond), took[1].Round(time.Millisecond), took[2].Round(time.Millisecond))
	pods := functionPods(t, "")
	if len(pods) == 0 {
		t.Fatal("no function Pod in scion-functions after a render")
	}
	for _, p := range pods {
		checkLockedDown(t, p)
	}

	t.Run("faults", func(t *testing.T) {
		for _, f := range []struct{ name, image, mode, want string }{
			{"an image outside the allow-list", cluster.RegistryHost + "/other/fnprog:v1", "label", "not allowed to run as a container"},
			{"an image that does not exist", cluster.RegistryHost + "/fns/missing:v1", "label", "missing:v1"},
			{"exits non-zero", ref, "crash", "something broke"},
			{"hangs", ref, "hang", "timed out after 15s"},
			{"writes 1Gi to stdout", ref, "flood", "wrote more than 64Mi to stdout"},
		} {
			t.Run(f.name, func(t *testing.T) {
				pr := draft()
				before, kptfileBefore := resourcesOf(t, porch, pr), fileOf(t, porch, pr, "Kptfile")
				// The draft is its variant's: give it back its Kptfile,
				// or the variant stays RenderFailed.
				defer func() {
					if err := pushFile(ctx, porch, pr, "Kptfile", kptfileBefore); err != nil {
						t.Errorf("giving %s its Kptfile back: %v", pr.Name, err)
					}
				}()
				err := renderWith(ctx, porch, pr, f.image, f.mode)
				if err == nil || !strings.Contains(err.Error(), f.want) {
					t.Fatalf("want the push refused with %q, got %v", f.want, err)
				}
				if !strings.Contains(err.Error(), f.image) {
					t.Errorf("the error does not name the function %s: %v", f.image, err)
				}
				if after := resourcesOf(t, porch, pr); after != before {
					t.Errorf("%s changed after a failed render", pr.Name)
				}
				if f.image != ref {
					if left := functionPods(t, podrunner.ImageHash(f.image)); len(left) > 0 {
						t.Errorf("%d Pods of %s left behind", len(left), f.image)
					}
				}
			})
		}
		// A Pod whose function timed out or was cut off is not reused:
		// what is left of fnprog's Pods all serve.
		waitFor(t, "fnprog's Pods all Ready", time.Minute, func() error {
			for _, p := range functionPods(t, podrunner.ImageHash(ref)) {
				if p.DeletionTimestamp == nil && !podReady(&p) {
					return fmt.Errorf("%s is not Ready", p.Name)
				}
			}
			return nil
		})
		// Other renders go on.
		if err := renderWith(ctx, porch, draft(), ref, "label"); err != nil {
			t.Errorf("a render after the faults: %v", err)
		}
	})

	t.Run("fan-out", func(t *testing.T) {
		var names []string
		for i := range fanOut / repos {
			names = append(names, fmt.Sprintf("fn-%02d", i))
		}
		start := time.Now()
		applyWhenServed(t, fmt.Sprintf(`apiVersion: config.porch.kpt.dev/v1alpha2
kind: PackageVariantSet
metadata: {name: with-function, namespace: %s}
spec:
  upstream: {repo: catalog, package: pkg-0000, revision: "3"}
  targets:
  - repositorySelector:
      matchLabels: {fleet: "yes"}
      packageNames: [%s]
    template:
      pipeline:
        mutators:
        - image: %s
          configMap: {mode: label}
`, ns, strings.Join(names, ", "), ref))
		waitVariants(t, c, fmt.Sprintf("%d more variants Ready, each rendered with %s", fanOut, ref), variants+fanOut, func(*configv1alpha1.PackageVariant) bool { return true })
		t.Logf("%d variants whose pipeline has one container function, from the set's creation to every variant Ready: %s (function Pods at the end: %d)",
			fanOut, time.Since(start).Round(time.Second), len(functionPods(t, podrunner.ImageHash(ref))))
		list := &configv1alpha1.PackageVariantList{}
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, pv := range list.Items {
			if strings.HasPrefix(pv.Spec.Downstream.Package, "fn-") {
				n++
			}
		}
		if n != fanOut {
			t.Errorf("%d variants of the set, want %d", n, fanOut)
		}
		if !strings.Contains(downstreamResources(t, c, porch, "fn-00"), "touched-by: ") {
			t.Error("a fan-out variant's draft lacks the function's label")
		}
	})

	// Idle Pods go after --function-pod-idle-ttl.
	waitFor(t, "no function Pod left once idle", 3*time.Minute, func() error {
		if p := functionPods(t, ""); len(p) > 0 {
			return fmt.Errorf("%d left", len(p))
		}
		return nil
	})
}

// pushFnprog builds the test function into an image in the node's
// registry and returns its reference by digest.
func pushFnprog(t *testing.T) string {
	t.Helper()
	bin, err := fnprog.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	img, err := image.ForFunction(bin)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := node.PushImage(img, "fns/fnprog:v1")
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// fleetDrafts lists the fleet's draft revisions (not the catalog's).
func fleetDrafts(t *testing.T, porch client.Client) []*porchv1alpha1.PackageRevision {
	t.Helper()
	list := &porchv1alpha1.PackageRevisionList{}
	// Right after the API server's Pods are replaced, the kube-apiserver
	// may still answer 503 for a moment.
	waitFor(t, "listing the fleet's revisions", time.Minute, func() error {
		return porch.List(context.Background(), list, client.InNamespace(ns))
	})
	var out []*porchv1alpha1.PackageRevision
	for i := range list.Items {
		if pr := &list.Items[i]; pr.Spec.Repository != "catalog" && pr.Spec.Lifecycle == porchv1alpha1.LifecycleDraft {
			out = append(out, pr)
		}
	}
	if len(out) < 10 {
		t.Fatalf("%d drafts in the fleet, want at least 10", len(out))
	}
	return out
}

// renderWith pushes pr's resources back through Scion's API server with
// a pipeline of one function, image with data.mode, which the API server
// renders; a render that fails is an error (the API server saves the push
// unrendered, as Porch does, and says why in status.renderStatus).
func renderWith(ctx context.Context, porch client.Client, pr *porchv1alpha1.PackageRevision, image, mode string) error {
	prr := &content.PackageRevisionResources{}
	if err := porch.Get(ctx, client.ObjectKeyFromObject(pr), prr); err != nil {
		return err
	}
	kf, err := kptfile.Parse([]byte(prr.Spec.Resources["Kptfile"]))
	if err != nil {
		return err
	}
	kf.Pipeline = &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{{Image: image, ConfigMap: map[string]string{"mode": mode}}}}
	data, err := kptfile.Marshal(kf)
	if err != nil {
		return err
	}
	return pushFile(ctx, porch, pr, "Kptfile", string(data))
}

// pushFile replaces one file of pr through Scion's API server; a render
// that fails is an error.
func pushFile(ctx context.Context, porch client.Client, pr *porchv1alpha1.PackageRevision, name, data string) error {
	prr := &content.PackageRevisionResources{}
	if err := porch.Get(ctx, client.ObjectKeyFromObject(pr), prr); err != nil {
		return err
	}
	prr.Spec.Resources[name] = data
	if err := porch.Update(ctx, prr); err != nil {
		return err
	}
	if e := prr.Status.RenderStatus.Err; e != "" {
		return errors.New(e)
	}
	return nil
}

// resourcesOf is a revision's files, concatenated in name order.
func resourcesOf(t *testing.T, porch client.Client, pr *porchv1alpha1.PackageRevision) string {
	t.Helper()
	prr := &content.PackageRevisionResources{}
	if err := porch.Get(context.Background(), client.ObjectKeyFromObject(pr), prr); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(prr.Spec.Resources)) {
		if name != "Kptfile" {
			b.WriteString(prr.Spec.Resources[name])
		}
	}
	return b.String()
}

// fileOf is one file of a revision.
func fileOf(t *testing.T, porch client.Client, pr *porchv1alpha1.PackageRevision, name string) string {
	t.Helper()
	prr := &content.PackageRevisionResources{}
	if err := porch.Get(context.Background(), client.ObjectKeyFromObject(pr), prr); err != nil {
		t.Fatal(err)
	}
	return prr.Spec.Resources[name]
}

// downstreamResources is the files of the first draft of package pkg.
func downstreamResources(t *testing.T, c, porch client.Client, pkg string) string {
	t.Helper()
	for _, pr := range fleetDrafts(t, porch) {
		if pr.Spec.PackageName == pkg {
			return resourcesOf(t, porch, pr)
		}
	}
	t.Fatalf("no draft of %s", pkg)
	return ""
}

// functionPods lists the Pods in scion-functions, of one image hash
// (podrunner.ImageHash) or all.
func functionPods(t *testing.T, imageHash string) []corev1.Pod {
	t.Helper()
	selector := podrunner.ManagedByLabel + "=scion"
	if imageHash != "" {
		selector += "," + podrunner.ImageLabel + "=" + imageHash
	}
	list := &corev1.PodList{}
	out := kubectl(t, "", "-n", "scion-functions", "get", "pods", "-l", selector, "-o", "json")
	if err := json.Unmarshal([]byte(out), list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// checkLockedDown fails unless a function Pod runs as the runner promises.
func checkLockedDown(t *testing.T, p corev1.Pod) {
	t.Helper()
	s := p.Spec
	switch {
	case s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken:
		t.Errorf("%s mounts a service account token", p.Name)
	case s.HostNetwork || s.HostPID || s.HostIPC:
		t.Errorf("%s shares a host namespace", p.Name)
	case s.SecurityContext == nil || s.SecurityContext.RunAsNonRoot == nil || !*s.SecurityContext.RunAsNonRoot:
		t.Errorf("%s may run as root", p.Name)
	}
	for _, ctr := range s.Containers {
		if ctr.Resources.Limits.Memory().IsZero() || ctr.Resources.Limits.Cpu().IsZero() {
			t.Errorf("%s/%s has no CPU or memory limit", p.Name, ctr.Name)
		}
		if sc := ctr.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s/%s has a writable root filesystem", p.Name, ctr.Name)
		}
	}
	for _, v := range p.Spec.Volumes {
		if v.Projected != nil || v.Secret != nil {
			t.Errorf("%s mounts %s", p.Name, v.Name)
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitFor polls check until it returns nil, failing the test after
// timeout with its last error.
func waitFor(t *testing.T, what string, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %v", what, timeout, err)
		}
		time.Sleep(time.Second)
	}
}
