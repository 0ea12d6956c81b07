package variant

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/scion-dev/scion/internal/kindwatch"
)

// StaticObjects is an ObjectSource over a fixed set of objects, standing in
// for the cluster (scion pv render --objects). A kind is served when an
// object of it is given (ConfigMaps always are), and has a spec when one of
// its objects has one.
type StaticObjects struct {
	Objects []*unstructured.Unstructured
	// Ns is the namespace the objects stand for ("default" when empty).
	Ns string
	// Readable limits the kinds injected, as the controller's
	// --readable-kinds does; when nil, every kind but Secrets.
	Readable kindwatch.Kinds
}

// Namespace implements ObjectSource.
func (s *StaticObjects) Namespace() string {
	if s.Ns == "" {
		return "default"
	}
	return s.Ns
}

// ReadObjects parses multi-document YAML (or JSON) into objects, reading
// YAML as version 1.2 does (and kubectl keeps it): y, yes, on and off are
// strings, only true and false are booleans. A List (kind List or any
// *List with items, as `kubectl get -o yaml` prints) stands for its items.
// Documents are numbered from 0 in errors.
func ReadObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*unstructured.Unstructured
	for doc := 0; ; doc++ {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		content := &n
		if n.Kind == yaml.DocumentNode {
			if len(n.Content) == 0 {
				continue
			}
			content = n.Content[0]
		}
		if content.Tag == "!!null" {
			continue
		}
		if content.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("document %d is not an object", doc)
		}
		raw, err := yaml.NewRNode(content).MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		u := &unstructured.Unstructured{}
		if err := utiljson.Unmarshal(raw, &u.Object); err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if items, ok := u.Object["items"].([]any); ok && strings.HasSuffix(u.GetKind(), "List") {
			for i, item := range items {
				m, ok := item.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("document %d (%s): items[%d] is not an object", doc, u.GetKind(), i)
				}
				o := &unstructured.Unstructured{Object: m}
				if err := identified(o); err != nil {
					return nil, fmt.Errorf("document %d (%s): items[%d] %w", doc, u.GetKind(), i, err)
				}
				out = append(out, o)
			}
			continue
		}
		if err := identified(u); err != nil {
			return nil, fmt.Errorf("document %d %w", doc, err)
		}
		out = append(out, u)
	}
}

// identified checks that an object says what it is.
func identified(u *unstructured.Unstructured) error {
	var missing []string
	for _, f := range []struct{ name, value string }{{"apiVersion", u.GetAPIVersion()}, {"kind", u.GetKind()}, {"metadata.name", u.GetName()}} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("has no %s", strings.Join(missing, ", "))
	}
	return nil
}

// Schema implements ObjectSource.
func (s *StaticObjects) Schema(_ context.Context, gvk schema.GroupVersionKind) (bool, bool, error) {
	if s.Readable != nil || (gvk.Group == "" && gvk.Kind == "Secret") {
		if err := s.Readable.Check(gvk.GroupKind()); err != nil {
			return false, false, err
		}
	}
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
