package rollout

import (
	"testing"

	. "github.com/onsi/gomega"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

func TestHealthCheck(t *testing.T) {
	g := NewWithT(t)
	h := &configv1alpha1.RolloutHealth{
		Object: &configv1alpha1.HealthObject{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", NameExpr: "repository.name + '-apps'"},
		Expr:   "object.status.lastAppliedRevision.endsWith(revision.commit) && object.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
	}
	c, errs := CompileHealth(h)
	g.Expect(errs).To(BeEmpty())
	v := HealthVars{Repository: map[string]any{"name": "cluster-01", "labels": map[string]any{}}, Revision: map[string]any{"commit": "abc123", "revision": 2}}
	name, err := c.ObjectName(v)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(name).To(Equal("cluster-01-apps"))
	obj := func(rev, ready string) map[string]any {
		return map[string]any{"status": map[string]any{"lastAppliedRevision": "main@sha1:" + rev, "conditions": []any{map[string]any{"type": "Ready", "status": ready}}}}
	}
	ok, err := c.Healthy(obj("abc123", "True"), v)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	ok, _ = c.Healthy(obj("old999", "True"), v)
	g.Expect(ok).To(BeFalse(), "an object describing an older revision does not count")
	ok, _ = c.Healthy(obj("abc123", "False"), v)
	g.Expect(ok).To(BeFalse())
	_, err = c.Healthy(map[string]any{}, v)
	g.Expect(err).To(MatchError(ContainSubstring("spec.health.expr")), "an object without status is an error the message names")
}

func TestValidate_health(t *testing.T) {
	obj := &configv1alpha1.HealthObject{APIVersion: "v1", Kind: "ConfigMap", NameExpr: "repository.name"}
	for _, tc := range []struct {
		health configv1alpha1.RolloutHealth
		want   string
	}{
		{configv1alpha1.RolloutHealth{}, "spec.health: Invalid value: \"\": set exactly one of conditionType, expr and engine"},
		{configv1alpha1.RolloutHealth{ConditionType: "a", Expr: "true", Object: obj}, "set exactly one of conditionType, expr and engine"},
		{configv1alpha1.RolloutHealth{ConditionType: "a", Engine: configv1alpha1.HealthEngineFlux}, "set exactly one of conditionType, expr and engine"},
		{configv1alpha1.RolloutHealth{Engine: configv1alpha1.HealthEngineFlux}, ""},
		{configv1alpha1.RolloutHealth{Engine: "ArgoCD"}, "spec.health.engine: Unsupported value: \"ArgoCD\": supported values: \"Flux\""},
		{configv1alpha1.RolloutHealth{Expr: "true"}, "expr and object go together"},
		{configv1alpha1.RolloutHealth{Expr: "object.data.x ==", Object: obj}, "spec.health.expr: Invalid value: \"object.data.x ==\""},
		{configv1alpha1.RolloutHealth{Expr: "'yes'", Object: obj}, "spec.health.expr: Invalid value: \"'yes'\": must evaluate to a bool"},
		{configv1alpha1.RolloutHealth{Expr: "true", Object: &configv1alpha1.HealthObject{APIVersion: "v1", Kind: "ConfigMap", NameExpr: "repositry.name"}}, "spec.health.object.nameExpr: Invalid value: \"repositry.name\": ERROR: <input>:1:1: undeclared reference to 'repositry'"},
	} {
		errs := Validate(&configv1alpha1.PackageRolloutSpec{Health: &tc.health})
		if tc.want == "" {
			NewWithT(t).Expect(errs).To(BeEmpty())
			continue
		}
		NewWithT(t).Expect(errs.ToAggregate()).To(MatchError(ContainSubstring(tc.want)))
	}
}
