package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/scion-dev/scion/internal/tree"
)

// NewCmdTree returns `scion tree KIND/NAME`.
func NewCmdTree(streams Streams) *cobra.Command {
	kube := &KubeFlags{}
	var output string
	var opts tree.Options
	cmd := &cobra.Command{
		Use:   "tree KIND/NAME",
		Short: "Show a PackageVariantSet or PackageVariant with what it made, or a PackageRollout with its waves",
		Long: `Show the hierarchy a PackageVariantSet (pvs) or PackageVariant (pvar)
made: the set, its PackageVariants and their PackageRevisions, with
lifecycle, Ready and readiness-gate status, one line each; or a
PackageRollout (prollout) with what it waits on and its waves (state and
counts). In colour on a terminal; -o json prints the same tree for scripts.

A set of more than 1,000 variants shows the variants its status names as
not Ready (the first ten by name) and counts the rest: reading every
variant of a set of 10,000 takes seconds. --all shows every variant.`,
		Example: `  scion tree pvs/regional-app
  scion tree packagevariant/policy-cluster-01 -o json
  scion tree prollout/regional-app-v2
  scion tree pvs/fleet --all`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, ok := strings.Cut(args[0], "/")
			if !ok || name == "" {
				return fmt.Errorf("want KIND/NAME, such as pvs/regional-app, not %q", args[0])
			}
			if output != "text" && output != "json" {
				return fmt.Errorf("--output must be text or json, not %q", output)
			}
			c, ns, err := kube.Client()
			if err != nil {
				return err
			}
			n, err := tree.Build(cmdContext(cmd), c, ns, kind, name, opts)
			if err != nil {
				return err
			}
			if output == "json" {
				return tree.PrintJSON(streams.Out, n)
			}
			color := false
			if f, ok := streams.Out.(*os.File); ok {
				color = term.IsTerminal(int(f.Fd()))
			}
			return tree.Print(streams.Out, n, color)
		},
	}
	kube.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	cmd.Flags().BoolVar(&opts.All, "all", false, "show every variant of a set of more than 1,000 (by default: those not Ready)")
	return cmd
}
