package packagevariant

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/kindwatch"
	"github.com/scion-dev/scion/internal/variant"
)

// clusterObjects is the variant.ObjectSource of a namespace of the
// cluster: the kinds the administrator allows, served kinds from the REST
// mapper, spec fields from CRD schemas (built-in kinds are taken to have
// one), objects from the namespace's cache once their kind is watched
// there (the watch brings the variant back when one changes), read
// directly before.
type clusterObjects struct {
	reader client.Reader
	// definitions reads CRDs (through watches in the controller).
	definitions client.Reader
	watches     *kindwatch.Watches
	mapper      meta.RESTMapper
	namespace   string
}

func (c *clusterObjects) Namespace() string { return c.namespace }

func (c *clusterObjects) Schema(ctx context.Context, gvk schema.GroupVersionKind) (bool, bool, error) {
	if err := c.watches.Caches.Kinds.Check(gvk.GroupKind()); err != nil {
		return false, false, err
	}
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return false, false, fmt.Errorf("%s: %w", gvk.Kind, variant.ErrClusterScoped)
	}
	if gvk.Group == "" || !isCRDGroup(gvk.Group) {
		return true, true, nil
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err = c.definitions.Get(ctx, types.NamespacedName{Name: mapping.Resource.Resource + "." + gvk.Group}, crd)
	if apierrors.IsNotFound(err) {
		return true, true, nil // served by an aggregated API: assume spec
	}
	if err != nil {
		return false, false, err
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != gvk.Version || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		s := v.Schema.OpenAPIV3Schema
		_, has := s.Properties["spec"]
		return true, has || (s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields), nil
	}
	return true, false, nil
}

// isCRDGroup reports whether a group may be served by CRDs (built-in
// groups have no dots, except the k8s.io ones).
func isCRDGroup(g string) bool {
	for i := range g {
		if g[i] == '.' {
			return !(len(g) > 7 && g[len(g)-7:] == ".k8s.io")
		}
	}
	return false
}

func (c *clusterObjects) Get(ctx context.Context, gvk schema.GroupVersionKind, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	reader := c.reader
	if c.watches.Watched(gvk, c.namespace) {
		cached, err := c.watches.Caches.For(ctx, c.namespace)
		if err != nil {
			return nil, err
		}
		reader = cached
	}
	err := reader.Get(ctx, types.NamespacedName{Namespace: c.namespace, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return u, nil
}
