// Package fnprog gives tests the KRM function of internal/fn/testdata/fnprog
// and its inputs: a function whose functionConfig data.mode picks what it
// does (label, crash, result-error, sleep, hang, flood, garbage).
package fnprog

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Package is the function's Go package, to build.
const Package = "github.com/scion-dev/scion/internal/fn/testdata/fnprog"

// ResourceList is a ResourceList of one Deployment asking the function for
// mode.
func ResourceList(mode string) *framework.ResourceList {
	cfg := yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\n")
	_ = cfg.LoadMapIntoConfigMapData(map[string]string{"mode": mode})
	return &framework.ResourceList{
		Items:          []*yaml.RNode{yaml.MustParse("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 1\n")},
		FunctionConfig: cfg,
	}
}

// Build builds the function into dir, static (CGO_ENABLED=0, so that it
// runs FROM scratch in an image), and returns its path.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "fnprog")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, Package)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the test function: %v\n%s", err, out)
	}
	return bin, nil
}
