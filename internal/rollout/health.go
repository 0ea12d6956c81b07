package rollout

import (
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// healthCostLimit bounds the work of one health expression.
const healthCostLimit = 1_000_000

// HealthVars are what health expressions read besides the object.
type HealthVars struct {
	// Repository: name, namespace, labels, annotations.
	Repository map[string]any
	// Revision: name, package, workspace, revision, commit.
	Revision map[string]any
}

// HealthCheck is a rollout's compiled health expression and object name.
type HealthCheck struct {
	name, expr cel.Program
}

var (
	healthEnvOnce sync.Once
	healthEnv     *cel.Env
	healthEnvErr  error
	checks        sync.Map // string (nameExpr + "\x00" + expr) -> *HealthCheck
)

func env() (*cel.Env, error) {
	healthEnvOnce.Do(func() {
		healthEnv, healthEnvErr = cel.NewEnv(
			cel.Variable("object", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("repository", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("revision", cel.MapType(cel.StringType, cel.DynType)),
			cel.CrossTypeNumericComparisons(true),
			ext.Strings(ext.StringsVersion(2)),
			ext.Lists(ext.ListsVersion(3)),
		)
	})
	return healthEnv, healthEnvErr
}

// CompileHealth compiles a health expression and its object's name
// expression, naming the field of an error. It returns nil for health by
// condition.
func CompileHealth(h *configv1alpha1.RolloutHealth) (*HealthCheck, field.ErrorList) {
	if h == nil || h.Expr == "" || h.Object == nil {
		return nil, nil
	}
	key := h.Object.NameExpr + "\x00" + h.Expr
	if c, ok := checks.Load(key); ok {
		return c.(*HealthCheck), nil
	}
	e, err := env()
	if err != nil {
		return nil, field.ErrorList{field.InternalError(field.NewPath("spec", "health"), err)}
	}
	var errs field.ErrorList
	compile := func(p *field.Path, src string, want *cel.Type) cel.Program {
		ast, iss := e.Compile(src)
		if iss.Err() != nil {
			errs = append(errs, field.Invalid(p, src, iss.Err().Error()))
			return nil
		}
		if !ast.OutputType().IsExactType(want) && !ast.OutputType().IsExactType(cel.DynType) {
			errs = append(errs, field.Invalid(p, src, fmt.Sprintf("must evaluate to a %s, not %s", want, ast.OutputType())))
			return nil
		}
		prg, err := e.Program(ast, cel.CostLimit(healthCostLimit))
		if err != nil {
			errs = append(errs, field.Invalid(p, src, err.Error()))
		}
		return prg
	}
	c := &HealthCheck{
		name: compile(field.NewPath("spec", "health", "object", "nameExpr"), h.Object.NameExpr, cel.StringType),
		expr: compile(field.NewPath("spec", "health", "expr"), h.Expr, cel.BoolType),
	}
	if len(errs) > 0 {
		return nil, errs
	}
	checks.Store(key, c)
	return c, nil
}

// ObjectName is the name of a target's health object.
func (c *HealthCheck) ObjectName(v HealthVars) (string, error) {
	out, _, err := c.name.Eval(map[string]any{"repository": v.Repository, "revision": v.Revision, "object": map[string]any{}})
	if err != nil {
		return "", fmt.Errorf("spec.health.object.nameExpr: %w", err)
	}
	s, ok := out.Value().(string)
	if !ok || s == "" {
		return "", fmt.Errorf("spec.health.object.nameExpr: gave %v, not a name", out.Value())
	}
	return s, nil
}

// Healthy evaluates the health expression on a target's object.
func (c *HealthCheck) Healthy(object map[string]any, v HealthVars) (bool, error) {
	out, _, err := c.expr.Eval(map[string]any{"object": object, "repository": v.Repository, "revision": v.Revision})
	if err != nil {
		return false, fmt.Errorf("spec.health.expr: %w", err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("spec.health.expr: gave %v, not true or false", out.Value())
	}
	return b, nil
}
