package variantset_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/variant"
	"github.com/scion-dev/scion/internal/variantset"
)

func readSet(t *testing.T, name string) *configv1alpha2.PackageVariantSet {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	pvs := &configv1alpha2.PackageVariantSet{}
	if err := yaml.UnmarshalStrict(data, pvs); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return pvs
}

func readObjects(t *testing.T, names ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := variant.ReadObjects(data)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		out = append(out, objs...)
	}
	return out
}

func upstream(t *testing.T) []variantset.UpstreamRevision {
	return []variantset.UpstreamRevision{{Object: readObjects(t, "upstream.yaml")[0], Revision: 1}}
}

func newEvaluator(t *testing.T) *variantset.Evaluator {
	t.Helper()
	e, err := variantset.NewEvaluator(0)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func expand(t *testing.T, pvs *configv1alpha2.PackageVariantSet, objects ...string) *variantset.Result {
	t.Helper()
	e := newEvaluator(t)
	if errs := e.Validate(pvs); len(errs) > 0 {
		t.Fatalf("validate: %v", errs.ToAggregate())
	}
	res, err := e.Expand(context.Background(), variantset.Input{Set: pvs, Upstreams: upstream(t), Source: &variantset.StaticSource{Objects: readObjects(t, objects...)}})
	if err != nil {
		t.Fatalf("expand: %v", err)
	}
	return res
}

func pairs(res *variantset.Result) []string {
	var out []string
	for _, pv := range res.Variants {
		out = append(out, pv.Spec.Downstream.Repo+"/"+pv.Spec.Downstream.Package)
	}
	return out
}

// The spec's repository list table: seven pairs.
func TestExpandRepositoryList(t *testing.T) {
	res := expand(t, readSet(t, "list.yaml"), "repositories.yaml")
	want := []string{"cluster-01/foo", "cluster-02/foo", "cluster-03/foo-a", "cluster-03/foo-b", "cluster-03/foo-c", "cluster-04/foo-a", "cluster-04/foo-b"}
	if diff := cmp.Diff(want, pairs(res)); diff != "" {
		t.Fatalf("pairs (-want +got):\n%s", diff)
	}
	for _, pv := range res.Variants {
		if pv.Spec.Upstream.Repo != "example-repo" || pv.Spec.Upstream.Package != "foo" || pv.Spec.Upstream.Revision != "v1" {
			t.Errorf("%s: upstream %+v, want example-repo/foo v1", pv.Name, pv.Spec.Upstream)
		}
		if pv.Namespace != "default" || pv.Spec.AdoptionPolicy != configv1alpha1.AdoptionPolicyAdoptNone || pv.Spec.DeletionPolicy != configv1alpha1.DeletionPolicyDelete {
			t.Errorf("%s: namespace %q, policies %q/%q", pv.Name, pv.Namespace, pv.Spec.AdoptionPolicy, pv.Spec.DeletionPolicy)
		}
		if len(pv.Finalizers) != 1 || pv.Finalizers[0] != configv1alpha1.PackageVariantFinalizer {
			t.Errorf("%s: finalizers %v", pv.Name, pv.Finalizers)
		}
	}
	if res.Variants[2].Name != "example-cluster-03-foo-a" {
		t.Errorf("name %q, want the identity example-cluster-03-foo-a", res.Variants[2].Name)
	}
}

// The spec's repositorySelector table: nine pairs (cluster-04 is selected
// by both targets, with different package names).
func TestExpandRepositorySelector(t *testing.T) {
	res := expand(t, readSet(t, "selector.yaml"), "repositories.yaml")
	want := []string{"cluster-01/foo", "cluster-03/foo", "cluster-04/foo", "cluster-02/foo-a", "cluster-02/foo-b", "cluster-02/foo-c", "cluster-04/foo-a", "cluster-04/foo-b", "cluster-04/foo-c"}
	if diff := cmp.Diff(want, pairs(res)); diff != "" {
		t.Fatalf("pairs (-want +got):\n%s", diff)
	}
}

// The spec's CEL example: labels and injectors vary by repository.
func TestExpandCELLabelsAndInjectors(t *testing.T) {
	res := expand(t, readSet(t, "cel.yaml"), "repositories.yaml")
	type got struct {
		Pair, Org, Injector string
	}
	var out []got
	for _, pv := range res.Variants {
		if len(pv.Spec.Injectors) != 1 || len(pv.Spec.Labels) != 1 {
			t.Fatalf("%s: labels %v injectors %v", pv.Name, pv.Spec.Labels, pv.Spec.Injectors)
		}
		out = append(out, got{pv.Spec.Downstream.Repo + "/" + pv.Spec.Downstream.Package, pv.Spec.Labels["org"], pv.Spec.Injectors[0].Name})
	}
	want := []got{
		{"cluster-01/foo", "hr", "useast1-endpoints"},
		{"cluster-03/foo", "hr", "useast2-endpoints"},
		{"cluster-04/foo", "hr", "uswest1-endpoints"},
	}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// The spec's namespace example: three packages in one repository, with the
// template's static labels.
func TestExpandStaticLabels(t *testing.T) {
	res := expand(t, readSet(t, "namespaces.yaml"), "repositories.yaml")
	if diff := cmp.Diff([]string{"cluster-01/ns-1", "cluster-01/ns-2", "cluster-01/ns-3"}, pairs(res)); diff != "" {
		t.Fatalf("pairs (-want +got):\n%s", diff)
	}
	for _, pv := range res.Variants {
		if diff := cmp.Diff(map[string]string{"package-type": "namespace", "org": "hr"}, pv.Spec.Labels); diff != "" {
			t.Errorf("%s labels (-want +got):\n%s", pv.Name, diff)
		}
	}
}

// An objectSelector with a template deriving everything from the target,
// the repository and the upstream, and a pipeline function's configMapExprs.
func TestExpandObjectSelector(t *testing.T) {
	res := expand(t, readSet(t, "teams.yaml"), "repositories.yaml", "team-objects.yaml")
	if diff := cmp.Diff([]string{"cluster-01/foo-payroll", "cluster-04/foo-recruiting"}, pairs(res)); diff != "" {
		t.Fatalf("pairs (-want +got):\n%s", diff)
	}
	pv := res.Variants[1]
	if diff := cmp.Diff(map[string]string{"team": "recruiting"}, pv.Spec.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&configv1alpha1.PackageContext{Data: map[string]string{"org": "hr", "region": "uswest1"}}, pv.Spec.PackageContext); diff != "" {
		t.Errorf("packageContext (-want +got):\n%s", diff)
	}
	want := &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{{Image: "set-namespace", Name: "ns", ConfigMap: map[string]string{"namespace": "team-recruiting"}}}}
	if diff := cmp.Diff(want, pv.Spec.Pipeline); diff != "" {
		t.Errorf("pipeline (-want +got):\n%s", diff)
	}
}

func TestName(t *testing.T) {
	for _, tc := range []struct{ identity, want string }{
		{"my-pvs-prod-repo-my-package", "my-pvs-prod-repo-my-package"},
		// The spec's long example; the hash is `printf %s ID | sha1sum`.
		{"very-long-packagevariantset-name-very-long-repo-name-very-long-package-name", "very-long-packagevariantset-name-very-long-repo-name-v-967492f1"},
		// Exactly 63 characters: used as is.
		{strings.Repeat("a", 63), strings.Repeat("a", 63)},
		// A package path's slash cannot be in a name: replaced, and hashed
		// so team/app and team-app do not collide.
		{"set-repo-team/app", "set-repo-team-app-a241616a"},
	} {
		if got := variantset.Name(tc.identity); got != tc.want {
			t.Errorf("Name(%q) = %q, want %q", tc.identity, got, tc.want)
		}
	}
	if a, b := variantset.Name("set-repo-team/app"), variantset.Name("set-repo-team-app"); a == b {
		t.Errorf("two identities share the name %q", a)
	}
	long := variantset.Name(strings.Repeat("b", 64))
	if len(long) != 63 {
		t.Errorf("64-character identity gave %q (%d characters), want 63", long, len(long))
	}
}

func TestExpandLongNames(t *testing.T) {
	pvs := readSet(t, "namespaces.yaml")
	pvs.Name = "very-long-packagevariantset-name"
	pvs.Spec.Targets[0].Repositories[0].PackageNames = []string{"very-long-package-name"}
	objs := readObjects(t, "repositories.yaml")
	objs[0].SetName("very-long-repo-name")
	e := newEvaluator(t)
	res, err := e.Expand(context.Background(), variantset.Input{Set: pvs, Source: &variantset.StaticSource{Objects: objs}, Upstreams: upstream(t)})
	if err == nil {
		t.Fatalf("cluster-01 is not there any more, want an error, got %v", pairs(res))
	}
	pvs.Spec.Targets[0].Repositories[0].Name = "very-long-repo-name"
	res, err = e.Expand(context.Background(), variantset.Input{Set: pvs, Source: &variantset.StaticSource{Objects: objs}, Upstreams: upstream(t)})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Variants[0].Name; got != "very-long-packagevariantset-name-very-long-repo-name-v-967492f1" {
		t.Errorf("name %q", got)
	}
}

func TestExpandErrors(t *testing.T) {
	ctx := context.Background()
	objs := readObjects(t, "repositories.yaml", "team-objects.yaml")
	for _, tc := range []struct {
		name   string
		edit   func(*configv1alpha2.PackageVariantSet)
		noUp   bool
		errors []string
		is     error // the class of error, when it has one
		short  bool  // the message is a few hundred bytes at most
	}{{
		name:   "a listed repository that does not exist",
		edit:   func(s *configv1alpha2.PackageVariantSet) { s.Spec.Targets[0].Repositories[1].Name = "cluster-99" },
		errors: []string{`spec.targets[0].repositories[1].name: Repository "cluster-99" not found in namespace "default"`},
	}, {
		name: "a runtime error names the field",
		edit: func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Targets[0].Template = &configv1alpha2.PackageVariantTemplate{LabelExprs: []configv1alpha2.MapExpr{{Key: ptr("x"), ValueExpr: ptr("repository.labels['missing']")}}}
		},
		errors: []string{"spec.targets[0].template.labelExprs[0].valueExpr: no such key: missing"},
		is:     variantset.ErrExpression,
	}, {
		name: "an invalid label value",
		edit: func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Targets[0].Template = &configv1alpha2.PackageVariantTemplate{LabelExprs: []configv1alpha2.MapExpr{{Key: ptr("x"), ValueExpr: ptr("'not a value!'")}}}
		},
		errors: []string{`spec.targets[0].template.labels[x]: value "not a value!"`},
	}, {
		name: "a long label value is quoted in part",
		edit: func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Targets[0].Template = &configv1alpha2.PackageVariantTemplate{LabelExprs: []configv1alpha2.MapExpr{{Key: ptr("x"), ValueExpr: ptr("'" + strings.Repeat("y", 70000) + "'")}}}
		},
		errors: []string{`spec.targets[0].template.labels[x]: value "yyyyyyyyyy`, `... (69900 bytes more)": must be no more than 63`},
		short:  true,
	}, {
		name: "a reserved package context key from an expression",
		edit: func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Targets[0].Template = &configv1alpha2.PackageVariantTemplate{PackageContext: &configv1alpha2.PackageContextTemplate{DataExprs: []configv1alpha2.MapExpr{{KeyExpr: ptr("'na' + 'me'"), Value: ptr("x")}}}}
		},
		errors: []string{"spec.targets[0].template.packageContext.data[name]: Invalid value: \"name\": the key is reserved"},
	}, {
		name: "two targets generating the same downstream",
		edit: func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Targets = append(s.Spec.Targets, configv1alpha2.Target{Repositories: []configv1alpha2.RepositoryTarget{{Name: "cluster-01"}}})
		},
		errors: []string{"spec.targets[1]: downstream cluster-01/foo is also generated by spec.targets[0]"},
		is:     variantset.ErrDuplicateDownstream,
	}, {
		name: "upstream used but not given",
		noUp: true,
		edit: func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Targets[0].Template = &configv1alpha2.PackageVariantTemplate{Downstream: &configv1alpha2.DownstreamTemplate{PackageExpr: ptr("upstream.name")}}
		},
		errors: []string{"spec.targets[0].template.downstream.packageExpr: the expression uses upstream, but no upstream PackageRevision was given"},
	}, {
		name: "errors of all targets are reported together",
		edit: func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Targets[0].Repositories[0].Name = "cluster-98"
			s.Spec.Targets[0].Repositories[3].Name = "cluster-97"
		},
		errors: []string{`spec.targets[0].repositories[0].name: Repository "cluster-98"`, `spec.targets[0].repositories[3].name: Repository "cluster-97"`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pvs := readSet(t, "list.yaml")
			tc.edit(pvs)
			e := newEvaluator(t)
			if errs := e.Validate(pvs); len(errs) > 0 {
				t.Fatalf("validate: %v", errs.ToAggregate())
			}
			in := variantset.Input{Set: pvs, Source: &variantset.StaticSource{Objects: objs}}
			if !tc.noUp {
				in.Upstreams = upstream(t)
			}
			res, err := e.Expand(ctx, in)
			if err == nil {
				t.Fatalf("want errors %q, got %v", tc.errors, pairs(res))
			}
			for _, want := range tc.errors {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if tc.short && len(err.Error()) > 600 {
				t.Errorf("the message is %d bytes long", len(err.Error()))
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", err, tc.is)
			}
		})
	}
}

// Templates see only metadata: reading an object's spec is an error, at
// validation already, as is a misspelt field.
func TestExpandNothingLeaks(t *testing.T) {
	e := newEvaluator(t)
	for expr, want := range map[string]string{
		"target.spec.secret":          "undefined field 'spec'",
		"repository.lables['region']": "undefined field 'lables'",
		"upstream.metadata.name":      "undefined field 'metadata'",
	} {
		pvs := readSet(t, "teams.yaml")
		pvs.Spec.Targets[0].Template.LabelExprs[0].ValueExpr = ptr(expr)
		errs := e.Validate(pvs)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "spec.targets[0].template.labelExprs[0].valueExpr: Invalid value: \""+expr+"\": ERROR: <input>:1:") || !strings.Contains(errs[0].Error(), want) {
			t.Errorf("%s: want a validation error naming %s, got %v", expr, want, errs)
		}
		_, err := e.Expand(context.Background(), variantset.Input{Set: pvs, Upstreams: upstream(t), Source: &variantset.StaticSource{Objects: readObjects(t, "repositories.yaml", "team-objects.yaml")}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Expand: want %s, got %v", expr, want, err)
		}
	}
}

// An annotation that holds a copy of the object (last-applied-configuration,
// which for a Secret holds its data) is not visible to templates; the
// object's other annotations are.
func TestExpandNoObjectCopies(t *testing.T) {
	objs := readObjects(t, "repositories.yaml", "team-objects.yaml")
	for _, o := range objs {
		if o.GetKind() == "Team" {
			a := o.GetAnnotations()
			a["kubectl.kubernetes.io/last-applied-configuration"] = `{"stringData":{"password":"hunter2"}}`
			a["tool.example.com/last-applied-configuration"] = `{"spec":{"secret":"do-not-leak"}}`
			o.SetAnnotations(a)
		}
	}
	e := newEvaluator(t)
	for _, key := range []string{"kubectl.kubernetes.io/last-applied-configuration", "tool.example.com/last-applied-configuration"} {
		pvs := readSet(t, "teams.yaml")
		pvs.Spec.Targets[0].Template.LabelExprs[0].ValueExpr = ptr("target.annotations['" + key + "']")
		_, err := e.Expand(context.Background(), variantset.Input{Set: pvs, Upstreams: upstream(t), Source: &variantset.StaticSource{Objects: objs}})
		if err == nil || !strings.Contains(err.Error(), "no such key: "+key) {
			t.Errorf("%s: want no such key, got %v", key, err)
		}
	}
	// Only the ordinary annotation is there to read.
	pvs := readSet(t, "teams.yaml")
	pvs.Spec.Targets[0].Template.LabelExprs[0].ValueExpr = ptr("string(size(target.annotations)) + '-' + target.annotations['bigco.com/cluster']")
	res, err := e.Expand(context.Background(), variantset.Input{Set: pvs, Upstreams: upstream(t), Source: &variantset.StaticSource{Objects: objs}})
	if err != nil {
		t.Fatal(err)
	}
	for _, pv := range res.Variants {
		if v := pv.Spec.Labels["team"]; v != "1-cluster-01" && v != "1-cluster-04" {
			t.Errorf("the template saw %q, want one annotation", v)
		}
	}
}

// A selector matching nothing is reported, not an error.
func TestExpandEmptySelector(t *testing.T) {
	pvs := readSet(t, "selector.yaml")
	pvs.Spec.Targets[1].RepositorySelector.MatchLabels = map[string]string{"region": "mars"}
	res := expand(t, pvs, "repositories.yaml")
	if len(res.Variants) != 3 {
		t.Errorf("%d variants, want the first target's 3", len(res.Variants))
	}
	if diff := cmp.Diff([]string{"spec.targets[1].repositorySelector selects no Repository"}, res.Empty); diff != "" {
		t.Errorf("empty (-want +got):\n%s", diff)
	}
}

// A runaway expression fails on the cost limit instead of running on.
func TestCostLimit(t *testing.T) {
	e, err := variantset.NewEvaluator(10_000)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]any{variantset.VarRepoDefault: "r", variantset.VarPackageDefault: "p", variantset.VarTarget: map[string]any{}, variantset.VarRepository: map[string]any{}}
	l := "[" + strings.TrimSuffix(strings.Repeat("1,", 50), ",") + "]"
	expr := fmt.Sprintf("string(%s.map(a, %s.map(b, %s.map(c, a+b+c))).size())", l, l, l)
	_, err = e.EvalString(context.Background(), nil, expr, vars)
	if err == nil || !strings.Contains(err.Error(), "cost limit") {
		t.Fatalf("want a cost limit error, got %v", err)
	}
	if got, err := e.EvalString(context.Background(), nil, "repoDefault + '-' + packageDefault", vars); err != nil || got != "r-p" {
		t.Fatalf("a cheap expression: %q, %v", got, err)
	}
}

func ptr(s string) *string { return &s }

// template.dependencies is copied to each variant, a copy of its own.
func TestExpandDependencies(t *testing.T) {
	set := readSet(t, "list.yaml")
	for i := range set.Spec.Targets {
		if set.Spec.Targets[i].Template == nil {
			set.Spec.Targets[i].Template = &configv1alpha2.PackageVariantTemplate{}
		}
		set.Spec.Targets[i].Template.Dependencies = &configv1alpha1.Dependencies{Install: true, Overrides: []configv1alpha1.DependencyOverride{{Name: "lib", Version: ">=2"}}}
	}
	res := expand(t, set, "repositories.yaml")
	for _, pv := range res.Variants {
		d := pv.Spec.Dependencies
		if d == nil || !d.Install || len(d.Overrides) != 1 || d.Overrides[0].Version != ">=2" {
			t.Fatalf("%s: dependencies %+v", pv.Name, d)
		}
	}
	res.Variants[0].Spec.Dependencies.Overrides[0].Version = "changed"
	if res.Variants[1].Spec.Dependencies.Overrides[0].Version != ">=2" {
		t.Fatal("the variants share the template's dependencies")
	}
}

// Porch's manifests apply as written: a repository target's CEL names
// in Porch (target.repo, target.package) are Scion's target.name and
// target.packageName.
func TestExpandPorchTargetNames(t *testing.T) {
	res := expand(t, readSet(t, "porch-names.yaml"), "repositories.yaml")
	got := map[string]map[string]string{}
	for _, pv := range res.Variants {
		got[pv.Spec.Downstream.Repo+"/"+pv.Spec.Downstream.Package] = pv.Spec.Labels
	}
	if l := got["cluster-01/foo-a-copy"]; l["repo"] != "cluster-01" || l["same"] != "true" {
		t.Fatalf("the list target: %v (all: %v)", l, got)
	}
	for k, l := range got {
		if k != "cluster-01/foo-a-copy" && l["repo"] != strings.Split(k, "/")[0] {
			t.Errorf("%s: target.repo is %q", k, l["repo"])
		}
	}
	if len(got) < 2 {
		t.Fatalf("the selector target selected nothing: %v", got)
	}
}

// groupUpstreams are the PackageRevisions of group.yaml's upstreams, in
// its order.
func groupUpstreams(t *testing.T) []variantset.UpstreamRevision {
	var out []variantset.UpstreamRevision
	for i, o := range readObjects(t, "group-upstreams.yaml") {
		out = append(out, variantset.UpstreamRevision{Object: o, Revision: []int{2, 1, 7}[i]})
	}
	return out
}

// A group of three upstreams over three selected repositories: one variant
// per repository and upstream, each deriving from its own upstream, named
// by its downstream package (the upstream's), with the same template and
// the upstream's package and revision in reach of expressions.
func TestExpandGroup(t *testing.T) {
	e := newEvaluator(t)
	pvs := readSet(t, "group.yaml")
	if errs := e.Validate(pvs); len(errs) > 0 {
		t.Fatalf("validate: %v", errs.ToAggregate())
	}
	src := &variantset.StaticSource{Objects: readObjects(t, "repositories.yaml")}
	res, err := e.Expand(context.Background(), variantset.Input{Set: pvs, Upstreams: groupUpstreams(t), Source: src})
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ Name, Downstream, Upstream, Labels, Region string }
	var got []row
	for _, pv := range res.Variants {
		u := pv.Spec.Upstream
		got = append(got, row{pv.Name, pv.Spec.Downstream.Repo + "/" + pv.Spec.Downstream.Package,
			fmt.Sprintf("%s/%s@%s%s", u.Repo, u.Package, u.Revision, u.Tag),
			fmt.Sprint(pv.Spec.Labels), pv.Spec.PackageContext.Data["region"]})
	}
	want := []row{
		{"platform-cluster-01-app", "cluster-01/app", "blueprints/app@v2", "map[team:platform upstream-package:app upstream-revision:v2]", "useast1"},
		{"platform-cluster-01-app-config", "cluster-01/app-config", "blueprints/app-config@v1", "map[team:platform upstream-package:app-config upstream-revision:v1]", "useast1"},
		{"platform-cluster-01-app-policy", "cluster-01/app-policy", "policies/app-policy@stable", "map[team:platform upstream-package:app-policy upstream-revision:v7]", "useast1"},
		{"platform-cluster-03-app", "cluster-03/app", "blueprints/app@v2", "map[team:platform upstream-package:app upstream-revision:v2]", "useast2"},
		{"platform-cluster-03-app-config", "cluster-03/app-config", "blueprints/app-config@v1", "map[team:platform upstream-package:app-config upstream-revision:v1]", "useast2"},
		{"platform-cluster-03-app-policy", "cluster-03/app-policy", "policies/app-policy@stable", "map[team:platform upstream-package:app-policy upstream-revision:v7]", "useast2"},
		{"platform-cluster-04-app", "cluster-04/app", "blueprints/app@v2", "map[team:platform upstream-package:app upstream-revision:v2]", "uswest1"},
		{"platform-cluster-04-app-config", "cluster-04/app-config", "blueprints/app-config@v1", "map[team:platform upstream-package:app-config upstream-revision:v1]", "uswest1"},
		{"platform-cluster-04-app-policy", "cluster-04/app-policy", "policies/app-policy@stable", "map[team:platform upstream-package:app-policy upstream-revision:v7]", "uswest1"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("variants (-want +got):\n%s", diff)
	}

	// Removing an upstream and adding another leaves the other variants'
	// names (and specs) as they were: names follow the downstream.
	pvs.Spec.Upstreams = append(pvs.Spec.Upstreams[1:], configv1alpha1.Upstream{Repo: "blueprints", Package: "app-dashboards", Revision: "3"})
	ups := append(groupUpstreams(t)[1:], variantset.UpstreamRevision{Object: &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "blueprints.app-dashboards.v3"}}}, Revision: 3})
	res2, err := e.Expand(context.Background(), variantset.Input{Set: pvs, Upstreams: ups, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]*configv1alpha1.PackageVariant{}
	for _, pv := range res.Variants {
		before[pv.Name] = pv
	}
	var names []string
	for _, pv := range res2.Variants {
		names = append(names, pv.Name)
		if old, ok := before[pv.Name]; ok && !cmp.Equal(old.Spec, pv.Spec) {
			t.Errorf("%s changed: %s", pv.Name, cmp.Diff(old.Spec, pv.Spec))
		}
	}
	wantNames := []string{"platform-cluster-01-app-config", "platform-cluster-01-app-policy", "platform-cluster-01-app-dashboards",
		"platform-cluster-03-app-config", "platform-cluster-03-app-policy", "platform-cluster-03-app-dashboards",
		"platform-cluster-04-app-config", "platform-cluster-04-app-policy", "platform-cluster-04-app-dashboards"}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("names after the change (-want +got):\n%s", diff)
	}

	// Offline without the upstreams' PackageRevisions, an expression
	// reading upstream says what is missing.
	if _, err := e.Expand(context.Background(), variantset.Input{Set: pvs, Source: src}); !errors.Is(err, variantset.ErrNoUpstream) {
		t.Errorf("without upstreams: %v, want ErrNoUpstream", err)
	}
}

// What a group cannot be: each refused naming the field.
func TestValidateGroup(t *testing.T) {
	e := newEvaluator(t)
	for _, tc := range []struct {
		name string
		edit func(*configv1alpha2.PackageVariantSet)
		want string
	}{
		{"the same package twice", func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Upstreams = append(s.Spec.Upstreams, configv1alpha1.Upstream{Repo: "other", Package: "app", Revision: "1"})
		}, `spec.upstreams[3].package: Duplicate value: "app"`},
		{"upstream and upstreams", func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Upstream = &configv1alpha1.Upstream{Repo: "blueprints", Package: "app", Revision: "1"}
		}, "spec: Invalid value: \"\": exactly one of upstream and upstreams must be set"},
		{"neither", func(s *configv1alpha2.PackageVariantSet) { s.Spec.Upstreams = nil }, "spec.upstream: Required value"},
		{"more than 20", func(s *configv1alpha2.PackageVariantSet) {
			for i := range 18 {
				s.Spec.Upstreams = append(s.Spec.Upstreams, configv1alpha1.Upstream{Repo: "blueprints", Package: fmt.Sprintf("extra-%d", i), Revision: "1"})
			}
		}, "spec.upstreams: Too many: 21: must have at most 20 items"},
		{"package names in a group", func(s *configv1alpha2.PackageVariantSet) {
			s.Spec.Targets[0].RepositorySelector.PackageNames = []string{"a", "b"}
		}, "spec.targets[0].repositorySelector.packageNames: Forbidden: with spec.upstreams"},
		{"an invalid upstream", func(s *configv1alpha2.PackageVariantSet) { s.Spec.Upstreams[1].Package = "../up" }, "spec.upstreams[1].package"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pvs := readSet(t, "group.yaml")
			tc.edit(pvs)
			errs := e.Validate(pvs)
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Errorf("errors %v, want %q", errs.ToAggregate(), tc.want)
			}
		})
	}

	// One downstream package for the whole group is two variants writing
	// one package: refused naming both.
	pvs := readSet(t, "group.yaml")
	pvs.Spec.Targets[0].Template.Downstream = &configv1alpha2.DownstreamTemplate{Package: ptr("platform")}
	_, err := e.Expand(context.Background(), variantset.Input{Set: pvs, Upstreams: groupUpstreams(t), Source: &variantset.StaticSource{Objects: readObjects(t, "repositories.yaml")}})
	if !errors.Is(err, variantset.ErrDuplicateDownstream) || !strings.Contains(err.Error(), "spec.targets[0] for spec.upstreams[1]: downstream cluster-01/platform is also generated by spec.targets[0] for spec.upstreams[0]") {
		t.Errorf("one package for the group: %v", err)
	}
}
