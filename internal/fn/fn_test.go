package fn

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/testutil/fnprog"
)

var fnprogBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fnprog")
	if err != nil {
		panic(err)
	}
	if fnprogBin, err = fnprog.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var resourceList = fnprog.ResourceList

func TestExec(t *testing.T) {
	ctx := context.Background()
	t.Run("success", func(t *testing.T) {
		g := NewWithT(t)
		rl := resourceList("label")
		g.Expect((&Exec{Path: fnprogBin}).Run(ctx, rl)).To(Succeed())
		g.Expect(rl.Items).To(HaveLen(1))
		g.Expect(rl.Items[0].GetLabels()).To(HaveKeyWithValue("touched-by", "fnprog"))
	})
	t.Run("failure keeps stderr and exit code", func(t *testing.T) {
		g := NewWithT(t)
		err := (&Exec{Path: fnprogBin}).Run(ctx, resourceList("crash"))
		var se *StderrError
		g.Expect(errors.As(err, &se)).To(BeTrue(), "%v", err)
		g.Expect(se.ExitCode).To(Equal(3))
		g.Expect(se.Stderr).To(ContainSubstring("fnprog: something broke"))
		g.Expect(err.Error()).To(ContainSubstring("something broke"))
	})
	t.Run("error results are returned", func(t *testing.T) {
		g := NewWithT(t)
		rl := resourceList("result-error")
		// The process exits 0; the error is in the results, which render
		// checks.
		g.Expect((&Exec{Path: fnprogBin}).Run(ctx, rl)).To(Succeed())
		g.Expect(rl.Results).To(HaveLen(1))
		g.Expect(rl.Results[0].Message).To(Equal("replicas must be at least 2"))
		g.Expect(rl.Results[0].Severity).To(Equal(framework.Error))
	})
	t.Run("timeout", func(t *testing.T) {
		g := NewWithT(t)
		err := (&Exec{Path: fnprogBin, Timeout: 300 * time.Millisecond}).Run(ctx, resourceList("sleep"))
		g.Expect(err).To(MatchError(ContainSubstring("timed out after 300ms")))
	})
	t.Run("output that is not a ResourceList", func(t *testing.T) {
		g := NewWithT(t)
		err := (&Exec{Path: fnprogBin}).Run(ctx, resourceList("garbage"))
		g.Expect(err).To(MatchError(ContainSubstring("reading its output")))
	})
	t.Run("missing executable", func(t *testing.T) {
		g := NewWithT(t)
		err := (&Exec{Path: "/nonexistent/fn"}).Run(ctx, resourceList("label"))
		g.Expect(err).To(MatchError(ContainSubstring("/nonexistent/fn")))
	})
}

func TestResolve(t *testing.T) {
	g := NewWithT(t)
	builtin := FunctionFunc(func(context.Context, *framework.ResourceList) error { return nil })
	rt := &Runtime{Builtins: map[string]Function{"set-namespace": builtin}, ContainerRuntimes: []string{"no-such-runtime-cli"}}
	for _, image := range []string{"set-namespace", "gcr.io/kpt-fn/set-namespace:v0.4", "ghcr.io/kptdev/krm-functions-catalog/set-namespace:latest", "localhost:5000/fns/set-namespace@sha256:0123"} {
		f, err := rt.Resolve(kptfilev1.Function{Image: image})
		g.Expect(err).NotTo(HaveOccurred(), image)
		_, isBuiltin := f.(FunctionFunc)
		g.Expect(isBuiltin).To(BeTrue(), image)
	}
	f, err := rt.Resolve(kptfilev1.Function{Exec: fnprogBin})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f).To(BeAssignableToTypeOf(&Exec{}))

	_, err = rt.Resolve(kptfilev1.Function{Image: "gcr.io/example/custom-fn:v1", Name: "custom"})
	g.Expect(errors.Is(err, ErrNoContainerRuntime)).To(BeTrue())
	g.Expect(err.Error()).To(Equal(`image gcr.io/example/custom-fn:v1 is not a builtin and no container runtime: none of no-such-runtime-cli is on the PATH`))

	_, err = (&Runtime{DisableExec: true}).Resolve(kptfilev1.Function{Exec: fnprogBin})
	g.Expect(err).To(MatchError(ContainSubstring("exec functions are disabled")))
}

// A server's runtime (RestrictImages) runs builtins, and as containers only
// the images its ContainerImages allow: an image exactly, or a prefix
// ending in "*". Any other is refused before a container runtime is looked
// for, naming the flag that allows it.
func TestResolve_restrictedImages(t *testing.T) {
	g := NewWithT(t)
	builtin := FunctionFunc(func(context.Context, *framework.ResourceList) error { return nil })
	rt := &Runtime{Builtins: map[string]Function{"set-namespace": builtin}, RestrictImages: true,
		ContainerImages: []string{"registry.example.com/fns/*", "ghcr.io/acme/fn:v1"}, ContainerRuntimes: []string{"no-such-runtime-cli"}}
	f, err := rt.Resolve(kptfilev1.Function{Image: "evil.example.com/set-namespace:v1"})
	g.Expect(err).NotTo(HaveOccurred(), "a builtin runs in process, whatever its registry")
	g.Expect(f).To(BeAssignableToTypeOf(FunctionFunc(nil)))
	for _, allowed := range []string{"registry.example.com/fns/labeler:v2", "registry.example.com/fns/x@sha256:0123", "ghcr.io/acme/fn:v1"} {
		_, err := rt.Resolve(kptfilev1.Function{Image: allowed})
		g.Expect(errors.Is(err, ErrNoContainerRuntime)).To(BeTrue(), "allowed, so it looks for a runtime: %s", allowed)
	}
	for _, refused := range []string{"registry.example.com/other/fn:v1", "ghcr.io/acme/fn:v2", "registry.example.com/fns"} {
		_, err := rt.Resolve(kptfilev1.Function{Image: refused})
		g.Expect(errors.Is(err, ErrImageNotAllowed)).To(BeTrue(), refused)
	}
	_, err = rt.Resolve(kptfilev1.Function{Image: "evil.example.com/rm-rf:latest", Name: "wipe"})
	g.Expect(err.Error()).To(Equal(`image evil.example.com/rm-rf:latest is not a builtin and is not allowed to run as a container here: an administrator lets images run with --function-images`))

	_, err = (&Runtime{RestrictImages: true}).Resolve(kptfilev1.Function{Image: "ghcr.io/acme/fn:v1"})
	g.Expect(errors.Is(err, ErrImageNotAllowed)).To(BeTrue(), "none allowed")
	_, err = (&Runtime{RestrictImages: true, ContainerImages: []string{"*"}, ContainerRuntimes: []string{"no-such-runtime-cli"}}).Resolve(kptfilev1.Function{Image: "ghcr.io/acme/fn:v1"})
	g.Expect(errors.Is(err, ErrNoContainerRuntime)).To(BeTrue(), `"*" allows every image`)

	g.Expect(ValidateImagePatterns([]string{"*", "a/b:v1", "a/*"})).To(Succeed())
	for _, bad := range [][]string{{""}, {"a/*/b"}, {"**"}, {"a b"}} {
		g.Expect(ValidateImagePatterns(bad)).To(MatchError(ContainSubstring("--function-images")), "%q", bad)
	}
}

// An image a typo away from a builtin says which one was meant: refused by
// the allow-list, or failing to run (a pull that finds no such image).
func TestResolve_typoOfABuiltin(t *testing.T) {
	g := NewWithT(t)
	builtin := FunctionFunc(func(context.Context, *framework.ResourceList) error { return nil })
	builtins := map[string]Function{"set-labels": builtin, "set-namespace": builtin}
	_, err := (&Runtime{Builtins: builtins, RestrictImages: true}).Resolve(kptfilev1.Function{Image: "gcr.io/kpt-fn/set-lables:v0.2"})
	g.Expect(err).To(MatchError(HavePrefix("image gcr.io/kpt-fn/set-lables:v0.2 is not a builtin (did you mean the builtin set-labels?) and is not allowed")))

	cli := filepath.Join(t.TempDir(), "podman")
	g.Expect(os.WriteFile(cli, []byte("#!/bin/sh\n[ \"$1\" = version ] && exit 0\necho 'Error: reading manifest v0.2 in gcr.io/kpt-fn/set-lables: manifest unknown' >&2\nexit 125\n"), 0o755)).To(Succeed())
	f, err := (&Runtime{Builtins: builtins, ContainerRuntimes: []string{cli}}).Resolve(kptfilev1.Function{Image: "gcr.io/kpt-fn/set-lables:v0.2"})
	g.Expect(err).NotTo(HaveOccurred())
	err = f.Run(context.Background(), resourceList("label"))
	g.Expect(err).To(MatchError(And(ContainSubstring("manifest unknown"), HaveSuffix("(did you mean the builtin set-labels?)"))))

	// An image named nothing like a builtin gets no hint.
	f, err = (&Runtime{Builtins: builtins, ContainerRuntimes: []string{cli}}).Resolve(kptfilev1.Function{Image: "registry.example.com/labeler:v1"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Run(context.Background(), resourceList("label"))).To(MatchError(Not(ContainSubstring("did you mean"))))
}

// TestContainer checks the command line the container runtime gets
// (network off, stdin attached, a name to remove it by) with a stand-in
// CLI script that runs the test function in its place; test/functions
// runs real images with podman.
func TestContainer(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "args")
	cli := filepath.Join(dir, "docker")
	script := fmt.Sprintf("#!/bin/sh\n[ \"$1\" = version ] && exit 0\necho \"$@\" > %s\nexec %s\n", argsFile, fnprogBin)
	g.Expect(os.WriteFile(cli, []byte(script), 0o755)).To(Succeed())
	rt := &Runtime{ContainerRuntimes: []string{cli}}
	f, err := rt.Resolve(kptfilev1.Function{Image: "example.com/fns/labeler:v1"})
	g.Expect(err).NotTo(HaveOccurred())
	rl := resourceList("label")
	g.Expect(f.Run(context.Background(), rl)).To(Succeed())
	g.Expect(rl.Items[0].GetLabels()).To(HaveKeyWithValue("touched-by", "fnprog"))
	args, err := os.ReadFile(argsFile)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(args)).To(MatchRegexp(`^run --rm -i --name scion-fn-[0-9a-f]{16} --network none --security-opt no-new-privileges --quiet example.com/fns/labeler:v1\n$`))
}

// Functions built with kyaml before v0.11 (the kpt catalog's apply-setters
// v0.2) write results as a map with the list under items; they are read
// as the list.
func TestDecodeResourceList_oldResults(t *testing.T) {
	g := NewWithT(t)
	out, err := decodeResourceList([]byte(`apiVersion: config.kubernetes.io/v1
kind: ResourceList
items: []
results:
  name: apply-setters
  items:
    - message: set field value to "new"
      severity: warning
      field:
        path: metadata.name
`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Results).To(HaveLen(1))
	g.Expect(out.Results[0].Message).To(Equal(`set field value to "new"`))
	g.Expect(out.Results[0].Severity).To(Equal(framework.Warning))
	g.Expect(out.Results[0].Field.Path).To(Equal("metadata.name"))
}

// The wrapper's protocol, end to end over HTTP: the function runs on what
// is sent, its output comes back; its failures come back with exit code
// and stderr; a caller without the token is refused before anything runs.
func TestWrapper(t *testing.T) {
	srv := httptest.NewServer(WrapperHandler(&Exec{Path: fnprogBin}, "s3cret"))
	defer srv.Close()
	remote := func(token string, timeout time.Duration) *Remote {
		return &Remote{URL: srv.URL, Token: token, Timeout: timeout}
	}
	ctx := context.Background()
	t.Run("success", func(t *testing.T) {
		g := NewWithT(t)
		rl := resourceList("label")
		g.Expect(remote("s3cret", time.Minute).Run(ctx, rl)).To(Succeed())
		g.Expect(rl.Items[0].GetLabels()).To(HaveKeyWithValue("touched-by", "fnprog"))
	})
	t.Run("exit code and stderr", func(t *testing.T) {
		g := NewWithT(t)
		err := remote("s3cret", time.Minute).Run(ctx, resourceList("crash"))
		var se *StderrError
		g.Expect(errors.As(err, &se)).To(BeTrue(), "%v", err)
		g.Expect(se.ExitCode).To(Equal(3))
		g.Expect(se.Stderr).To(ContainSubstring("something broke"))
	})
	t.Run("error results", func(t *testing.T) {
		g := NewWithT(t)
		rl := resourceList("result-error")
		g.Expect(remote("s3cret", time.Minute).Run(ctx, rl)).To(Succeed())
		g.Expect(rl.Results).To(HaveLen(1))
		g.Expect(rl.Results[0].Severity).To(Equal(framework.Error))
	})
	t.Run("the caller's timeout is the function's", func(t *testing.T) {
		g := NewWithT(t)
		err := remote("s3cret", 300*time.Millisecond).Run(ctx, resourceList("hang"))
		var se *StderrError
		g.Expect(errors.As(err, &se)).To(BeTrue(), "%v", err)
		g.Expect(se.ExitCode).To(Equal(-1))
		g.Expect(err).To(MatchError(ContainSubstring("timed out after 300ms")))
	})
	t.Run("1Gi of output", func(t *testing.T) {
		g := NewWithT(t)
		err := remote("s3cret", time.Minute).Run(ctx, resourceList("flood"))
		g.Expect(err).To(MatchError(ContainSubstring(ErrOutputTooLarge.Error())))
	})
	t.Run("wrong token", func(t *testing.T) {
		g := NewWithT(t)
		err := remote("guess", time.Minute).Run(ctx, resourceList("label"))
		g.Expect(errors.Is(err, ErrUnreachable)).To(BeTrue(), "%v", err)
		g.Expect(err).To(MatchError(ContainSubstring("401")))
	})
}

func TestLoopbackRegistry(t *testing.T) {
	g := NewWithT(t)
	for image, want := range map[string]bool{
		"127.0.0.1:5000/fns/x:v1": true, "localhost:5000/x": true, "localhost/x": true, "127.1.2.3/x@sha256:00": true,
		"10.0.0.1:5000/x": false, "registry.example.com/x": false, "x": false, "library/x:v1": false, "[::1]:5000/x": true,
	} {
		g.Expect(loopbackRegistry(image)).To(Equal(want), image)
	}
}
