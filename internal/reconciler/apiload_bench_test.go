package reconciler_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/testutil/cpustat"
)

// BenchmarkAPIServerWrite measures what one write of each kind Scion makes
// per variant costs the cluster's API server (its CPU, from
// /proc: apiserver-ms/op), on objects shaped as the scale benchmark's:
// a variant with a package context, a pipeline function and an injector
// and the status its controller writes, a draft's storage object with the
// status the sync writes, and the event a draft's write records. Each
// write changes the status (as a bump does), round-robin over 200
// objects.
//
//	go test -run '^$' -bench APIServerWrite -benchtime 2000x ./internal/reconciler
func BenchmarkAPIServerWrite(b *testing.B) {
	const objects = 200
	ctx := context.Background()
	b.Run("variant-status", func(b *testing.B) {
		pvs := benchVariants(b, ctx, objects)
		measureWrites(b, func(i int) error { return bumpVariantStatus(ctx, pvs[i%objects], i) })
	})
	b.Run("revision-create", func(b *testing.B) {
		ns := env.Namespace(b, "bench-create")
		measureWrites(b, func(i int) error { return env.Storage.Create(ctx, benchRevision(ns, i)) })
	})
	b.Run("revision-status", func(b *testing.B) {
		prs := benchRevisions(b, ctx, objects)
		measureWrites(b, func(i int) error { return bumpRevisionStatus(ctx, prs[i%objects], i) })
	})
	b.Run("event", func(b *testing.B) {
		ns := env.Namespace(b, "bench-event")
		measureWrites(b, func(i int) error { return env.Client.Create(ctx, benchEvent(ns, i)) })
	})
}

// measureWrites runs write b.N times and reports the API server's CPU per
// write.
func measureWrites(b *testing.B, write func(int) error) {
	b.ResetTimer()
	before := cpustat.Read()
	for i := range b.N {
		if err := write(i); err != nil {
			b.Fatal(err)
		}
	}
	used := cpustat.Read().Sub(before)
	b.ReportMetric(float64(used.APIServer.Microseconds())/1000/float64(b.N), "apiserver-ms/op")
	b.ReportMetric(float64(used.Etcd.Microseconds())/1000/float64(b.N), "etcd-ms/op")
}

func benchVariants(b *testing.B, ctx context.Context, n int) []*configv1alpha1.PackageVariant {
	ns := env.Namespace(b, "bench-pv")
	out := make([]*configv1alpha1.PackageVariant, n)
	for i := range out {
		pv := &configv1alpha1.PackageVariant{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cluster-%04d.tenant-%d", i/10, i%10)},
			Spec: configv1alpha1.PackageVariantSpec{
				Upstream:       &configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "1"},
				Downstream:     &configv1alpha1.Downstream{Repo: fmt.Sprintf("cluster-%04d", i/10), Package: fmt.Sprintf("tenant-%d", i%10)},
				PackageContext: &configv1alpha1.PackageContext{Data: map[string]string{"tenant": fmt.Sprint(i % 10)}},
				Pipeline:       &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{{Image: "set-namespace", ConfigMap: map[string]string{"namespace": fmt.Sprintf("tenant-%d", i%10)}}}},
				Injectors:      []configv1alpha1.InjectionSelector{{Name: "useast1-settings"}},
			},
		}
		if err := env.Client.Create(ctx, pv); err != nil {
			b.Fatal(err)
		}
		if err := bumpVariantStatus(ctx, pv, 0); err != nil {
			b.Fatal(err)
		}
		out[i] = pv
	}
	return out
}

// bumpVariantStatus writes the status a variant's controller writes after
// a bump (round i: its draft's name and the conditions' messages move).
func bumpVariantStatus(ctx context.Context, pv *configv1alpha1.PackageVariant, i int) error {
	_, err := reconciler.PatchStatus(ctx, reconciler.NewStatusWriter(env.Client, env.Client, nil), pv, func(pv *configv1alpha1.PackageVariant) (bool, error) {
		gen := pv.Generation
		pv.Status.ObservedGeneration = gen
		pv.Status.DownstreamTargets = []configv1alpha1.DownstreamTarget{{Name: fmt.Sprintf("%s.%s.packagevariant-%d", pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package, i)}}
		ready := metav1.Condition{Status: metav1.ConditionTrue, Reason: "DownstreamReady", Message: fmt.Sprintf("the downstream draft reflects the variant (round %d)", i)}
		reconciler.SetConditions(&pv.Status.Conditions, gen,
			metav1.Condition{Type: configv1alpha1.ValidCondition, Status: metav1.ConditionTrue, Reason: "Valid"},
			metav1.Condition{Type: configv1alpha1.ContextInjectedCondition, Status: metav1.ConditionTrue, Reason: "ContextInjected", Message: "1 key set in package-context.yaml"},
			metav1.Condition{Type: configv1alpha1.ConfigInjectedCondition, Status: metav1.ConditionTrue, Reason: "ConfigInjected", Message: "useast1-settings injected from ConfigMap useast1-settings"},
			metav1.Condition{Type: configv1alpha1.DownstreamEnsuredCondition, Status: metav1.ConditionTrue, Reason: "DownstreamReady", Message: ready.Message},
			metav1.Condition{Type: configv1alpha1.DependenciesReadyCondition, Status: metav1.ConditionTrue, Reason: "DependenciesSatisfied", Message: "the package has no dependencies"})
		reconciler.SetConditions(&pv.Status.Conditions, gen, reconciler.KstatusConditions(gen, reconciler.Outcome{}, ready)...)
		return true, nil
	})
	return err
}

// benchRevision is a variant's draft; env.Storage writes it to the
// storage.
func benchRevision(ns string, i int) *porchv1alpha1.PackageRevision {
	return &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: fmt.Sprintf("cluster-%04d.tenant-%d.packagevariant-1", i/10, i%10),
			Labels: map[string]string{
				porchv1alpha1.LifecycleLabel: string(porchv1alpha1.LifecycleDraft), porchv1alpha1.PackageLabel: fmt.Sprintf("tenant-%d", i%10),
				porchv1alpha1.RepositoryLabel: fmt.Sprintf("cluster-%04d", i/10), configv1alpha1.PackageVariantLabel: fmt.Sprintf("cluster-%04d.tenant-%d", i/10, i%10),
			},
		},
		Spec: porchv1alpha1.PackageRevisionSpec{
			PackageName: fmt.Sprintf("tenant-%d", i%10), Repository: fmt.Sprintf("cluster-%04d", i/10), WorkspaceName: "packagevariant-1",
			Lifecycle:      porchv1alpha1.LifecycleDraft,
			ReadinessGates: []kptfilev1.ReadinessGate{{ConditionType: configv1alpha1.PackageVariantReadinessGate}},
		},
	}
}

func benchRevisions(b *testing.B, ctx context.Context, n int) []*porchv1alpha1.PackageRevision {
	ns := env.Namespace(b, "bench-pr")
	out := make([]*porchv1alpha1.PackageRevision, n)
	for i := range out {
		pr := benchRevision(ns, i)
		if err := env.Storage.Create(ctx, pr); err != nil {
			b.Fatal(err)
		}
		if err := bumpRevisionStatus(ctx, pr, 0); err != nil {
			b.Fatal(err)
		}
		out[i] = pr
	}
	return out
}

// bumpRevisionStatus writes the status the sync writes for a draft at a
// new commit (round i).
func bumpRevisionStatus(ctx context.Context, pr *porchv1alpha1.PackageRevision, i int) error {
	commit := fmt.Sprintf("%040x", i+1)
	_, err := reconciler.PatchStatus(ctx, reconciler.NewStatusWriter(env.Storage, env.Storage, nil), pr, func(pr *porchv1alpha1.PackageRevision) (bool, error) {
		pr.Status.Commit = commit
		pr.Status.Lifecycle = porchv1alpha1.LifecycleDraft
		pr.Status.ObservedGeneration = pr.Generation
		pr.Status.Deployment = true
		pr.Status.UpstreamLock = &kptfilev1.UpstreamLock{Type: "git", Git: &kptfilev1.GitLock{Repo: "http://git.example/catalog.git", Directory: "app", Ref: "app/v1", Commit: fmt.Sprintf("%040x", 7)}}
		pr.Status.Conditions = []porchv1alpha1.Condition{
			{Type: configv1alpha1.PackageVariantReadinessGate, Status: "True", Reason: "Done", Message: "the variant's mutations are applied"},
			{Type: "Ready", Status: "True", Reason: "Synced", Message: "the revision is in git at commit " + commit[:12], ObservedGeneration: pr.Generation},
			{Type: "Reconciling", Status: "False", Reason: "Done", ObservedGeneration: pr.Generation},
			{Type: "Stalled", Status: "False", Reason: "Done", ObservedGeneration: pr.Generation},
		}
		return true, nil
	})
	return err
}

// benchEvent is the event the variant controller records when it writes
// a draft (DraftWritten, events.k8s.io/v1 as controller-runtime's
// recorder sends it), round i.
func benchEvent(ns string, i int) *eventsv1.Event {
	variant := fmt.Sprintf("cluster-%04d.tenant-%d", i/10, i%10)
	now := metav1.NowMicro()
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s.%x", variant, now.UnixNano())},
		EventTime:           now,
		ReportingController: "scion-packagevariant", ReportingInstance: "scion-packagevariant-bench",
		Type: corev1.EventTypeNormal, Reason: "DraftWritten", Action: "Write",
		Regarding: corev1.ObjectReference{Kind: "PackageVariant", APIVersion: configv1alpha1.GroupVersion.String(), Namespace: ns, Name: variant},
		Note:      fmt.Sprintf("downstream draft tenant-%d/packagevariant-%d at %012x", i%10, i, i),
	}
}
