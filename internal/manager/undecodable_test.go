package manager

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/lenient"
	"github.com/scion-dev/scion/internal/testutil/scionbin"
	"github.com/scion-dev/scion/internal/testutil/syncbuf"
)

// dropValidation removes what the CRD's schema checks of one field, as an
// older CRD (or a direct etcd write) would let through: the API server then
// stores values the Go type cannot decode.
func dropValidation(t *testing.T, c client.Client, crdName string, path ...string) {
	t.Helper()
	g := NewWithT(t)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Name: crdName}, crd)).To(Succeed())
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	leaf := *root
	for _, p := range path {
		leaf = leaf.Properties[p]
	}
	leaf.Pattern, leaf.MaxLength, leaf.XValidations = "", nil, nil
	setAt(root, path, leaf)
	g.Expect(c.Update(context.Background(), crd)).To(Succeed())
}

func setAt(s *apiextensionsv1.JSONSchemaProps, path []string, leaf apiextensionsv1.JSONSchemaProps) {
	if len(path) == 1 {
		s.Properties[path[0]] = leaf
		return
	}
	child := s.Properties[path[0]]
	setAt(&child, path[1:], leaf)
	s.Properties[path[0]] = child
}

func rolloutObject(ns, name, deadline string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": configv1alpha1.GroupVersion.String(), "kind": "PackageRollout",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"revisionSelector": map[string]any{"matchLabels": map[string]any{"app": name}}},
	}}
	if deadline != "" {
		_ = unstructured.SetNestedField(u.Object, deadline, "spec", "progressDeadline")
	}
	return u
}

// reconciled says whether the rollout's status describes its current
// generation.
func reconciled(g Gomega, c client.Client, ns, name string) bool {
	ro := &configv1alpha1.PackageRollout{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ro); err != nil {
		return false
	}
	return ro.Status.ObservedGeneration == ro.Generation
}

// One object of a kind that does not decode (a duration the Go type cannot
// parse, written around validation) must not stop the kind's informer:
// the objects of every other namespace are reconciled, before and after a
// restart, and the bad one says what is wrong with it, until it is fixed.
func TestManager_undecodableObjectSetAside(t *testing.T) {
	g := NewWithT(t)
	env := startEnv(t)
	c := env.Client
	ctx := context.Background()

	dropValidation(t, c, "packagerollouts.config.porch.kpt.dev", "spec", "progressDeadline")
	dropValidation(t, c, "repositories.config.porch.kpt.dev", "spec", "sync", "period")
	bad, good := env.Namespace(t, "bad"), env.Namespace(t, "good")
	g.Eventually(func() error {
		return c.Create(ctx, rolloutObject(bad, "broken", "soon"))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed(), "the API server stores what the Go type cannot decode")
	repo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": configv1alpha1.GroupVersion.String(), "kind": "Repository",
		"metadata": map[string]any{"name": "broken", "namespace": bad},
		"spec": map[string]any{"git": map[string]any{"repo": "https://git.example.com/x.git"},
			"sync": map[string]any{"period": strings.Repeat("later", 100)}},
	}}
	g.Eventually(func() error { return c.Create(ctx, repo) }, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(c.Create(ctx, rolloutObject(good, "first", "5m"))).To(Succeed())

	// The controller runs as a process, so that a restart is one.
	bin := scionbin.Build(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(env.WriteKubeconfig(kubeconfig, "replica")).To(Succeed())
	metricsAddr := freeAddr(t)
	log := &syncbuf.Buffer{}
	start := func() (stop func()) {
		cmd := exec.Command(bin, "controller", "--kubeconfig", kubeconfig, "--metrics-bind-address", metricsAddr,
			"--health-probe-bind-address", "0", "--cache-dir", t.TempDir(), "--leader-elect=false")
		cmd.Stdout, cmd.Stderr = log, log
		g.Expect(cmd.Start()).To(Succeed())
		return func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	}
	undecodableRollouts := func() (string, error) {
		_, body, err := get("http://" + metricsAddr + "/metrics")
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, `scion_undecodable_objects{kind="PackageRollout"}`) {
				return strings.Fields(l)[1], err
			}
		}
		return "", err
	}
	stop := start()
	g.Eventually(func(g Gomega) bool { return reconciled(g, c, good, "first") }, 30*time.Second, 100*time.Millisecond).Should(BeTrue(),
		"a rollout of another namespace is reconciled")

	// The bad objects say what is wrong, naming the field, in conditions
	// and an event; the log and the metric carry them too.
	stalled := func(kind, name, field string) func(g Gomega) {
		return func(g Gomega) {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(configv1alpha1.GroupVersion.WithKind(kind))
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: bad, Name: name}, u)).To(Succeed())
			raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			var conds []metav1.Condition
			for _, r := range raw {
				m := r.(map[string]any)
				conds = append(conds, metav1.Condition{Type: m["type"].(string), Status: metav1.ConditionStatus(m["status"].(string)),
					Reason: m["reason"].(string), Message: m["message"].(string)})
			}
			st := meta.FindStatusCondition(conds, configv1alpha1.StalledCondition)
			g.Expect(st).NotTo(BeNil())
			g.Expect(st.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(st.Reason).To(Equal(lenient.UndecodableReason))
			g.Expect(st.Message).To(ContainSubstring(field))
			g.Expect(len(st.Message)).To(BeNumerically("<", 600), "a user's long value is cut")
			g.Expect(meta.IsStatusConditionFalse(conds, configv1alpha1.ReadyCondition)).To(BeTrue())
			events := &eventsv1.EventList{}
			g.Expect(c.List(ctx, events, client.InNamespace(bad))).To(Succeed())
			found := false
			for _, e := range events.Items {
				found = found || (e.Regarding.Name == name && e.Reason == lenient.UndecodableReason && strings.Contains(e.Note, field))
			}
			g.Expect(found).To(BeTrue(), "an Undecodable event on %s %s", kind, name)
		}
	}
	g.Eventually(stalled("PackageRollout", "broken", `spec.progressDeadline does not decode (time: invalid duration "soon")`), 30*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Eventually(stalled("Repository", "broken", "spec.sync.period does not decode"), 30*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(undecodableRollouts()).To(Equal("1"))
	g.Expect(log.String()).To(ContainSubstring("ignoring an object that does not decode until it is fixed"))
	g.Expect(log.String()).NotTo(ContainSubstring(strings.Repeat("later", 80)), "the log does not carry a user's long value")

	// A rollout made while the bad one is there is reconciled too (the
	// watch goes on past the bad object's events).
	g.Expect(c.Create(ctx, rolloutObject(good, "second", ""))).To(Succeed())
	g.Eventually(func(g Gomega) bool { return reconciled(g, c, good, "second") }, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
	// An object that turns bad while watched leaves the cache, and says so.
	g.Expect(c.Create(ctx, rolloutObject(bad, "turns", "1m"))).To(Succeed())
	g.Eventually(func(g Gomega) bool { return reconciled(g, c, bad, "turns") }, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
	turn := rolloutObject(bad, "turns", "")
	g.Expect(c.Patch(ctx, turn, client.RawPatch(client.Merge.Type(), []byte(`{"spec":{"progressDeadline":"10 minutes"}}`)))).To(Succeed())
	g.Eventually(stalled("PackageRollout", "turns", "spec.progressDeadline does not decode"), 30*time.Second, 200*time.Millisecond).Should(Succeed())
	stop()

	// After a restart, the manager starts its workers: nothing waits for
	// a list that cannot succeed.
	stop = start()
	defer stop()
	g.Expect(c.Create(ctx, rolloutObject(good, "third", ""))).To(Succeed())
	g.Eventually(func(g Gomega) bool { return reconciled(g, c, good, "third") }, 30*time.Second, 100*time.Millisecond).Should(BeTrue(),
		"after a restart, a rollout of another namespace is reconciled")

	// Fixed, the object is reconciled as any other, and no longer counted.
	fix := rolloutObject(bad, "broken", "")
	g.Expect(c.Patch(ctx, fix, client.RawPatch(client.Merge.Type(), []byte(`{"spec":{"progressDeadline":"5m"}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) bool { return reconciled(g, c, bad, "broken") }, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
	g.Eventually(undecodableRollouts, 10*time.Second, 100*time.Millisecond).Should(Equal("1"), "turns is still bad, broken is fixed")
}
