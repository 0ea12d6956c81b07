// Package policy embeds the admission policies Scion installs in the API
// server: the ValidatingAdmissionPolicies that enforce a PackageRevision's
// lifecycle and warn when a Repository in use is deleted, and the
// MutatingAdmissionPolicies that set the controllers' finalizers on
// creation and keep managed fields off the package revisions' storage;
// binaries (scion dev, the tests' control plane)
// install them without a checkout.
package policy

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/yamlutil"
)

//go:embed lifecycle.yaml mutating.yaml repository.yaml
var files embed.FS

// Objects returns the policies and their bindings.
func Objects() ([]*unstructured.Unstructured, error) {
	return yamlutil.Manifests(files, "lifecycle.yaml", "mutating.yaml", "repository.yaml")
}

// Install creates or updates the policies and their bindings (server-side
// apply, field manager "scion"). The MutatingAdmissionPolicies are left out
// on an API server that does not serve them (before Kubernetes 1.36).
func Install(ctx context.Context, c client.Client) error {
	objs, err := Objects()
	if err != nil {
		return err
	}
	mutating := false
	for _, u := range objs {
		err := c.Patch(ctx, u, client.Apply, client.FieldOwner("scion"), client.ForceOwnership)
		if meta.IsNoMatchError(err) && u.GetAPIVersion() == "admissionregistration.k8s.io/v1" && strings.HasPrefix(u.GetKind(), "Mutating") {
			// An API server before 1.36: the controllers add their
			// finalizers themselves.
			continue
		}
		if err != nil {
			return fmt.Errorf("installing %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		mutating = mutating || u.GetKind() == "MutatingAdmissionPolicy"
	}
	if !mutating {
		return nil
	}
	return waitApplied(ctx, c)
}

// waitApplied waits until the API server applies the mutating policies:
// it sets the finalizer on a PackageVariant, a PackageVariantSet and a
// Repository, and records no managed fields on a package revision's
// storage object (dry-run creates). Until it has loaded the policies and
// the CRDs' schemas, creations of the kinds the finalizers' policy
// matches fail with "Resource kind ... not found" (503) for a few seconds,
// and revisions are stored with managed fields.
func waitApplied(ctx context.Context, c client.Client) error {
	// One object of each kind the policies match: the API server loads
	// each CustomResourceDefinition's schema for it on its own.
	probes := func() []*unstructured.Unstructured {
		meta := map[string]any{"name": "scion-policy-probe", "namespace": "default"}
		return []*unstructured.Unstructured{
			{Object: map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant", "metadata": meta,
				"spec": map[string]any{
					"upstream":   map[string]any{"repo": "probe", "package": "probe", "revision": "1"},
					"downstream": map[string]any{"repo": "probe-downstream", "package": "probe"},
				}}},
			{Object: map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha2", "kind": "PackageVariantSet", "metadata": meta,
				"spec": map[string]any{
					"upstream": map[string]any{"repo": "probe", "package": "probe", "revision": "1"},
					"targets":  []any{map[string]any{"repositories": []any{map[string]any{"name": "probe"}}}},
				}}},
			{Object: map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository", "metadata": meta,
				"spec": map[string]any{"git": map[string]any{"repo": "https://example.com/probe.git"}}}},
			{Object: map[string]any{"apiVersion": "internal.scion.dev/v1alpha1", "kind": "PackageRevision",
				"metadata": map[string]any{"name": "probe.probe.probe", "namespace": "default"},
				"spec":     map[string]any{"repository": "probe", "packageName": "probe", "workspaceName": "probe"}}},
		}
	}
	applied := func(u *unstructured.Unstructured) error {
		if u.GetKind() == "PackageRevision" {
			if len(u.GetManagedFields()) > 0 {
				return errors.New("a PackageRevision is still stored with managed fields")
			}
			return nil
		}
		if len(u.GetFinalizers()) == 0 {
			return fmt.Errorf("%s has no finalizer yet", u.GetKind())
		}
		return nil
	}
	var last error
	for range 300 {
		ok := true
		for _, u := range probes() {
			if last = c.Create(ctx, u, client.DryRunAll); last == nil {
				last = applied(u)
			}
			if last != nil {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("the API server does not apply the MutatingAdmissionPolicies scion-finalizers and scion-revision-storage after a minute (last dry run: %v)", last)
}
