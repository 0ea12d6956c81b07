package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/console"
	"github.com/scion-dev/scion/internal/scheme"
)

// ConsoleOptions configure scion console.
type ConsoleOptions struct {
	Streams
	Kube        KubeFlags
	Listen      string
	AllowRemote bool
	// Auth is kubeconfig (act as the kubeconfig's user) or bearer (act as
	// the person of each request, by the token an authenticating proxy
	// passes on).
	Auth string
}

// NewCmdConsole returns `scion console`.
func NewCmdConsole(streams Streams) *cobra.Command {
	o := &ConsoleOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve web pages to review proposals, approve them and follow rollouts, as you",
		Long: `Serve the console on --listen (127.0.0.1:8080): the fleet (sets, variants and
what is not Ready), the revisions waiting for review with their changes
grouped and their gates, approve and reject buttons, rollouts with their
waves and approve-wave, pause, resume and abort, and a package's history.

The console acts with your kubeconfig's identity only: every read and every
approval is your own request, which Kubernetes RBAC allows or refuses. It
holds no other credential. Anyone who can reach the address acts as you, so
it listens on a loopback address unless --allow-remote is given.

In a cluster, behind an authenticating proxy that passes each person's
Kubernetes bearer token on (Authorization: Bearer ...), --auth=bearer makes
every Kubernetes request with the token of the request it serves: each person
acts as themselves, authenticated by the API server and allowed by RBAC; the
console's own service account is used only for API discovery and needs no
role. A request without a token is refused (401). See docs/console.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.Run(cmdContext(cmd))
		},
	}
	o.Kube.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.Listen, "listen", "127.0.0.1:8080", "address to serve on")
	cmd.Flags().BoolVar(&o.AllowRemote, "allow-remote", false, "listen on a non-loopback address: whoever reaches it acts as you")
	cmd.Flags().StringVar(&o.Auth, "auth", "kubeconfig", "whose identity requests are made with: kubeconfig (yours) or bearer (each request's bearer token, behind an authenticating proxy)")
	return cmd
}

// Run serves until ctx ends.
func (o *ConsoleOptions) Run(ctx context.Context) error {
	bearer := false
	switch o.Auth {
	case "kubeconfig":
	case "bearer":
		bearer = true
	default:
		return fmt.Errorf("--auth %q: kubeconfig or bearer", o.Auth)
	}
	// Behind a proxy, each request carries its person's token: reaching
	// the address alone gives nobody the console's identity.
	if err := checkLoopback(o.Listen, o.AllowRemote || bearer); err != nil {
		return err
	}
	cfg, ns, err := o.Kube.Config()
	if err != nil {
		return err
	}
	if bearer {
		if cfg, err = console.BearerConfig(cfg); err != nil {
			return err
		}
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	s, err := console.New(console.Options{Client: c, Namespace: ns, Bearer: bearer})
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	who := "acting as your kubeconfig's user"
	if bearer {
		who = "acting as the person of each request, by their bearer token"
	}
	fmt.Fprintf(o.Out, "console for namespace %s at http://%s/ (%s; Ctrl-C stops it)\n", ns, ln.Addr(), who)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// checkLoopback refuses a non-loopback address unless allowed: whoever
// reaches the console acts with the person's identity.
func checkLoopback(addr string, allowed bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", addr, err)
	}
	if allowed {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--listen %s is not a loopback address: whoever reaches it would act as you (your kubeconfig's identity); give --allow-remote if that is what you want, and put it behind authentication", addr)
}
