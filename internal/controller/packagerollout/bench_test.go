package packagerollout_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/testutil/suite"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

// BenchmarkRollout1000 rolls a revision out over 1,000 deployment
// repositories in 4 waves (1%, 10%, 50%, the rest), health set by the
// benchmark as soon as a revision is published. It reports, per wave, the
// time from its start to all its targets published, the whole rollout's
// time, the manager's API requests per target and its peak heap.
func BenchmarkRollout1000(b *testing.B) {
	ctx := context.Background()
	const n = 1000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ns := env.Namespace(b, "rollout-scale")
		root := b.TempDir()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for r := 0; r < n; r++ {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				name := fmt.Sprintf("cluster-%04d", r)
				bare := gitserver.InitBare(b, root, name+".git")
				st, err := store.Open(ctx, store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: b.TempDir()})
				if err != nil {
					b.Error(err)
					return
				}
				for _, v := range []string{"v1", "v2"} {
					d, err := st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: v, Contents: appPackage(v)})
					if err == nil {
						_, err = st.Propose(ctx, "app", v, d.Commit, store.Proposal{})
					}
					if err == nil && v == "v1" {
						_, err = st.Publish(ctx, "app", v, "", "platform-team", "")
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
				if err := k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
					Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: &configv1alpha1.GitRepository{Repo: "file://" + bare}}}); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		// Label the proposals once the sync shows them.
		labelled := 0
		for deadline := time.Now().Add(5 * time.Minute); labelled < n && time.Now().Before(deadline); {
			list := &porchv1alpha1.PackageRevisionList{}
			if err := k8sClient.List(ctx, list, client.InNamespace(ns)); err != nil {
				b.Fatal(err)
			}
			labelled = 0
			for j := range list.Items {
				pr := &list.Items[j]
				if pr.Spec.WorkspaceName != "v2" || pr.Spec.Lifecycle != porchv1alpha1.LifecycleProposed {
					continue
				}
				if pr.Labels["app"] != "demo" {
					patch := client.MergeFrom(pr.DeepCopy())
					pr.Labels["app"] = "demo"
					if err := k8sClient.Patch(ctx, pr, patch); err != nil {
						b.Fatal(err)
					}
				}
				labelled++
			}
			time.Sleep(time.Second)
		}
		if labelled < n {
			b.Fatalf("only %d of %d proposals shown", labelled, n)
		}
		stopHealth := healthAll(ctx, ns)
		var peak atomic.Uint64
		stopHeap := testenv.SampleHeap(&peak)
		before := suite.Requests.Total()
		b.StartTimer()

		start := time.Now()
		ro := &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Name: "scale", Namespace: ns}, Spec: configv1alpha1.PackageRolloutSpec{
			RevisionSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "demo"}},
			Waves: []configv1alpha1.RolloutWave{
				{Name: "one", Percent: ptr.To[int32](1)}, {Name: "ten", Percent: ptr.To[int32](10)}, {Name: "half", Percent: ptr.To[int32](50)},
			},
			Health:           &configv1alpha1.RolloutHealth{ConditionType: synced},
			ProgressDeadline: &metav1.Duration{Duration: 10 * time.Minute},
		}}
		if err := k8sClient.Create(ctx, ro); err != nil {
			b.Fatal(err)
		}
		cur := &configv1alpha1.PackageRollout{}
		for {
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(ro), cur); err != nil {
				b.Fatal(err)
			}
			if c := condition(cur, "Ready"); c.Status == metav1.ConditionTrue {
				break
			}
			if time.Since(start) > 20*time.Minute {
				b.Fatalf("not complete after 20 minutes: %s", cur.Status.Blocked)
			}
			time.Sleep(200 * time.Millisecond)
		}
		total := time.Since(start)
		b.StopTimer()
		stopHeap()
		stopHealth()
		requests := suite.Requests.Total() - before
		b.ReportMetric(total.Seconds(), "rollout-s")
		b.ReportMetric(float64(requests)/n, "requests/target")
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
		// Per wave: from its start to its last target published.
		list := &porchv1alpha1.PackageRevisionList{}
		if err := k8sClient.List(ctx, list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		publishedAt := map[string]time.Time{}
		for _, pr := range list.Items {
			if pr.Status.PublishTimestamp != nil {
				publishedAt[pr.Name] = pr.Status.PublishTimestamp.Time
			}
		}
		for _, w := range cur.Status.Waves {
			last := w.StartedAt.Time
			for _, name := range w.Revisions {
				if t := publishedAt[name]; t.After(last) {
					last = t
				}
			}
			b.ReportMetric(last.Sub(w.StartedAt.Time).Seconds(), "wave-"+w.Name+"-publish-s")
			b.Logf("wave %s: %d targets published in %s", w.Name, w.Targets, last.Sub(w.StartedAt.Time).Round(10*time.Millisecond))
		}
	}
}

// healthAll marks every published v2 of ns healthy, as fast as it sees
// them (one list a quarter second, writes 16 at a time).
func healthAll(ctx context.Context, ns string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	svc := &pkgservice.Service{Client: k8sClient, APIReader: k8sClient}
	go func() {
		defer close(done)
		healthy := map[string]bool{}
		for ctx.Err() == nil {
			list := &porchv1alpha1.PackageRevisionList{}
			if err := k8sClient.List(ctx, list, client.InNamespace(ns)); err == nil {
				var wg sync.WaitGroup
				sem := make(chan struct{}, 16)
				for j := range list.Items {
					pr := &list.Items[j]
					if healthy[pr.Name] || pr.Spec.WorkspaceName != "v2" || pr.Status.PublishTimestamp == nil {
						continue
					}
					healthy[pr.Name] = true
					wg.Add(1)
					sem <- struct{}{}
					go func() {
						defer func() { <-sem; wg.Done() }()
						_, _ = svc.WriteStatus(ctx, pr, func(pr *porchv1alpha1.PackageRevision) bool {
							return pkgservice.SetConditions(&pr.Status.Conditions, porchv1alpha1.Condition{Type: synced, Status: "True", Reason: "Reported"})
						})
					}()
				}
				wg.Wait()
			}
			time.Sleep(250 * time.Millisecond)
		}
	}()
	return func() { cancel(); <-done }
}
