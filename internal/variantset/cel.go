package variantset

import (
	"context"
	"errors"
	"fmt"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/cel/library"
)

// Names of the variables of template expressions.
const (
	VarRepoDefault    = "repoDefault"
	VarPackageDefault = "packageDefault"
	VarUpstream       = "upstream"
	VarRepository     = "repository"
	VarTarget         = "target"
)

// DefaultCostLimit bounds the work one expression may do (the per-call limit
// Kubernetes uses for CRD validation rules). An expression that exceeds it
// fails with an error instead of stalling the controller.
const DefaultCostLimit = 1_000_000

// Evaluator compiles template expressions once and evaluates them with a
// cost limit. It is safe for concurrent use; one Evaluator is shared by all
// reconciles so a fleet of sets compiles each distinct expression once.
type Evaluator struct {
	costLimit uint64
	// full declares every variable; noRepo all but repository (for
	// downstream.repoExpr, which finds the repository).
	full, noRepo *cel.Env

	mu    sync.RWMutex
	cache map[programKey]*program
}

type programKey struct {
	expr   string
	noRepo bool
}

// program is a compiled expression and the variables it reads.
type program struct {
	prg cel.Program
	// usesUpstream is true when the expression reads upstream, so that an
	// offline expansion without an upstream can say what is missing.
	usesUpstream bool
}

// NewEvaluator returns an Evaluator with the given cost limit
// (DefaultCostLimit when 0).
func NewEvaluator(costLimit uint64) (*Evaluator, error) {
	if costLimit == 0 {
		costLimit = DefaultCostLimit
	}
	full, err := newEnv(true)
	if err != nil {
		return nil, err
	}
	noRepo, err := newEnv(false)
	if err != nil {
		return nil, err
	}
	return &Evaluator{costLimit: costLimit, full: full, noRepo: noRepo, cache: map[programKey]*program{}}, nil
}

// newEnv is the CEL environment of template expressions: standard CEL, the
// cel-go string, set, list and encoder extensions and the Kubernetes
// libraries (regex, lists, URLs, quantities, IPs, CIDRs, semver, formats).
//
// upstream, target and repository are typed with the fields expressions
// may read, so a misspelt field (repository.lables) is a compile error at
// validation, not a failure on some target later.
func newEnv(withRepository bool) (*cel.Env, error) {
	meta, target, upstream := metaDeclTypes()
	opts := []cel.EnvOption{
		cel.Variable(VarRepoDefault, cel.StringType),
		cel.Variable(VarPackageDefault, cel.StringType),
		cel.Variable(VarUpstream, upstream.CelType()),
		cel.Variable(VarTarget, target.CelType()),
		cel.HomogeneousAggregateLiterals(),
		cel.CrossTypeNumericComparisons(true),
		cel.DefaultUTCTimeZone(true),
		ext.Strings(ext.StringsVersion(2)),
		ext.Sets(),
		ext.Encoders(),
		ext.TwoVarComprehensions(),
		ext.Lists(ext.ListsVersion(3)),
		library.URLs(),
		library.Regex(),
		library.Lists(),
		library.Quantity(),
		library.IP(),
		library.CIDR(),
		library.Format(),
		library.SemverLib(library.SemverVersion(1)),
	}
	if withRepository {
		opts = append(opts, cel.Variable(VarRepository, meta.CelType()))
	}
	base, err := cel.NewEnv()
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment: %w", err)
	}
	typeOpts, err := apiservercel.NewDeclTypeProvider(meta, target, upstream).EnvOptions(base.CELTypeProvider())
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment: %w", err)
	}
	env, err := cel.NewEnv(append(opts, typeOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment: %w", err)
	}
	return env, nil
}

// metaDeclTypes are the types of what expressions see of an object
// (metaVars: name, namespace, labels, annotations), of a target, which
// also has the packageName of a repository list entry, and of the
// upstream, which also has its repo, package and revision (upstreamVars).
func metaDeclTypes() (meta, target, upstream *apiservercel.DeclType) {
	fields := func(extra ...string) map[string]*apiservercel.DeclField {
		stringMap := apiservercel.NewMapType(apiservercel.StringType, apiservercel.StringType, -1)
		f := map[string]*apiservercel.DeclField{
			"name":        apiservercel.NewDeclField("name", apiservercel.StringType, true, nil, nil),
			"namespace":   apiservercel.NewDeclField("namespace", apiservercel.StringType, true, nil, nil),
			"labels":      apiservercel.NewDeclField("labels", stringMap, true, nil, nil),
			"annotations": apiservercel.NewDeclField("annotations", stringMap, true, nil, nil),
		}
		for _, e := range extra {
			f[e] = apiservercel.NewDeclField(e, apiservercel.StringType, false, nil, nil)
		}
		return f
	}
	return apiservercel.NewObjectType("scion.ObjectMetadata", fields()), apiservercel.NewObjectType("scion.Target", fields("packageName", "repo", "package")),
		apiservercel.NewObjectType("scion.Upstream", fields("repo", "package", "revision"))
}

// Compile compiles expr (cached). noRepo compiles it without the
// repository variable, as downstream.repoExpr is.
func (e *Evaluator) Compile(expr string, noRepo bool) (*program, error) {
	key := programKey{expr: expr, noRepo: noRepo}
	e.mu.RLock()
	p, ok := e.cache[key]
	e.mu.RUnlock()
	if ok {
		return p, nil
	}
	env := e.full
	if noRepo {
		env = e.noRepo
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if t := ast.OutputType(); !t.IsAssignableType(cel.StringType) {
		return nil, fmt.Errorf("must evaluate to a string, not %s", t)
	}
	prg, err := env.Program(ast, cel.CostLimit(e.costLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, err
	}
	p = &program{prg: prg}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name == VarUpstream {
			p.usesUpstream = true
		}
	}
	e.mu.Lock()
	if len(e.cache) > 10000 {
		// Bounded: a controller fed ever-changing expressions starts over
		// rather than growing without end.
		e.cache = map[programKey]*program{}
	}
	e.cache[key] = p
	e.mu.Unlock()
	return p, nil
}

// ErrNoUpstream is returned for an expression that reads upstream when no
// upstream PackageRevision is known (an offline expansion without one).
var ErrNoUpstream = errors.New("the expression uses upstream, but no upstream PackageRevision was given")

// ErrExpression wraps what evaluating an expression failed with (a
// missing key, a wrong type, the cost limit).
var ErrExpression = errors.New("the expression failed")

// classified is an error that errors.Is also matches with class, its
// message unchanged.
type classified struct {
	error
	class error
}

func (c classified) Is(target error) bool { return target == c.class }
func (c classified) Unwrap() error        { return c.error }

// EvalString evaluates expr with vars and returns its string value; errors
// are prefixed with path. When vars has no repository, expr is compiled
// without that variable (as downstream.repoExpr is), so reading it is an
// error.
func (e *Evaluator) EvalString(ctx context.Context, path *field.Path, expr string, vars map[string]any) (string, error) {
	_, hasRepo := vars[VarRepository]
	p, err := e.Compile(expr, !hasRepo)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if _, ok := vars[VarUpstream]; !ok && p.usesUpstream {
		return "", fmt.Errorf("%s: %w", path, ErrNoUpstream)
	}
	out, _, err := p.prg.ContextEval(ctx, vars)
	if err != nil {
		return "", classified{fmt.Errorf("%s: %w", path, err), ErrExpression}
	}
	s, ok := out.Value().(string)
	if !ok {
		return "", fmt.Errorf("%s: must evaluate to a string, not %s", path, out.Type())
	}
	return s, nil
}
