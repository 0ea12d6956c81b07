package fn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// maxStderr bounds the stderr kept from a function.
const maxStderr = 8 << 10

// MaxOutput bounds what a function may write to stdout: the largest
// package the servers take by default (--max-package-size 64Mi). A
// function writing more is stopped and fails (ErrOutputTooLarge), whatever
// it wrote, so that one function cannot take the process's memory (or its
// Pod's).
const MaxOutput = 64 << 20

// ErrOutputTooLarge is matched when a function wrote more than MaxOutput.
var ErrOutputTooLarge = errors.New("wrote more than 64Mi to stdout")

// Exec runs a local executable speaking ResourceList on stdin and stdout.
type Exec struct {
	Path    string
	Args    []string
	Timeout time.Duration
}

// Run runs the executable.
func (e *Exec) Run(ctx context.Context, rl *framework.ResourceList) error {
	return runProcess(ctx, e.Timeout, e.Path, e.Args, rl)
}

// StderrError is returned when a function process fails; it carries what
// the process wrote to stderr.
type StderrError struct {
	Err      error
	ExitCode int
	Stderr   string
}

func (e *StderrError) Error() string {
	msg := e.Err.Error()
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

func (e *StderrError) Unwrap() error { return e.Err }

func runProcess(ctx context.Context, timeout time.Duration, name string, args []string, rl *framework.ResourceList) error {
	in, err := encodeResourceList(rl)
	if err != nil {
		return err
	}
	stdout, err := runRaw(ctx, timeout, name, args, in)
	var se *StderrError
	if errors.As(err, &se) && se.ExitCode >= 0 {
		// Results of a failing function are still worth reading.
		if out, decodeErr := decodeResourceList(stdout); decodeErr == nil {
			rl.Results = append(rl.Results, out.Results...)
		}
	}
	if err != nil {
		return err
	}
	out, err := decodeResourceList(stdout)
	if err != nil {
		return &StderrError{Err: fmt.Errorf("reading its output: %w", err)}
	}
	rl.Items = out.Items
	rl.Results = append(rl.Results, out.Results...)
	return nil
}

// runRaw runs name with in on stdin and returns what it wrote to stdout,
// at most MaxOutput bytes: a *StderrError when it failed (ExitCode -1 when
// it did not exit by itself: timed out, or stopped for writing too much),
// with stdout still returned when it exited non-zero.
func runRaw(ctx context.Context, timeout time.Duration, name string, args []string, in []byte) ([]byte, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	stdout := &cappedWriter{max: MaxOutput, cancel: cancel}
	cmd.Stdout = stdout
	cmd.Stderr = &limitedWriter{buf: &stderr, max: maxStderr}
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	if stdout.over {
		return nil, &StderrError{Err: ErrOutputTooLarge, ExitCode: -1, Stderr: stderr.String()}
	}
	if ctx.Err() == context.DeadlineExceeded {
		return nil, &StderrError{Err: fmt.Errorf("timed out after %s", timeout), ExitCode: -1, Stderr: stderr.String()}
	}
	if runErr != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(runErr, &ee) {
			code = ee.ExitCode()
		}
		return stdout.bytes(), &StderrError{Err: runErr, ExitCode: code, Stderr: stderr.String()}
	}
	return stdout.bytes(), nil
}

type limitedWriter struct {
	buf *bytes.Buffer
	max int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room > 0 {
		if len(p) > room {
			w.buf.Write(p[:room])
		} else {
			w.buf.Write(p)
		}
	}
	return len(p), nil
}

// cappedWriter keeps up to max bytes in chunks (no buffer doubled and
// copied as it grows: a function's output is held once), and past max
// cancels the process (whose pipe writes then fail): more than max is an
// error, not a truncated ResourceList.
type cappedWriter struct {
	chunks [][]byte
	n, max int
	over   bool
	cancel context.CancelFunc
}

// chunkSize is the size of the chunks a cappedWriter fills.
const chunkSize = 1 << 20

func (w *cappedWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.max {
		w.over = true
		w.cancel()
		return 0, ErrOutputTooLarge
	}
	written := len(p)
	for len(p) > 0 {
		if k := len(w.chunks); k == 0 || len(w.chunks[k-1]) == cap(w.chunks[k-1]) {
			w.chunks = append(w.chunks, make([]byte, 0, chunkSize))
		}
		last := &w.chunks[len(w.chunks)-1]
		m := min(len(p), cap(*last)-len(*last))
		*last = append(*last, p[:m]...)
		p = p[m:]
	}
	w.n += written
	return written, nil
}

// bytes joins the chunks.
func (w *cappedWriter) bytes() []byte {
	out := make([]byte, 0, w.n)
	for _, c := range w.chunks {
		out = append(out, c...)
	}
	return out
}

// encodeResourceList writes rl as a function's input: its items and
// functionConfig, not the results earlier functions gave (a function
// echoing them would add them again).
func encodeResourceList(rl *framework.ResourceList) ([]byte, error) {
	var buf bytes.Buffer
	w := kio.ByteWriter{Writer: &buf, KeepReaderAnnotations: true, WrappingAPIVersion: kio.ResourceListAPIVersion, WrappingKind: kio.ResourceListKind, FunctionConfig: rl.FunctionConfig}
	if err := w.Write(rl.Items); err != nil {
		return nil, fmt.Errorf("encoding the ResourceList: %w", err)
	}
	return buf.Bytes(), nil
}

func decodeResourceList(data []byte) (*framework.ResourceList, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the function wrote nothing to stdout")
	}
	r := &kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true}
	items, err := r.Read()
	if err != nil {
		return nil, err
	}
	if r.WrappingKind != kio.ResourceListKind {
		return nil, fmt.Errorf("the function wrote a %q, not a ResourceList", r.WrappingKind)
	}
	out := &framework.ResourceList{Items: items, FunctionConfig: r.FunctionConfig}
	if r.Results != nil {
		if err := decodeResults(r.Results, &out.Results); err != nil {
			return nil, fmt.Errorf("reading results: %w", err)
		}
	}
	return out, nil
}

// decodeResults reads a ResourceList's results: a list (the KRM functions
// specification's config.kubernetes.io/v1), or, as functions built with
// kyaml before v0.11 write them (the catalog's apply-setters v0.2 does),
// a map whose items are the list.
func decodeResults(n *yaml.RNode, into *framework.Results) error {
	if n.YNode().Kind == yaml.MappingNode {
		items := n.Field("items")
		if items == nil {
			return nil
		}
		n = items.Value
	}
	s, err := n.String()
	if err != nil {
		return err
	}
	return yaml.Unmarshal([]byte(s), into)
}
