package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgdiff"
	"github.com/scion-dev/scion/internal/rpkg"
)

// Output formats of scion rpkg diff.
const (
	diffUnified = "unified"
	diffStat    = "stat"
	diffJSON    = "json"
)

func newCmdRpkgDiff(o *RpkgOptions) *cobra.Command {
	var against, output, lifecycle string
	var sel rpkg.Selection
	cmd := &cobra.Command{
		Use:   "diff [REV] [--against published|upstream|REV2] [-o unified|stat|json]",
		Short: "Show what a revision changes, or what many proposals change, grouped",
		Long: `Show what the revision REV changes, resource by resource (a resource is
identified by apiVersion/kind/namespace/name, whichever file holds it; moved
resources and renamed files are recognised; the Kptfile is shown apart).

By default REV is compared with the revision it will replace: the latest
published revision of its package (for a published REV, the one before it),
or nothing for a first revision. --against upstream compares it with the
upstream revision it was cloned from (its own edits); --against REV2 with any
revision.

With --selector, --variant-set or --rollout instead of REV, every revision
they cover (the Proposed ones, or --lifecycle) is compared, and identical
changes are grouped: the most common change is printed once with how many
revisions make it and in which repositories, then each different change.

Content is read through the Kubernetes API (get on packagerevisionresources);
no git credentials are needed. -o json is documented in docs/diff.md.`,
		Example: `  scion rpkg diff cluster-01.app.packagevariant-2
  scion rpkg diff cluster-01.app.packagevariant-2 --against upstream -o stat
  scion rpkg diff --variant-set regional-app
  scion rpkg diff -l team=payments --lifecycle Draft -o json`,
		Args: cobra.MaximumNArgs(1),
	}
	cmd.RunE = func(cc *cobra.Command, args []string) error {
		switch output {
		case diffUnified, diffStat, diffJSON:
		default:
			return fmt.Errorf("-o %q: use unified, stat or json", output)
		}
		selecting := sel.Labels != "" || sel.VariantSet != "" || sel.Rollout != ""
		if len(args) == 1 && selecting {
			return fmt.Errorf("name one revision, or select many with --selector, --variant-set or --rollout, not both")
		}
		if len(args) == 0 && !selecting {
			return fmt.Errorf("name a revision, or select many with --selector, --variant-set or --rollout")
		}
		return rpkgRun(o, func(ctx context.Context) error {
			if len(args) == 1 {
				name, err := rpkg.ParseName(args[0])
				if err != nil {
					return err
				}
				d, err := o.client.Diff(ctx, name, against)
				if err != nil {
					return err
				}
				return printRevisionDiff(o.Out, d, output)
			}
			sel.Lifecycle = porchv1alpha1.Lifecycle(lifecycle)
			revs, err := o.client.Select(ctx, sel)
			if err != nil {
				return err
			}
			sum, err := o.client.DiffMany(ctx, revs, against)
			if err != nil {
				return err
			}
			return printDiffSummary(o.Out, sum, output)
		})(cc, args)
	}
	cmd.Flags().StringVar(&against, "against", rpkg.AgainstPublished, "what to compare with: published (the revision it replaces), upstream (the revision it was cloned from) or a revision's name")
	cmd.Flags().StringVarP(&output, "output", "o", diffUnified, "output format: unified, stat or json")
	cmd.Flags().StringVarP(&sel.Labels, "selector", "l", "", "compare the revisions with these labels")
	cmd.Flags().StringVar(&sel.VariantSet, "variant-set", "", "compare the revisions of this PackageVariantSet's variants")
	cmd.Flags().StringVar(&sel.Rollout, "rollout", "", "compare the revisions this PackageRollout selects")
	cmd.Flags().StringVar(&lifecycle, "lifecycle", string(porchv1alpha1.LifecycleProposed), "with a selection, the lifecycle of the revisions compared")
	return cmd
}

func printRevisionDiff(w io.Writer, d *rpkg.RevisionDiff, output string) error {
	if output == diffJSON {
		return writeJSON(w, d)
	}
	if _, err := fmt.Fprintf(w, "%s (%s in %s) against %s:\n", d.Revision, d.Package, d.Repository, againstName(d.Against)); err != nil {
		return err
	}
	return writeDiff(w, d.Diff, output)
}

func printDiffSummary(w io.Writer, s *rpkg.DiffSummary, output string) error {
	if output == diffJSON {
		return writeJSON(w, s)
	}
	var b strings.Builder // written once, whole
	if s.Revisions == 0 {
		b.WriteString("no revisions selected\n")
	}
	for i, g := range s.Groups {
		switch {
		case i == 0 && len(s.Groups) == 1:
			fmt.Fprintf(&b, "%d of %d revisions make this change", g.Count, s.Revisions)
		case i == 0:
			fmt.Fprintf(&b, "%d of %d revisions make the most common change", g.Count, s.Revisions)
		case i == 1:
			fmt.Fprintf(&b, "\n%d revision(s) differ:\n\n%d revision(s) make this change", s.Revisions-s.Groups[0].Count-len(s.Failures), g.Count)
		default:
			fmt.Fprintf(&b, "\n%d revision(s) make this change", g.Count)
		}
		fmt.Fprintf(&b, " (repositories: %s; revisions: %s; against %s):\n", strings.Join(g.Repositories, ", "), some(g.Revisions), againstNames(g.Against))
		if err := writeDiff(&b, g.Diff, output); err != nil {
			return err
		}
	}
	for _, f := range s.Failures {
		fmt.Fprintf(&b, "\ncould not compare %s: %s\n", f.Revision, f.Error)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeDiff(w io.Writer, d *pkgdiff.Diff, output string) error {
	if output == diffStat {
		return d.WriteStat(w)
	}
	return d.WriteUnified(w)
}

func againstName(name string) string {
	if name == "" {
		return "nothing (a first revision)"
	}
	return name
}

func againstNames(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = againstName(n)
	}
	return some(out)
}

// shownNames is how many names of a group's revisions the text output
// lists (-o json lists them all).
const shownNames = 5

// some joins the first shownNames names, and says how many more.
func some(names []string) string {
	if len(names) <= shownNames {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shownNames], ", "), len(names)-shownNames)
}

// writeJSON writes v as indented JSON, without HTML escaping (YAML and
// diffs stay readable).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
