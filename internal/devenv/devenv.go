// Package devenv runs a local Scion development environment: etcd,
// kube-apiserver and kube-controller-manager (with the garbage-collector
// and namespace controllers) on loopback, Scion's CRDs, and the Scion
// controller manager, all supervised by one background process whose state
// lives in a directory (.scion/dev by default).
//
// Up starts the supervisor (`scion dev serve`) detached and follows its
// progress; Down stops it. etcd's data stays in the directory, so objects
// survive Down and Up; Fresh starts from nothing.
package devenv

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Files of the state directory.
const (
	KubeconfigFile = "kubeconfig"
	pidFile        = "serve.pid"
	progressFile   = "progress"
	serveLog       = "serve.log"
)

// Progress lines the supervisor writes: "step: <what>", then "ready" or
// "failed: <step>: <error> (log: <file>)".
const (
	stepPrefix   = "step: "
	readyLine    = "ready"
	failedPrefix = "failed: "
)

// Options configure the environment.
type Options struct {
	// Dir holds the state: kubeconfig, logs, etcd data, git caches.
	Dir string
	// Assets holds etcd, kube-apiserver and kube-controller-manager.
	Assets string
	// BuildScript builds Assets when they are missing (the hack/ script of
	// a checkout); empty when there is none.
	BuildScript string
	// Executable is the scion binary that serves (os.Executable when
	// empty).
	Executable string
	// Out receives progress.
	Out io.Writer
	// Timeout bounds Up (10 minutes when 0, not counting a build).
	Timeout time.Duration
}

func (o *Options) path(name string) string { return filepath.Join(o.Dir, name) }

// Kubeconfig is the path of the environment's kubeconfig.
func (o *Options) Kubeconfig() string { return o.path(KubeconfigFile) }

// Running returns the supervisor's PID when it runs.
func (o *Options) Running() (int, bool) {
	data, err := os.ReadFile(o.path(pidFile))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return 0, false
	}
	return pid, true
}

// Up starts the environment unless it runs, and waits until it is ready,
// printing each step. fresh removes the previous state first.
func Up(ctx context.Context, o Options, fresh bool) error {
	if fresh {
		if err := Down(ctx, o); err != nil {
			return err
		}
		if err := os.RemoveAll(o.Dir); err != nil {
			return fmt.Errorf("removing %s: %w", o.Dir, err)
		}
	}
	exe := o.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return err
		}
	}
	if pid, ok := o.Running(); ok {
		switch last, _ := lastProgress(o.path(progressFile)); {
		case runsOtherBuild(pid, exe):
			// A rebuilt scion: the environment runs what was built.
			fmt.Fprintf(o.Out, "the environment runs an earlier build of scion (pid %d); restarting it with %s (its state is kept)\n", pid, exe)
			if err := Down(ctx, o); err != nil {
				return err
			}
		case last == readyLine:
			fmt.Fprintf(o.Out, "the environment is already up (kubeconfig: %s)\n", o.Kubeconfig())
			return nil
		}
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	if err := o.ensureAssets(ctx); err != nil {
		return err
	}
	if _, ok := o.Running(); !ok {
		_ = os.Remove(o.path(progressFile))
		logf, err := os.Create(o.path(serveLog))
		if err != nil {
			return err
		}
		cmd := exec.Command(exe, "dev", "serve", "--dir", o.Dir, "--assets", o.Assets)
		cmd.Stdout, cmd.Stderr = logf, logf
		// Its own session: the environment outlives this command and the
		// terminal's signals.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			logf.Close()
			return fmt.Errorf("starting the supervisor: %w", err)
		}
		logf.Close()
		go func() { _ = cmd.Wait() }()
	}
	return o.follow(ctx)
}

// runsOtherBuild says whether process pid runs another file than exe (a
// scion built since it started replaced the file it runs). Where the
// system does not say (no /proc), it does not.
func runsOtherBuild(pid int, exe string) bool {
	running, err := os.Stat(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false
	}
	this, err := os.Stat(exe)
	return err == nil && !os.SameFile(running, this)
}

// follow prints the supervisor's progress until it is ready or failed.
func (o *Options) follow(ctx context.Context) error {
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	deadline := time.Now().Add(timeout)
	printed := 0
	for {
		lines, _ := readLines(o.path(progressFile))
		for ; printed < len(lines); printed++ {
			l := lines[printed]
			switch {
			case strings.HasPrefix(l, stepPrefix):
				fmt.Fprintf(o.Out, "==> %s\n", strings.TrimPrefix(l, stepPrefix))
			case l == readyLine:
				fmt.Fprintf(o.Out, "==> ready\nkubeconfig: %s\n", o.Kubeconfig())
				return nil
			case strings.HasPrefix(l, failedPrefix):
				return fmt.Errorf("dev up failed at %s", strings.TrimPrefix(l, failedPrefix))
			}
		}
		if _, ok := o.Running(); !ok && printed > 0 {
			return fmt.Errorf("the supervisor exited; see %s", o.path(serveLog))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the environment was not ready after %s; see the logs in %s", timeout, o.Dir)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ensureAssets builds the control plane binaries when they are missing.
func (o *Options) ensureAssets(ctx context.Context) error {
	missing := false
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(o.Assets, b)); err != nil {
			missing = true
		}
	}
	if !missing {
		return nil
	}
	if o.BuildScript == "" {
		return fmt.Errorf("the control plane binaries are not in %s, and there is no hack/build-control-plane.sh to build them (run scion dev up from a checkout, or pass --assets)", o.Assets)
	}
	logPath := o.path("build.log")
	fmt.Fprintf(o.Out, "==> building the control plane binaries into %s (the first time takes about 15 minutes; log: %s)\n", o.Assets, logPath)
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, "bash", o.BuildScript, o.Assets)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = io.MultiWriter(logf, pw), logf
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "==> ") {
				fmt.Fprintf(o.Out, "    %s\n", strings.TrimPrefix(l, "==> "))
			}
		}
	}()
	err = cmd.Run()
	pw.Close()
	<-done
	if err != nil {
		return fmt.Errorf("building the control plane failed: %w; see %s", err, logPath)
	}
	return nil
}

// Down stops the environment, keeping its state.
func Down(ctx context.Context, o Options) error {
	pid, ok := o.Running()
	if !ok {
		_ = os.Remove(o.path(pidFile))
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stopping the supervisor (pid %d): %w", pid, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if _, ok := o.Running(); !ok {
			fmt.Fprintln(o.Out, "==> stopped")
			return nil
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return fmt.Errorf("the supervisor (pid %d) did not stop within a minute; killed it", pid)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func readLines(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out, nil
}

func lastProgress(path string) (string, error) {
	lines, err := readLines(path)
	if err != nil || len(lines) == 0 {
		return "", err
	}
	return lines[len(lines)-1], nil
}
