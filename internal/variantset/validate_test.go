package variantset_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
)

// Each validation rule of the spec, with the message it gives.
func TestValidate(t *testing.T) {
	tpl := func(s *configv1alpha2.PackageVariantSet) *configv1alpha2.PackageVariantTemplate {
		if s.Spec.Targets[0].Template == nil {
			s.Spec.Targets[0].Template = &configv1alpha2.PackageVariantTemplate{}
		}
		return s.Spec.Targets[0].Template
	}
	for _, tc := range []struct {
		name string
		edit func(*configv1alpha2.PackageVariantSet)
		want []string
	}{
		{"upstream missing", func(s *configv1alpha2.PackageVariantSet) { s.Spec.Upstream = nil }, []string{"spec.upstream: Required value"}},
		{"upstream package missing", func(s *configv1alpha2.PackageVariantSet) { s.Spec.Upstream.Package = "" }, []string{"spec.upstream.package: Required value"}},
		{"upstream repo missing", func(s *configv1alpha2.PackageVariantSet) { s.Spec.Upstream.Repo = "" }, []string{"spec.upstream.repo: Required value"}},
		{"no revision, workspace or tag", func(s *configv1alpha2.PackageVariantSet) { s.Spec.Upstream.Revision = "" }, []string{"spec.upstream: Invalid value: \"\": exactly one of revision, workspaceName, tag and versionRange must be set"}},
		{"no targets", func(s *configv1alpha2.PackageVariantSet) { s.Spec.Targets = nil }, []string{"spec.targets: Required value: at least one target"}},
		{"two selector kinds", func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Targets[0].RepositorySelector = &configv1alpha2.RepositorySelector{}
		}, []string{"spec.targets[0]: Invalid value: \"\": exactly one of repositories, repositorySelector and objectSelector must be set"}},
		{"no selector", func(s *configv1alpha2.PackageVariantSet) { s.Spec.Targets[0].Repositories = nil }, []string{"spec.targets[0]: Invalid value: \"\": exactly one of"}},
		{"empty repository list", func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Targets[0].Repositories = []configv1alpha2.RepositoryTarget{}
		}, []string{"spec.targets[0].repositories: Required value: the list must not be empty"}},
		{"empty repository name", func(s *configv1alpha2.PackageVariantSet) { s.Spec.Targets[0].Repositories[1].Name = "" }, []string{"spec.targets[0].repositories[1].name: Required value"}},
		{"empty package name", func(s *configv1alpha2.PackageVariantSet) { s.Spec.Targets[0].Repositories[2].PackageNames[1] = "" }, []string{"spec.targets[0].repositories[2].packageNames[1]: Required value"}},
		{"selecting Secrets", func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Targets[0].Repositories = nil
			s.Spec.Targets[0].ObjectSelector = &configv1alpha2.ObjectSelector{APIVersion: "v1", Kind: "Secret"}
		}, []string{"spec.targets[0].objectSelector: Forbidden: Secrets cannot be selected"}},
		{"escaping package name", func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Targets[0].Repositories[2].PackageNames[1] = "../../escape"
		}, []string{`spec.targets[0].repositories[2].packageNames[1]: Invalid value: "../../escape": must be a relative slash-separated path of simple names`}},
		{"object selector without apiVersion and kind", func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Targets[0].Repositories = nil
			s.Spec.Targets[0].ObjectSelector = &configv1alpha2.ObjectSelector{}
		}, []string{"spec.targets[0].objectSelector.apiVersion: Required value", "spec.targets[0].objectSelector.kind: Required value"}},
		{"invalid label selector", func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Targets[0].Repositories = nil
			s.Spec.Targets[0].RepositorySelector = &configv1alpha2.RepositorySelector{}
			s.Spec.Targets[0].RepositorySelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}
		}, []string{"spec.targets[0].repositorySelector: Invalid value"}},
		{"adoption policy", func(s *configv1alpha2.PackageVariantSet) {
			p := configv1alpha1.AdoptionPolicy("adoptAll")
			tpl(s).AdoptionPolicy = &p
		}, []string{"spec.targets[0].template.adoptionPolicy: Unsupported value: \"adoptAll\""}},
		{"deletion policy", func(s *configv1alpha2.PackageVariantSet) {
			p := configv1alpha1.DeletionPolicy("keep")
			tpl(s).DeletionPolicy = &p
		}, []string{"spec.targets[0].template.deletionPolicy: Unsupported value: \"keep\""}},
		{"repo and repoExpr", func(s *configv1alpha2.PackageVariantSet) {
			tpl(s).Downstream = &configv1alpha2.DownstreamTemplate{Repo: ptr("a"), RepoExpr: ptr("'a'")}
		}, []string{"spec.targets[0].template.downstream: Invalid value: \"\": only one of repo and repoExpr may be set"}},
		{"package and packageExpr", func(s *configv1alpha2.PackageVariantSet) {
			tpl(s).Downstream = &configv1alpha2.DownstreamTemplate{Package: ptr("a"), PackageExpr: ptr("'a'")}
		}, []string{"only one of package and packageExpr may be set"}},
		{"key and keyExpr", func(s *configv1alpha2.PackageVariantSet) {
			tpl(s).LabelExprs = []configv1alpha2.MapExpr{{Key: ptr("a"), KeyExpr: ptr("'a'"), Value: ptr("b")}}
		}, []string{"spec.targets[0].template.labelExprs[0]: Invalid value: \"\": exactly one of key and keyExpr must be set"}},
		{"value and valueExpr", func(s *configv1alpha2.PackageVariantSet) {
			tpl(s).AnnotationExprs = []configv1alpha2.MapExpr{{Key: ptr("a"), Value: ptr("b"), ValueExpr: ptr("'b'")}}
		}, []string{"spec.targets[0].template.annotationExprs[0]: Invalid value: \"\": exactly one of value and valueExpr must be set"}},
		{"injector name and nameExpr", func(s *configv1alpha2.PackageVariantSet) {
			tpl(s).Injectors = []configv1alpha2.InjectionSelectorTemplate{{Name: ptr("a"), NameExpr: ptr("'a'")}}
		}, []string{"spec.targets[0].template.injectors[0]: Invalid value: \"\": exactly one of name and nameExpr must be set"}},
		{"injector without name", func(s *configv1alpha2.PackageVariantSet) {
			tpl(s).Injectors = []configv1alpha2.InjectionSelectorTemplate{{Kind: ptr("ConfigMap")}}
		}, []string{"spec.targets[0].template.injectors[0]: Invalid value: \"\": exactly one of name and nameExpr must be set"}},
		{"function without image", func(s *configv1alpha2.PackageVariantSet) {
			tpl(s).Pipeline = &configv1alpha2.PipelineTemplate{Mutators: []configv1alpha2.FunctionTemplate{{Function: kptfilev1.Function{Name: "x"}}}}
		}, []string{"spec.targets[0].template.pipeline.mutators[0]: Invalid value: \"\": exactly one of image and exec must be set"}},
		{"function name with a dot", func(s *configv1alpha2.PackageVariantSet) {
			tpl(s).Pipeline = &configv1alpha2.PipelineTemplate{Validators: []configv1alpha2.FunctionTemplate{{Function: kptfilev1.Function{Name: "a.b", Image: "kubeval"}}}}
		}, []string{"spec.targets[0].template.pipeline.validators[0].name: Invalid value: \"a.b\": function names must not contain '.'"}},
		{"reserved package context key", func(s *configv1alpha2.PackageVariantSet) {
			tpl(s).PackageContext = &configv1alpha2.PackageContextTemplate{Data: map[string]string{"package-path": "x"}}
		}, []string{"spec.targets[0].template.packageContext.data[package-path]: Invalid value: \"package-path\": the key is reserved"}},
		{"CEL syntax error", func(s *configv1alpha2.PackageVariantSet) {
			tpl(s).LabelExprs = []configv1alpha2.MapExpr{{Key: ptr("a"), ValueExpr: ptr("repository.labels[")}}
		}, []string{"spec.targets[0].template.labelExprs[0].valueExpr: Invalid value: \"repository.labels[\": ERROR: <input>:1:19: Syntax error"}},
		{"CEL undeclared variable", func(s *configv1alpha2.PackageVariantSet) {
			tpl(s).LabelExprs = []configv1alpha2.MapExpr{{Key: ptr("a"), ValueExpr: ptr("cluster.name")}}
		}, []string{"undeclared reference to 'cluster'"}},
		{"repoExpr cannot read repository", func(s *configv1alpha2.PackageVariantSet) {
			tpl(s).Downstream = &configv1alpha2.DownstreamTemplate{RepoExpr: ptr("repository.name")}
		}, []string{"spec.targets[0].template.downstream.repoExpr: Invalid value: \"repository.name\": ERROR: <input>:1:1: undeclared reference to 'repository'"}},
		{"expression not a string", func(s *configv1alpha2.PackageVariantSet) {
			tpl(s).Downstream = &configv1alpha2.DownstreamTemplate{PackageExpr: ptr("1 + 2")}
		}, []string{"spec.targets[0].template.downstream.packageExpr: Invalid value: \"1 + 2\": must evaluate to a string, not int"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pvs := readSet(t, "list.yaml")
			tc.edit(pvs)
			errs := newEvaluator(t).Validate(pvs)
			if len(errs) == 0 {
				t.Fatalf("no error, want %q", tc.want)
			}
			msg := errs.ToAggregate().Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("errors %q do not contain %q", msg, w)
				}
			}
		})
	}
}

// All errors are reported together.
func TestValidateReportsAll(t *testing.T) {
	pvs := readSet(t, "list.yaml")
	pvs.Spec.Upstream.Repo = ""
	pvs.Spec.Targets[0].Repositories[0].Name = ""
	pvs.Spec.Targets[0].Template = &configv1alpha2.PackageVariantTemplate{LabelExprs: []configv1alpha2.MapExpr{{Key: ptr("a"), ValueExpr: ptr("(")}}}
	if errs := newEvaluator(t).Validate(pvs); len(errs) != 3 {
		t.Fatalf("%d errors, want 3: %v", len(errs), errs.ToAggregate())
	}
}

func TestValidateSpecExamples(t *testing.T) {
	for _, f := range []string{"list.yaml", "selector.yaml", "cel.yaml", "namespaces.yaml", "teams.yaml"} {
		if errs := newEvaluator(t).Validate(readSet(t, f)); len(errs) > 0 {
			t.Errorf("%s: %v", f, errs.ToAggregate())
		}
	}
}
