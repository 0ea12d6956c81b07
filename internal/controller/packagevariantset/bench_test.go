package packagevariantset_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

// BenchmarkPackageVariantSet1000 applies a set selecting 1,000 Repositories
// by label, with three CEL expressions per variant, and measures the time
// until all 1,000 PackageVariants exist and the set reports them (the
// variants' own drafts are BenchmarkPackageVariants's business: the
// downstream repositories here do not exist, so the variant controller
// stops early on each).
func BenchmarkPackageVariantSet1000(b *testing.B) {
	ctx := context.Background()
	const n = 1000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ns := env.Namespace(b, "pvs-scale")
		root := gitRoot(b)
		catalog := gitserver.InitBare(b, root, "catalog.git")
		publish(b, catalog, "app", "v1")
		mustCreate(b, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "catalog", Namespace: ns}, Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file://" + catalog}}})
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for r := 0; r < n; r++ {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				mustCreate(b, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cluster-%04d", r), Namespace: ns,
					Labels: map[string]string{"env": "prod", "region": fmt.Sprintf("region-%d", r%12), "tier": fmt.Sprintf("t%d", r%3)}},
					Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: &configv1alpha1.GitRepository{Repo: fmt.Sprintf("file://%s/missing-%04d.git", root, r)}}})
			}()
		}
		wg.Wait()
		// The upstream is projected before the clock starts.
		waitFor(b, func() bool {
			list := &configv1alpha1.RepositoryList{}
			_ = k8sClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{})
			return len(list.Items) == n+1
		})
		var peak atomic.Uint64
		stop := testenv.SampleHeap(&peak)
		pvs := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: ns}, Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "1"},
			Targets: []configv1alpha2.Target{{
				RepositorySelector: &configv1alpha2.RepositorySelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
				Template: &configv1alpha2.PackageVariantTemplate{
					LabelExprs: []configv1alpha2.MapExpr{{Key: ptr("region"), ValueExpr: ptr("repository.labels['region']")}},
					PackageContext: &configv1alpha2.PackageContextTemplate{DataExprs: []configv1alpha2.MapExpr{
						{Key: ptr("tier"), ValueExpr: ptr("'tier-' + repository.labels['tier']")},
					}},
					Injectors: []configv1alpha2.InjectionSelectorTemplate{{NameExpr: ptr("repository.labels['region'] + '-endpoints'")}},
				},
			}},
		}}
		b.StartTimer()
		start := time.Now()
		mustCreate(b, pvs)
		waitFor(b, func() bool {
			list := &configv1alpha1.PackageVariantList{}
			_ = k8sClient.List(ctx, list, client.InNamespace(ns))
			return len(list.Items) == n
		})
		created := time.Since(start)
		waitFor(b, func() bool {
			got := &configv1alpha2.PackageVariantSet{}
			_ = k8sClient.Get(ctx, client.ObjectKeyFromObject(pvs), got)
			return got.Status.Summary != nil && got.Status.Summary.Desired == n && got.Status.ObservedGeneration == got.Generation
		})
		reported := time.Since(start)
		b.StopTimer()
		stop()
		b.ReportMetric(created.Seconds(), "all-created-s")
		b.ReportMetric(reported.Seconds(), "status-reported-s")
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
	}
}

func mustCreate(b *testing.B, obj client.Object) {
	if err := k8sClient.Create(context.Background(), obj); err != nil {
		b.Error(err)
	}
}

func waitFor(b *testing.B, ok func() bool) {
	deadline := time.Now().Add(5 * time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			b.Fatal("timed out")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
