package repository_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/metrics"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

// BenchmarkProjection1000 projects a repository of 1,000 package revisions
// (250 packages, 3 published revisions and a draft each, 20 resources per
// package) into PackageRevisions on the real API server, then forces a full
// resync and checks it wrote nothing. It reports the time to project, the
// time of the resync, the writes the resync made (must be 0) and the peak
// heap of the process running the controller.
func BenchmarkProjection1000(b *testing.B) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ns := env.Namespace(b, "bench")
		bare := gitserver.InitBare(b, b.TempDir(), "big.git")
		gitserver.SeedRevisions(b, bare, 250, 3, 20)
		var peak atomic.Uint64
		stop := testenv.SampleHeap(&peak)
		b.StartTimer()

		start := time.Now()
		repo := &configv1alpha1.Repository{}
		repo.Name, repo.Namespace = "big", ns
		repo.Spec.Git = &configv1alpha1.GitRepository{Repo: "file://" + bare}
		if err := k8sClient.Create(ctx, repo); err != nil {
			b.Fatal(err)
		}
		waitFor(b, func() bool {
			r := &configv1alpha1.Repository{}
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(repo), r) == nil &&
				meta.IsStatusConditionTrue(r.Status.Conditions, configv1alpha1.ReadyCondition) && r.Status.RevisionCount == 1000
		})
		project := time.Since(start)

		// A full resync of the unchanged repository.
		before := versions(b, ns)
		unchanged := testutil.ToFloat64(metrics.RepositorySyncs.WithLabelValues("unchanged"))
		r := &configv1alpha1.Repository{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(repo), r); err != nil {
			b.Fatal(err)
		}
		patch := client.MergeFrom(r.DeepCopy())
		r.Annotations = map[string]string{configv1alpha1.SyncRequestedAnnotation: time.Now().String()}
		start = time.Now()
		if err := k8sClient.Patch(ctx, r, patch); err != nil {
			b.Fatal(err)
		}
		waitFor(b, func() bool {
			return testutil.ToFloat64(metrics.RepositorySyncs.WithLabelValues("unchanged")) > unchanged
		})
		resync := time.Since(start)
		stop()
		after := versions(b, ns)
		writes := 0
		for k, v := range after {
			if before[k] != v {
				writes++
			}
		}
		if len(after) != 1000 {
			b.Fatalf("%d PackageRevisions, want 1000", len(after))
		}
		if writes != 0 {
			b.Fatalf("the resync of an unchanged repository wrote %d PackageRevisions", writes)
		}
		b.ReportMetric(project.Seconds(), "project-s")
		b.ReportMetric(resync.Seconds(), "resync-s")
		b.ReportMetric(float64(writes), "resync-writes")
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
	}
}

func versions(b *testing.B, ns string) map[string]string {
	list := &porchv1alpha1.PackageRevisionList{}
	if err := k8sClient.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	out := map[string]string{}
	for _, pr := range list.Items {
		out[pr.Name] = pr.ResourceVersion
	}
	return out
}

func waitFor(b *testing.B, cond func() bool) {
	deadline := time.Now().Add(5 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatal("timed out")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// samplePeakHeap records the peak of HeapInuse until stop is called.
