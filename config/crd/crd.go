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

// Definitions returns the CustomResourceDefinitions.
func Definitions() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(bases, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, n := range names {
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

// StorageDefinition returns the CustomResourceDefinition of Scion's own
// storage of package revisions (packagerevisions.internal.scion.dev): the
// porch.kpt.dev PackageRevision's, in porchv1alpha1.StorageGroupVersion's
// group. Scion's API server serves its objects as porch.kpt.dev.
func StorageDefinition() (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := bases.ReadFile("bases/porch.kpt.dev_packagerevisions.yaml")
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		return nil, err
	}
	crd.Spec.Group = porchv1alpha1.StorageGroupVersion.Group
	crd.Name = crd.Spec.Names.Plural + "." + crd.Spec.Group
	crd.Spec.Names.ShortNames = nil
	crd.Spec.Names.Categories = nil
	return crd, nil
}
