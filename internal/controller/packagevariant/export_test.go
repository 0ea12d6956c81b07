package packagevariant

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/kindwatch"
	"github.com/scion-dev/scion/internal/variant"
)

// ClusterObjects exposes the controller's injection source to the tests.
func ClusterObjects(reader client.Reader, mapper meta.RESTMapper, namespace string, kinds kindwatch.Kinds) variant.ObjectSource {
	return &clusterObjects{reader: reader, definitions: reader, watches: &kindwatch.Watches{Caches: &kindwatch.Caches{Kinds: kinds}}, mapper: mapper, namespace: namespace}
}

// Watch exposes the controller's watches (with their priorities) to the
// tests.
func (r *Reconciler) Watch(b *builder.Builder) *builder.Builder { return r.watch(b) }
