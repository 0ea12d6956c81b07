package packagevariant_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/controller/packagevariant"
	"github.com/scion-dev/scion/internal/scheme"
	"github.com/scion-dev/scion/internal/testutil/scionbin"
)

// orderRecorder is a reconciler that records the order of the requests
// the controller's queue hands out, holding the worker while held.
type orderRecorder struct {
	mu      sync.Mutex
	order   []string
	hold    chan struct{} // closed: not holding
	running chan string
}

func (o *orderRecorder) Reconcile(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
	o.mu.Lock()
	o.order = append(o.order, req.Name)
	hold := o.hold
	o.mu.Unlock()
	select {
	case o.running <- req.Name:
	default:
	}
	<-hold
	return reconcile.Result{}, nil
}

func (o *orderRecorder) recorded() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.order...)
}

// queueDepth is the number of requests waiting in a controller's queue
// (controller-runtime's workqueue_depth, summed over priorities).
func queueDepth(t *testing.T, name string) int {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	depth := 0.0
	for _, f := range families {
		if f.GetName() != "workqueue_depth" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == name {
					depth += m.GetGauge().GetValue()
				}
			}
		}
	}
	return int(depth)
}

// TestPackageVariant_personBeforeBulk runs the controller's own watches
// (with their priorities) over a queue that a recording reconciler drains
// with one worker, on the real API server: while the worker is held, a
// set rewrites 40 of its variants and then a person edits a variant of
// their own; once released, the queue hands out the person's variant
// first, and then every one of the set's (the bulk is delayed, not
// dropped).
func TestPackageVariant_personBeforeBulk(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(t, "priority")
	const bulk = 40
	mk := func(name string, owned bool) *configv1alpha1.PackageVariant {
		pv := &configv1alpha1.PackageVariant{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: configv1alpha1.PackageVariantSpec{
				// Repositories that do not exist: the suite's own
				// controller stalls on them and writes only status,
				// which brings no event here.
				Upstream:   &configv1alpha1.Upstream{Repo: "nowhere", Package: "app", Revision: "1"},
				Downstream: &configv1alpha1.Downstream{Repo: "nowhere-either", Package: name},
			},
		}
		if owned {
			pv.OwnerReferences = []metav1.OwnerReference{{APIVersion: "config.porch.kpt.dev/v1alpha2", Kind: "PackageVariantSet", Name: "fleet",
				UID: types.UID("5e7-" + ns), Controller: new(true), BlockOwnerDeletion: new(true)}}
		}
		if err := k8sClient.Create(ctx, pv); err != nil {
			t.Fatal(err)
		}
		return pv
	}
	holder := mk("holder", false)
	var fleet []*configv1alpha1.PackageVariant
	for i := range bulk {
		fleet = append(fleet, mk(fmt.Sprintf("fleet-%02d", i), true))
	}
	mine := mk("mine", false)

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:  scheme.NewStorage(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   crcache.Options{DefaultNamespaces: map[string]crcache.Config{ns: {}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := &orderRecorder{hold: make(chan struct{}), running: make(chan string, 1)}
	close(rec.hold)
	const name = "priority-order"
	r := &packagevariant.Reconciler{Client: mgr.GetClient()}
	if err := r.Watch(ctrl.NewControllerManagedBy(mgr).Named(name)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, SkipNameValidation: new(true)}).
		Complete(rec); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	// The initial list: every variant once.
	g.Eventually(func() bool { return len(rec.recorded()) >= bulk+2 && queueDepth(t, name) == 0 }, timeout, 20*time.Millisecond).Should(BeTrue(), "the initial list to be reconciled")

	// Hold the worker on the holder (an edit of a person's variant).
	rec.mu.Lock()
	rec.hold = make(chan struct{})
	rec.mu.Unlock()
	select { // a signal of the initial list
	case <-rec.running:
	default:
	}
	edit := func(pv *configv1alpha1.PackageVariant, revision string) {
		patch := client.MergeFrom(pv.DeepCopy())
		pv.Spec.Upstream.Revision = configv1alpha1.RevisionNumber(revision)
		if err := k8sClient.Patch(ctx, pv, patch); err != nil {
			t.Fatal(err)
		}
	}
	edit(holder, "2")
	select {
	case got := <-rec.running:
		if got != "holder" {
			t.Fatalf("the worker took %s, not the edited holder", got)
		}
	case <-time.After(timeout):
		t.Fatal("the holder's edit was not reconciled")
	}
	before := len(rec.recorded())

	// The set rewrites its 40 variants, then a person edits theirs.
	for _, pv := range fleet {
		edit(pv, "2")
	}
	g.Eventually(func() bool { return queueDepth(t, name) == bulk }, timeout, 20*time.Millisecond).Should(BeTrue(), "the set's rewrite to be queued")
	edit(mine, "2")
	g.Eventually(func() bool { return queueDepth(t, name) == bulk+1 }, timeout, 20*time.Millisecond).Should(BeTrue(), "the person's edit to be queued")

	rec.mu.Lock()
	close(rec.hold)
	rec.hold = make(chan struct{})
	close(rec.hold)
	rec.mu.Unlock()
	g.Eventually(func() bool { return len(rec.recorded()) == before+bulk+1 && queueDepth(t, name) == 0 }, timeout, 20*time.Millisecond).Should(BeTrue(), "the queue to drain")

	after := rec.recorded()[before:]
	if after[0] != "mine" {
		t.Fatalf("after the held reconcile the queue handed out %v; want the person's variant (mine) first, before the set's 40", after[:5])
	}
	seen := map[string]bool{}
	for _, n := range after[1:] {
		seen[n] = true
	}
	for _, pv := range fleet {
		if !seen[pv.Name] {
			t.Errorf("the set's variant %s was never reconciled after the person's edit: %v", pv.Name, after)
		}
	}
}

// TestPackageVariant_personBeforeBulkReconciled runs the real controller
// (scion controller, a replica of a shard of its own with one variant
// worker) behind queued bulk work: a set's 40 variants are created, then
// a person's; the person's variant is produced, in git, and Ready while
// most of the set's still wait, and every one of the set's is Ready in
// the end.
func TestPackageVariant_personBeforeBulkReconciled(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, cluster := setup(t)
	const shard, bulk = "priority", 40
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(env.WriteKubeconfig(kubeconfig, "priority-replica")).To(Succeed())
	var logs strings.Builder
	cmd := exec.Command(scionbin.Build(t), "controller", "--kubeconfig", kubeconfig, "--shard", shard, "--packagevariant-workers", "1",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--webhook-bind-address", "0", "--cache-dir", t.TempDir(),
		"--allow-file-repositories", "--leader-election-namespace", ns)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	g.Expect(cmd.Start()).To(Succeed())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("the replica's logs:\n%s", logs.String())
		}
	})
	mk := func(name string, owned bool) *configv1alpha1.PackageVariant {
		pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
		pv.Name, pv.Labels, pv.Spec.Downstream.Package = name, map[string]string{configv1alpha1.ShardLabel: shard}, name
		if owned {
			pv.OwnerReferences = []metav1.OwnerReference{{APIVersion: "config.porch.kpt.dev/v1alpha2", Kind: "PackageVariantSet", Name: "fleet",
				UID: types.UID("5e7-" + ns), Controller: new(true), BlockOwnerDeletion: new(true)}}
		}
		g.Expect(k8sClient.Create(ctx, pv)).To(Succeed())
		return pv
	}
	isReady := func(g Gomega, pv *configv1alpha1.PackageVariant) bool {
		got := &configv1alpha1.PackageVariant{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
		return configv1alpha1.ReadyAt(got.Status.Conditions, got.Generation, got.Status.ObservedGeneration)
	}
	// The replica runs (it holds its lease and reconciles).
	warm := mk("warm-up", false)
	g.Eventually(func(g Gomega) {
		got := &configv1alpha1.PackageVariant{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(warm), got)).To(Succeed())
		g.Expect(isReady(g, warm)).To(BeTrue(), "%+v", got.Status.Conditions)
	}, 2*timeout, interval).Should(Succeed())

	var fleet []*configv1alpha1.PackageVariant
	for i := range bulk {
		fleet = append(fleet, mk(fmt.Sprintf("fleet-%02d", i), true))
	}
	mine := mk("mine", false)
	readyFleet := 0
	g.Eventually(func(g Gomega) {
		g.Expect(isReady(g, mine)).To(BeTrue())
		readyFleet = 0
		for _, pv := range fleet {
			if isReady(g, pv) {
				readyFleet++
			}
		}
	}, 2*timeout, 20*time.Millisecond).Should(Succeed())
	if readyFleet >= bulk/2 {
		t.Errorf("%d of the set's %d variants were Ready before the person's, created after them: the person's waited behind the bulk", readyFleet, bulk)
	}
	g.Expect(drafts(t, cluster)).To(ContainElement(ContainSubstring("mine")), "the person's variant was produced in git")
	g.Eventually(func(g Gomega) {
		for _, pv := range fleet {
			g.Expect(isReady(g, pv)).To(BeTrue(), pv.Name)
		}
	}, 4*timeout, interval).Should(Succeed(), "the set's variants are delayed, not dropped")
	t.Logf("when the person's variant was Ready, %d of the set's %d were", readyFleet, bulk)
}
