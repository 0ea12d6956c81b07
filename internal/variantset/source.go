package variantset

import (
	"context"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// StaticSource is a Source over a fixed set of objects, standing in for
// the cluster (`scion pvs expand --repositories/--objects`). Objects
// without a namespace count as being in every namespace, so files written
// for a pull request need not repeat it.
type StaticSource struct {
	Objects []*unstructured.Unstructured

	once  sync.Once
	repos map[string][]*unstructured.Unstructured
}

// Repository implements Source.
func (s *StaticSource) Repository(_ context.Context, namespace, name string) (*metav1.PartialObjectMetadata, error) {
	s.once.Do(func() {
		s.repos = map[string][]*unstructured.Unstructured{}
		for _, o := range s.Objects {
			if o.GroupVersionKind().GroupKind() == RepositoryGVK.GroupKind() {
				s.repos[o.GetName()] = append(s.repos[o.GetName()], o)
			}
		}
	})
	for _, o := range s.repos[name] {
		if inNamespace(o, namespace) {
			return partial(o), nil
		}
	}
	return nil, nil
}

// List implements Source. A kind no object has is not an error offline:
// there is no cluster to say whether it exists.
func (s *StaticSource) List(_ context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]metav1.PartialObjectMetadata, error) {
	var out []metav1.PartialObjectMetadata
	for _, o := range s.Objects {
		if o.GroupVersionKind() != gvk || !inNamespace(o, namespace) || !selector.Matches(labels.Set(o.GetLabels())) {
			continue
		}
		out = append(out, *partial(o))
	}
	return SortByName(out), nil
}

// SortByName orders objects by name, as Source.List returns them.
func SortByName(objs []metav1.PartialObjectMetadata) []metav1.PartialObjectMetadata {
	slices.SortFunc(objs, func(a, b metav1.PartialObjectMetadata) int { return strings.Compare(a.Name, b.Name) })
	return objs
}

func inNamespace(o *unstructured.Unstructured, ns string) bool {
	return o.GetNamespace() == "" || o.GetNamespace() == ns
}

// partial is the metadata of o, namespaced like o (or not at all).
func partial(o *unstructured.Unstructured) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: o.GetAPIVersion(), Kind: o.GetKind()},
		ObjectMeta: metav1.ObjectMeta{
			Name: o.GetName(), Namespace: o.GetNamespace(), UID: o.GetUID(),
			Labels: o.GetLabels(), Annotations: o.GetAnnotations(),
		},
	}
}
