// Package crd embeds Scion's CustomResourceDefinitions (generated into
// bases/ by `make generate`), so that binaries can install them without a
// checkout.
package crd

import (
	"embed"
	"fmt"
	"io/fs"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

//go:embed bases/*.yaml
var bases embed.FS

// Definitions returns the CustomResourceDefinitions an installation has:
// Scion's storage of package revisions, not the porch.kpt.dev
// PackageRevision (Scion's API server serves porch.kpt.dev).
func Definitions() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(bases, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, n := range names {
		if n == "bases/"+porchFile {
			continue // served by Scion's API server, over the storage
		}
		data, err := bases.ReadFile(n)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// The files of PackageRevision: controller-gen writes the porch.kpt.dev
// one from api/porch/v1alpha1 (the schema Porch's clients see), and
// `make generate` derives Scion's storage from it (DeriveStorage).
const (
	porchFile   = "porch.kpt.dev_packagerevisions.yaml"
	storageFile = "internal.scion.dev_packagerevisions.yaml"
)

// StorageDefinition returns the CustomResourceDefinition of Scion's own
// storage of package revisions (packagerevisions.internal.scion.dev),
// which Scion's API server serves as porch.kpt.dev.
func StorageDefinition() (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := bases.ReadFile("bases/" + storageFile)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		return nil, fmt.Errorf("%s: %w", storageFile, err)
	}
	return crd, nil
}

// DeriveStorage returns the storage's CustomResourceDefinition (YAML)
// from the porch.kpt.dev PackageRevision's: the same schema, printer
// columns and selectable fields in porchv1alpha1.StorageGroupVersion's
// group (version v1alpha1 only), without short names or categories (kubectl's pr and scion name
// the porch.kpt.dev resource people use).
func DeriveStorage(porch []byte) ([]byte, error) {
	u := map[string]any{}
	if err := yaml.Unmarshal(porch, &u); err != nil {
		return nil, err
	}
	spec, _ := u["spec"].(map[string]any)
	names, _ := spec["names"].(map[string]any)
	meta, _ := u["metadata"].(map[string]any)
	if spec == nil || names == nil || meta == nil {
		return nil, fmt.Errorf("%s is not a CustomResourceDefinition", porchFile)
	}
	spec["group"] = porchv1alpha1.StorageGroupVersion.Group
	// The storage holds v1alpha1; Scion's API server converts to the
	// other versions it serves.
	versions, _ := spec["versions"].([]any)
	kept := []any{}
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok && m["name"] == porchv1alpha1.StorageGroupVersion.Version {
			kept = append(kept, v)
		}
	}
	if len(kept) != 1 {
		return nil, fmt.Errorf("%s has no version %s", porchFile, porchv1alpha1.StorageGroupVersion.Version)
	}
	spec["versions"] = kept
	delete(names, "shortNames")
	delete(names, "categories")
	meta["name"] = fmt.Sprint(names["plural"]) + "." + porchv1alpha1.StorageGroupVersion.Group
	out, err := yaml.Marshal(u)
	if err != nil {
		return nil, err
	}
	return append([]byte("# Scion's storage of package revisions: generated from "+porchFile+" by\n# make generate (go run ./hack/storagecrd). Do not edit.\n---\n"), out...), nil
}

// Served returns the kinds as people and their tools use them: the
// CustomResourceDefinitions, with PackageRevision in porch.kpt.dev (as
// Scion's API server serves it) instead of Scion's storage.
func Served() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	defs, err := Definitions()
	if err != nil {
		return nil, err
	}
	porch, err := PorchDefinition()
	if err != nil {
		return nil, err
	}
	for i, d := range defs {
		if d.Spec.Group == porchv1alpha1.StorageGroupVersion.Group {
			defs[i] = porch
		}
	}
	return defs, nil
}

// PorchDefinition returns the porch.kpt.dev PackageRevision as a
// CustomResourceDefinition: never installed (Scion's API server serves
// it), it holds the schema, printer columns and selectable fields of each
// version the server serves.
func PorchDefinition() (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := bases.ReadFile("bases/" + porchFile)
	if err != nil {
		return nil, err
	}
	porch := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, porch); err != nil {
		return nil, fmt.Errorf("%s: %w", porchFile, err)
	}
	return porch, nil
}
