package variant

import (
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/engine"
)

var revisionRE = regexp.MustCompile(`^v?[0-9]+$`)

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
		p := spec.Child("upstream")
		if u.Repo == "" {
			errs = append(errs, field.Required(p.Child("repo"), ""))
		}
		if u.Package == "" {
			errs = append(errs, field.Required(p.Child("package"), ""))
		}
		set := 0
		for _, v := range []string{u.Revision, u.WorkspaceName, u.Tag} {
			if v != "" {
				set++
			}
		}
		if set != 1 {
			errs = append(errs, field.Invalid(p, "", "exactly one of revision, workspaceName and tag must be set"))
		}
		if u.Revision != "" && !revisionRE.MatchString(u.Revision) {
			errs = append(errs, field.Invalid(p.Child("revision"), u.Revision, `must be a revision number such as "3" or "v3"`))
		}
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
		for _, k := range []string{engine.ContextKeyName, engine.ContextKeyPackagePath} {
			if _, ok := pc.Data[k]; ok {
				errs = append(errs, field.Invalid(spec.Child("packageContext", "data").Key(k), k, "the key is reserved"))
			}
		}
		for i, k := range pc.RemoveKeys {
			if k == engine.ContextKeyName || k == engine.ContextKeyPackagePath {
				errs = append(errs, field.Invalid(spec.Child("packageContext", "removeKeys").Index(i), k, "the key is reserved"))
			}
		}
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
		if strings.Contains(f.Name, ".") {
			errs = append(errs, field.Invalid(p.Index(i).Child("name"), f.Name, "function names must not contain '.'"))
		}
		if (f.Image == "") == (f.Exec == "") {
			errs = append(errs, field.Invalid(p.Index(i), "", "exactly one of image and exec must be set"))
		}
	}
	return errs
}
