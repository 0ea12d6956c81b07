package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	"github.com/scion-dev/scion/internal/variantset"
)

// NewCmdPvs returns `scion pvs`, PackageVariantSet tools.
func NewCmdPvs(streams Streams) *cobra.Command {
	cmd := &cobra.Command{Use: "pvs", Short: "PackageVariantSet tools that work offline"}
	cmd.AddCommand(NewCmdPvsExpand(streams))
	return cmd
}

// PvsExpandOptions are the options of `scion pvs expand`.
type PvsExpandOptions struct {
	Streams
	File, Upstream, Output string
	Repositories, Objects  []string
}

// NewCmdPvsExpand returns `scion pvs expand`.
func NewCmdPvsExpand(streams Streams) *cobra.Command {
	o := &PvsExpandOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "expand -f PVS.yaml [--repositories FILE] [--objects FILE] [--upstream FILE]",
		Short: "Print the PackageVariants a PackageVariantSet would generate",
		Long: `Print the PackageVariants a PackageVariantSet would generate, as the
controller would, from Repository objects (--repositories) and other
objects (--objects, for objectSelector targets) given as YAML files, and
the upstream PackageRevision (--upstream; needed only when an expression
reads upstream; for a set of several upstreams, spec.upstreams, one
PackageRevision per upstream, matched by repository and package). Objects without a namespace count as being in the set's
namespace. Errors are the messages the controller would put in the set's
status; the command then exits non-zero. Run it in a pull request before
applying a set to a fleet.`,
		Example: `  scion pvs expand -f set.yaml --repositories repositories.yaml -o table
  scion pvs expand -f set.yaml --repositories repos.yaml --objects teams.yaml --upstream upstream.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.File == "" {
				return errors.New("--filename is required")
			}
			if o.Output != "yaml" && o.Output != "table" {
				return fmt.Errorf("--output must be yaml or table, not %q", o.Output)
			}
			if err := stdinOnce(append(append([]string{o.File, o.Upstream}, o.Repositories...), o.Objects...)...); err != nil {
				return err
			}
			return o.Run(cmdContext(cmd))
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.File, "filename", "f", "", "YAML of the PackageVariantSets to expand; other kinds in it are ignored; - reads standard input (required)")
	f.StringArrayVar(&o.Repositories, "repositories", nil, "YAML of Repository objects, several documents or a List (kubectl get -o yaml); - reads standard input (repeatable)")
	f.StringArrayVar(&o.Objects, "objects", nil, "YAML of objects that objectSelectors select, several documents or a List; - reads standard input (repeatable)")
	f.StringVar(&o.Upstream, "upstream", "", "YAML of the upstream PackageRevisions (one per upstream of a group: several documents or a List, matched by spec.repository and spec.packageName); - reads standard input")
	f.StringVarP(&o.Output, "output", "o", "yaml", "yaml or table")
	return cmd
}

// upstreamsOf matches the given upstream PackageRevisions to the set's
// upstreams by repository and package (spec.repository, spec.packageName);
// a set of one upstream given one PackageRevision takes it as it is. An
// upstream without one gets none: an expression reading upstream then
// fails with variantset.ErrNoUpstream.
func upstreamsOf(pvs *configv1alpha2.PackageVariantSet, given []*unstructured.Unstructured) []variantset.UpstreamRevision {
	ups := pvs.Spec.AllUpstreams()
	out := make([]variantset.UpstreamRevision, len(ups))
	revision := func(u *unstructured.Unstructured) int {
		n, _, _ := unstructured.NestedInt64(u.Object, "spec", "revision")
		return int(n)
	}
	if len(ups) == 1 && len(given) == 1 {
		out[0] = variantset.UpstreamRevision{Object: given[0], Revision: revision(given[0])}
		return out
	}
	for i, up := range ups {
		for _, u := range given {
			repo, _, _ := unstructured.NestedString(u.Object, "spec", "repository")
			pkg, _, _ := unstructured.NestedString(u.Object, "spec", "packageName")
			if repo == up.Repo && pkg == up.Package {
				out[i] = variantset.UpstreamRevision{Object: u, Revision: revision(u)}
				break
			}
		}
	}
	return out
}

// Run expands the sets in the file.
func (o *PvsExpandOptions) Run(ctx context.Context) error {
	sets, err := readTyped(o.Streams, o.File, configv1alpha2.GroupVersion.WithKind("PackageVariantSet"), func() *configv1alpha2.PackageVariantSet {
		return &configv1alpha2.PackageVariantSet{}
	})
	if err != nil {
		return err
	}
	src := &variantset.StaticSource{}
	for _, f := range append(append([]string(nil), o.Repositories...), o.Objects...) {
		objs, err := o.readObjects(f)
		if err != nil {
			return err
		}
		src.Objects = append(src.Objects, objs...)
	}
	var upstreams []*unstructured.Unstructured
	if o.Upstream != "" {
		objs, err := o.readObjects(o.Upstream)
		if err != nil {
			return err
		}
		for _, u := range objs {
			if u.GetKind() != "PackageRevision" {
				return fmt.Errorf("%s: %s %s is not a PackageRevision", o.Upstream, u.GetKind(), u.GetName())
			}
		}
		if len(objs) == 0 {
			return fmt.Errorf("%s: want PackageRevisions, found nothing", o.Upstream)
		}
		upstreams = objs
	}
	ev, err := variantset.NewEvaluator(0)
	if err != nil {
		return err
	}
	all := &variantset.Result{}
	for _, pvs := range sets {
		if pvs.Namespace == "" {
			pvs.Namespace = "default"
		}
		if errs := ev.Validate(pvs); len(errs) > 0 {
			return fmt.Errorf("PackageVariantSet %s is invalid: %w", pvs.Name, errs.ToAggregate())
		}
		in := variantset.Input{Set: pvs, Source: src, Upstreams: upstreamsOf(pvs, upstreams)}
		res, err := ev.Expand(ctx, in)
		if errors.Is(err, variantset.ErrNoUpstream) {
			return fmt.Errorf("PackageVariantSet %s: %w (give it with --upstream)", pvs.Name, err)
		}
		if err != nil {
			return fmt.Errorf("PackageVariantSet %s: %w", pvs.Name, err)
		}
		for _, e := range res.Empty {
			_, _ = fmt.Fprintf(o.ErrOut, "warning: %s\n", e)
		}
		all.Variants = append(all.Variants, res.Variants...)
	}
	if o.Output == "table" {
		return printVariantTable(o.Out, all)
	}
	for i, pv := range all.Variants {
		b, err := yaml.Marshal(pv)
		if err != nil {
			return err
		}
		if i > 0 {
			_, _ = fmt.Fprintln(o.Out, "---")
		}
		if _, err := o.Out.Write(dropStatus(b)); err != nil {
			return err
		}
	}
	return nil
}

// dropStatus removes the empty status and creationTimestamp a marshalled
// object carries.
func dropStatus(b []byte) []byte {
	s := strings.Replace(string(b), "  creationTimestamp: null\n", "", 1)
	s = strings.TrimSuffix(s, "status: {}\n")
	return []byte(s)
}

func printVariantTable(out interface{ Write([]byte) (int, error) }, res *variantset.Result) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "NAME\tREPOSITORY\tPACKAGE\tUPSTREAM\tLABELS\tINJECTORS")
	for _, pv := range res.Variants {
		var inj []string
		for _, i := range pv.Spec.Injectors {
			inj = append(inj, i.Name)
		}
		u := pv.Spec.Upstream
		up := u.Repo + "/" + u.Package + "@" + cmp.Or(u.Tag, string(u.Revision), u.VersionRange, u.WorkspaceName)
		_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", pv.Name, pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package, up,
			orNone(metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: pv.Spec.Labels})), orNone(strings.Join(inj, ",")))
	}
	return w.Flush()
}

func orNone(s string) string {
	if s == "" || s == "<none>" {
		return "<none>"
	}
	return s
}
