package fn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
)

// RuntimeEnv names the container CLI to run function images with (a name
// on the PATH or a path), instead of the first of docker, podman and
// nerdctl that answers.
const RuntimeEnv = "SCION_CONTAINER_RUNTIME"

// ContainerNamePrefix starts the name of every container a function runs
// in, so that one left behind (the process killed mid-run) can be found:
// `podman ps -a --filter name=scion-fn-`.
const ContainerNamePrefix = "scion-fn-"

// Container runs a function image with a container CLI: network off, no
// new privileges, stdin attached, removed when it ends, and removed by name
// when it outlives its timeout or its caller.
type Container struct {
	// Runtime is the CLI: docker, podman or nerdctl (a name or a path).
	Runtime string
	Image   string
	Timeout time.Duration
}

// Run runs the container.
func (c *Container) Run(ctx context.Context, rl *framework.ResourceList) error {
	name := containerName()
	args := []string{"run", "--rm", "-i", "--name", name, "--network", "none", "--security-opt", "no-new-privileges"}
	cli := filepath.Base(c.Runtime)
	if cli == "podman" || cli == "docker" {
		// No pull progress in the function's stderr, which a render
		// reports.
		args = append(args, "--quiet")
	}
	if cli == "podman" && loopbackRegistry(c.Image) {
		// As docker's daemon does by default: a registry on this
		// machine's loopback (scion dev's) speaks plain HTTP.
		args = append(args, "--tls-verify=false")
	}
	args = append(args, c.Image)
	err := runProcess(ctx, c.Timeout, c.Runtime, args, rl)
	if err != nil {
		// Killing the CLI does not always stop the container (docker's
		// and podman's run in their daemon or conmon): remove it by name,
		// whatever the caller's context says. A container that already
		// went answers "no such container", which is what we want.
		rmCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = exec.CommandContext(rmCtx, c.Runtime, "rm", "-f", name).Run()
	}
	return err
}

// containerName returns a name no other run uses.
func containerName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return ContainerNamePrefix + hex.EncodeToString(b[:])
}

// detected caches which container CLI answers, per list of candidates:
// asking costs a process start (and, for docker, a round trip to its
// daemon), and the answer does not change while the process runs.
var detected sync.Map // string -> detection

type detection struct {
	once sync.Once
	path string
	err  error
}

// containerRuntime returns the container CLI to run images with: the one
// RuntimeEnv names, else the first candidate on the PATH that answers
// `version` (docker's client is often installed without a daemon, which
// it needs: it would fail every run).
func (r *Runtime) containerRuntime() (string, error) {
	if env := os.Getenv(RuntimeEnv); env != "" {
		p, err := exec.LookPath(env)
		if err != nil {
			return "", fmt.Errorf("%w: %s=%s: %v", ErrNoContainerRuntime, RuntimeEnv, env, err)
		}
		return p, nil
	}
	candidates := r.ContainerRuntimes
	if len(candidates) == 0 {
		candidates = []string{"docker", "podman", "nerdctl"}
	}
	v, _ := detected.LoadOrStore(strings.Join(candidates, "\x00"), &detection{})
	d := v.(*detection)
	d.once.Do(func() { d.path, d.err = detect(candidates) })
	return d.path, d.err
}

func detect(candidates []string) (string, error) {
	var tried []string
	for _, c := range candidates {
		p, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := exec.CommandContext(ctx, p, "version").CombinedOutput()
		cancel()
		if err == nil {
			return p, nil
		}
		tried = append(tried, fmt.Sprintf("%s does not answer (%s)", filepath.Base(p), lastLine(out, err)))
	}
	if len(tried) == 0 {
		return "", fmt.Errorf("%w: none of %s is on the PATH", ErrNoContainerRuntime, strings.Join(candidates, ", "))
	}
	return "", fmt.Errorf("%w: %s; %s names one to use", ErrNoContainerRuntime, strings.Join(tried, "; "), RuntimeEnv)
}

// lastLine is the last non-empty line of a command's output (where CLIs
// put their error), else err.
func lastLine(out []byte, err error) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return err.Error()
}

// loopbackRegistry says whether image names a registry on this machine's
// loopback (localhost or 127.0.0.0/8, with a port or not).
func loopbackRegistry(image string) bool {
	host, _, ok := strings.Cut(image, "/")
	if !ok {
		return false
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
