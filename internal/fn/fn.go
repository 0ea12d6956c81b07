// Package fn runs KRM functions, following the KRM Functions
// Specification: a function takes a ResourceList (items and a
// functionConfig) and returns one with the items changed and results
// added. Three runtimes are chosen by the pipeline entry: builtin
// functions (matched by image name, whatever the registry and tag), local
// executables (exec) and containers: with docker, podman or nerdctl, or,
// for a server in a cluster, as Pods (Runtime.Images, through the
// wrapper's protocol: WrapperHandler and Remote).
package fn

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/suggest"
)

// Function runs on a ResourceList in place.
type Function interface {
	Run(ctx context.Context, rl *framework.ResourceList) error
}

// FunctionFunc adapts a plain function to Function.
type FunctionFunc func(ctx context.Context, rl *framework.ResourceList) error

// Run calls f.
func (f FunctionFunc) Run(ctx context.Context, rl *framework.ResourceList) error { return f(ctx, rl) }

// Runtime resolves pipeline entries to functions. The zero value knows no
// builtins and runs exec and container functions with DefaultTimeout.
type Runtime struct {
	// Builtins are the builtin functions by name (see BuiltinName).
	Builtins map[string]Function
	// Timeout bounds exec and container functions; DefaultTimeout when 0.
	Timeout time.Duration
	// DisableExec refuses exec functions (for packages from untrusted
	// sources).
	DisableExec bool
	// ContainerRuntimes are the container CLIs tried in order; docker,
	// podman and nerdctl when empty.
	ContainerRuntimes []string
	// RestrictImages refuses to run as a container any image that
	// ContainerImages does not allow (ErrImageNotAllowed): for pipelines
	// that come from packages and their authors, run by a server, where
	// an administrator chooses what may run.
	RestrictImages bool
	// ContainerImages are the images RestrictImages lets run as
	// containers: an image exactly, or a prefix ending in "*"
	// ("registry.example.com/fns/*"; "*" alone allows every image). See
	// ValidateImagePatterns.
	ContainerImages []string
	// Images, when set, runs container functions instead of a container
	// CLI: the function runner of a server in a cluster, which runs them
	// as Pods (podrunner).
	Images ImageRunner
}

// ImageRunner runs function images somewhere other than this machine's
// container CLI.
type ImageRunner interface {
	// RunImage runs image on rl, within timeout.
	RunImage(ctx context.Context, image string, timeout time.Duration, rl *framework.ResourceList) error
}

// DefaultTimeout bounds an exec or container function.
const DefaultTimeout = time.Minute

// ErrNoContainerRuntime is matched when a container function cannot run
// because no container CLI is installed.
var ErrNoContainerRuntime = errors.New("no container runtime")

// ErrImageNotAllowed is matched when a function's image is not a builtin
// and the runtime's ContainerImages do not allow it.
var ErrImageNotAllowed = errors.New("not allowed to run as a container")

// ImageFlag is the server flag whose value becomes Runtime.ContainerImages;
// messages name it so that whoever reads one knows what to ask for.
const ImageFlag = "--function-images"

// ValidateImagePatterns checks ContainerImages patterns: each non-empty,
// without spaces, with "*" only as its last character.
func ValidateImagePatterns(patterns []string) error {
	for _, p := range patterns {
		switch {
		case p == "":
			return fmt.Errorf("%s: an empty image pattern", ImageFlag)
		case strings.ContainsAny(p, " \t\n"):
			return fmt.Errorf("%s: image pattern %q has a space", ImageFlag, p)
		case strings.Contains(strings.TrimSuffix(p, "*"), "*"):
			return fmt.Errorf("%s: image pattern %q has a \"*\" before its end: a pattern is an image, or a prefix ending in \"*\"", ImageFlag, p)
		}
	}
	return nil
}

// imageAllowed says whether one of patterns allows image.
func imageAllowed(patterns []string, image string) bool {
	for _, p := range patterns {
		prefix, wildcard := strings.CutSuffix(p, "*")
		if p == image || wildcard && strings.HasPrefix(image, prefix) {
			return true
		}
	}
	return false
}

// BuiltinName returns the name a function image is matched to builtins by:
// the last path element without tag or digest, so
// "gcr.io/kpt-fn/set-namespace:v0.4" and
// "ghcr.io/kptdev/krm-functions-catalog/set-namespace:latest" both give
// "set-namespace".
func BuiltinName(image string) string {
	name := path.Base(image)
	if i := strings.IndexAny(name, ":@"); i >= 0 {
		name = name[:i]
	}
	return name
}

// Describe names a pipeline function for messages: its name, with the image
// or executable.
func Describe(f kptfilev1.Function) string {
	what := f.Image
	if what == "" {
		what = f.Exec
	}
	if f.Name != "" {
		return fmt.Sprintf("%q (%s)", f.Name, what)
	}
	return fmt.Sprintf("%q", what)
}

// ErrExecDisabled is the refusal of an exec function by a runtime that
// runs none (DisableExec).
var ErrExecDisabled = errors.New("exec functions are disabled")

// Resolve returns the function for a pipeline entry: a builtin when the
// image's name matches one, an exec function for exec, a container
// otherwise. Its errors do not name the entry: the caller does (a render
// says which function failed).
func (r *Runtime) Resolve(f kptfilev1.Function) (Function, error) {
	switch {
	case f.Exec != "":
		if r.DisableExec {
			return nil, ErrExecDisabled
		}
		return &Exec{Path: f.Exec, Timeout: r.timeout()}, nil
	case f.Image != "":
		if b, ok := r.Builtins[BuiltinName(f.Image)]; ok {
			return b, nil
		}
		hint := r.typoHint(f.Image)
		if r.RestrictImages && !imageAllowed(r.ContainerImages, f.Image) {
			return nil, fmt.Errorf("image %s is not a builtin%s and is %w here: an administrator lets images run with %s", f.Image, hint, ErrImageNotAllowed, ImageFlag)
		}
		var run Function
		if r.Images != nil {
			image, timeout := f.Image, r.timeout()
			run = FunctionFunc(func(ctx context.Context, rl *framework.ResourceList) error {
				return r.Images.RunImage(ctx, image, timeout, rl)
			})
		} else {
			rt, err := r.containerRuntime()
			if err != nil {
				return nil, fmt.Errorf("image %s is not a builtin%s and %w", f.Image, hint, err)
			}
			run = &Container{Runtime: rt, Image: f.Image, Timeout: r.timeout()}
		}
		if hint == "" {
			return run, nil
		}
		// A failure of an image named a typo away from a builtin (a pull
		// that finds no such image) says which builtin was meant.
		return FunctionFunc(func(ctx context.Context, rl *framework.ResourceList) error {
			if err := run.Run(ctx, rl); err != nil {
				return fmt.Errorf("%w%s", err, hint)
			}
			return nil
		}), nil
	default:
		return nil, errors.New("one of image and exec is required")
	}
}

// typoHint says which builtin an image that matches none is a typo of
// (" (did you mean the builtin set-labels?)"), or "".
func (r *Runtime) typoHint(image string) string {
	names := make([]string, 0, len(r.Builtins))
	for name := range r.Builtins {
		names = append(names, name)
	}
	slices.Sort(names)
	name := BuiltinName(image)
	if near := suggest.Closest(name, names, 2); near != "" && !strings.HasPrefix(near, name) {
		return fmt.Sprintf(" (did you mean the builtin %s?)", near)
	}
	return ""
}

func (r *Runtime) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return DefaultTimeout
}
