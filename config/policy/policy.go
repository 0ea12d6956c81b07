// Package policy embeds the ValidatingAdmissionPolicies that enforce a
// PackageRevision's lifecycle in the API server, so that binaries (scion
// dev, the tests' control plane) install them without a checkout.
package policy

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

//go:embed lifecycle.yaml
var lifecycle []byte

// Objects returns the policies and their bindings.
func Objects() ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(lifecycle), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("lifecycle.yaml: %w", err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// Install creates or updates the policies and their bindings (server-side
// apply, field manager "scion").
func Install(ctx context.Context, c client.Client) error {
	objs, err := Objects()
	if err != nil {
		return err
	}
	for _, u := range objs {
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner("scion"), client.ForceOwnership); err != nil {
			return fmt.Errorf("installing %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}
