package reconciler_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/scheme"
)

// An index registered with NamespacedIndexer answers the manager's
// client as controller-runtime's own does for a list in a namespace
// (the names and the values' form match what its cache reader asks
// for), follows updates and deletions, and keeps other namespaces'
// objects with the same value out. A list across all namespaces finds
// nothing: what the index leaves out to halve its memory.
func TestNamespacedIndexer(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := env.Namespace(t, "index-a"), env.Namespace(t, "index-b")
	s := scheme.New()
	cache, err := crcache.New(env.Config, crcache.Options{Scheme: s})
	g.Expect(err).NotTo(HaveOccurred())
	const field = "data.team"
	idx := reconciler.NamespacedIndexer{Informers: cache}
	g.Expect(idx.IndexField(ctx, &corev1.ConfigMap{}, field, func(o client.Object) []string {
		if team := o.(*corev1.ConfigMap).Data["team"]; team != "" {
			return []string{team}
		}
		return nil
	})).To(Succeed())
	// A cluster-scoped kind is indexed for lists across namespaces (an
	// index function's error would panic the informer).
	const teamLabel = "metadata.labels.team"
	g.Expect(idx.IndexField(ctx, &corev1.Namespace{}, teamLabel, func(o client.Object) []string {
		if team := o.GetLabels()["team"]; team != "" {
			return []string{team}
		}
		return nil
	})).To(Succeed())
	go func() { _ = cache.Start(ctx) }()
	g.Expect(cache.WaitForCacheSync(ctx)).To(BeTrue())
	c, err := client.New(env.Config, client.Options{Scheme: s, Cache: &client.CacheOptions{Reader: cache}})
	g.Expect(err).NotTo(HaveOccurred())

	create := func(ns, name, team string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"team": team}}
		g.Expect(c.Create(ctx, cm)).To(Succeed())
		return cm
	}
	web := create(a, "web", "blue")
	create(a, "db", "green")
	create(b, "web", "blue")
	names := func(opts ...client.ListOption) func(Gomega) []string {
		return func(g Gomega) []string {
			list := &corev1.ConfigMapList{}
			g.Expect(c.List(ctx, list, opts...)).To(Succeed())
			var out []string
			for _, cm := range list.Items {
				out = append(out, cm.Namespace+"/"+cm.Name)
			}
			return out
		}
	}
	g.Eventually(names(client.InNamespace(a), client.MatchingFields{field: "blue"})).Should(ConsistOf(a + "/web"))
	g.Eventually(names(client.InNamespace(b), client.MatchingFields{field: "blue"})).Should(ConsistOf(b + "/web"))
	g.Expect(names(client.MatchingFields{field: "blue"})(g)).To(BeEmpty(), "a namespaced index does not answer lists across namespaces")

	web.Data["team"] = "green"
	g.Expect(c.Update(ctx, web)).To(Succeed())
	g.Eventually(names(client.InNamespace(a), client.MatchingFields{field: "green"})).Should(ConsistOf(a+"/web", a+"/db"))
	g.Expect(names(client.InNamespace(a), client.MatchingFields{field: "blue"})(g)).To(BeEmpty())
	g.Expect(c.Delete(ctx, web)).To(Succeed())
	g.Eventually(names(client.InNamespace(a), client.MatchingFields{field: "green"})).Should(ConsistOf(a + "/db"))

	nsA := &corev1.Namespace{}
	g.Expect(c.Get(ctx, client.ObjectKey{Name: a}, nsA)).To(Succeed())
	nsA.Labels["team"] = "red"
	g.Expect(c.Update(ctx, nsA)).To(Succeed())
	g.Eventually(func(g Gomega) []string {
		list := &corev1.NamespaceList{}
		g.Expect(c.List(ctx, list, client.MatchingFields{teamLabel: "red"})).To(Succeed())
		var out []string
		for _, ns := range list.Items {
			out = append(out, ns.Name)
		}
		return out
	}).Should(ConsistOf(a))
}

// BenchmarkFieldIndex is the heap an index with a value of its own per
// object takes for 10,000 objects in one namespace: as
// controller-runtime's field indexer stores it (each value for the
// namespace and for all namespaces) and as NamespacedIndexer does.
func BenchmarkFieldIndex(b *testing.B) {
	const n = 10000
	objs := make([]*corev1.ConfigMap, n)
	for i := range objs {
		objs[i] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("variant-%05d", i), Namespace: "fleet"},
			Data: map[string]string{"downstream": fmt.Sprintf("cluster-%05d/tenant-ns", i)}}
	}
	value := func(o any) string { return o.(*corev1.ConfigMap).Data["downstream"] }
	for _, idx := range []struct {
		name string
		fn   toolscache.IndexFunc
	}{
		{"both", func(o any) ([]string, error) {
			return []string{"fleet/" + value(o), "__all_namespaces/" + value(o)}, nil
		}},
		{"namespaced", func(o any) ([]string, error) { return []string{"fleet/" + value(o)}, nil }},
	} {
		b.Run(idx.name, func(b *testing.B) {
			for b.Loop() {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{"field:downstream": idx.fn})
				for _, o := range objs {
					if err := store.Add(o); err != nil {
						b.Fatal(err)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-B/object")
				runtime.KeepAlive(store)
			}
		})
	}
}
