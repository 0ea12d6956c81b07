package manager

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
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

func TestManager(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()

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
}
