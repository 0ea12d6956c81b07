package builtin

import (
	"context"
	"fmt"
	"math/big"
	"sort"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/scion-dev/scion/internal/merge3"
)

// StarlarkMaxSteps bounds a starlark program, so a runaway loop fails
// instead of stalling the pipeline.
const StarlarkMaxSteps = 50_000_000

// starlarkRun runs the program in the functionConfig's source (kind
// StarlarkRun). As in kpt, the program sees ctx.resource_list, a dict with
// "items" (the resources as dicts) and "functionConfig" (whose "params"
// carry arguments), and edits it in place.
func starlarkRun(ctx context.Context, rl *framework.ResourceList) error {
	if rl.FunctionConfig == nil {
		return fail(rl, "starlark: a functionConfig (kind StarlarkRun) with source is required")
	}
	src := rl.FunctionConfig.Field("source")
	if src == nil || yaml.GetValue(src.Value) == "" {
		return fail(rl, "starlark: functionConfig source is required")
	}
	items := starlark.NewList(nil)
	for _, n := range rl.Items {
		v, err := nodeToStarlark(n)
		if err != nil {
			return err
		}
		if err := items.Append(v); err != nil {
			return err
		}
	}
	config, err := nodeToStarlark(rl.FunctionConfig)
	if err != nil {
		return err
	}
	resourceList := starlark.NewDict(2)
	_ = resourceList.SetKey(starlark.String("items"), items)
	_ = resourceList.SetKey(starlark.String("functionConfig"), config)
	predeclared := starlark.StringDict{
		"ctx": starlarkstruct.FromStringDict(starlark.String("ctx"), starlark.StringDict{"resource_list": resourceList}),
	}
	thread := &starlark.Thread{Name: "starlark", Print: func(_ *starlark.Thread, msg string) { info(rl, "starlark: %s", msg) }}
	thread.SetMaxExecutionSteps(StarlarkMaxSteps)
	stop := context.AfterFunc(ctx, func() { thread.Cancel("context done") })
	defer stop()
	if _, err := starlark.ExecFileOptions(&syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true}, thread, "source", yaml.GetValue(src.Value), predeclared); err != nil {
		if ee, ok := err.(*starlark.EvalError); ok {
			return fail(rl, "starlark: %s", ee.Backtrace())
		}
		return fail(rl, "starlark: %v", err)
	}
	outItems, found, err := resourceList.Get(starlark.String("items"))
	if err != nil || !found {
		return fail(rl, "starlark: the program removed ctx.resource_list[\"items\"]")
	}
	list, ok := outItems.(*starlark.List)
	if !ok {
		return fail(rl, "starlark: ctx.resource_list[\"items\"] must stay a list, not %s", outItems.Type())
	}
	out := make([]*yaml.RNode, 0, list.Len())
	for i := 0; i < list.Len(); i++ {
		v, err := starlarkToGo(list.Index(i))
		if err != nil {
			return fail(rl, "starlark: item %d: %v", i, err)
		}
		n, err := yaml.FromMap(map[string]any{"x": v})
		if err != nil {
			return fail(rl, "starlark: item %d: %v", i, err)
		}
		n = n.Field("x").Value
		if n.YNode().Kind != yaml.MappingNode {
			return fail(rl, "starlark: item %d is not a resource", i)
		}
		// Unchanged resources keep their original node, comments and all.
		for _, orig := range rl.Items {
			if merge3.SameData(orig.YNode(), n.YNode()) {
				n = orig
				break
			}
		}
		out = append(out, n)
	}
	rl.Items = out
	return nil
}

func nodeToStarlark(n *yaml.RNode) (starlark.Value, error) {
	s, err := n.String()
	if err != nil {
		return nil, err
	}
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		return nil, err
	}
	return goToStarlark(v)
}

func goToStarlark(v any) (starlark.Value, error) {
	switch t := v.(type) {
	case nil:
		return starlark.None, nil
	case bool:
		return starlark.Bool(t), nil
	case int:
		return starlark.MakeInt(t), nil
	case int64:
		return starlark.MakeInt64(t), nil
	case uint64:
		return starlark.MakeUint64(t), nil
	case float64:
		return starlark.Float(t), nil
	case string:
		return starlark.String(t), nil
	case []any:
		l := make([]starlark.Value, 0, len(t))
		for _, e := range t {
			sv, err := goToStarlark(e)
			if err != nil {
				return nil, err
			}
			l = append(l, sv)
		}
		return starlark.NewList(l), nil
	case map[string]any:
		d := starlark.NewDict(len(t))
		for _, k := range sortedAnyKeys(t) {
			sv, err := goToStarlark(t[k])
			if err != nil {
				return nil, err
			}
			if err := d.SetKey(starlark.String(k), sv); err != nil {
				return nil, err
			}
		}
		return d, nil
	default:
		return nil, fmt.Errorf("cannot pass a %T to starlark", v)
	}
}

func starlarkToGo(v starlark.Value) (any, error) {
	switch t := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case starlark.Bool:
		return bool(t), nil
	case starlark.Int:
		if i, ok := t.Int64(); ok {
			return i, nil
		}
		return new(big.Int).Set(t.BigInt()).String(), nil
	case starlark.Float:
		return float64(t), nil
	case starlark.String:
		return string(t), nil
	case *starlark.List:
		out := make([]any, 0, t.Len())
		for i := 0; i < t.Len(); i++ {
			e, err := starlarkToGo(t.Index(i))
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		return out, nil
	case starlark.Tuple:
		out := make([]any, 0, len(t))
		for _, e := range t {
			g, err := starlarkToGo(e)
			if err != nil {
				return nil, err
			}
			out = append(out, g)
		}
		return out, nil
	case *starlark.Dict:
		out := make(map[string]any, t.Len())
		for _, item := range t.Items() {
			k, ok := item[0].(starlark.String)
			if !ok {
				return nil, fmt.Errorf("dict keys must be strings, not %s", item[0].Type())
			}
			e, err := starlarkToGo(item[1])
			if err != nil {
				return nil, err
			}
			out[string(k)] = e
		}
		return out, nil
	default:
		return nil, fmt.Errorf("cannot return a starlark %s", v.Type())
	}
}

func sortedAnyKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
