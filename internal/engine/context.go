package engine

import (
	"fmt"
	"path"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
)

// PackageContextFile is the file a generated package context is written to.
const PackageContextFile = "package-context.yaml"

// Package context data keys kpt reserves.
const (
	ContextKeyName        = "name"
	ContextKeyPackagePath = "package-path"
)

// IsPackageContext reports whether a resource is a package context
// ConfigMap.
func IsPackageContext(n *yaml.RNode) bool {
	return n.GetApiVersion() == "v1" && n.GetKind() == "ConfigMap" && n.GetName() == configv1alpha1.PackageContextConfigMapName
}

// EnsurePackageContext makes sure the root package and each subpackage has
// a kptfile.kpt.dev ConfigMap (annotated local-config) whose data.name is
// the package name; subpackages, and a root at a nested packagePath, also
// get data.package-path. An existing ConfigMap keeps its other keys.
func EnsurePackageContext(p *pkg.Package, name, packagePath string) error {
	nodes, err := p.Resources()
	if err != nil {
		return err
	}
	nodes, err = ensurePackageContext(p, nodes, name, packagePath)
	if err != nil {
		return err
	}
	return p.SetResources(nodes)
}

// ensurePackageContext is EnsurePackageContext on a package's resources.
func ensurePackageContext(p *pkg.Package, nodes []*yaml.RNode, name, packagePath string) ([]*yaml.RNode, error) {
	existing := map[string]*yaml.RNode{} // by owning package folder
	for _, n := range nodes {
		if IsPackageContext(n) {
			existing[p.OwningPackage(resourceFile(n))] = n
		}
	}
	type target struct{ dir, name, packagePath string }
	targets := []target{{dir: "", name: name}}
	if path.Dir(packagePath) != "." && packagePath != "" {
		targets[0].packagePath = packagePath
	}
	for _, sub := range p.Subpackages() {
		targets = append(targets, target{dir: sub, name: path.Base(sub), packagePath: path.Join(name, sub)})
	}
	for _, t := range targets {
		cm, ok := existing[t.dir]
		if !ok {
			cm = yaml.MustParse(fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  annotations:
    config.kubernetes.io/local-config: "true"
`, configv1alpha1.PackageContextConfigMapName))
			pkg.SetPlacement(cm, pkg.Placement{Path: path.Join(t.dir, PackageContextFile), Index: -1})
			nodes = append(nodes, cm)
		}
		if err := cm.PipeE(yaml.LookupCreate(yaml.MappingNode, "data"), yaml.SetField(ContextKeyName, yaml.NewStringRNode(t.name))); err != nil {
			return nil, fmt.Errorf("package context of %q: %w", t.dir, err)
		}
		if t.packagePath != "" {
			if err := cm.PipeE(yaml.LookupCreate(yaml.MappingNode, "data"), yaml.SetField(ContextKeyPackagePath, yaml.NewStringRNode(t.packagePath))); err != nil {
				return nil, fmt.Errorf("package context of %q: %w", t.dir, err)
			}
		}
	}
	return nodes, nil
}
