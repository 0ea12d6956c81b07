package variant

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/kindwatch"
	"github.com/scion-dev/scion/internal/kptfile"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/yamlutil"
)

// Annotations of configuration injection.
const (
	// InjectionAnnotation marks an injection point: required or optional.
	InjectionAnnotation = "kpt.dev/config-injection"
	// InjectedNameAnnotation records the in-cluster object injected.
	InjectedNameAnnotation = "kpt.dev/injected-resource-name"
)

// ErrClusterScoped is returned by ObjectSource.Schema for a kind that is
// not namespaced: only objects of the variant's own namespace are injected.
var ErrClusterScoped = errors.New("cluster-scoped")

// ObjectSource gives injection access to in-cluster objects of the
// PackageVariant's namespace.
type ObjectSource interface {
	// Schema reports whether the cluster serves gvk and whether its schema
	// has a spec field (a ConfigMap's data counts). It fails with an error
	// matching ErrClusterScoped for a cluster-scoped kind, and with one
	// matching kindwatch.ErrNotAllowed, saying why, for a kind the
	// controller may not read.
	Schema(ctx context.Context, gvk schema.GroupVersionKind) (served, hasSpec bool, err error)
	// Get returns the object of gvk named name, or nil when there is none.
	Get(ctx context.Context, gvk schema.GroupVersionKind, name string) (*unstructured.Unstructured, error)
	// Namespace is where objects are looked up (the variant's namespace),
	// as messages say it.
	Namespace() string
}

// Point is one injection point and what happened to it.
type Point struct {
	// ConditionType is config.injection.<Kind>.<name>.
	ConditionType string
	GVK           schema.GroupVersionKind
	Name          string
	Required      bool
	// Injected is the name of the in-cluster object injected, or "".
	Injected string
	// Message says why nothing was injected.
	Message string
}

// InjectionResult is the outcome of InjectConfig.
type InjectionResult struct {
	Points []Point
	// Errors are problems of the package itself: invalid annotation
	// values, ambiguous points. They make ConfigInjected False.
	Errors []string
	// Changed reports whether the package changed.
	Changed bool
}

// OK reports whether ConfigInjected is True: no errors and every required
// point injected.
func (r InjectionResult) OK() bool {
	if len(r.Errors) > 0 {
		return false
	}
	for _, p := range r.Points {
		if p.Required && p.Injected == "" {
			return false
		}
	}
	return true
}

// Message summarizes the result for the ConfigInjected condition.
func (r InjectionResult) Message() string {
	if len(r.Errors) > 0 {
		return strings.Join(r.Errors, "; ")
	}
	var missing, done, optional []string
	for _, p := range r.Points {
		switch {
		case p.Injected != "":
			done = append(done, fmt.Sprintf("%s/%s from %s", p.GVK.Kind, p.Name, p.Injected))
		case p.Required:
			missing = append(missing, fmt.Sprintf("%s/%s: %s", p.GVK.Kind, p.Name, p.Message))
		default:
			optional = append(optional, fmt.Sprintf("%s/%s", p.GVK.Kind, p.Name))
		}
	}
	if len(missing) > 0 {
		return "required injection points not injected: " + strings.Join(missing, "; ")
	}
	var parts []string
	if len(done) > 0 {
		parts = append(parts, "injected "+strings.Join(done, ", "))
	}
	if len(optional) > 0 {
		parts = append(parts, fmt.Sprintf("%d optional injection point(s) left as they are (no injector names an object for them): %s", len(optional), strings.Join(optional, ", ")))
	}
	if len(parts) == 0 {
		return "the package has no injection points"
	}
	return strings.Join(parts, "; ")
}

// InjectConfig runs configuration injection: for each resource annotated
// kpt.dev/config-injection (required or optional), the injectors are tried
// in order; the first whose present group, version and kind match the
// resource and that names an existing in-cluster object of that kind
// wins. Its spec (data for a ConfigMap) replaces the resource's, and
// kpt.dev/injected-resource-name records it. Each point gets a Kptfile
// condition config.injection.<Kind>.<name>; required points become
// readiness gates.
func InjectConfig(ctx context.Context, p *pkg.Package, injectors []configv1alpha1.InjectionSelector, src ObjectSource) (InjectionResult, error) {
	var res InjectionResult
	views, err := p.Views()
	if err != nil {
		return res, err
	}
	type point struct {
		view int // index in views
		Point
	}
	var points []point
	byCondition := map[string][]string{}
	for i, view := range views {
		n := view.Node
		v, ok := n.GetAnnotations()[InjectionAnnotation]
		if !ok {
			continue
		}
		if v != "required" && v != "optional" {
			res.Errors = append(res.Errors, fmt.Sprintf("%s %s: annotation %s must be required or optional, not %q", n.GetKind(), n.GetName(), InjectionAnnotation, v))
			continue
		}
		gv, err := schema.ParseGroupVersion(n.GetApiVersion())
		if err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("%s %s: %v", n.GetKind(), n.GetName(), err))
			continue
		}
		cond := configv1alpha1.InjectionConditionPrefix + n.GetKind() + "." + n.GetName()
		byCondition[cond] = append(byCondition[cond], n.GetApiVersion())
		points = append(points, point{view: i, Point: Point{ConditionType: cond, GVK: gv.WithKind(n.GetKind()), Name: n.GetName(), Required: v == "required"}})
	}
	for cond, versions := range byCondition {
		if len(versions) > 1 {
			res.Errors = append(res.Errors, fmt.Sprintf("injection points are ambiguous: %d resources (%s) share condition %s; rename them in the upstream package", len(versions), strings.Join(versions, ", "), cond))
		}
	}
	sort.Strings(res.Errors)
	for i := range points {
		pt := &points[i]
		if len(byCondition[pt.ConditionType]) > 1 {
			pt.Message = "ambiguous injection point"
			continue
		}
		served, hasSpec, err := src.Schema(ctx, pt.GVK)
		switch {
		case errors.Is(err, kindwatch.ErrNotAllowed):
			pt.Message = err.Error()
			continue
		case errors.Is(err, ErrClusterScoped):
			pt.Message = fmt.Sprintf("%s is cluster-scoped: only objects of the variant's namespace %s are injected", pt.GVK.Kind, src.Namespace())
			continue
		case err != nil:
			return res, fmt.Errorf("looking up %s: %w", pt.GVK, err)
		case !served:
			pt.Message = fmt.Sprintf("the cluster has no schema for %s", pt.GVK)
			continue
		case !hasSpec:
			pt.Message = fmt.Sprintf("the schema of %s has no spec field to inject", pt.GVK)
			continue
		}
		var tried, elsewhere []string
		for _, sel := range injectors {
			if (sel.Group != nil && *sel.Group != pt.GVK.Group) || (sel.Version != nil && *sel.Version != pt.GVK.Version) || (sel.Kind != nil && *sel.Kind != pt.GVK.Kind) {
				continue
			}
			if strings.Contains(sel.Name, "/") {
				elsewhere = append(elsewhere, sel.Name)
				continue
			}
			tried = append(tried, sel.Name)
			obj, err := src.Get(ctx, pt.GVK, sel.Name)
			if err != nil {
				return res, fmt.Errorf("reading %s %s: %w", pt.GVK.Kind, sel.Name, err)
			}
			if obj == nil {
				continue
			}
			n, changed, err := inject(views[pt.view].Node, obj)
			if err != nil {
				return res, fmt.Errorf("injecting %s %s into %s %s: %w", pt.GVK.Kind, sel.Name, pt.GVK.Kind, pt.Name, err)
			}
			if changed {
				views[pt.view].Node = n
				res.Changed = true
			}
			pt.Injected = sel.Name
			break
		}
		if pt.Injected == "" {
			pt.Message = notInjectedMessage(pt.GVK, len(injectors), tried, elsewhere, src.Namespace())
		}
	}
	for _, pt := range points {
		res.Points = append(res.Points, pt.Point)
	}
	if res.Changed {
		if err := p.SetViews(views); err != nil {
			return res, err
		}
	}
	kfChanged, err := recordPoints(p, res.Points)
	if err != nil {
		return res, err
	}
	res.Changed = res.Changed || kfChanged
	return res, nil
}

// notInjectedMessage says why a point got no object: which injectors were
// tried, in which namespace, and which could not apply.
func notInjectedMessage(gvk schema.GroupVersionKind, injectors int, tried, elsewhere []string, namespace string) string {
	var parts []string
	switch {
	case injectors == 0:
		parts = append(parts, "spec.injectors is empty")
	case len(tried) == 0 && len(elsewhere) == 0:
		parts = append(parts, fmt.Sprintf("none of the %d injectors selects kind %s (%s)", injectors, gvk.Kind, gvk.GroupVersion()))
	case len(tried) > 0:
		parts = append(parts, fmt.Sprintf("tried injectors %s: no %s of those names in namespace %s", strings.Join(tried, ", "), gvk.Kind, namespace))
	}
	if len(elsewhere) > 0 {
		parts = append(parts, fmt.Sprintf("injectors %s name objects of other namespaces, which are never read (injectors name objects in the variant's namespace %s)", strings.Join(elsewhere, ", "), namespace))
	}
	return "no in-cluster object to inject: " + strings.Join(parts, "; ")
}

// inject returns a copy of a resource (a shared view, left alone) with
// spec (data for ConfigMaps) from obj and obj's name recorded, and whether
// the copy reads differently.
func inject(view *yaml.RNode, obj *unstructured.Unstructured) (*yaml.RNode, bool, error) {
	n := view.Copy()
	field := "spec"
	if obj.GetKind() == "ConfigMap" && obj.GetAPIVersion() == "v1" {
		field = "data"
	}
	value, found, err := unstructured.NestedFieldNoCopy(obj.Object, field)
	if err != nil {
		return nil, false, err
	}
	if !found {
		if _, err := n.Pipe(yaml.Clear(field)); err != nil {
			return nil, false, err
		}
	} else {
		v, err := yaml.FromMap(map[string]any{"v": value})
		if err != nil {
			return nil, false, err
		}
		if err := n.PipeE(yaml.SetField(field, v.Field("v").Value)); err != nil {
			return nil, false, err
		}
	}
	pkg.SetAnnotation(n, InjectedNameAnnotation, obj.GetName())
	return n, !yamlutil.SameText(view.YNode(), n.YNode()), nil
}

// recordPoints writes a condition per point into the Kptfile and makes
// required points readiness gates (optional ones are left to people).
func recordPoints(p *pkg.Package, points []Point) (bool, error) {
	if len(points) == 0 {
		return false, nil
	}
	before, _ := p.File(kptfilev1.KptFileName)
	err := p.EditKptfile(func(kf *kptfilev1.KptFile) error {
		for _, pt := range points {
			c := kptfilev1.Condition{Type: pt.ConditionType, Status: kptfilev1.ConditionFalse, Reason: "NotInjected", Message: pt.Message}
			if pt.Injected != "" {
				c = kptfilev1.Condition{Type: pt.ConditionType, Status: kptfilev1.ConditionTrue, Reason: "Injected", Message: "injected from " + pt.Injected}
			}
			kptfile.SetCondition(kf, c)
			if pt.Required {
				kptfile.AddReadinessGate(kf, pt.ConditionType)
			}
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	after, _ := p.File(kptfilev1.KptFileName)
	return string(before) != string(after), nil
}
