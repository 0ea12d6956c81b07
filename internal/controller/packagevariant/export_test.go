package packagevariant

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/variant"
)

// ClusterObjects exposes the controller's injection source to the tests.
func ClusterObjects(reader client.Reader, mapper meta.RESTMapper, namespace string) variant.ObjectSource {
	return &clusterObjects{reader: reader, cached: reader, watched: func(schema.GroupVersionKind) bool { return false }, mapper: mapper, namespace: namespace}
}
