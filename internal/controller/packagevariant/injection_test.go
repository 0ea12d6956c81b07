package packagevariant_test

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/scion-dev/scion/internal/controller/packagevariant"
	"github.com/scion-dev/scion/internal/variant"
)

// Injection reads only namespaced kinds, through the real REST mapper: a
// cluster-scoped kind (a PersistentVolume) is refused, not looked up.
func TestClusterObjects_clusterScoped(t *testing.T) {
	g := NewWithT(t)
	hc, err := rest.HTTPClientFor(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(env.Config, hc)
	g.Expect(err).NotTo(HaveOccurred())
	src := packagevariant.ClusterObjects(k8sClient, mapper, "tenant-a")
	_, _, err = src.Schema(context.Background(), schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolume"})
	g.Expect(errors.Is(err, variant.ErrClusterScoped)).To(BeTrue(), "%v", err)
	served, hasSpec, err := src.Schema(context.Background(), schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(served && hasSpec).To(BeTrue())
}
