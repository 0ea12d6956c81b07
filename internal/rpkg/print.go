package rpkg

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgservice"
)

// Print renders revisions as a table (format "" or "wide"), YAML, JSON or
// kubectl's names (packagerevision.porch.kpt.dev/NAME).
func Print(w io.Writer, revs []porchv1alpha1.PackageRevision, format string) error {
	switch format {
	case "", "table", "wide":
		return printTable(w, revs, format == "wide")
	case "name":
		for _, pr := range revs {
			if _, err := fmt.Fprintf(w, "packagerevision.%s/%s\n", porchv1alpha1.GroupVersion.Group, pr.Name); err != nil {
				return err
			}
		}
		return nil
	case "yaml", "json":
		list := &porchv1alpha1.PackageRevisionList{Items: revs}
		list.APIVersion, list.Kind = porchv1alpha1.GroupVersion.String(), "PackageRevisionList"
		for i := range list.Items {
			list.Items[i].APIVersion, list.Items[i].Kind = porchv1alpha1.GroupVersion.String(), "PackageRevision"
			list.Items[i].ManagedFields = nil
		}
		var out []byte
		var err error
		if format == "yaml" {
			out, err = yaml.Marshal(list)
		} else {
			out, err = json.MarshalIndent(list, "", "  ")
			out = append(out, '\n')
		}
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	default:
		return fmt.Errorf("unknown output format %q (want wide, yaml, json or name)", format)
	}
}

func printTable(w io.Writer, revs []porchv1alpha1.PackageRevision, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	header := "NAME\tPACKAGE\tWORKSPACE\tREVISION\tLATEST\tLIFECYCLE\tREPOSITORY\tREADY"
	if wide {
		header += "\tUPSTREAM\tCOMMIT\tPUBLISHED BY\tMESSAGE"
	}
	fmt.Fprintln(tw, header)
	for _, pr := range revs {
		rev := "-"
		if pr.Spec.Revision > 0 {
			rev = strconv.Itoa(pr.Spec.Revision)
		}
		latest := strconv.FormatBool(pr.Labels[porchv1alpha1.LatestRevisionLabel] == "true")
		r := Ready(&pr)
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", pr.Name, pr.Spec.PackageName, pr.Spec.WorkspaceName, rev, latest, pr.ShortLifecycle(), pr.Spec.Repository, r.Status)
		if wide {
			commit := pr.Status.Commit
			if len(commit) > 12 {
				commit = commit[:12]
			}
			line += fmt.Sprintf("\t%s\t%s\t%s\t%s", orDash(pkgservice.UpstreamVersion(pr.Status.UpstreamLock)), orDash(commit), orDash(pr.Status.PublishedBy), orDash(r.Message))
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// PrintConditions renders a revision's readiness gates and conditions.
func PrintConditions(w io.Writer, pr *porchv1alpha1.PackageRevision) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tSTATUS\tGATE\tREASON\tMESSAGE")
	gates := map[string]bool{}
	for _, g := range pr.Spec.ReadinessGates {
		gates[g.ConditionType] = true
	}
	seen := map[string]bool{}
	for _, c := range pr.Status.Conditions {
		seen[c.Type] = true
		fmt.Fprintf(tw, "%s\t%s\t%t\t%s\t%s\n", c.Type, c.Status, gates[c.Type], orDash(c.Reason), orDash(c.Message))
	}
	for _, g := range pr.Spec.ReadinessGates {
		if !seen[g.ConditionType] {
			fmt.Fprintf(tw, "%s\t%s\t%t\t%s\t%s\n", g.ConditionType, "-", true, "-", "not set yet")
		}
	}
	return tw.Flush()
}
