// Package cli holds the cobra commands of the scion binary. Commands are
// thin: each owns an options struct and calls a library that does the work.
package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"
)

// Streams are the standard streams a command writes to.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// NewRootCommand returns the scion command with every subcommand.
func NewRootCommand(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "scion",
		Short:         "Scion derives, updates and gates variants of KRM packages across a fleet",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.AddCommand(NewCmdVersion(streams), NewCmdPkg(streams), NewCmdFn(streams), NewCmdController(streams), NewCmdRpkg(streams), NewCmdPv(streams), NewCmdPvs(streams), NewCmdDev(streams), NewCmdTree(streams), NewCmdDeps(streams), NewCmdRollout(streams))
	return cmd
}

// cmdContext is the command's context, or a background one when the
// command runs without (as in tests).
func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
