package variant

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/engine"
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
		if d.Package == "" {
			errs = append(errs, field.Required(spec.Child("downstream", "package"), ""))
		}
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
	if pc := s.PackageContext; pc != nil {
		errs = append(errs, ValidatePackageContext(spec.Child("packageContext"), pc.Data, pc.RemoveKeys)...)
	}
	if pl := s.Pipeline; pl != nil {
		errs = append(errs, validateFunctions(spec.Child("pipeline", "mutators"), pl.Mutators)...)
		errs = append(errs, validateFunctions(spec.Child("pipeline", "validators"), pl.Validators)...)
	}
	for i, inj := range s.Injectors {
		if inj.Name == "" {
			errs = append(errs, field.Required(spec.Child("injectors").Index(i).Child("name"), ""))
		}
	}
	return errs
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
	if u.Package == "" {
		errs = append(errs, field.Required(p.Child("package"), ""))
	}
	set := 0
	for _, v := range []string{string(u.Revision), u.WorkspaceName, u.Tag} {
		if v != "" {
			set++
		}
	}
	if set != 1 {
		errs = append(errs, field.Invalid(p, "", "exactly one of revision, workspaceName and tag must be set"))
	}
	if _, err := u.Revision.Number(); u.Revision != "" && err != nil {
		errs = append(errs, field.Invalid(p.Child("revision"), string(u.Revision), `must be a revision number from 0 to 999999999, such as 3 or "v3"`))
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
