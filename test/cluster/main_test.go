// Package cluster_test installs Scion the way users do, on a real node
// (internal/testutil/cluster): its image built by make image's code and
// pushed to the node's registry, `kubectl apply -k` of an overlay over
// config/default, then drives a fleet with Scion running as Pods: an
// upgrade from the previous commit's image, a set over ten deployment
// repositories served by a git server the Pods reach, an upstream bump
// during which the controller's leader Pod is killed, approvals through
// kubectl and through the console's API in the cluster, Scion's API
// server losing a replica, function images as Pods, and Flux's
// controllers (make flux) deploying what Scion publishes, a crash-looping
// release rolled back on Flux's word. make test-cluster runs it (and
// make test).
package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/scion-dev/scion/internal/image"
	"github.com/scion-dev/scion/internal/testutil/cluster"
)

var (
	node *cluster.Cluster
	// root is this module's folder.
	root string
	// current is the image of this module (the change under test), by
	// digest.
	current string
	// buildDir holds binaries built for the tests.
	buildDir string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) (code int) {
	ctx := context.Background()
	// envtest's CRD installation (Flux's CRDs) logs through
	// controller-runtime: nothing to show here.
	ctrllog.SetLogger(logr.Discard())
	var err error
	if root, err = filepath.Abs(filepath.Join("..", "..")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "k8s")
	}
	if buildDir, err = os.MkdirTemp("", "scion-cluster-test"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(buildDir)
	start := time.Now()
	node, err = cluster.Start(ctx, cluster.Options{Assets: assets, Progress: os.Stdout, KeepDir: os.Getenv("SCION_NODE_KEEP") != ""})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := node.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}()
	fmt.Printf("==> node up in %s\n", time.Since(start).Round(time.Second))
	start = time.Now()
	if current, err = buildImage(ctx, root, "scion:current", "current"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("==> image %s built and pushed in %s\n", current, time.Since(start).Round(time.Second))
	code = m.Run()
	if code != 0 {
		fmt.Println("==> the node's logs (their ends):")
		fmt.Println(node.Logs(40))
	}
	return code
}

// buildImage builds the image of the module in src as make image does and
// pushes it to the node's registry as repoTag; it returns its reference
// by digest.
func buildImage(ctx context.Context, src, repoTag, version string) (string, error) {
	bin := filepath.Join(buildDir, strings.ReplaceAll(repoTag, ":", "-"))
	if err := image.BuildBinary(ctx, src, bin, version); err != nil {
		return "", err
	}
	img, err := image.ForBinary(bin, image.DefaultCACertificates, version)
	if err != nil {
		return "", err
	}
	return node.PushImage(img, repoTag)
}

// kubectl runs the node's kubectl as its administrator.
func kubectl(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := kubectlErr(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// kubectlErr is kubectl that returns its error.
func kubectlErr(stdin string, args ...string) (string, error) {
	cmd := exec.Command(node.Kubectl, append([]string{"--kubeconfig", node.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
