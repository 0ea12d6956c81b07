package flux_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/testutil/flux"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// BenchmarkDeployLatency is the time from an upstream publication to the
// new version running in N clusters' worth of targets (N from
// SCION_BENCH_TARGETS, 100 by default): a PackageVariantSet fans the
// upstream out to N deployment repositories (git over smart HTTP), its
// drafts proposed automatically, a PackageRollout (a canary, then the
// rest) publishes them judged by Flux, and Flux's own controllers deploy
// each repository with a GitRepository (interval SCION_BENCH_FLUX_INTERVAL,
// 10s by default) and a Kustomization that waits for health. Timed from
// the set's move to the new upstream revision until every Kustomization
// is Ready at the new revision (as the Repositories' status.cluster reads
// it), with its parts: the fan-out (every draft proposed), the canary
// (published and deployed), the rest (published and deployed).
func BenchmarkDeployLatency(b *testing.B) {
	n := 100
	if v, err := strconv.Atoi(os.Getenv("SCION_BENCH_TARGETS")); err == nil && v > 0 {
		n = v
	}
	interval := "10s"
	if v := os.Getenv("SCION_BENCH_FLUX_INTERVAL"); v != "" {
		interval = v
	}
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ns := env.Namespace(b, "deploy-bench")
		root := gitserver.Root(b)
		srv := gitserver.NewServer(b, root)
		// The targets' Flux objects share one namespace (one reader, one
		// kubeconfig); each applies into a namespace of its own.
		fluxNS := env.Namespace(b, "deploy-bench-flux")
		kc := flux.TargetCluster(b, env.Config, env.Client, fluxNS, time.Hour)
		check(b, env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "targets", Namespace: ns}, Data: map[string][]byte{"value": kc}}))
		gitserver.InitBare(b, root, "catalog.git")
		check(b, k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "catalog", Namespace: ns},
			Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: srv.URLFor("catalog.git"), CreateBranch: true}}}))
		publish(b, ns, "catalog", "app", "v1", map[string]string{"a.yaml": configMap("a", "one")}, "")
		var targets []configv1alpha2.RepositoryTarget
		names := make([]string, n)
		for r := range n {
			name := fmt.Sprintf("cluster-%03d", r)
			names[r] = name
			targets = append(targets, configv1alpha2.RepositoryTarget{Name: name})
			gitserver.InitBare(b, root, name+".git")
			appNS := env.Namespace(b, "deploy-bench-apps")
			check(b, k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: &configv1alpha1.GitRepository{Repo: srv.URLFor(name + ".git"), CreateBranch: true},
					Cluster: &configv1alpha1.TargetCluster{KubeConfig: configv1alpha1.KubeConfigReference{SecretRef: configv1alpha1.KubeConfigSecretRef{Name: "targets"}},
						Flux: configv1alpha1.FluxDeployment{Namespace: fluxNS, Kustomizations: []configv1alpha1.FluxKustomization{{Name: name}}}}}}))
			apply(b, `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: `+name+`, namespace: `+fluxNS+`}
spec:
  url: `+srv.URLFor(name+".git")+`
  ref: {branch: main}
  interval: `+interval+`
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: `+name+`, namespace: `+fluxNS+`}
spec:
  sourceRef: {kind: GitRepository, name: `+name+`}
  path: ./app
  interval: 10m
  retryInterval: 10s
  prune: true
  wait: true
  targetNamespace: `+appNS)
		}
		set := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "v1"},
			Targets: []configv1alpha2.Target{{Repositories: targets, Template: &configv1alpha2.PackageVariantTemplate{
				Annotations: map[string]string{porchv1alpha1.AutoLifecycleAnnotation: "true"},
				Labels:      map[string]string{"app": "app"},
			}}},
		}}
		check(b, k8sClient.Create(ctx, set))

		// Revision 1 everywhere first (not timed).
		proposedAt := waitProposed(b, ns, n, 1)
		b.Logf("set up: %d drafts of revision 1 proposed at %s", n, proposedAt.Format(time.RFC3339))
		rollOut(b, ns, "initial", []configv1alpha1.RolloutWave{{Name: "all"}})
		waitRunning(b, ns, names, 1)

		// The upstream moves.
		publish(b, ns, "catalog", "app", "v2", map[string]string{"a.yaml": configMap("a", "two")}, "catalog.app.v1")
		b.StartTimer()
		start := time.Now()
		current := &configv1alpha2.PackageVariantSet{}
		check(b, k8sClient.Get(ctx, client.ObjectKeyFromObject(set), current))
		patch := client.MergeFrom(current.DeepCopy())
		current.Spec.Upstream.Revision = "v2"
		check(b, k8sClient.Patch(ctx, current, patch))
		fanout := waitProposed(b, ns, n, 2).Sub(start)
		ro := rollOut(b, ns, "v2", []configv1alpha1.RolloutWave{{Name: "canary", MaxTargets: ptr.To[int32](1)}})
		canaryAt := waitRunning(b, ns, names[:1], 2)
		doneAt := waitRunning(b, ns, names, 2)
		total := doneAt.Sub(start)
		b.StopTimer()
		published := lastPublished(b, ns, ro)
		b.ReportMetric(total.Seconds(), "deploy-s")
		b.ReportMetric(fanout.Seconds(), "fanout-s")
		b.ReportMetric(canaryAt.Sub(start).Seconds()-fanout.Seconds(), "canary-s")
		b.ReportMetric(doneAt.Sub(canaryAt).Seconds(), "rest-s")
		b.ReportMetric(doneAt.Sub(published).Seconds(), "last-publish-to-running-s")
		b.Logf("%d targets, Flux interval %s: %s from the set's move to every Kustomization Ready at revision 2 (fan-out %s, canary %s, the rest %s; last publication to all running %s)",
			n, interval, total.Round(100*time.Millisecond), fanout.Round(100*time.Millisecond), (canaryAt.Sub(start) - fanout).Round(100*time.Millisecond),
			doneAt.Sub(canaryAt).Round(100*time.Millisecond), doneAt.Sub(published).Round(100*time.Millisecond))
	}
}

func check(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// waitProposed waits until the set's n variants each have a revision of
// upstream revision rev Proposed, and returns when.
func waitProposed(b *testing.B, ns string, n, rev int) time.Time {
	b.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		prs := &porchv1alpha1.PackageRevisionList{}
		check(b, k8sClient.List(context.Background(), prs, client.InNamespace(ns), client.MatchingLabels{"app": "app"}))
		count := 0
		for _, pr := range prs.Items {
			if pr.Spec.Lifecycle == porchv1alpha1.LifecycleProposed && pr.Status.UpstreamLock.Commit() != "" && upstreamRevision(&pr) == rev {
				count++
			}
		}
		if count >= n {
			return time.Now()
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d drafts of upstream revision %d proposed after 10 minutes", count, n, rev)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// upstreamRevision is the upstream revision a downstream revision was
// made from (by its upstream lock's ref, app/vN).
func upstreamRevision(pr *porchv1alpha1.PackageRevision) int {
	ref := pr.Status.UpstreamLock.Ref()
	for i := len(ref) - 1; i >= 0; i-- {
		if ref[i] == 'v' {
			n, _ := strconv.Atoi(ref[i+1:])
			return n
		}
	}
	return 0
}

// rollOut labels the Proposed revisions of the set for a rollout judged
// by Flux and starts it.
func rollOut(b *testing.B, ns, name string, waves []configv1alpha1.RolloutWave) *configv1alpha1.PackageRollout {
	b.Helper()
	ctx := context.Background()
	prs := &porchv1alpha1.PackageRevisionList{}
	check(b, k8sClient.List(ctx, prs, client.InNamespace(ns), client.MatchingLabels{"app": "app"}))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range prs.Items {
		pr := &prs.Items[i]
		if pr.Spec.Lifecycle != porchv1alpha1.LifecycleProposed {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			patch := client.MergeFrom(pr.DeepCopy())
			pr.Labels["release"] = name
			if err := k8sClient.Patch(ctx, pr, patch); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	ro := &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: configv1alpha1.PackageRolloutSpec{
		RevisionSelector: metav1.LabelSelector{MatchLabels: map[string]string{"release": name}},
		Waves:            waves,
		Health:           &configv1alpha1.RolloutHealth{Engine: configv1alpha1.HealthEngineFlux},
		ProgressDeadline: &metav1.Duration{Duration: 10 * time.Minute},
	}}
	check(b, k8sClient.Create(ctx, ro))
	return ro
}

// waitRunning waits until the clusters of the named repositories run
// revision rev of app, Current, and returns when.
func waitRunning(b *testing.B, ns string, repos []string, rev int) time.Time {
	b.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	want := map[string]bool{}
	for _, r := range repos {
		want[r] = true
	}
	for {
		list := &configv1alpha1.RepositoryList{}
		check(b, env.Storage.List(context.Background(), list, client.InNamespace(ns)))
		count := 0
		for _, r := range list.Items {
			if !want[r.Name] || r.Status.Cluster == nil {
				continue
			}
			for _, p := range r.Status.Cluster.Packages {
				if p.Package == "app" && p.Revision == rev && p.State == configv1alpha1.DeployCurrent {
					count++
				}
			}
		}
		if count == len(repos) {
			return time.Now()
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d clusters run revision %d after 10 minutes", count, len(repos), rev)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// lastPublished is when the rollout's last revision was published.
func lastPublished(b *testing.B, ns string, ro *configv1alpha1.PackageRollout) time.Time {
	b.Helper()
	prs := &porchv1alpha1.PackageRevisionList{}
	check(b, k8sClient.List(context.Background(), prs, client.InNamespace(ns), client.MatchingLabels{configv1alpha1.PackageRolloutLabel: ro.Name}))
	var last time.Time
	for _, pr := range prs.Items {
		if t := pr.Status.PublishTimestamp; t != nil && t.After(last) {
			last = t.Time
		}
	}
	return last
}
