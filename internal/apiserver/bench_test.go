package apiserver_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/testutil/porchcalls"
)

// BenchmarkPorchAPI measures what people wait for through Porch's API
// with N revisions stored (SCION_BENCH_REVISIONS, 20,000 by default; make
// bench-api N=...): N/20 deployment repositories of 10 packages each, a
// published revision and a draft of each, shaped as Scion's controllers
// write them (labels, annotations, a finalizer, conditions, the upstream's
// lock), all clones of one published upstream. It reports p50 and p99 of
// kubectl's table, a list of whole objects, a get, scion rpkg get, the
// same table read straight from the storage (the cluster's API server),
// and the heap the API server's copy of the revisions takes.
func BenchmarkPorchAPI(b *testing.B) {
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("SCION_BENCH_REVISIONS")); err == nil && v >= 20 {
		n = v
	}
	ctx := context.Background()
	ns := env.Namespace(b, "bench")
	heapBefore := heapInUse()

	const upstreamRepo = "https://git.example.com/platform/catalog.git"
	if err := env.Client.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "catalog", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: upstreamRepo}}}); err != nil {
		b.Fatal(err)
	}
	upstream := &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{Name: "catalog.app.v1", Namespace: ns},
		Spec: porchv1alpha1.PackageRevisionSpec{Repository: "catalog", PackageName: "app", WorkspaceName: "v1", Revision: 1, Lifecycle: porchv1alpha1.LifecyclePublished}}
	commit := strings.Repeat("c0ffee12", 5)
	lock := &kptfilev1.UpstreamLock{Type: kptfilev1.GitOrigin, Git: &kptfilev1.GitLock{Repo: upstreamRepo, Directory: "app", Ref: "app/v1", Commit: commit}}
	write(b, upstream, porchv1alpha1.PackageRevisionStatus{Lifecycle: porchv1alpha1.LifecyclePublished, Commit: commit})

	start := time.Now()
	work := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range work {
				repo, pkgName := fmt.Sprintf("deploy-%04d", i/20), fmt.Sprintf("app-%d", i%20/2)
				ws, lc, rev := "v1", porchv1alpha1.LifecyclePublished, 1
				if i%2 == 1 {
					ws, lc, rev = "v2", porchv1alpha1.LifecycleDraft, 0
				}
				pr := &porchv1alpha1.PackageRevision{
					ObjectMeta: metav1.ObjectMeta{
						Name: repo + "." + pkgName + "." + ws, Namespace: ns,
						Labels:      map[string]string{"scion.dev/package-variant": repo + "-" + pkgName, "scion.dev/repository": repo, "app.kubernetes.io/part-of": "fleet"},
						Annotations: map[string]string{"scion.dev/upstream": "catalog.app.v1", "porch.kpt.dev/approved-by": "alice@example.com"},
						Finalizers:  []string{porchv1alpha1.PackageRevisionFinalizer},
					},
					Spec: porchv1alpha1.PackageRevisionSpec{Repository: repo, PackageName: pkgName, WorkspaceName: ws, Revision: rev, Lifecycle: lc,
						ReadinessGates: []kptfilev1.ReadinessGate{{ConditionType: "scion.dev/health"}}},
				}
				st := porchv1alpha1.PackageRevisionStatus{Lifecycle: lc, Commit: commit, UpstreamLock: lock, ObservedGeneration: 1,
					Conditions: []porchv1alpha1.Condition{
						{Type: "Ready", Status: "True", Reason: "Shown", Message: "the revision is in git as its lifecycle says"},
						{Type: "Rendered", Status: "True", Reason: "Rendered", Message: "the package renders: 3 functions ran"},
						{Type: "UpstreamMerged", Status: "True", Reason: "Merged", Message: "catalog.app.v1 merged, downstream edits kept"},
						{Type: "scion.dev/health", Status: "True", Reason: "Healthy", Message: "every target reports healthy"},
					}}
				if lc == porchv1alpha1.LifecyclePublished {
					st.PublishedBy = "alice@example.com"
					st.PublishTimestamp = &metav1.Time{Time: time.Now()}
				}
				write(b, pr, st)
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	stored := time.Since(start)

	// The API server's copy holds them all.
	var total int
	for deadline := time.Now().Add(time.Minute); ; {
		list := &porchv1alpha1.PackageRevisionList{}
		if err := env.Client.List(ctx, list, client.InNamespace(ns), client.Limit(1)); err != nil {
			b.Fatal(err)
		}
		if total = 1 + int(ptrValue(list.RemainingItemCount)); total == n+1 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the API server lists %d revisions of %d", total, n+1)
		}
		time.Sleep(100 * time.Millisecond)
	}
	heapAfter := heapInUse()

	one := &porchv1alpha1.PackageRevision{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "deploy-0001.app-3.v2"}, one); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	calls := porchcalls.Standard(b, env.Client, env.Config, env.Scheme, ns, total, one, false)
	storage := porchcalls.KubectlGet(b, env.Config, env.Scheme, porchv1alpha1.StorageGroupVersion, ns)
	calls = append(calls, porchcalls.Call{Name: "the same table straight from the storage (cluster's API server)", Calls: 20, Call: func() error { return storage("") }})
	fmt.Printf("\n%d revisions stored in %s; heap in use %d MiB before, %d MiB with the API server's copy filled\n",
		total, stored.Round(time.Second), heapBefore>>20, heapAfter>>20)
	fmt.Print(porchcalls.Measure(b, calls))
}

// write creates pr in the storage with status st.
func write(b *testing.B, pr *porchv1alpha1.PackageRevision, st porchv1alpha1.PackageRevisionStatus) {
	ctx := context.Background()
	if err := storageClient.Create(ctx, pr); err != nil {
		b.Error(err)
		return
	}
	pr.Status = st
	if err := storageClient.Status().Update(ctx, pr); err != nil {
		b.Error(err)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func ptrValue(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
