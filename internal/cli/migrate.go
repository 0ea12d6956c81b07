package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/apiserver"
	"github.com/scion-dev/scion/internal/scheme"
)

// NewCmdMigrate returns `scion migrate`, the steps of an upgrade that
// move data.
func NewCmdMigrate(streams Streams) *cobra.Command {
	cmd := &cobra.Command{Use: "migrate", Short: "Move an installation's data to what a newer version keeps"}
	var kube KubeFlags
	prs := &cobra.Command{
		Use:   "packagerevisions",
		Short: "Copy the PackageRevisions of the porch.kpt.dev CustomResourceDefinition into Scion's storage",
		Long: `Copy every PackageRevision of an installation from before Scion's API server
(served by the packagerevisions.porch.kpt.dev CustomResourceDefinition) into
Scion's storage (packagerevisions.internal.scion.dev): name, labels,
annotations, owners, finalizers, spec and status. Run it after applying the
storage's CustomResourceDefinition and before applying the APIService (which
makes the old objects unreachable); see docs/install.md#upgrading. It is
idempotent: objects already copied are left as they are.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, _, err := kube.Config()
			if err != nil {
				return err
			}
			porch, err := client.New(cfg, client.Options{Scheme: scheme.New()})
			if err != nil {
				return err
			}
			storage, err := client.New(cfg, client.Options{Scheme: scheme.NewStorage()})
			if err != nil {
				return err
			}
			dc, err := discovery.NewDiscoveryClientForConfig(cfg)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			got, err := apiserver.Migrate(ctx, dc, porch, storage)
			if errors.Is(err, apiserver.ErrAlreadyServed) {
				fmt.Fprintln(streams.Out, "porch.kpt.dev is served by Scion's API server already: nothing to copy")
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(streams.Out, "copied %d PackageRevisions into Scion's storage (%d were there already)\n", got.Copied, got.Present)
			return nil
		},
	}
	kube.AddFlags(prs.Flags())
	cmd.AddCommand(prs)
	return cmd
}
