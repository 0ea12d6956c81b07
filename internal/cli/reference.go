package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// WriteReference writes the Markdown reference of root and every command
// under it: usage, description, examples and flags (docs/reference/cli.md
// is generated with it, and a test keeps it current).
func WriteReference(w io.Writer, root *cobra.Command) error {
	var b strings.Builder
	b.WriteString("# CLI reference\n\n")
	b.WriteString("Generated from the commands by `make docs`; do not edit. The guide with\nexamples is [cli.md](../cli.md).\n\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if c.HasParent() {
			fmt.Fprintf(&b, "## %s\n\n", c.CommandPath())
		}
		if c.Short != "" {
			fmt.Fprintf(&b, "%s\n\n", c.Short)
		}
		if c.Runnable() {
			fmt.Fprintf(&b, "```\n%s\n```\n\n", c.UseLine())
		}
		if c.Long != "" {
			fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(c.Long))
		}
		if c.Example != "" {
			fmt.Fprintf(&b, "Examples:\n\n```sh\n%s\n```\n\n", strings.TrimRight(c.Example, "\n"))
		}
		if fs := c.NonInheritedFlags(); fs.HasAvailableFlags() {
			fmt.Fprintf(&b, "Flags:\n\n```\n%s```\n\n", fs.FlagUsages())
		}
		if fs := c.InheritedFlags(); fs.HasAvailableFlags() && c.HasParent() && c.Parent().HasParent() {
			fmt.Fprintf(&b, "Inherited flags:\n\n```\n%s```\n\n", fs.FlagUsages())
		}
		var subs []string
		for _, s := range c.Commands() {
			if !s.Hidden && s.Name() != "help" && s.Name() != "completion" {
				subs = append(subs, fmt.Sprintf("* `%s`: %s", s.CommandPath(), s.Short))
			}
		}
		if len(subs) > 0 {
			fmt.Fprintf(&b, "Commands:\n\n%s\n\n", strings.Join(subs, "\n"))
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}
