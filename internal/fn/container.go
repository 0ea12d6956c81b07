package fn

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
)

// Container runs a function image with a container CLI, network off.
type Container struct {
	// Runtime is the CLI: docker, podman or nerdctl.
	Runtime string
	Image   string
	Timeout time.Duration
}

// Run runs the container.
func (c *Container) Run(ctx context.Context, rl *framework.ResourceList) error {
	args := []string{"run", "--rm", "-i", "--network", "none", "--security-opt", "no-new-privileges", c.Image}
	return runProcess(ctx, c.Timeout, c.Runtime, args, rl)
}

func (r *Runtime) containerRuntime() (string, error) {
	candidates := r.ContainerRuntimes
	if len(candidates) == 0 {
		candidates = []string{"docker", "podman", "nerdctl"}
	}
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: none of %s is on the PATH", ErrNoContainerRuntime, strings.Join(candidates, ", "))
}
