package variant

import (
	"strings"

	"github.com/Masterminds/semver/v3"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/engine"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
)

// Validate checks a PackageVariant's spec (the rules the CRD schema also
// enforces, re-checked for objects that bypassed it) and returns every
// error with its field path.
func Validate(pv *configv1alpha1.PackageVariant) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	s := pv.Spec
	if u := s.Upstream; u == nil {
		errs = append(errs, field.Required(spec.Child("upstream"), "the upstream package revision"))
	} else {
		errs = append(errs, ValidateUpstream(spec.Child("upstream"), u)...)
	}
	if d := s.Downstream; d == nil {
		errs = append(errs, field.Required(spec.Child("downstream"), "the downstream repository and package"))
	} else {
		if d.Repo == "" {
			errs = append(errs, field.Required(spec.Child("downstream", "repo"), ""))
		}
		errs = append(errs, ValidatePackagePath(spec.Child("downstream", "package"), d.Package)...)
	}
	if u, d := s.Upstream, s.Downstream; u != nil && d != nil && u.Repo == d.Repo && u.Package == d.Package {
		errs = append(errs, field.Invalid(spec.Child("downstream"), d.Repo+"/"+d.Package, "the downstream package is the upstream package: a package cannot be a variant of itself; name another package or repository"))
	}
	switch s.AdoptionPolicy {
	case "", configv1alpha1.AdoptionPolicyAdoptNone, configv1alpha1.AdoptionPolicyAdoptExisting:
	default:
		errs = append(errs, field.NotSupported(spec.Child("adoptionPolicy"), s.AdoptionPolicy, []string{"adoptExisting", "adoptNone"}))
	}
	switch s.DeletionPolicy {
	case "", configv1alpha1.DeletionPolicyDelete, configv1alpha1.DeletionPolicyOrphan:
	default:
		errs = append(errs, field.NotSupported(spec.Child("deletionPolicy"), s.DeletionPolicy, []string{"delete", "orphan"}))
	}
	if d := s.Dependencies; d != nil {
		seen := map[string]bool{}
		for i, o := range d.Overrides {
			fp := spec.Child("dependencies", "overrides").Index(i)
			errs = append(errs, ValidatePackagePath(fp.Child("name"), o.Name)...)
			if seen[o.Name] {
				errs = append(errs, field.Duplicate(fp.Child("name"), o.Name))
			}
			seen[o.Name] = true
			if o.Version != "" {
				if _, err := semver.NewConstraint(o.Version); err != nil {
					errs = append(errs, field.Invalid(fp.Child("version"), o.Version, "not a semver range: "+err.Error()))
				}
			}
		}
	}
	if pc := s.PackageContext; pc != nil {
		errs = append(errs, ValidatePackageContext(spec.Child("packageContext"), pc.Data, pc.RemoveKeys)...)
	}
	if pl := s.Pipeline; pl != nil {
		errs = append(errs, validateFunctions(spec.Child("pipeline", "mutators"), pl.Mutators)...)
		errs = append(errs, validateFunctions(spec.Child("pipeline", "validators"), pl.Validators)...)
	}
	for i, inj := range s.Injectors {
		errs = append(errs, ValidateInjectorName(spec.Child("injectors").Index(i).Child("name"), inj.Name)...)
	}
	// Labels and annotations go onto the PackageRevision object: refused
	// here, before the draft is written, rather than by the API server
	// after it.
	errs = append(errs, metav1validation.ValidateLabels(s.Labels, spec.Child("labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(s.Annotations, spec.Child("annotations"))...)
	return shortValues(errs)
}

// maxShownValue bounds what of a refused value an error quotes: errors go
// into conditions, events and logs, and a value can be a user's 70 KB.
const maxShownValue = 100

// shortValues cuts the long values errors quote.
func shortValues(errs field.ErrorList) field.ErrorList {
	for _, e := range errs {
		if v, ok := e.BadValue.(string); ok && len(v) > maxShownValue {
			e.BadValue = store.Shorten(v, maxShownValue)
		}
	}
	return errs
}

// ValidatePackagePath checks a package path field: required, relative,
// slash-separated simple names that stay inside the repository.
func ValidatePackagePath(p *field.Path, v string) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if err := pkg.ValidatePackagePath(v); err != nil {
		return field.ErrorList{field.Invalid(p, v, "must be a relative slash-separated path of simple names, with no empty, '.' or '..' segments")}
	}
	return nil
}

// ValidateInjectorName checks an injector's object name: required, and an
// object of the variant's own namespace (no namespace/ prefix: other
// namespaces are never read).
func ValidateInjectorName(p *field.Path, name string) field.ErrorList {
	switch {
	case name == "":
		return field.ErrorList{field.Required(p, "")}
	case strings.Contains(name, "/"):
		return field.ErrorList{field.Invalid(p, name, "injectors name objects in the variant's own namespace: give the object's name alone; objects of other namespaces are never read")}
	}
	return nil
}

func validateFunctions(p *field.Path, fns []kptfilev1.Function) field.ErrorList {
	var errs field.ErrorList
	for i, f := range fns {
		errs = append(errs, ValidateFunction(p.Index(i), &f)...)
	}
	return errs
}

// ValidateFunction checks one pipeline function a variant adds.
func ValidateFunction(p *field.Path, f *kptfilev1.Function) field.ErrorList {
	var errs field.ErrorList
	if strings.Contains(f.Name, ".") {
		errs = append(errs, field.Invalid(p.Child("name"), f.Name, "function names must not contain '.'"))
	}
	if (f.Image == "") == (f.Exec == "") {
		errs = append(errs, field.Invalid(p, "", "exactly one of image and exec must be set"))
	}
	return errs
}

// ValidateUpstream checks an upstream reference: repository, package and
// exactly one of revision, workspace name and tag.
func ValidateUpstream(p *field.Path, u *configv1alpha1.Upstream) field.ErrorList {
	var errs field.ErrorList
	if u.Repo == "" {
		errs = append(errs, field.Required(p.Child("repo"), ""))
	}
	errs = append(errs, ValidatePackagePath(p.Child("package"), u.Package)...)
	set := 0
	for _, v := range []string{string(u.Revision), u.WorkspaceName, u.Tag, u.VersionRange} {
		if v != "" {
			set++
		}
	}
	if set != 1 {
		errs = append(errs, field.Invalid(p, "", "exactly one of revision, workspaceName, tag and versionRange must be set"))
	}
	if u.VersionRange != "" {
		if _, err := semver.NewConstraint(u.VersionRange); err != nil {
			errs = append(errs, field.Invalid(p.Child("versionRange"), u.VersionRange, "not a semver range: "+err.Error()))
		}
	}
	switch {
	case u.UpdatePolicy != "" && u.VersionRange == "":
		errs = append(errs, field.Invalid(p.Child("updatePolicy"), u.UpdatePolicy, "updatePolicy applies to versionRange only"))
	case u.UpdatePolicy != "" && u.UpdatePolicy != configv1alpha1.UpdatePolicyAutomatic && u.UpdatePolicy != configv1alpha1.UpdatePolicyManual:
		errs = append(errs, field.NotSupported(p.Child("updatePolicy"), u.UpdatePolicy, []string{"Automatic", "Manual"}))
	}
	if _, err := u.Revision.Number(); u.Revision != "" && !u.Revision.Latest() && err != nil {
		errs = append(errs, field.Invalid(p.Child("revision"), string(u.Revision), `must be a revision number from 0 to 999999999, such as 3 or "v3", or -1 for the latest published revision`))
	}
	return errs
}

// ValidatePackageContext rejects the reserved package context keys (name
// and package-path) in data and removeKeys.
func ValidatePackageContext(p *field.Path, data map[string]string, removeKeys []string) field.ErrorList {
	var errs field.ErrorList
	for _, k := range []string{engine.ContextKeyName, engine.ContextKeyPackagePath} {
		if _, ok := data[k]; ok {
			errs = append(errs, field.Invalid(p.Child("data").Key(k), k, "the key is reserved"))
		}
	}
	for i, k := range removeKeys {
		if k == engine.ContextKeyName || k == engine.ContextKeyPackagePath {
			errs = append(errs, field.Invalid(p.Child("removeKeys").Index(i), k, "the key is reserved"))
		}
	}
	return errs
}
