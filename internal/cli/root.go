// Package cli holds the cobra commands of the scion binary. Commands are
// thin: each owns an options struct and calls a library that does the work.
package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/scion-dev/scion/internal/suggest"
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
	cmd.AddCommand(NewCmdVersion(streams), NewCmdPkg(streams), NewCmdFn(streams), NewCmdController(streams), NewCmdAPIServer(streams), NewCmdMigrate(streams), NewCmdRpkg(streams), NewCmdPv(streams), NewCmdPvs(streams), NewCmdDev(streams), NewCmdTree(streams), NewCmdDeps(streams), NewCmdRollout(streams), NewCmdConsole(streams), NewCmdRepo(streams))
	strict(cmd)
	return cmd
}

// strict makes every command of the tree refuse what it does not know,
// with a suggestion, and a non-zero exit: a group of commands given an
// unknown one (cobra prints the help and exits 0 otherwise), and an
// unknown flag ("did you mean --repository?").
func strict(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
		if !ok {
			return err
		}
		if s := closestFlag(c, name); s != "" {
			return fmt.Errorf("%w\n\nDid you mean --%s? (%s --help lists the flags)", err, s, c.CommandPath())
		}
		return fmt.Errorf("%w (%s --help lists the flags)", err, c.CommandPath())
	})
	if cmd.HasSubCommands() && cmd.Run == nil && cmd.RunE == nil {
		cmd.Args = cobra.ArbitraryArgs
		cmd.RunE = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
			if c.SuggestionsMinimumDistance <= 0 {
				c.SuggestionsMinimumDistance = 2
			}
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
			}
			return fmt.Errorf("%s\n\nRun '%s --help' for the commands", msg, c.CommandPath())
		}
	}
	for _, sub := range cmd.Commands() {
		strict(sub)
	}
}

// closestFlag is the flag of c (its own and inherited) nearest to name:
// one it begins (--repo for --repository), else the nearest by edit
// distance when that is 2 or less (a typo).
func closestFlag(c *cobra.Command, name string) string {
	var names []string
	visit := func(f *pflag.Flag) { names = append(names, f.Name) }
	c.Flags().VisitAll(visit)
	c.InheritedFlags().VisitAll(visit)
	return suggest.Closest(name, names, 2)
}

// cmdContext is the command's context, or a background one when the
// command runs without (as in tests).
func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
