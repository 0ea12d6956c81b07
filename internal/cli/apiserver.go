package cli

import (
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/apiserver"
	"github.com/scion-dev/scion/internal/fn"
	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/scheme"
	"github.com/scion-dev/scion/internal/store"
)

// APIServerOptions are the options of `scion apiserver`.
type APIServerOptions struct {
	Streams
	Server  apiserver.Options
	Cache   repocache.Cache
	limits  limitFlags
	egress  egressFlags
	address string
	// registryCAFile is --registry-ca-file.
	registryCAFile string
	functionRunner functionRunnerFlags
}

// NewCmdAPIServer returns `scion apiserver`, Scion's aggregated API
// server.
func NewCmdAPIServer(streams Streams) *cobra.Command {
	o := &APIServerOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "apiserver",
		Short: "Run Scion's API server: Porch's API (porch.kpt.dev/v1alpha1) for people and Porch's tools",
		Long: `Serve porch.kpt.dev/v1alpha1 behind the cluster's API server (an APIService):
PackageRevisions over Scion's storage (packagerevisions.internal.scion.dev),
their approval subresource, and PackageRevisionResources, a revision's files
read from and written to git. Requests are authenticated and authorized by the
cluster's API server (Kubernetes RBAC); writes to the storage are made as the
user who asked. Uses the in-cluster configuration, or the kubeconfig of
--kubeconfig, $KUBECONFIG or ~/.kube/config.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			return o.Run(cmd)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.address, "bind-address", "0.0.0.0", "address to serve on")
	f.IntVar(&o.Server.Port, "secure-port", 6443, "port to serve HTTPS on")
	f.StringVar(&o.Server.CertFile, "tls-cert-file", "", "serving certificate (default: a self-signed one in --cert-dir)")
	f.StringVar(&o.Server.KeyFile, "tls-private-key-file", "", "key of --tls-cert-file")
	f.StringVar(&o.Server.CertDir, "cert-dir", "", "folder of the self-signed serving certificate (default: $XDG_CACHE_HOME/scion/apiserver)")
	f.StringVar(&o.Cache.Dir, "cache-dir", "", "folder of the local git mirrors (default: $XDG_CACHE_HOME/scion/apiserver-repositories)")
	f.DurationVar(&o.Cache.Timeout, "git-timeout", store.DefaultTimeout, "how long one exchange with a git remote may take before it fails")
	f.BoolVar(&o.Cache.AllowFileRepositories, "allow-file-repositories", false, "let Repositories use file:// URLs (for development)")
	addFunctionImagesFlag(f, &o.Server.FunctionImages)
	o.functionRunner.add(f)
	f.StringVar(&o.registryCAFile, "registry-ca-file", "", "PEM file of certificate authorities to trust, besides the system's, for the registries of Repositories of type oci")
	o.limits.add(f)
	o.egress.add(f)
	if kf := flag.CommandLine.Lookup("kubeconfig"); kf != nil {
		f.AddGoFlag(kf)
	}
	return cmd
}

// Complete checks the flags and fills in defaults.
func (o *APIServerOptions) Complete() error {
	if o.Server.BindAddress = net.ParseIP(o.address); o.Server.BindAddress == nil {
		return fmt.Errorf("--bind-address %q: not an IP address", o.address)
	}
	if o.Server.Port < 1 || o.Server.Port > 65535 {
		return fmt.Errorf("--secure-port %d: want a port, 1 to 65535", o.Server.Port)
	}
	if (o.Server.CertFile == "") != (o.Server.KeyFile == "") {
		return fmt.Errorf("--tls-cert-file and --tls-private-key-file go together")
	}
	for _, d := range []struct {
		into *string
		name string
	}{{&o.Server.CertDir, "apiserver"}, {&o.Cache.Dir, "apiserver-repositories"}} {
		if *d.into != "" {
			continue
		}
		dir, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("no user cache folder for %s: %w", d.name, err)
		}
		*d.into = filepath.Join(dir, "scion", d.name)
	}
	if err := o.limits.complete(&o.Server.Limits); err != nil {
		return err
	}
	policy, err := o.egress.complete()
	if err != nil {
		return err
	}
	o.Cache.Egress = policy
	if err := fn.ValidateImagePatterns(o.Server.FunctionImages); err != nil {
		return err
	}
	if err := o.functionRunner.complete(); err != nil {
		return err
	}
	o.Cache.Limits = o.Server.Limits
	t, err := oci.TransportWithCA(o.registryCAFile)
	if err != nil {
		return fmt.Errorf("--registry-ca-file: %w", err)
	}
	o.Cache.OCITransport = t
	return nil
}

// Run serves until SIGTERM or SIGINT.
func (o *APIServerOptions) Run(cmd *cobra.Command) error {
	setMemoryLimit(klog.Background())
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("finding the cluster: %w", err)
	}
	if kf := flag.CommandLine.Lookup("kubeconfig"); kf != nil {
		o.Server.Kubeconfig = kf.Value.String()
	}
	if o.Server.Kubeconfig == "" && os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		// Outside a cluster, the delegated authentication and
		// authorization read the same kubeconfig the rest does.
		o.Server.Kubeconfig = os.Getenv("KUBECONFIG")
		if o.Server.Kubeconfig == "" {
			o.Server.Kubeconfig = clientcmd.RecommendedHomeFile
		}
	}
	reader, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	o.Cache.Reader = reader
	if o.Cache.Egress != nil {
		o.Cache.Egress.DenyCluster(reader, klog.Background().WithName("egress"))
	}
	o.Server.Config = cfg
	o.Server.Repositories = &o.Cache
	ctx := ctrl.SetupSignalHandler()
	if o.Server.FunctionRunner, err = o.functionRunner.start(ctx, cfg); err != nil {
		return err
	}
	srv, err := apiserver.New(o.Server)
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}
