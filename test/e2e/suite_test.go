package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/cli"
	"github.com/scion-dev/scion/internal/controlplane"
	"github.com/scion-dev/scion/internal/egress"
	"github.com/scion-dev/scion/internal/manager"
	"github.com/scion-dev/scion/internal/testutil/suite"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

var (
	env        *testenv.Env
	k8sClient  client.Client
	kubeconfig string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "scion-e2e")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	// The default egress policy, but that the tests' servers on
	// 127.0.0.1 may be reached (TestEgress uses 127.0.0.2).
	policy, err := egress.New([]string{"127.0.0.1"}, egress.DefaultDeny)
	if err != nil {
		panic(err)
	}
	// The manager's webhook receiver, on a port free now.
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		panic(err)
	}
	webhookURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	os.Exit(suite.Run(m, manager.Options{WebhookAddr: strings.TrimPrefix(webhookURL, "http://"), RepositoryWorkers: 4, PackageRevisionWorkers: 4, PackageVariantWorkers: 4, SyncPeriod: 30 * time.Second, TagPollPeriod: 2 * time.Second, Egress: policy, Notifications: true}, nil,
		func(e *testenv.Env) {
			env, k8sClient = e, e.Client
			if err := e.WriteKubeconfig(kubeconfig, "tester"); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}))
}

// webhookURL is where the manager's webhook receiver listens
// (--webhook-bind-address).
var webhookURL string

// scion runs the scion CLI in namespace ns and returns its output.
func scion(ns string, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	if len(args) > 0 && args[0] == "rpkg" {
		args = append([]string{"rpkg", "--kubeconfig", kubeconfig, "-n", ns}, args[1:]...)
	}
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}
