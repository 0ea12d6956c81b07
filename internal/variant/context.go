package variant

import (
	"fmt"
	"sort"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/engine"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/yamlutil"
)

// ErrNoPackageContext is returned when the package context ConfigMap a
// PackageVariant edits does not exist.
var ErrNoPackageContext = fmt.Errorf("the package has no %s ConfigMap for spec.packageContext", configv1alpha1.PackageContextConfigMapName)

// ApplyContext sets spec.packageContext.data and removes removeKeys in the
// root package's kptfile.kpt.dev ConfigMap. Keys set earlier and no longer
// listed stay, unless removeKeys lists them. It reports whether the
// ConfigMap changed.
func ApplyContext(p *pkg.Package, pc *configv1alpha1.PackageContext) (bool, error) {
	if pc == nil || (len(pc.Data) == 0 && len(pc.RemoveKeys) == 0) {
		return false, nil
	}
	views, err := p.Views()
	if err != nil {
		return false, err
	}
	at := -1
	for i, v := range views {
		if engine.IsPackageContext(v.Node) && p.OwningPackage(v.Placement.Path) == "" {
			at = i
			break
		}
	}
	if at < 0 {
		return false, ErrNoPackageContext
	}
	// Views are shared: edit a copy of the ConfigMap, write back the others
	// as they are.
	cm := views[at].Node.Copy()
	before := views[at].Node.YNode()
	data, err := cm.Pipe(yaml.LookupCreate(yaml.MappingNode, "data"))
	if err != nil {
		return false, err
	}
	keys := make([]string, 0, len(pc.Data))
	for k := range pc.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := data.PipeE(yaml.SetField(k, yaml.NewStringRNode(pc.Data[k]))); err != nil {
			return false, err
		}
	}
	for _, k := range pc.RemoveKeys {
		if _, err := data.Pipe(yaml.Clear(k)); err != nil {
			return false, err
		}
	}
	if yamlutil.SameText(before, cm.YNode()) {
		return false, nil
	}
	views[at].Node = cm
	return true, p.SetViews(views)
}
