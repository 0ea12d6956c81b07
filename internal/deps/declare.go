package deps

import (
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
)

// LocalConfigAnnotation marks an object of a package that is configuration
// for tools and never deployed.
const LocalConfigAnnotation = "config.kubernetes.io/local-config"

// Declaration is what one package revision requires and provides, read
// and checked from its PackageDependencies object and its
// CustomResourceDefinitions.
type Declaration struct {
	// Requires are the package's requirements, in the declared order.
	Requires []Requirement
	// Provides are the kinds the package serves (declared, plus every
	// served version of every CustomResourceDefinition in it), sorted.
	Provides []string
	// InstallationType is onePerRepository or noRestrictions.
	InstallationType configv1alpha1.InstallationType
	// Declared is true when the package has a PackageDependencies object
	// or provides kinds: it is held to its installation type. A package
	// that is neither is resolved as onePerRepository, but copies of it
	// at different versions (tenant-ns v1 beside tenant-ns v2 during an
	// upgrade) conflict with nothing.
	Declared bool
}

// Requirement is one checked requirement: exactly one of Package, GVK and
// AnyOf is set.
type Requirement struct {
	// Package is the path of a required package.
	Package string
	// Range is the semver range of Package; nil means any version.
	Range *semver.Constraints
	// RangeText is Range as written ("" for any).
	RangeText string
	// GVK is a required kind, as apiVersion/kind.
	GVK string
	// AnyOf are alternatives in order of preference.
	AnyOf []Requirement
	// Optional requirements install nothing but constrain the version of
	// a package that is there for another reason.
	Optional bool
}

// String renders the requirement as a person reads it: "lib >=1.2.0",
// "kind example.com/v1/Widget", "one of (lib ^1, kind v1/Foo)".
func (r Requirement) String() string {
	switch {
	case r.GVK != "":
		return "kind " + r.GVK
	case r.AnyOf != nil:
		alts := make([]string, len(r.AnyOf))
		for i, a := range r.AnyOf {
			alts[i] = a.String()
		}
		return "one of (" + strings.Join(alts, ", ") + ")"
	case r.RangeText == "":
		return r.Package
	default:
		return r.Package + " " + r.RangeText
	}
}

// Admits says whether a version satisfies a package requirement's range,
// comparing pre-releases like any version; an unversioned package (nil)
// satisfies only "any version".
func (r Requirement) Admits(v *semver.Version) bool {
	if r.Range == nil {
		return true
	}
	return v != nil && admits(r.Range, v)
}

// ParsePackage reads the declaration of a package: its PackageDependencies
// object, when there is one, and its CustomResourceDefinitions. Objects of
// nested subpackages are not the package's. A package without a
// PackageDependencies object requires nothing and provides its CRDs'
// kinds; it is resolved as onePerRepository (a requirement on it moves
// it rather than adding a copy), but copies of it at different versions
// in different folders are tolerated (Declared is false), unless it ships
// CRDs. Errors name the file and the field.
func ParsePackage(p *pkg.Package) (*Declaration, error) {
	views, err := p.Views()
	if err != nil {
		return nil, err
	}
	d := &Declaration{InstallationType: configv1alpha1.OnePerRepository}
	provides := map[string]bool{}
	var declFile string
	for _, view := range views {
		n, file := view.Node, view.Placement.Path
		if p.OwningPackage(file) != "" {
			continue
		}
		switch apiVersion, kind := n.GetApiVersion(), n.GetKind(); {
		case kind == "CustomResourceDefinition" && apiVersion == "apiextensions.k8s.io/v1":
			gvks, err := crdKinds(n)
			if err != nil {
				return nil, fmt.Errorf("%s: CustomResourceDefinition %s: %w", file, n.GetName(), err)
			}
			for _, g := range gvks {
				provides[g] = true
			}
		case kind == configv1alpha1.PackageDependenciesKind && apiVersion == configv1alpha1.GroupVersion.String():
			if declFile != "" {
				return nil, fmt.Errorf("%s: a package has one PackageDependencies object, and %s has one already", file, declFile)
			}
			declFile = file
			m, err := n.Map()
			if err != nil {
				return nil, fmt.Errorf("%s: PackageDependencies: %w", file, err)
			}
			if errs := validateDeclaration(m); len(errs) > 0 {
				return nil, fmt.Errorf("%s: PackageDependencies %s is invalid: %w", file, n.GetName(), errs.ToAggregate())
			}
			obj := &configv1alpha1.PackageDependencies{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, obj); err != nil {
				return nil, fmt.Errorf("%s: PackageDependencies %s: %w", file, n.GetName(), err)
			}
			for _, r := range obj.Spec.Requires {
				req, err := newRequirement(r)
				if err != nil {
					return nil, fmt.Errorf("%s: PackageDependencies %s: %w", file, n.GetName(), err)
				}
				d.Requires = append(d.Requires, req)
			}
			for _, g := range obj.Spec.Provides {
				provides[g.String()] = true
			}
			if obj.Spec.InstallationType != "" {
				d.InstallationType = obj.Spec.InstallationType
			}
		}
	}
	for g := range provides {
		d.Provides = append(d.Provides, g)
	}
	sort.Strings(d.Provides)
	d.Declared = declFile != "" || len(d.Provides) > 0
	if d.InstallationType == configv1alpha1.NoRestrictions && len(d.Provides) > 0 {
		return nil, fmt.Errorf("%s: PackageDependencies: spec.installationType: Invalid value: %q: a package that provides kinds (%s) is installed once per repository, since a kind has one provider",
			declFile, d.InstallationType, strings.Join(d.Provides, ", "))
	}
	return d, nil
}

// crdKinds returns apiVersion/kind for every served version of a CRD.
func crdKinds(n *yaml.RNode) ([]string, error) {
	m, err := n.Map()
	if err != nil {
		return nil, err
	}
	spec, _ := m["spec"].(map[string]any)
	group, _ := spec["group"].(string)
	names, _ := spec["names"].(map[string]any)
	kind, _ := names["kind"].(string)
	versions, _ := spec["versions"].([]any)
	if group == "" || kind == "" || len(versions) == 0 {
		return nil, fmt.Errorf("spec.group, spec.names.kind and spec.versions are required")
	}
	var out []string
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		name, _ := vm["name"].(string)
		if served, ok := vm["served"].(bool); name == "" || (ok && !served) {
			continue
		}
		out = append(out, group+"/"+name+"/"+kind)
	}
	return out, nil
}

// newRequirement turns a validated API requirement into a checked one.
func newRequirement(r configv1alpha1.Requirement) (Requirement, error) {
	out := Requirement{Optional: r.Optional}
	switch {
	case r.Package != nil:
		out.Package = r.Package.Name
		out.RangeText = strings.TrimSpace(r.Package.Version)
		if out.RangeText != "" {
			c, err := semver.NewConstraint(out.RangeText)
			if err != nil {
				return out, err
			}
			out.Range = c
		}
	case r.GVK != nil:
		out.GVK = r.GVK.String()
	default:
		for _, a := range r.AnyOf {
			alt, err := newRequirement(a)
			if err != nil {
				return out, err
			}
			out.AnyOf = append(out.AnyOf, alt)
		}
	}
	return out, nil
}

// NewPackageRequirement returns a requirement on a package with a semver
// range ("" for any), or an error naming what is wrong with either.
func NewPackageRequirement(name, rangeText string) (Requirement, error) {
	if err := pkg.ValidatePackagePath(name); err != nil {
		return Requirement{}, err
	}
	return newRequirement(configv1alpha1.Requirement{Package: &configv1alpha1.PackageRequirement{Name: name, Version: rangeText}})
}

// validateDeclaration checks a PackageDependencies object field by field,
// unknown fields included, and returns every error with its path.
func validateDeclaration(m map[string]any) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, unknownFields(nil, m, "apiVersion", "kind", "metadata", "spec")...)
	meta, _ := m["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if v, _ := ann[LocalConfigAnnotation].(string); v != "true" {
		errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(LocalConfigAnnotation),
			`PackageDependencies is local configuration: annotate it config.kubernetes.io/local-config: "true" so it is never deployed`))
	}
	sp := field.NewPath("spec")
	spec, ok := m["spec"].(map[string]any)
	if !ok {
		if _, set := m["spec"]; set {
			errs = append(errs, field.Invalid(sp, m["spec"], "must be an object"))
		}
		return errs
	}
	errs = append(errs, unknownFields(sp, spec, "requires", "provides", "installationType")...)
	if v, set := spec["requires"]; set {
		list, ok := v.([]any)
		if !ok {
			errs = append(errs, field.Invalid(sp.Child("requires"), v, "must be a list"))
		}
		for i, r := range list {
			errs = append(errs, validateRequirement(sp.Child("requires").Index(i), r, true)...)
		}
	}
	if v, set := spec["provides"]; set {
		list, ok := v.([]any)
		if !ok {
			errs = append(errs, field.Invalid(sp.Child("provides"), v, "must be a list"))
		}
		for i, g := range list {
			errs = append(errs, validateGVK(sp.Child("provides").Index(i), g)...)
		}
	}
	if v, set := spec["installationType"]; set {
		s, _ := v.(string)
		if s != string(configv1alpha1.OnePerRepository) && s != string(configv1alpha1.NoRestrictions) {
			errs = append(errs, field.NotSupported(sp.Child("installationType"), v,
				[]string{string(configv1alpha1.OnePerRepository), string(configv1alpha1.NoRestrictions)}))
		}
	}
	return errs
}

func validateRequirement(p *field.Path, v any, top bool) field.ErrorList {
	m, ok := v.(map[string]any)
	if !ok {
		return field.ErrorList{field.Invalid(p, v, "must be an object with one of package, gvk and anyOf")}
	}
	errs := unknownFields(p, m, "package", "gvk", "anyOf", "optional")
	var set []string
	for _, k := range []string{"package", "gvk", "anyOf"} {
		if _, ok := m[k]; ok {
			set = append(set, k)
		}
	}
	switch len(set) {
	case 0:
		errs = append(errs, field.Required(p, "exactly one of package, gvk and anyOf must be set"))
	case 1:
	default:
		errs = append(errs, field.Invalid(p, strings.Join(set, ", "), "exactly one of package, gvk and anyOf must be set, not "+strings.Join(set, " and ")))
	}
	if o, ok := m["optional"]; ok {
		if _, isBool := o.(bool); !isBool {
			errs = append(errs, field.Invalid(p.Child("optional"), o, "must be true or false"))
		} else if !top {
			errs = append(errs, field.Forbidden(p.Child("optional"), "an alternative of anyOf cannot be optional; make the anyOf optional instead"))
		} else if _, any := m["anyOf"]; any && o == true {
			errs = append(errs, field.Forbidden(p.Child("optional"), "anyOf cannot be optional: an optional requirement constrains one package's version"))
		}
	}
	if pv, ok := m["package"]; ok {
		pp := p.Child("package")
		pm, ok := pv.(map[string]any)
		if !ok {
			return append(errs, field.Invalid(pp, pv, "must be an object with name and version"))
		}
		errs = append(errs, unknownFields(pp, pm, "name", "version")...)
		name, _ := pm["name"].(string)
		if name == "" {
			errs = append(errs, field.Required(pp.Child("name"), "the package's path in its repository"))
		} else if err := pkg.ValidatePackagePath(name); err != nil {
			errs = append(errs, field.Invalid(pp.Child("name"), name, err.Error()))
		}
		if rv, ok := pm["version"]; ok {
			s, isString := rv.(string)
			if !isString {
				errs = append(errs, field.Invalid(pp.Child("version"), rv, "must be a string: a semver range such as \">=1.2.0 <2.0.0\""))
			} else if strings.TrimSpace(s) != "" {
				if _, err := semver.NewConstraint(s); err != nil {
					errs = append(errs, field.Invalid(pp.Child("version"), s, "not a semver range: "+err.Error()))
				}
			}
		}
	}
	if g, ok := m["gvk"]; ok {
		errs = append(errs, validateGVK(p.Child("gvk"), g)...)
	}
	if a, ok := m["anyOf"]; ok {
		list, ok := a.([]any)
		if !ok || len(list) == 0 {
			errs = append(errs, field.Invalid(p.Child("anyOf"), a, "must be a non-empty list of requirements"))
		}
		for i, alt := range list {
			errs = append(errs, validateRequirement(p.Child("anyOf").Index(i), alt, false)...)
		}
	}
	return errs
}

func validateGVK(p *field.Path, v any) field.ErrorList {
	m, ok := v.(map[string]any)
	if !ok {
		return field.ErrorList{field.Invalid(p, v, "must be an object with apiVersion and kind")}
	}
	errs := unknownFields(p, m, "apiVersion", "kind")
	av, _ := m["apiVersion"].(string)
	switch parts := strings.Split(av, "/"); {
	case av == "":
		errs = append(errs, field.Required(p.Child("apiVersion"), "group/version, or the version alone for the core group"))
	case len(parts) > 2 || parts[0] == "" || parts[len(parts)-1] == "" || strings.ContainsAny(av, " \t"):
		errs = append(errs, field.Invalid(p.Child("apiVersion"), av, "must be group/version, or the version alone for the core group"))
	}
	if k, _ := m["kind"].(string); k == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	} else if strings.ContainsAny(k, " /\t") {
		errs = append(errs, field.Invalid(p.Child("kind"), k, "a kind is a single name"))
	}
	return errs
}

// unknownFields reports the keys of m that are not in allowed, sorted.
func unknownFields(p *field.Path, m map[string]any, allowed ...string) field.ErrorList {
	var bad []string
	for k := range m {
		known := false
		for _, a := range allowed {
			known = known || k == a
		}
		if !known {
			bad = append(bad, k)
		}
	}
	sort.Strings(bad)
	var errs field.ErrorList
	for _, k := range bad {
		var fp *field.Path
		if p == nil {
			fp = field.NewPath(k)
		} else {
			fp = p.Child(k)
		}
		errs = append(errs, &field.Error{Type: field.ErrorTypeNotSupported, Field: fp.String(), BadValue: k,
			Detail: "unknown field; known fields are " + strings.Join(allowed, ", ")})
	}
	return errs
}
