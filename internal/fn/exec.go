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

// MaxOutput bounds what a function may write to stdout: twice the largest
// package the servers take by default (64Mi), room for a function that
// adds resources. A function writing more is stopped and
// fails (ErrOutputTooLarge), whatever it wrote, so that one function
// cannot take the process's memory.
const MaxOutput = 128 << 20

// ErrOutputTooLarge is matched when a function wrote more than MaxOutput.
var ErrOutputTooLarge = errors.New("wrote more than 128Mi to stdout")

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
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	in, err := encodeResourceList(rl)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &cappedWriter{buf: &stdout, max: MaxOutput, cancel: cancel}
	cmd.Stderr = &limitedWriter{buf: &stderr, max: maxStderr}
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	if stdout.Len() > MaxOutput {
		return &StderrError{Err: ErrOutputTooLarge, ExitCode: -1, Stderr: stderr.String()}
	}
	if ctx.Err() == context.DeadlineExceeded {
		return &StderrError{Err: fmt.Errorf("timed out after %s", timeout), ExitCode: -1, Stderr: stderr.String()}
	}
	// Results of a failing function are still worth reading.
	out, decodeErr := decodeResourceList(stdout.Bytes())
	if runErr != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(runErr, &ee) {
			code = ee.ExitCode()
		}
		if decodeErr == nil {
			rl.Results = append(rl.Results, out.Results...)
		}
		return &StderrError{Err: runErr, ExitCode: code, Stderr: stderr.String()}
	}
	if decodeErr != nil {
		return &StderrError{Err: fmt.Errorf("reading its output: %w", decodeErr), Stderr: stderr.String()}
	}
	rl.Items = out.Items
	rl.Results = append(rl.Results, out.Results...)
	return nil
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

// cappedWriter keeps up to max bytes and one more, then cancels the
// process (whose pipe writes then fail): more than max is an error, not a
// truncated ResourceList.
type cappedWriter struct {
	buf    *bytes.Buffer
	max    int
	cancel context.CancelFunc
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	if room := w.max + 1 - w.buf.Len(); room < len(p) {
		if room > 0 {
			w.buf.Write(p[:room])
		}
		w.cancel()
		return 0, ErrOutputTooLarge
	}
	return w.buf.Write(p)
}

// encodeResourceList writes rl as a function's input: its items and
// functionConfig, not the results earlier functions gave (a function
// echoing them would add them again).
func encodeResourceList(rl *framework.ResourceList) ([]byte, error) {
	return encode(rl, nil)
}

// encodeOutput writes rl as a function's output, with its results.
func encodeOutput(rl *framework.ResourceList) ([]byte, error) {
	if len(rl.Results) == 0 {
		return encode(rl, nil)
	}
	data, err := yaml.Marshal(rl.Results)
	if err != nil {
		return nil, err
	}
	results, err := yaml.Parse(string(data))
	if err != nil {
		return nil, err
	}
	return encode(rl, results)
}

func encode(rl *framework.ResourceList, results *yaml.RNode) ([]byte, error) {
	var buf bytes.Buffer
	w := kio.ByteWriter{Writer: &buf, KeepReaderAnnotations: true, WrappingAPIVersion: kio.ResourceListAPIVersion, WrappingKind: kio.ResourceListKind, FunctionConfig: rl.FunctionConfig, Results: results}
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
