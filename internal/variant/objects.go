package variant

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// StaticObjects is an ObjectSource over a fixed set of objects, standing in
// for the cluster (scion pv render --objects). A kind is served when an
// object of it is given (ConfigMaps always are), and has a spec when one of
// its objects has one.
type StaticObjects struct {
	Objects []*unstructured.Unstructured
}

// ReadObjects parses multi-document YAML into objects.
func ReadObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("object %d has no apiVersion, kind or metadata.name", len(out))
		}
		out = append(out, u)
	}
}

// Schema implements ObjectSource.
func (s *StaticObjects) Schema(_ context.Context, gvk schema.GroupVersionKind) (bool, bool, error) {
	if gvk.Group == "" && gvk.Version == "v1" && gvk.Kind == "ConfigMap" {
		return true, true, nil
	}
	served, hasSpec := false, false
	for _, o := range s.Objects {
		if o.GroupVersionKind() == gvk {
			served = true
			_, has := o.Object["spec"]
			hasSpec = hasSpec || has
		}
	}
	return served, hasSpec, nil
}

// Get implements ObjectSource.
func (s *StaticObjects) Get(_ context.Context, gvk schema.GroupVersionKind, name string) (*unstructured.Unstructured, error) {
	for _, o := range s.Objects {
		if o.GroupVersionKind() == gvk && o.GetName() == name {
			return o, nil
		}
	}
	return nil, nil
}
