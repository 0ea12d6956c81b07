package packagevariant_test

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/scion-dev/scion/internal/controller/packagevariant"
	"github.com/scion-dev/scion/internal/kindwatch"
	"github.com/scion-dev/scion/internal/variant"
)

// Injection reads only namespaced kinds, through the real REST mapper: a
// cluster-scoped kind (a PersistentVolume) is refused, not looked up, even
// when an administrator lists it.
func TestClusterObjects_clusterScoped(t *testing.T) {
	g := NewWithT(t)
	src := packagevariant.ClusterObjects(k8sClient, restMapper(g), "tenant-a", kindwatch.Kinds{{Kind: "ConfigMap"}, {Kind: "PersistentVolume"}})
	_, _, err := src.Schema(context.Background(), schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolume"})
	g.Expect(errors.Is(err, variant.ErrClusterScoped)).To(BeTrue(), "%v", err)
	served, hasSpec, err := src.Schema(context.Background(), schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(served && hasSpec).To(BeTrue())
}

// Injection reads only the kinds an administrator allows; Secrets only
// when named.
func TestClusterObjects_readableKinds(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	src := packagevariant.ClusterObjects(k8sClient, restMapper(g), "tenant-a", kindwatch.DefaultKinds)
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "Secret"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Version: "v1", Kind: "Endpoints"},
	} {
		_, _, err := src.Schema(ctx, gvk)
		g.Expect(errors.Is(err, kindwatch.ErrNotAllowed)).To(BeTrue(), "%s: %v", gvk, err)
	}
	_, _, err := src.Schema(ctx, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	g.Expect(err).To(MatchError("this controller does not read Deployment.apps objects (it reads ConfigMap); an administrator can add the kind to --readable-kinds and to the controller's ClusterRole"))

	apps := packagevariant.ClusterObjects(k8sClient, restMapper(g), "tenant-a", kindwatch.Kinds{{Group: "apps", Kind: "*"}})
	served, _, err := apps.Schema(ctx, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(served).To(BeTrue())
}

func restMapper(g Gomega) meta.RESTMapper {
	hc, err := rest.HTTPClientFor(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(env.Config, hc)
	g.Expect(err).NotTo(HaveOccurred())
	return mapper
}

// A kind served by a CRD is looked up in its CRD's schema (read through
// the reader the controller gives, a watch of that CRD): whether it has a
// spec to inject into.
func TestClusterObjects_crdSchema(t *testing.T) {
	g := NewWithT(t)
	src := packagevariant.ClusterObjects(k8sClient, restMapper(g), "tenant-a", kindwatch.Kinds{{Group: "config.porch.kpt.dev", Kind: "*"}})
	served, hasSpec, err := src.Schema(context.Background(), schema.GroupVersionKind{Group: "config.porch.kpt.dev", Version: "v1alpha1", Kind: "PackageVariant"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(served).To(BeTrue())
	g.Expect(hasSpec).To(BeTrue())
	served, _, err = src.Schema(context.Background(), schema.GroupVersionKind{Group: "config.porch.kpt.dev", Version: "v9", Kind: "PackageVariant"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(served).To(BeFalse(), "a version the CRD does not serve")
}
