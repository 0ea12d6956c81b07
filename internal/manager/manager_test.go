package manager

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/testutil/scionbin"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func get(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// startEnv starts an API server for the test, stopped when it ends.
func startEnv(t testing.TB) *testenv.Env {
	t.Helper()
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return env
}

func TestManager(t *testing.T) {
	g := NewWithT(t)
	env := startEnv(t)

	probe, metricsAddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, env.Config, Options{
			MetricsAddr: metricsAddr, ProbeAddr: probe, LeaderElection: true, LeaderElectionNamespace: "default",
			CacheDir: t.TempDir(), RepositoryWorkers: 2, SyncPeriod: time.Minute,
			AllowFileRepositories: true, // the test's remote is a bare repository on disk
		})
	}()
	defer func() {
		cancel()
		g.Expect(<-done).To(Succeed())
	}()

	g.Eventually(func() (int, error) {
		code, _, err := get(fmt.Sprintf("http://%s/readyz", probe))
		return code, err
	}, 30*time.Second, 200*time.Millisecond).Should(Equal(http.StatusOK))

	bare := gitserver.InitBare(t, t.TempDir(), "r.git")
	repo := &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "default"},
		Spec:       configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file://" + bare, CreateBranch: true}},
	}
	g.Expect(env.Client.Create(context.Background(), repo)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &configv1alpha1.Repository{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(repo), got)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, configv1alpha1.ReadyCondition)).To(BeTrue())
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed(), "the leader runs the repository controller")

	_, body, err := get(fmt.Sprintf("http://%s/metrics", metricsAddr))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(body).To(ContainSubstring(`scion_git_operation_duration_seconds_count{operation="open"}`))
	g.Expect(body).To(ContainSubstring(`controller_runtime_reconcile_total{controller="repository"`))

	// The git object cache's bound follows the shard's PackageVariants:
	// those of another shard do not count, a deleted one no longer does.
	cacheMax := func() (int64, error) {
		_, body, err := get(fmt.Sprintf("http://%s/metrics", metricsAddr))
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(line, "scion_git_object_cache_max_bytes "); ok {
				f, err := strconv.ParseFloat(v, 64)
				return int64(f), err
			}
		}
		return 0, fmt.Errorf("no scion_git_object_cache_max_bytes in\n%s", body)
	}
	g.Expect(cacheMax()).To(Equal(int64(ObjectCacheBase)))
	// v1 was applied with kubectl: its cached copy has no last-applied
	// annotation (stripUnread), and what the controller writes leaves the
	// API server's alone.
	lastApplied := map[string]string{corev1.LastAppliedConfigAnnotation: `{"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"PackageVariant"}`}
	for i, labels := range []map[string]string{nil, nil, nil, {configv1alpha1.ShardLabel: "b"}} {
		var annotations map[string]string
		if i == 1 {
			annotations = lastApplied
		}
		g.Expect(env.Client.Create(context.Background(), &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("v%d", i), Namespace: "default", Labels: labels, Annotations: annotations},
			Spec: configv1alpha1.PackageVariantSpec{
				Upstream:   &configv1alpha1.Upstream{Repo: "r", Package: "missing", Revision: "1"},
				Downstream: &configv1alpha1.Downstream{Repo: "r", Package: fmt.Sprintf("v%d", i)},
			}})).To(Succeed())
	}
	g.Eventually(cacheMax, 30*time.Second, 200*time.Millisecond).Should(Equal(int64(ObjectCacheBase + 3*ObjectCachePerVariant)))
	g.Expect(env.Client.Delete(context.Background(), &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: "v0", Namespace: "default"}})).To(Succeed())
	g.Eventually(cacheMax, 30*time.Second, 200*time.Millisecond).Should(Equal(int64(ObjectCacheBase + 2*ObjectCachePerVariant)))
	g.Consistently(cacheMax, time.Second, 200*time.Millisecond).Should(Equal(int64(ObjectCacheBase+2*ObjectCachePerVariant)), "updates of the variants do not count them again")
	g.Eventually(func(g Gomega) {
		v1 := &configv1alpha1.PackageVariant{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "v1"}, v1)).To(Succeed())
		g.Expect(v1.Status.Conditions).NotTo(BeEmpty(), "the controller wrote its status")
		g.Expect(v1.Annotations).To(Equal(lastApplied))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}

// stripUnread drops managed fields everywhere and the last-applied copy
// from the kinds there are thousands of, nothing else, and interns those
// kinds' strings.
func TestStripUnread(t *testing.T) {
	g := NewWithT(t)
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "x", Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "team": "a"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}
	}
	for _, o := range []client.Object{&configv1alpha1.PackageVariant{ObjectMeta: meta()}, &porchv1alpha1.PackageRevision{ObjectMeta: meta()}} {
		got, err := stripUnread(o)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.(client.Object).GetAnnotations()).To(Equal(map[string]string{"team": "a"}), "%T", o)
		g.Expect(got.(client.Object).GetManagedFields()).To(BeEmpty())
	}
	// Strings the objects repeat share their bytes; an object's own name
	// does not.
	one, two := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: strings.Clone("variant-x"), Namespace: strings.Clone("tenant-a")}},
		&configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: strings.Clone("variant-x"), Namespace: strings.Clone("tenant-a")}}
	for _, o := range []client.Object{one, two} {
		_, err := stripUnread(o)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(unsafe.StringData(one.Namespace) == unsafe.StringData(two.Namespace)).To(BeTrue(), "interned")
	g.Expect(unsafe.StringData(one.Name) == unsafe.StringData(two.Name)).To(BeFalse(), "an object's own name is not")
	repo := &configv1alpha1.Repository{ObjectMeta: meta()}
	got, err := stripUnread(repo)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.(client.Object).GetAnnotations()).To(HaveKey(corev1.LastAppliedConfigAnnotation), "other kinds keep it")
	g.Expect(got.(client.Object).GetManagedFields()).To(BeEmpty())
}

// Two replicas, the default shard and shard "b", against one API server:
// each reconciles only its own objects (nothing of shard b is touched
// before its replica starts), a variant of shard b writing into a
// repository of the default shard works (git compare-and-swap keeps the
// shared repository consistent), and no draft is written twice.
func TestSharding(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env := startEnv(t)
	// Each shard is a process of its own, as replicas are: scion
	// controller [--shard b].
	bin := scionbin.Build(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(env.WriteKubeconfig(kubeconfig, "replica")).To(Succeed())
	start := func(shard string) (*strings.Builder, func()) {
		var log strings.Builder
		args := []string{"controller", "--kubeconfig", kubeconfig, "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
			"--cache-dir", t.TempDir(), "--allow-file-repositories", "--sync-period", "1m", "--leader-election-namespace", "default"}
		if shard != "" {
			args = append(args, "--shard", shard)
		}
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &log, &log
		g.Expect(cmd.Start()).To(Succeed())
		return &log, func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	}
	logDefault, stopDefault := start("")
	defer stopDefault()

	root := t.TempDir()
	labelB := map[string]string{configv1alpha1.ShardLabel: "b"}
	catalog := gitserver.InitBare(t, root, "catalog.git")
	gitserver.SeedRevisions(t, catalog, 1, 1, 2) // package pkg-0000, published v1
	repos := map[string]map[string]string{"catalog": nil, "down-a": nil, "down-b": labelB}
	for name, labels := range repos {
		bare := catalog
		if name != "catalog" {
			bare = gitserver.InitBare(t, root, name+".git")
		}
		g.Expect(env.Client.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
			Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file://" + bare, CreateBranch: true}}})).To(Succeed())
	}
	type want struct{ name, down string }
	var variants []want
	for i := 0; i < 3; i++ {
		variants = append(variants, want{fmt.Sprintf("a-%d", i), "down-a"}, want{fmt.Sprintf("b-%d", i), "down-b"}, want{fmt.Sprintf("b-into-a-%d", i), "down-a"})
	}
	for _, v := range variants {
		pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: v.name, Namespace: "default"}, Spec: configv1alpha1.PackageVariantSpec{
			Upstream:   &configv1alpha1.Upstream{Repo: "catalog", Package: "pkg-0000", Revision: "1"},
			Downstream: &configv1alpha1.Downstream{Repo: v.down, Package: v.name},
		}}
		if v.name[0] == 'b' {
			pv.Labels = labelB
		}
		g.Expect(env.Client.Create(ctx, pv)).To(Succeed())
	}
	readyPV := func(g Gomega, name string) bool {
		pv := &configv1alpha1.PackageVariant{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, pv)).To(Succeed())
		return configv1alpha1.ReadyAt(pv.Status.Conditions, pv.Generation, pv.Status.ObservedGeneration)
	}
	untouched := func(g Gomega) {
		for _, v := range variants {
			if v.name[0] != 'b' {
				continue
			}
			pv := &configv1alpha1.PackageVariant{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: v.name}, pv)).To(Succeed())
			// The API server sets the finalizer on creation
			// (config/policy/mutating.yaml); only a controller writes
			// status.
			g.Expect(pv.Status.Conditions).To(BeEmpty(), "%s: not touched by the default shard", v.name)
			for _, m := range pv.ManagedFields {
				g.Expect(m.Subresource).To(BeEmpty(), "%s: status written by %s", v.name, m.Manager)
			}
		}
		repo := &configv1alpha1.Repository{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "down-b"}, repo)).To(Succeed())
		g.Expect(repo.Status.Conditions).To(BeEmpty(), "down-b is shard b's")
	}
	g.Eventually(func(g Gomega) {
		for _, v := range variants {
			if v.name[0] == 'a' {
				g.Expect(readyPV(g, v.name)).To(BeTrue(), v.name)
			}
		}
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed(), func() string { return logDefault.String() })
	g.Consistently(untouched, 2*time.Second, 200*time.Millisecond).Should(Succeed())

	logB, stopB := start("b")
	defer stopB()
	g.Eventually(func(g Gomega) {
		for _, v := range variants {
			g.Expect(readyPV(g, v.name)).To(BeTrue(), v.name)
		}
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed(), func() string { return logB.String() })
	// Shard b's drafts in down-b carry its label; each variant's draft was
	// written once.
	prs := &porchv1alpha1.PackageRevisionList{}
	g.Expect(env.Client.List(ctx, prs, client.InNamespace("default"), client.MatchingLabels{porchv1alpha1.RepositoryLabel: "down-b"})).To(Succeed())
	g.Expect(prs.Items).To(HaveLen(3))
	for _, pr := range prs.Items {
		g.Expect(pr.Labels).To(HaveKeyWithValue(configv1alpha1.ShardLabel, "b"), pr.Name)
	}
	for _, down := range []string{"down-a", "down-b"} {
		log := gitserver.Git(t, filepath.Join(root, down+".git"), "log", "--all", "--format=%s")
		for _, v := range variants {
			if v.down == down {
				g.Expect(strings.Count(log, "Create from PackageVariant "+v.name+"\n")).To(Equal(1), "%s in %s", v.name, down)
			}
		}
	}
}

// A shard that cannot be a label value and a lease name is refused when
// the manager is built, naming it, before anything connects.
func TestShardName(t *testing.T) {
	for _, shard := range []string{"Blue", "a b", "tenant_a", "a.b", strings.Repeat("a", 64)} {
		_, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, Options{CacheDir: t.TempDir(), Shard: shard})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("shard %q", shard)) {
			t.Errorf("shard %q: got %v, want an error naming it", shard, err)
		}
	}
}

// The leader election's durations are checked against each other before
// anything starts, naming the flags.
func TestLeaseTimes(t *testing.T) {
	g := NewWithT(t)
	g.Expect(leaseTimes(Options{})).To(Succeed())
	g.Expect(leaseTimes(Options{LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: time.Second})).To(Succeed())
	g.Expect(leaseTimes(Options{LeaseDuration: 5 * time.Second})).To(MatchError(ContainSubstring("--leader-elect-renew-deadline (10s) must be shorter than --leader-elect-lease-duration (5s)")))
	g.Expect(leaseTimes(Options{RetryPeriod: 9 * time.Second})).To(MatchError(ContainSubstring("longer than 1.2 × --leader-elect-retry-period (9s)")))
	g.Expect(leaseTimes(Options{RetryPeriod: -time.Second})).To(MatchError(ContainSubstring("must not be negative")))
	_, err := New(nil, Options{CacheDir: t.TempDir(), LeaseDuration: time.Second})
	g.Expect(err).To(MatchError(ContainSubstring("--leader-elect-lease-duration (1s)")))
}
