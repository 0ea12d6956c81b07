package cli

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/scheme"
)

// KubeFlags select the cluster and namespace of client commands.
type KubeFlags struct {
	Kubeconfig string
	Context    string
	Namespace  string
}

// AddFlags registers the flags.
func (k *KubeFlags) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&k.Kubeconfig, "kubeconfig", "", "path of the kubeconfig (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&k.Context, "context", "", "kubeconfig context to use")
	f.StringVarP(&k.Namespace, "namespace", "n", "", "namespace (default: the context's, else default)")
}

// Client returns a client, the namespace to work in, and the user the
// kubeconfig context names (recorded as approver).
func (k *KubeFlags) Client() (client.Client, string, error) {
	cfg, ns, err := k.Config()
	if err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, "", err
	}
	return c, ns, nil
}

// Config returns the kubeconfig's client configuration and the namespace
// to work in.
func (k *KubeFlags) Config() (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if k.Kubeconfig != "" {
		rules.ExplicitPath = k.Kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: k.Context}
	overrides.Context.Namespace = k.Namespace
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	// kubectl's rates: a batch verb's requests are not throttled to
	// client-go's 5 a second (nor logged as such).
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 300
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", err
	}
	return cfg, ns, nil
}
