package variantset

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	"github.com/scion-dev/scion/internal/variant"
)

// Validate checks a PackageVariantSet's spec, the rules of the CRD schema
// re-checked for objects that bypassed it plus what a schema cannot say
// (each expression compiles and evaluates to a string), and returns every
// error with its field path.
func (e *Evaluator) Validate(pvs *configv1alpha2.PackageVariantSet) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	switch u := pvs.Spec.Upstream; {
	case u != nil && pvs.Spec.Upstreams != nil:
		errs = append(errs, field.Invalid(spec, "", "exactly one of upstream and upstreams must be set"))
	case u != nil:
		errs = append(errs, variant.ValidateUpstream(spec.Child("upstream"), u)...)
	case len(pvs.Spec.Upstreams) == 0:
		errs = append(errs, field.Required(spec.Child("upstream"), "the upstream package revision (or spec.upstreams, a group of them)"))
	default:
		errs = append(errs, validateUpstreams(spec.Child("upstreams"), pvs.Spec.Upstreams)...)
	}
	if len(pvs.Spec.Targets) == 0 {
		errs = append(errs, field.Required(spec.Child("targets"), "at least one target"))
	}
	for i := range pvs.Spec.Targets {
		errs = append(errs, e.validateTarget(spec.Child("targets").Index(i), &pvs.Spec.Targets[i], pvs.Spec.Upstreams != nil)...)
	}
	return errs
}

// validateUpstreams checks a group: each upstream, each package once, at
// most MaxUpstreams.
func validateUpstreams(p *field.Path, ups []configv1alpha1.Upstream) field.ErrorList {
	var errs field.ErrorList
	if len(ups) > configv1alpha2.MaxUpstreams {
		errs = append(errs, field.TooMany(p, len(ups), configv1alpha2.MaxUpstreams))
	}
	seen := map[string]bool{}
	for i := range ups {
		errs = append(errs, variant.ValidateUpstream(p.Index(i), &ups[i])...)
		if seen[ups[i].Package] {
			errs = append(errs, field.Duplicate(p.Index(i).Child("package"), ups[i].Package))
		}
		seen[ups[i].Package] = true
	}
	return errs
}

// errGroupPackageNames is why a group's targets name no packages.
const errGroupPackageNames = "with spec.upstreams, each variant's downstream package is its upstream's package name; name them otherwise with template.downstream.packageExpr (upstream.package is the upstream's)"

func (e *Evaluator) validateTarget(p *field.Path, t *configv1alpha2.Target, group bool) field.ErrorList {
	var errs field.ErrorList
	set := 0
	if t.Repositories != nil {
		set++
		if len(t.Repositories) == 0 {
			errs = append(errs, field.Required(p.Child("repositories"), "the list must not be empty"))
		}
		for i, r := range t.Repositories {
			rp := p.Child("repositories").Index(i)
			if r.Name == "" {
				errs = append(errs, field.Required(rp.Child("name"), ""))
			}
			errs = append(errs, validatePackageNames(rp.Child("packageNames"), r.PackageNames, group)...)
		}
	}
	if s := t.RepositorySelector; s != nil {
		set++
		errs = append(errs, validateSelector(p.Child("repositorySelector"), &s.LabelSelector)...)
		errs = append(errs, validatePackageNames(p.Child("repositorySelector", "packageNames"), s.PackageNames, group)...)
	}
	if s := t.ObjectSelector; s != nil {
		set++
		sp := p.Child("objectSelector")
		if s.APIVersion == "" {
			errs = append(errs, field.Required(sp.Child("apiVersion"), ""))
		} else if _, err := schema.ParseGroupVersion(s.APIVersion); err != nil {
			errs = append(errs, field.Invalid(sp.Child("apiVersion"), s.APIVersion, err.Error()))
		}
		if s.Kind == "" {
			errs = append(errs, field.Required(sp.Child("kind"), ""))
		}
		if s.APIVersion == "v1" && s.Kind == "Secret" {
			errs = append(errs, field.Forbidden(sp, "Secrets cannot be selected: their labels and annotations may carry what they protect"))
		}
		errs = append(errs, validateSelector(sp, &s.LabelSelector)...)
		errs = append(errs, validatePackageNames(sp.Child("packageNames"), s.PackageNames, group)...)
	}
	if set != 1 {
		errs = append(errs, field.Invalid(p, "", "exactly one of repositories, repositorySelector and objectSelector must be set"))
	}
	if t.Template != nil {
		errs = append(errs, e.validateTemplate(p.Child("template"), t.Template)...)
	}
	return errs
}

func validatePackageNames(p *field.Path, names []string, group bool) field.ErrorList {
	var errs field.ErrorList
	if group && len(names) > 0 {
		errs = append(errs, field.Forbidden(p, errGroupPackageNames))
	}
	for i, n := range names {
		errs = append(errs, variant.ValidatePackagePath(p.Index(i), n)...)
	}
	return errs
}

func validateSelector(p *field.Path, s *metav1.LabelSelector) field.ErrorList {
	if _, err := metav1.LabelSelectorAsSelector(s); err != nil {
		return field.ErrorList{field.Invalid(p, "", err.Error())}
	}
	return nil
}

func (e *Evaluator) validateTemplate(p *field.Path, t *configv1alpha2.PackageVariantTemplate) field.ErrorList {
	var errs field.ErrorList
	if d := t.Downstream; d != nil {
		dp := p.Child("downstream")
		if d.Repo != nil && d.RepoExpr != nil {
			errs = append(errs, field.Invalid(dp, "", "only one of repo and repoExpr may be set"))
		}
		if d.Package != nil && d.PackageExpr != nil {
			errs = append(errs, field.Invalid(dp, "", "only one of package and packageExpr may be set"))
		}
		if d.Package != nil {
			errs = append(errs, variant.ValidatePackagePath(dp.Child("package"), *d.Package)...)
		}
		errs = append(errs, e.validateExpr(dp.Child("repoExpr"), d.RepoExpr, true)...)
		errs = append(errs, e.validateExpr(dp.Child("packageExpr"), d.PackageExpr, false)...)
	}
	if a := t.AdoptionPolicy; a != nil && *a != configv1alpha1.AdoptionPolicyAdoptNone && *a != configv1alpha1.AdoptionPolicyAdoptExisting {
		errs = append(errs, field.NotSupported(p.Child("adoptionPolicy"), *a, []string{"adoptExisting", "adoptNone"}))
	}
	if d := t.DeletionPolicy; d != nil && *d != configv1alpha1.DeletionPolicyDelete && *d != configv1alpha1.DeletionPolicyOrphan {
		errs = append(errs, field.NotSupported(p.Child("deletionPolicy"), *d, []string{"delete", "orphan"}))
	}
	errs = append(errs, e.validateMapExprs(p.Child("labelExprs"), t.LabelExprs)...)
	errs = append(errs, e.validateMapExprs(p.Child("annotationExprs"), t.AnnotationExprs)...)
	if pc := t.PackageContext; pc != nil {
		cp := p.Child("packageContext")
		errs = append(errs, variant.ValidatePackageContext(cp, pc.Data, pc.RemoveKeys)...)
		errs = append(errs, e.validateMapExprs(cp.Child("dataExprs"), pc.DataExprs)...)
		for i := range pc.RemoveKeyExprs {
			errs = append(errs, e.validateExpr(cp.Child("removeKeyExprs").Index(i), &pc.RemoveKeyExprs[i], false)...)
		}
	}
	if pl := t.Pipeline; pl != nil {
		errs = append(errs, e.validateFunctions(p.Child("pipeline", "mutators"), pl.Mutators)...)
		errs = append(errs, e.validateFunctions(p.Child("pipeline", "validators"), pl.Validators)...)
	}
	for i, inj := range t.Injectors {
		ip := p.Child("injectors").Index(i)
		if (inj.Name != nil) == (inj.NameExpr != nil) {
			errs = append(errs, field.Invalid(ip, "", "exactly one of name and nameExpr must be set"))
		}
		errs = append(errs, e.validateExpr(ip.Child("nameExpr"), inj.NameExpr, false)...)
		if inj.Name != nil {
			errs = append(errs, variant.ValidateInjectorName(ip.Child("name"), *inj.Name)...)
		}
	}
	return errs
}

func (e *Evaluator) validateMapExprs(p *field.Path, exprs []configv1alpha2.MapExpr) field.ErrorList {
	var errs field.ErrorList
	for i, m := range exprs {
		mp := p.Index(i)
		if (m.Key != nil) == (m.KeyExpr != nil) {
			errs = append(errs, field.Invalid(mp, "", "exactly one of key and keyExpr must be set"))
		}
		if (m.Value != nil) == (m.ValueExpr != nil) {
			errs = append(errs, field.Invalid(mp, "", "exactly one of value and valueExpr must be set"))
		}
		errs = append(errs, e.validateExpr(mp.Child("keyExpr"), m.KeyExpr, false)...)
		errs = append(errs, e.validateExpr(mp.Child("valueExpr"), m.ValueExpr, false)...)
	}
	return errs
}

func (e *Evaluator) validateFunctions(p *field.Path, fns []configv1alpha2.FunctionTemplate) field.ErrorList {
	var errs field.ErrorList
	for i, f := range fns {
		fp := p.Index(i)
		errs = append(errs, variant.ValidateFunction(fp, &f.Function)...)
		errs = append(errs, e.validateMapExprs(fp.Child("configMapExprs"), f.ConfigMapExprs)...)
	}
	return errs
}

// validateExpr compiles expr, when set.
func (e *Evaluator) validateExpr(p *field.Path, expr *string, noRepo bool) field.ErrorList {
	if expr == nil {
		return nil
	}
	if strings.TrimSpace(*expr) == "" {
		return field.ErrorList{field.Required(p, "the expression is empty")}
	}
	if _, err := e.Compile(*expr, noRepo); err != nil {
		return field.ErrorList{field.Invalid(p, *expr, err.Error())}
	}
	return nil
}
