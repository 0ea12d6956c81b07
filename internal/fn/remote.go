package fn

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
)

// The function wrapper's protocol: a process beside a function's
// executable (in the function's Pod) takes a ResourceList over HTTP, runs
// the executable on it and answers with the ResourceList it wrote, or,
// when it failed, a RemoteFailure. Nothing is written to disk or git on
// the way.
const (
	// RunPath is where the wrapper takes ResourceLists (POST).
	RunPath = "/run"
	// HealthPath answers 200 once the wrapper serves.
	HealthPath = "/healthz"
	// timeoutHeader carries the caller's timeout, which the wrapper
	// enforces on the executable.
	timeoutHeader = "X-Scion-Function-Timeout"
)

// RemoteFailure is the body of a failed run: the function's error, exit
// code, stderr and the results it wrote.
type RemoteFailure struct {
	Error    string            `json:"error"`
	ExitCode int               `json:"exitCode"`
	Stderr   string            `json:"stderr,omitempty"`
	Results  framework.Results `json:"results,omitempty"`
}

// maxRequest bounds a ResourceList the wrapper takes: the largest a
// function may write (MaxOutput), since one function's output is the
// next one's input.
const maxRequest = MaxOutput

// WrapperHandler serves the wrapper's protocol for the executable e, to
// callers presenting token as a bearer token.
func WrapperHandler(e *Exec, token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(HealthPath, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc(RunPath, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST a ResourceList", http.StatusMethodNotAllowed)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+token)) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequest))
		if err != nil {
			http.Error(w, "reading the ResourceList: "+err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		timeout := e.Timeout
		if d, err := time.ParseDuration(r.Header.Get(timeoutHeader)); err == nil && d > 0 {
			timeout = d
		}
		// The ResourceList goes to the function and its output back as
		// they are: the caller reads them.
		out, err := runRaw(r.Context(), timeout, e.Path, e.Args, body)
		if err != nil {
			f := RemoteFailure{Error: err.Error(), ExitCode: -1}
			var se *StderrError
			if errors.As(err, &se) {
				f.Error, f.ExitCode, f.Stderr = se.Err.Error(), se.ExitCode, se.Stderr
			}
			if rl, derr := decodeResourceList(out); out != nil && derr == nil {
				f.Results = rl.Results
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnprocessableEntity)
			_ = json.NewEncoder(w).Encode(f)
			return
		}
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(out)
	})
	return mux
}

// Remote runs a function through a wrapper at URL (http://host:port).
type Remote struct {
	URL     string
	Token   string
	Timeout time.Duration
	Client  *http.Client
}

// ErrUnreachable is matched when a wrapper could not be asked or did not
// answer as one: the runner does not reuse its Pod.
var ErrUnreachable = errors.New("function runner unreachable")

// Run sends rl to the wrapper and takes back what the function wrote.
func (r *Remote) Run(ctx context.Context, rl *framework.ResourceList) error {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	in, err := encodeResourceList(rl)
	if err != nil {
		return err
	}
	// The wrapper stops the function at timeout; the request gets a
	// little more, for the answer to come back.
	ctx, cancel := context.WithTimeout(ctx, timeout+10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL+RunPath, bytes.NewReader(in))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+r.Token)
	req.Header.Set("Content-Type", "application/yaml")
	req.Header.Set(timeoutHeader, timeout.String())
	c := r.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxOutput+1))
	if err != nil {
		return fmt.Errorf("%w: reading its answer: %v", ErrUnreachable, err)
	}
	if len(body) > MaxOutput {
		return &StderrError{Err: ErrOutputTooLarge, ExitCode: -1}
	}
	switch resp.StatusCode {
	case http.StatusOK:
		out, err := decodeResourceList(body)
		if err != nil {
			return &StderrError{Err: fmt.Errorf("reading its output: %w", err)}
		}
		rl.Items = out.Items
		rl.Results = append(rl.Results, out.Results...)
		return nil
	case http.StatusUnprocessableEntity:
		var f RemoteFailure
		if err := json.Unmarshal(body, &f); err != nil {
			return fmt.Errorf("%w: an answer that is not a failure: %v", ErrUnreachable, err)
		}
		rl.Results = append(rl.Results, f.Results...)
		return &StderrError{Err: errors.New(f.Error), ExitCode: f.ExitCode, Stderr: f.Stderr}
	default:
		return fmt.Errorf("%w: %s: %s", ErrUnreachable, resp.Status, bytes.TrimSpace(body))
	}
}
