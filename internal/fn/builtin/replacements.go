package builtin

import (
	"context"

	"sigs.k8s.io/kustomize/api/filters/replacement"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// applyReplacements copies fields between resources as kustomize
// replacements do; the functionConfig (kind ApplyReplacements) lists them
// under replacements.
func applyReplacements(_ context.Context, rl *framework.ResourceList) error {
	if rl.FunctionConfig == nil {
		return fail(rl, "apply-replacements: a functionConfig with replacements is required")
	}
	var cfg struct {
		Replacements []types.Replacement `json:"replacements" yaml:"replacements"`
	}
	s, err := rl.FunctionConfig.String()
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal([]byte(s), &cfg); err != nil {
		return fail(rl, "apply-replacements: reading functionConfig: %v", err)
	}
	if len(cfg.Replacements) == 0 {
		return fail(rl, "apply-replacements: functionConfig lists no replacements")
	}
	out, err := replacement.Filter{Replacements: cfg.Replacements}.Filter(rl.Items)
	if err != nil {
		return fail(rl, "apply-replacements: %v", err)
	}
	rl.Items = out
	return nil
}
