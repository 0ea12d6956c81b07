package manager

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	sigsjson "sigs.k8s.io/json"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// cachedVariant is the JSON of a PackageVariant of make bench-scale's set
// as a watch delivers it: spec from the set's template, the status of a
// Ready variant.
func cachedVariant(i int) string {
	cond := func(typ, status, reason, msg string) string {
		return fmt.Sprintf(`{"type":%q,"status":%q,"reason":%q,"message":%q,"observedGeneration":2,"lastTransitionTime":"2026-11-27T12:2%d:00Z"}`, typ, status, reason, msg, i%10)
	}
	conds := []string{
		cond("Valid", "True", "Valid", ""),
		cond("ContextInjected", "True", "ContextInjected", "package context set: tenant"),
		cond("ConfigInjected", "True", "ConfigInjected", "injected settings from ConfigMap useast1-settings"),
		cond("DownstreamEnsured", "True", "DownstreamReady", "the downstream draft reflects the variant"),
		cond("Reconciling", "False", "Done", ""),
		cond("Stalled", "False", "Done", ""),
		cond("Ready", "True", "DownstreamReady", "the downstream draft reflects the variant"),
	}
	return fmt.Sprintf(`{"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"PackageVariant","metadata":{"name":"fleet-tenant-%[1]d","namespace":"bench","uid":"0b7c%08[1]d-1c1f-4b1e-9e0a-6f1c2b3a4d5e","resourceVersion":"%[2]d","generation":2,"creationTimestamp":"2026-11-27T12:20:00Z",`+
		`"labels":{"config.porch.kpt.dev/packagevariantset":"5d0c2a1e-7b7e-4f5e-8a8a-2f1e3d4c5b6a"},"finalizers":["config.porch.kpt.dev/packagevariants"],`+
		`"ownerReferences":[{"apiVersion":"config.porch.kpt.dev/v1alpha2","kind":"PackageVariantSet","name":"fleet","uid":"5d0c2a1e-7b7e-4f5e-8a8a-2f1e3d4c5b6a","controller":true,"blockOwnerDeletion":true}]},`+
		`"spec":{"upstream":{"repo":"catalog","package":"app","revision":"2"},"downstream":{"repo":"cluster-%04[3]d","package":"tenant-%[1]d"},"adoptionPolicy":"adoptNone","deletionPolicy":"delete",`+
		`"packageContext":{"data":{"tenant":"%[1]d"}},"pipeline":{"mutators":[{"image":"set-namespace","configMap":{"namespace":"tenant-%[1]d"}}]},"injectors":[{"name":"useast1-settings"}]},`+
		`"status":{"observedGeneration":2,"conditions":[%[4]s],"downstreamTargets":[{"name":"cluster-%04[3]d.tenant-%[1]d.packagevariant-2"}]}}`,
		i, 100000+i, i/10, strings.Join(conds, ","))
}

// cachedRevision is the JSON of the draft such a variant writes, as Scion
// stores it.
func cachedRevision(i int) string {
	return fmt.Sprintf(`{"apiVersion":"internal.scion.dev/v1alpha1","kind":"PackageRevision","metadata":{"name":"cluster-%04[3]d.tenant-%[1]d.packagevariant-2","namespace":"bench","uid":"1a2b%08[1]d-1c1f-4b1e-9e0a-6f1c2b3a4d5e","resourceVersion":"%[2]d","generation":1,"creationTimestamp":"2026-11-27T12:20:00Z",`+
		`"labels":{"config.porch.kpt.dev/packagevariant":"fleet-tenant-%[1]d","porch.kpt.dev/lifecycle":"Draft","porch.kpt.dev/package":"tenant-%[1]d","porch.kpt.dev/repository":"cluster-%04[3]d"},"finalizers":["porch.kpt.dev/packagerevision"],`+
		`"ownerReferences":[{"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"Repository","name":"cluster-%04[3]d","uid":"9a8b%08[3]d-1c1f-4b1e-9e0a-6f1c2b3a4d5e"},{"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"PackageVariant","name":"fleet-tenant-%[1]d","uid":"0b7c%08[1]d-1c1f-4b1e-9e0a-6f1c2b3a4d5e","controller":true,"blockOwnerDeletion":true}]},`+
		`"spec":{"lifecycle":"Draft","packageName":"tenant-%[1]d","repository":"cluster-%04[3]d","workspaceName":"packagevariant-2","readinessGates":[{"conditionType":"config.porch.kpt.dev/packagevariant"},{"conditionType":"config.porch.kpt.dev/injected.settings"}]},`+
		`"status":{"commit":"%040[2]x","lifecycle":"Draft","deployment":true,"observedGeneration":1,"conditions":[`+
		`{"type":"config.porch.kpt.dev/packagevariant","status":"True","reason":"Done","message":"the variant's mutations are applied"},`+
		`{"type":"config.porch.kpt.dev/injected.settings","status":"True","reason":"Injected","message":"injected from ConfigMap useast1-settings"},`+
		`{"type":"Ready","status":"True","reason":"Synced","message":"the revision is in git at commit %012[2]x","observedGeneration":1},`+
		`{"type":"Reconciling","status":"False","reason":"Done","observedGeneration":1},{"type":"Stalled","status":"False","reason":"Done","observedGeneration":1}],`+
		`"upstreamLock":{"type":"git","git":{"repo":"http://127.0.0.1:34567/catalog.git","directory":"app","ref":"app/v2","commit":"e6b03c465ed3df7514037663e65af1d3bf65f7ab"}}}}`,
		i, 200000+i, i/10)
}

// BenchmarkCachedObjects decodes PackageVariants and PackageRevisions as
// the manager's informers do, passes them through the cache's transform
// and reports the heap each holds in the cache.
func BenchmarkCachedObjects(b *testing.B) {
	const n = 5000
	for _, kind := range []struct {
		name string
		json func(int) string
		new  func() any
	}{
		{"PackageVariant", cachedVariant, func() any { return &configv1alpha1.PackageVariant{} }},
		{"PackageRevision", cachedRevision, func() any { return &porchv1alpha1.PackageRevision{} }},
	} {
		b.Run(kind.name, func(b *testing.B) {
			docs := make([][]byte, n)
			for i := range docs {
				docs[i] = []byte(kind.json(i))
			}
			for b.Loop() {
				held := make([]any, n)
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for i, doc := range docs {
					o := kind.new()
					if err := sigsjson.UnmarshalCaseSensitivePreserveInts(doc, o); err != nil {
						b.Fatal(err)
					}
					var err error
					if held[i], err = stripUnread(o); err != nil {
						b.Fatal(err)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-B/object")
				runtime.KeepAlive(held)
			}
		})
	}
}
