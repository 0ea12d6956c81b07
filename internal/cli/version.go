package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/scion-dev/scion/internal/version"
)

// VersionOptions are the options of `scion version`.
type VersionOptions struct {
	Streams
	Output string
}

// NewCmdVersion returns `scion version`.
func NewCmdVersion(streams Streams) *cobra.Command {
	o := &VersionOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of scion",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: empty for text, or json")
	return cmd
}

// Validate checks the flags.
func (o *VersionOptions) Validate() error {
	if o.Output != "" && o.Output != "json" {
		return fmt.Errorf("--output must be empty or json, not %q", o.Output)
	}
	return nil
}

// Run prints the version.
func (o *VersionOptions) Run() error {
	info := version.Get()
	if o.Output == "json" {
		return writeJSON(o.Out, info)
	}
	_, err := fmt.Fprintln(o.Out, info.String())
	return err
}
