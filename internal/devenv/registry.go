package devenv

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/scion-dev/scion/internal/controlplane"
)

// RegistryFile holds the address (127.0.0.1:PORT) of the environment's OCI
// registry, written when it runs.
const RegistryFile = "registry-address"

// registryBinary is Debian's docker-registry (make registry installs it),
// unless SCION_REGISTRY names another.
func registryBinary() string {
	if b := os.Getenv("SCION_REGISTRY"); b != "" {
		return b
	}
	return "/usr/bin/docker-registry"
}

// Registry returns the address of the environment's OCI registry ("" when
// the environment runs none).
func (o *Options) Registry() string {
	data, err := os.ReadFile(o.path(RegistryFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// WriteRegistryConfig writes the configuration of a plain-HTTP
// docker-registry listening on addr with its data under dir, and returns
// its path.
func WriteRegistryConfig(dir, addr string) (string, error) {
	cfg := filepath.Join(dir, "config.yml")
	return cfg, os.WriteFile(cfg, []byte(fmt.Sprintf(`version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: %s}
  delete: {enabled: true}
http:
  addr: %s
`, filepath.Join(dir, "data"), addr)), 0o644)
}

// RegistryCommand is the command that runs docker-registry (bin) with
// its configuration file cfg, and nothing else: the environment's
// REGISTRY_* variables, which the registry takes over its configuration
// (REGISTRY_AUTH=... replaces its whole auth section), are left out.
func RegistryCommand(bin, cfg string) *exec.Cmd {
	cmd := exec.Command(bin, "serve", cfg)
	// It stops when the process that runs it dies (a test that panics,
	// scion dev serve killed) rather than holding its port and data.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REGISTRY_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

// startRegistry runs a local OCI registry (the distribution project's,
// plain HTTP on loopback, no authentication, deletes allowed) with its
// data in the state directory, on the port of the previous run when there
// was one, so Repositories naming it keep working across dev down and up.
// It returns the process's stop function; ok is false when no registry is
// installed (the OCI part of the demo is then skipped).
func (o *Options) startRegistry(logFile *os.File) (stop func(), ok bool, err error) {
	bin := registryBinary()
	if _, err := os.Stat(bin); err != nil {
		_ = os.Remove(o.path(RegistryFile))
		return nil, false, nil
	}
	addr := o.Registry()
	if addr == "" {
		ports, err := controlplane.FreePorts(1)
		if err != nil {
			return nil, false, err
		}
		addr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	}
	dir := o.path("registry")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, err
	}
	cfg, err := WriteRegistryConfig(dir, addr)
	if err != nil {
		return nil, false, err
	}
	cmd := RegistryCommand(bin, cfg)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, false, err
	}
	stop = func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	}
	c := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := c.Get("http://" + addr + "/v2/")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, false, errors.Join(fmt.Errorf("the registry did not answer on %s", addr), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := os.WriteFile(o.path(RegistryFile), []byte(addr+"\n"), 0o644); err != nil {
		stop()
		return nil, false, err
	}
	return stop, true, nil
}
