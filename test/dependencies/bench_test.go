package dependencies

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/testutil/cpustat"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/testutil/suite"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

// BenchmarkDependencies installs, into N deployment repositories
// (SCION_BENCH_REPOS, 100 by default) served over smart HTTP, a package
// whose dependency graph has five packages (app needs b and c, b needs d,
// c needs d and e), from nothing: one PackageVariant per repository with
// install: true, which installs the four others. It reports the time
// until every PackageVariant (5 per repository) is Ready with every
// dependant's status listing its four dependencies, the API requests the
// manager made per repository, CPU and the manager's peak heap.
func BenchmarkDependencies(b *testing.B) {
	ctx := context.Background()
	repos := 100
	if v, err := strconv.Atoi(os.Getenv("SCION_BENCH_REPOS")); err == nil && v > 0 {
		repos = v
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ns := env.Namespace(b, "depsbench")
		root := b.TempDir()
		server := gitserver.NewServer(b, root)
		cat := newCatalog(b, root)
		cat.publish("e", "", nil)
		cat.publish("d", "", nil)
		cat.publish("c", "", []requires{{"d", ">=1.0.0"}, {"e", ""}})
		cat.publish("b", "", []requires{{"d", "^1"}})
		cat.publish("app", "", []requires{{"b", ""}, {"c", ">=1.0.0"}})
		if err := k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "catalog", Namespace: ns},
			Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file://" + cat.bare}}}); err != nil {
			b.Fatal(err)
		}
		for r := 0; r < repos; r++ {
			name := fmt.Sprintf("cluster-%04d", r)
			gitserver.InitBare(b, root, name+".git")
			if err := k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: &configv1alpha1.GitRepository{Repo: server.URLFor(name + ".git"), CreateBranch: true}}}); err != nil {
				b.Fatal(err)
			}
		}
		var peak atomic.Uint64
		stop := testenv.SampleHeap(&peak)
		requestsBefore, cpuBefore := suite.Requests.Total(), cpustat.Read()
		start := time.Now()
		b.StartTimer()
		for r := 0; r < repos; r++ {
			repo := fmt.Sprintf("cluster-%04d", r)
			pv := variant(ns, "app-"+repo, "app", "1", &configv1alpha1.Dependencies{Install: true})
			pv.Spec.Downstream.Repo = repo
			if err := k8sClient.Create(ctx, pv); err != nil {
				b.Fatal(err)
			}
		}
		for {
			list := &configv1alpha1.PackageVariantList{}
			if err := k8sClient.List(ctx, list, client.InNamespace(ns)); err != nil {
				b.Fatal(err)
			}
			ready := 0
			for _, pv := range list.Items {
				if pv.Status.ObservedGeneration != pv.Generation || !meta.IsStatusConditionTrue(pv.Status.Conditions, configv1alpha1.ReadyCondition) {
					continue
				}
				if pv.Labels[configv1alpha1.DependencyLabel] == "" && len(pv.Status.Dependencies) != 4 {
					continue
				}
				ready++
			}
			if ready == 5*repos {
				break
			}
			if time.Since(start) > 30*time.Minute {
				b.Fatalf("%d of %d PackageVariants ready after 30 minutes", ready, 5*repos)
			}
			time.Sleep(200 * time.Millisecond)
		}
		b.StopTimer()
		wall := time.Since(start)
		cpu := cpustat.Read().Sub(cpuBefore)
		requests := suite.Requests.Total() - requestsBefore
		stop()
		b.ReportMetric(wall.Seconds(), "s-to-ready")
		b.ReportMetric(float64(requests)/float64(repos), "requests/repository")
		fmt.Printf("\n%d repositories x 5 packages: all %d PackageVariants Ready in %s; %.1f API requests per repository; CPU: controllers %s, git %s, API server %s, etcd %s (steal %s); peak heap %d MiB\n",
			repos, 5*repos, wall.Round(100*time.Millisecond), float64(requests)/float64(repos),
			cpu.Self.Round(100*time.Millisecond), cpu.Children.Round(100*time.Millisecond), cpu.APIServer.Round(100*time.Millisecond), cpu.Etcd.Round(100*time.Millisecond), cpu.Steal.Round(100*time.Millisecond), peak.Load()>>20)
	}
}
