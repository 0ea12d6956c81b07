package engine

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/fn"
	"github.com/scion-dev/scion/internal/kptfile"
	"github.com/scion-dev/scion/internal/pkg"
)

// RenderedCondition is the Kptfile condition render sets.
const RenderedCondition = "Rendered"

// Resolver turns pipeline entries into functions (fn.Runtime does).
type Resolver interface {
	Resolve(f kptfilev1.Function) (fn.Function, error)
}

// RenderError is a failed render: which function failed and why.
type RenderError struct {
	// Package is the (sub)package folder whose pipeline failed.
	Package string
	// Function describes the function.
	Function string
	// Message is the first error result or the runtime's error.
	Message string
}

func (e *RenderError) Error() string {
	where := ""
	if e.Package != "" {
		where = " in " + e.Package
	}
	return fmt.Sprintf("render: function %s%s failed: %s", e.Function, where, e.Message)
}

// Render runs the Kptfile pipelines of a package, as kpt does: each
// subpackage first (deepest first) on its own resources, then each parent
// on its resources and its subpackages' rendered resources; per pipeline,
// the mutators in order, then the validators. It returns the rendered
// package, whose root Kptfile records status.renderStatus and a Rendered
// condition. When a function fails, Render returns the input package
// unchanged, the status and a *RenderError — unless the root Kptfile is
// annotated kpt.dev/save-on-render-failure: "true", in which case the
// package holds what rendered so far and the failed status.
func Render(ctx context.Context, p *pkg.Package, rt Resolver) (*pkg.Package, *kptfilev1.RenderStatus, error) {
	root, err := p.Kptfile()
	if err != nil {
		return nil, nil, fmt.Errorf("render: %w", err)
	}
	nodes, err := p.Resources()
	if err != nil {
		return nil, nil, fmt.Errorf("render: %w", err)
	}
	r := &renderer{p: p, rt: rt, status: &kptfilev1.RenderStatus{}}
	out, renderErr := r.renderDir(ctx, "", nodes)
	if renderErr != nil {
		var re *RenderError
		if !errors.As(renderErr, &re) {
			return nil, nil, renderErr
		}
		r.status.ErrorSummary = re.Error()
		if root.Metadata.Annotations[kptfilev1.SaveOnRenderFailureAnnotation] != "true" {
			return p, r.status, renderErr
		}
	}
	result := p.DeepCopy()
	if out != nil {
		if err := result.SetResources(out); err != nil {
			return nil, nil, fmt.Errorf("render: writing resources: %w", err)
		}
	}
	if err := result.EditKptfile(func(kf *kptfilev1.KptFile) error {
		setRenderStatus(kf, r.status)
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("render: %w", err)
	}
	return result, r.status, renderErr
}

func setRenderStatus(kf *kptfilev1.KptFile, st *kptfilev1.RenderStatus) {
	if kf.Status == nil {
		kf.Status = &kptfilev1.Status{}
	}
	kf.Status.RenderStatus = st.DeepCopy()
	cond := kptfilev1.Condition{Type: RenderedCondition, Status: kptfilev1.ConditionTrue, Reason: "RenderSucceeded"}
	if st.ErrorSummary != "" {
		cond = kptfilev1.Condition{Type: RenderedCondition, Status: kptfilev1.ConditionFalse, Reason: "RenderFailed", Message: st.ErrorSummary}
	}
	kptfile.SetCondition(kf, cond)
}

type renderer struct {
	p      *pkg.Package
	rt     Resolver
	status *kptfilev1.RenderStatus
}

// renderDir renders the package at dir: its subpackages first, then its
// own pipeline over everything below it. nodes are all resources below dir.
func (r *renderer) renderDir(ctx context.Context, dir string, nodes []*yaml.RNode) ([]*yaml.RNode, error) {
	var own []*yaml.RNode
	bySub := map[string][]*yaml.RNode{}
	var subs []string
	for _, n := range nodes {
		owner := r.p.OwningPackage(resourceFile(n))
		if owner == dir {
			own = append(own, n)
			continue
		}
		child := directChild(dir, owner)
		if _, ok := bySub[child]; !ok {
			subs = append(subs, child)
		}
		bySub[child] = append(bySub[child], n)
	}
	// Subpackages with a Kptfile but no resources still run (they may
	// generate some).
	for _, s := range r.p.Subpackages() {
		if directChild(dir, s) == s && s != dir && isBelow(dir, s) {
			if _, ok := bySub[s]; !ok {
				subs = append(subs, s)
				bySub[s] = nil
			}
		}
	}
	sort.Strings(subs)
	all := own
	for _, s := range subs {
		out, err := r.renderDir(ctx, s, bySub[s])
		if err != nil {
			return nil, err
		}
		all = append(all, out...)
	}
	kfData, ok := r.p.File(path.Join(dir, kptfilev1.KptFileName))
	if !ok {
		return all, nil
	}
	kf, err := kptfile.Parse(kfData)
	if err != nil {
		return nil, fmt.Errorf("render: %s: %w", path.Join(dir, kptfilev1.KptFileName), err)
	}
	if kf.Pipeline == nil {
		return all, nil
	}
	for _, f := range kf.Pipeline.Mutators {
		out, err := r.runFunction(ctx, dir, f, all, true)
		r.status.MutationSteps = append(r.status.MutationSteps, out.step)
		if err != nil {
			return all, err
		}
		all = out.items
	}
	for _, f := range kf.Pipeline.Validators {
		out, err := r.runFunction(ctx, dir, f, all, false)
		r.status.ValidationSteps = append(r.status.ValidationSteps, out.step)
		if err != nil {
			return all, err
		}
	}
	return all, nil
}

func isBelow(dir, sub string) bool {
	return dir == "" || strings.HasPrefix(sub, dir+"/")
}

// directChild returns the subpackage folder directly below dir on the way
// to owner.
func directChild(dir, owner string) string {
	rest := owner
	if dir != "" {
		rest = strings.TrimPrefix(owner, dir+"/")
	}
	first, _, _ := strings.Cut(rest, "/")
	if dir == "" {
		return first
	}
	return dir + "/" + first
}

type fnOutput struct {
	items []*yaml.RNode
	step  kptfilev1.StepResult
}

// runFunction runs one function on the resources its selectors pick and
// merges its output back: selected resources are replaced by the output,
// the others stay in place. Validators may not change resources.
func (r *renderer) runFunction(ctx context.Context, dir string, f kptfilev1.Function, items []*yaml.RNode, mutate bool) (fnOutput, error) {
	desc := fn.Describe(f)
	res := fnOutput{items: items, step: kptfilev1.StepResult{Name: f.Name, Image: f.Image, Exec: f.Exec}}
	fail := func(msg string) (fnOutput, error) {
		res.step.Error = msg
		if res.step.ExitCode == 0 {
			res.step.ExitCode = 1
		}
		return res, &RenderError{Package: dir, Function: desc, Message: msg}
	}
	function, err := r.rt.Resolve(f)
	if err != nil {
		return fail(err.Error())
	}
	config, err := r.functionConfig(dir, f, items)
	if err != nil {
		return fail(err.Error())
	}
	// Mutators work on render's own nodes; validators get copies, since
	// whatever they do is discarded.
	var selected, rest []*yaml.RNode
	for _, n := range items {
		switch {
		case !selects(f, n):
			rest = append(rest, n)
		case mutate:
			selected = append(selected, n)
		default:
			selected = append(selected, n.Copy())
		}
	}
	rl := &framework.ResourceList{Items: selected, FunctionConfig: config}
	runErr := function.Run(ctx, rl)
	res.step.Results = toResultItems(rl.Results)
	if runErr != nil {
		var se *fn.StderrError
		if errors.As(runErr, &se) {
			res.step.ExitCode = se.ExitCode
			res.step.Stderr = se.Stderr
		}
		if first := firstError(rl.Results); first != "" {
			return fail(first)
		}
		return fail(runErr.Error())
	}
	if first := firstError(rl.Results); first != "" {
		return fail(first)
	}
	if !mutate {
		return res, nil
	}
	for _, n := range rl.Items {
		// Output without a file goes next to the Kptfile of the pipeline.
		if resourceFile(n) == "" {
			pkg.SetPlacement(n, pkg.Placement{Path: path.Join(dir, pkg.DefaultFileName(n)), Index: -1})
		}
	}
	res.items = append(rest, rl.Items...)
	sortByPath(res.items)
	return res, nil
}

// sortByPath restores file order (and document order within a file) after
// a function's output is merged with the unselected resources.
func sortByPath(nodes []*yaml.RNode) {
	sort.SliceStable(nodes, func(i, j int) bool {
		return resourceFile(nodes[i]) < resourceFile(nodes[j])
	})
}

func firstError(results framework.Results) string {
	for _, r := range results {
		if r != nil && r.Severity == framework.Error {
			msg := r.Message
			if r.ResourceRef != nil {
				msg = fmt.Sprintf("%s/%s %s: %s", r.ResourceRef.APIVersion, r.ResourceRef.Kind, r.ResourceRef.Name, msg)
			}
			return msg
		}
	}
	return ""
}

func toResultItems(results framework.Results) []kptfilev1.ResultItem {
	var out []kptfilev1.ResultItem
	for _, r := range results {
		if r == nil {
			continue
		}
		item := kptfilev1.ResultItem{Message: r.Message, Severity: string(r.Severity)}
		if r.ResourceRef != nil {
			item.ResourceRef = fmt.Sprintf("%s/%s/%s/%s", r.ResourceRef.APIVersion, r.ResourceRef.Kind, r.ResourceRef.Namespace, r.ResourceRef.Name)
		}
		if r.Field != nil {
			item.Field = r.Field.Path
		}
		if r.File != nil {
			item.File = r.File.Path
		}
		out = append(out, item)
	}
	return out
}

// functionConfig builds the functionConfig: a ConfigMap from configMap, or
// the package resource at configPath.
func (r *renderer) functionConfig(dir string, f kptfilev1.Function, items []*yaml.RNode) (*yaml.RNode, error) {
	switch {
	case f.ConfigPath != "" && len(f.ConfigMap) > 0:
		return nil, errors.New("only one of configPath and configMap may be set")
	case f.ConfigPath != "":
		want := path.Join(dir, f.ConfigPath)
		for _, n := range items {
			if resourceFile(n) == want {
				c := n.Copy()
				for _, a := range []string{kioutil.PathAnnotation, kioutil.LegacyPathAnnotation, kioutil.IndexAnnotation, kioutil.LegacyIndexAnnotation, kioutil.SeqIndentAnnotation} {
					if _, err := c.Pipe(yaml.ClearAnnotation(a)); err != nil {
						return nil, err
					}
				}
				return c, nil
			}
		}
		return nil, fmt.Errorf("configPath %s: no resource in the package at that path", f.ConfigPath)
	case len(f.ConfigMap) > 0:
		cm := yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n")
		if err := cm.LoadMapIntoConfigMapData(f.ConfigMap); err != nil {
			return nil, err
		}
		return cm, nil
	default:
		return nil, nil
	}
}

// selects reports whether a function works on a resource: any selector
// matches (or there are none) and no exclusion does.
func selects(f kptfilev1.Function, n *yaml.RNode) bool {
	if len(f.Selectors) > 0 {
		any := false
		for _, s := range f.Selectors {
			if matches(s, n) {
				any = true
				break
			}
		}
		if !any {
			return false
		}
	}
	for _, s := range f.Exclusions {
		if matches(s, n) {
			return false
		}
	}
	return true
}

func matches(s kptfilev1.Selector, n *yaml.RNode) bool {
	if s.APIVersion != "" && s.APIVersion != n.GetApiVersion() {
		return false
	}
	if s.Kind != "" && s.Kind != n.GetKind() {
		return false
	}
	if s.Name != "" && s.Name != n.GetName() {
		return false
	}
	if s.Namespace != "" && s.Namespace != n.GetNamespace() {
		return false
	}
	labels, annotations := n.GetLabels(), n.GetAnnotations()
	for k, v := range s.Labels {
		if labels[k] != v {
			return false
		}
	}
	for k, v := range s.Annotations {
		if annotations[k] != v {
			return false
		}
	}
	return true
}

// CheckFunctions resolves every function of every pipeline in p (the
// root's and its subpackages') without running any: what the runtime's
// policy refuses (an exec function where exec is disabled, an image not
// allowed) is an error naming the Kptfile and the function, so that a
// caller refuses the package before writing it anywhere.
func CheckFunctions(p *pkg.Package, rt Resolver) error {
	if rt == nil {
		return nil
	}
	for _, name := range p.Paths() {
		if path.Base(name) != kptfilev1.KptFileName {
			continue
		}
		data, _ := p.File(name)
		kf, err := kptfile.Parse(data)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if kf.Pipeline == nil {
			continue
		}
		for _, l := range []struct {
			name string
			fns  []kptfilev1.Function
		}{{"mutators", kf.Pipeline.Mutators}, {"validators", kf.Pipeline.Validators}} {
			for i, f := range l.fns {
				// Refused by policy, not by what the machine lacks now (a
				// container runtime): the render reports the rest.
				if _, err := rt.Resolve(f); errors.Is(err, fn.ErrExecDisabled) || errors.Is(err, fn.ErrImageNotAllowed) {
					what := f.Image
					if f.Exec != "" {
						what = "exec: " + f.Exec
					}
					return fmt.Errorf("%s: pipeline.%s[%d] (%s): %w", name, l.name, i, what, err)
				}
			}
		}
	}
	return nil
}
