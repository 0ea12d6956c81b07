// Package functions_test runs KRM function images for real: with podman
// and runc (hack/podman/containers.conf), pulled from a registry, through
// `scion fn render` and the function runtime; and compares the kpt
// catalog's own images (hack/catalog-functions.sh) with Scion's builtins
// on the same inputs.
package functions_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/cli"
	"github.com/scion-dev/scion/internal/fn"
	"github.com/scion-dev/scion/internal/image"
	"github.com/scion-dev/scion/internal/testutil/fnprog"
	"github.com/scion-dev/scion/internal/testutil/podman"
	"github.com/scion-dev/scion/internal/testutil/registry"
)

// pushFnprog builds the test function into an image and pushes it to reg
// as repo:tag, returning the reference by tag.
func pushFnprog(t *testing.T, reg *registry.Registry, repo string) string {
	t.Helper()
	bin, err := fnprog.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return pushBinary(t, reg, bin, repo)
}

// pushBinary pushes the image of a function executable to reg.
func pushBinary(t *testing.T, reg *registry.Registry, bin, repo string) string {
	t.Helper()
	img, err := image.ForFunction(bin)
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.Host + "/" + repo
	if _, err := image.Push(img, ref, true); err != nil {
		t.Fatal(err)
	}
	return ref
}

// A package whose pipeline names a function image renders with `scion fn
// render` on this machine: podman pulls the image from the registry and
// runs it with runc, network off; the package is written back with the
// function's change.
func TestFnRender_realImage(t *testing.T) {
	g := NewWithT(t)
	reg := registry.StartPlain(t)
	// No registries.conf entry for it: a registry on loopback is taken
	// as plain HTTP, as docker's daemon takes it (scion dev's registry).
	podman.Setup(t)
	ref := pushFnprog(t, reg, "fns/fnprog:v1")

	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "Kptfile"), []byte(`apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  mutators:
  - image: `+ref+`
    configMap:
      mode: label
`), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "deployment.yaml"), []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app # the app\nspec:\n  replicas: 1\n"), 0o644)).To(Succeed())

	var out bytes.Buffer
	o := &cli.FnRenderOptions{Streams: cli.Streams{Out: &out, ErrOut: &out}, Dir: dir}
	g.Expect(o.Run(context.Background())).To(Succeed(), out.String())
	g.Expect(out.String()).To(ContainSubstring("mutator " + ref + ": ok"))
	written, err := os.ReadFile(filepath.Join(dir, "deployment.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(written)).To(MatchRegexp(`touched-by: '?fnprog`))
	g.Expect(string(written)).To(ContainSubstring("name: app # the app"), "comments survive the container")
	g.Expect(podman.Containers(t)).To(BeEmpty(), "run --rm")
}

// Every way a function image can go wrong fails the run with what went
// wrong, within its timeout, and leaves no container behind: an image
// that does not exist, one that exits non-zero, one that hangs, one that
// writes 1Gi to stdout.
func TestContainer_faults(t *testing.T) {
	reg := registry.StartPlain(t)
	bin := podman.Setup(t, reg.Host)
	ref := pushFnprog(t, reg, "fns/fnprog:v1")
	run := func(image, mode string, timeout time.Duration) (*framework.ResourceList, error) {
		rl := fnprog.ResourceList(mode)
		return rl, (&fn.Container{Runtime: bin, Image: image, Timeout: timeout}).Run(context.Background(), rl)
	}

	t.Run("image that does not exist", func(t *testing.T) {
		g := NewWithT(t)
		_, err := run(reg.Host+"/fns/no-such-function:v1", "label", time.Minute)
		g.Expect(err).To(MatchError(ContainSubstring("no-such-function")))
		g.Expect(podman.Containers(t)).To(BeEmpty())
	})
	t.Run("exits non-zero", func(t *testing.T) {
		g := NewWithT(t)
		_, err := run(ref, "crash", time.Minute)
		var se *fn.StderrError
		g.Expect(errors.As(err, &se)).To(BeTrue(), "%v", err)
		g.Expect(se.ExitCode).To(Equal(3))
		g.Expect(se.Stderr).To(ContainSubstring("fnprog: something broke"))
		g.Expect(podman.Containers(t)).To(BeEmpty())
	})
	t.Run("error results", func(t *testing.T) {
		g := NewWithT(t)
		rl, err := run(ref, "result-error", time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rl.Results).To(HaveLen(1))
		g.Expect(rl.Results[0].Severity).To(Equal(framework.Error))
	})
	t.Run("hangs", func(t *testing.T) {
		g := NewWithT(t)
		_, err := run(ref, "hang", 3*time.Second)
		g.Expect(err).To(MatchError(ContainSubstring("timed out after 3s")))
		g.Expect(podman.Containers(t)).To(BeEmpty(), "the container is removed by name when the CLI is killed")
	})
	t.Run("writes 1Gi to stdout", func(t *testing.T) {
		g := NewWithT(t)
		_, err := run(ref, "flood", time.Minute)
		g.Expect(errors.Is(err, fn.ErrOutputTooLarge)).To(BeTrue(), "%v", err)
		g.Expect(podman.Containers(t)).To(BeEmpty())
	})
	t.Run("a CLI without its daemon is passed over", func(t *testing.T) {
		g := NewWithT(t)
		t.Setenv(fn.RuntimeEnv, "")
		dir := t.TempDir()
		docker := filepath.Join(dir, "docker")
		g.Expect(os.WriteFile(docker, []byte("#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock.' >&2\nexit 1\n"), 0o755)).To(Succeed())
		f, err := (&fn.Runtime{ContainerRuntimes: []string{docker, bin}}).Resolve(kptfilev1.Function{Image: ref})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(f.(*fn.Container).Runtime).To(Equal(bin))
		_, err = (&fn.Runtime{ContainerRuntimes: []string{docker}}).Resolve(kptfilev1.Function{Image: ref})
		g.Expect(errors.Is(err, fn.ErrNoContainerRuntime)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring("docker does not answer (Cannot connect to the Docker daemon"))
		g.Expect(err.Error()).To(ContainSubstring(fn.RuntimeEnv))
	})
}

// `scion pv render` runs a variant's pipeline function from an image the
// flag allows, as the controller would (and refuses one it does not).
func TestPvRender_realImage(t *testing.T) {
	g := NewWithT(t)
	reg := registry.StartPlain(t)
	podman.Setup(t, reg.Host)
	ref := pushFnprog(t, reg, "fns/fnprog:v1")
	dir := t.TempDir()
	up := filepath.Join(dir, "upstream")
	g.Expect(os.MkdirAll(up, 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(up, "Kptfile"), []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(up, "deployment.yaml"), []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 1\n"), 0o644)).To(Succeed())
	pv := filepath.Join(dir, "pv.yaml")
	g.Expect(os.WriteFile(pv, []byte(`apiVersion: config.porch.kpt.dev/v1alpha1
kind: PackageVariant
metadata:
  name: app
  namespace: default
spec:
  upstream: {repo: catalog, package: app, revision: "1"}
  downstream: {repo: cluster, package: app}
  pipeline:
    mutators:
    - image: `+ref+`
      configMap: {mode: label}
`), 0o644)).To(Succeed())
	render := func(allow, outDir string) (string, error) {
		var out bytes.Buffer
		cmd := cli.NewCmdPvRender(cli.Streams{Out: &out, ErrOut: &out})
		cmd.SetArgs([]string{"-f", pv, "--upstream", up, "--out", filepath.Join(dir, outDir), "--function-images", allow})
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := render(reg.Host+"/fns/*", "allowed")
	g.Expect(err).NotTo(HaveOccurred(), out)
	written, err := os.ReadFile(filepath.Join(dir, "allowed", "deployment.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(written)).To(MatchRegexp(`touched-by: '?fnprog`))
	out, err = render(reg.Host+"/other/*", "refused")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out + err.Error()).To(ContainSubstring("not allowed to run as a container"))
}
