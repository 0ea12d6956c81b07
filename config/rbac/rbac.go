// Package rbac embeds the RBAC manifests of config/rbac that binaries
// install without a checkout: the people's roles (user_roles.yaml) and
// the role of Scion's API server's writes to the storage (apiserver.yaml),
// for scion dev and the tests' control plane.
package rbac

import (
	"context"
	"embed"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/yamlutil"
)

// The files Install knows.
const (
	UserRoles = "user_roles.yaml"
	APIServer = "apiserver.yaml"
)

//go:embed user_roles.yaml apiserver.yaml
var files embed.FS

// Objects returns the objects of the named files.
func Objects(names ...string) ([]*unstructured.Unstructured, error) {
	return yamlutil.Manifests(files, names...)
}

// Install creates or updates the objects of the named files (server-side
// apply, field manager "scion").
func Install(ctx context.Context, c client.Client, names ...string) error {
	objs, err := Objects(names...)
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
