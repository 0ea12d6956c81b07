package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/changes"
	"github.com/scion-dev/scion/internal/rollout"
	"github.com/scion-dev/scion/internal/rolloutctl"
	"github.com/scion-dev/scion/internal/scheme"
	"github.com/scion-dev/scion/internal/tree"
)

// NewCmdRollout returns `scion rollout`.
func NewCmdRollout(streams Streams) *cobra.Command {
	cmd := &cobra.Command{Use: "rollout", Short: "Plan PackageRollouts offline; look at, approve, pause, resume and abort them on a cluster"}
	cmd.AddCommand(NewCmdRolloutPlan(streams), NewCmdRolloutStatus(streams))
	for _, a := range []struct {
		use, short string
		args       int
		run        func(ctx context.Context, c *rolloutctl.Client, args []string) (string, error)
	}{
		{"approve NAME WAVE", "Approve a wave of a rollout whose approval is Manual (needs the scion-approver role; recorded as you)", 2,
			func(ctx context.Context, c *rolloutctl.Client, args []string) (string, error) {
				return fmt.Sprintf("wave %s of %s approved", args[1], args[0]), c.Approve(ctx, args[0], args[1])
			}},
		{"pause NAME", "Pause a rollout: nothing more is published until it is resumed", 1,
			func(ctx context.Context, c *rolloutctl.Client, args []string) (string, error) {
				return args[0] + " paused", c.Pause(ctx, args[0])
			}},
		{"resume NAME", "Resume a paused rollout, or one that stopped on a failure without rolling back (its failed waves get a fresh deadline)", 1,
			func(ctx context.Context, c *rolloutctl.Client, args []string) (string, error) {
				return args[0] + " resumed", c.Resume(ctx, args[0])
			}},
		{"abort NAME", "Abort a rollout for good; with rollbackOnFailure, what it published is rolled back", 1,
			func(ctx context.Context, c *rolloutctl.Client, args []string) (string, error) {
				return args[0] + " aborted", c.Abort(ctx, args[0])
			}},
	} {
		cmd.AddCommand(newCmdRolloutAction(streams, a.use, a.short, a.args, a.run))
	}
	return cmd
}

func newCmdRolloutAction(streams Streams, use, short string, nargs int, run func(context.Context, *rolloutctl.Client, []string) (string, error)) *cobra.Command {
	kube := &KubeFlags{}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(nargs),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := kube.Client()
			if err != nil {
				return err
			}
			msg, err := run(cmdContext(cmd), &rolloutctl.Client{Client: c, Namespace: ns}, args)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(streams.Out, msg)
			return err
		},
	}
	kube.AddFlags(cmd.Flags())
	return cmd
}

// RolloutPlanOptions are the options of `scion rollout plan`.
type RolloutPlanOptions struct {
	Streams
	File, Output            string
	Repositories, Revisions []string
}

// NewCmdRolloutPlan returns `scion rollout plan`.
func NewCmdRolloutPlan(streams Streams) *cobra.Command {
	o := &RolloutPlanOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "plan -f ROLLOUT.yaml --repositories REPOS.yaml [--revisions REVS.yaml] [-o table|yaml|json]",
		Short: "Print the waves a PackageRollout would publish, as the controller computes them",
		Long: `Print the waves a PackageRollout would publish, computed as the controller
computes them when the rollout starts. With --revisions (PackageRevision
objects, e.g. kubectl get packagerevisions -o yaml), the targets are the
repositories of the Proposed revisions the rollout's revisionSelector
matches (for a group rollout, spec.group, the Drafts too, and the table
shows each target's group: the revisions published together); without
it, every deployment Repository given (spec.deployment: true) is a target,
and a group rollout is refused. Files may hold
several documents or a List. An invalid rollout exits non-zero, naming the
field.`,
		Example: `  scion rollout plan -f rollout.yaml --repositories repos.yaml
  kubectl get repositories -o yaml > repos.yaml; kubectl get packagerevisions -o yaml > revs.yaml
  scion rollout plan -f rollout.yaml --repositories repos.yaml --revisions revs.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.File == "" {
				return errors.New("--filename is required")
			}
			if len(o.Repositories) == 0 {
				return errors.New("--repositories is required")
			}
			if o.Output != "table" && o.Output != "yaml" && o.Output != "json" {
				return fmt.Errorf("--output must be table, yaml or json, not %q", o.Output)
			}
			if err := stdinOnce(append(append([]string{o.File}, o.Repositories...), o.Revisions...)...); err != nil {
				return err
			}
			return o.Run()
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.File, "filename", "f", "", "YAML of the PackageRollout; - reads standard input (required)")
	f.StringArrayVar(&o.Repositories, "repositories", nil, "YAML of Repository objects, several documents or a List; - reads standard input (repeatable, required)")
	f.StringArrayVar(&o.Revisions, "revisions", nil, "YAML of PackageRevision objects, several documents or a List; - reads standard input (repeatable)")
	f.StringVarP(&o.Output, "output", "o", "table", "table, yaml or json")
	return cmd
}

// Run prints the plan.
func (o *RolloutPlanOptions) Run() error {
	ros, err := readTyped(o.Streams, o.File, configv1alpha1.GroupVersion.WithKind("PackageRollout"), func() *configv1alpha1.PackageRollout { return &configv1alpha1.PackageRollout{} })
	if err != nil {
		return err
	}
	if len(ros) != 1 {
		return fmt.Errorf("%s: want one PackageRollout, found %d", o.File, len(ros))
	}
	ro := ros[0]
	if errs := rollout.Validate(&ro.Spec); len(errs) > 0 {
		return fmt.Errorf("PackageRollout %s is invalid: %w", ro.Name, errs.ToAggregate())
	}
	repoLabels := map[string]map[string]string{}
	var deployment []string
	for _, path := range o.Repositories {
		repos, err := readTyped(o.Streams, path, configv1alpha1.GroupVersion.WithKind("Repository"), func() *configv1alpha1.Repository { return &configv1alpha1.Repository{} })
		if err != nil {
			return err
		}
		for _, r := range repos {
			repoLabels[r.Name] = r.Labels
			if r.Spec.Deployment {
				deployment = append(deployment, r.Name)
			}
		}
	}
	var targets []rollout.Target
	if len(o.Revisions) == 0 {
		// Without revisions, a target is a deployment repository; a
		// group's members are revisions, which only --revisions gives.
		if ro.Spec.Group != nil {
			return fmt.Errorf("PackageRollout %s is a group rollout (spec.group): its targets are the groups of revisions its repositories hold; give them with --revisions (kubectl get packagerevisions -o yaml)", ro.Name)
		}
		if len(deployment) == 0 {
			return fmt.Errorf("no deployment Repository (spec.deployment: true) in %s: without --revisions the targets are those", strings.Join(o.Repositories, ", "))
		}
		for _, name := range deployment {
			targets = append(targets, rollout.Target{Repository: name, Labels: repoLabels[name]})
		}
	} else {
		var revs []porchv1alpha1.PackageRevision
		for _, path := range o.Revisions {
			prs, err := readTyped(o.Streams, path, porchv1alpha1.GroupVersion.WithKind("PackageRevision"), func() *porchv1alpha1.PackageRevision { return &porchv1alpha1.PackageRevision{} })
			if err != nil {
				return err
			}
			for _, pr := range prs {
				revs = append(revs, *pr)
			}
		}
		sel, err := metav1.LabelSelectorAsSelector(&ro.Spec.RevisionSelector)
		if err != nil {
			return fmt.Errorf("spec.revisionSelector: %w", err)
		}
		targets = rollout.Targets(sel, ro.Spec.Group != nil, revs, repoLabels)
	}
	plan, err := rollout.Compute(&ro.Spec, targets)
	if err != nil {
		return err
	}
	return printPlan(o.Out, o.Output, plan)
}

func printPlan(w io.Writer, format string, plan rollout.Plan) error {
	switch format {
	case "json":
		b, err := json.Marshal(plan)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(plan)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if slices.ContainsFunc(plan.Waves, func(w rollout.Wave) bool { return len(w.Groups) > 0 }) {
		// A group rollout: each target's group, published together.
		_, _ = fmt.Fprintln(tw, "WAVE\tTARGET\tGROUP")
		for _, wave := range plan.Waves {
			if len(wave.Groups) == 0 {
				_, _ = fmt.Fprintf(tw, "%s\t<none>\t\n", wave.Name)
			}
			for _, g := range wave.Groups {
				_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\n", wave.Name, g.Repository, strings.Join(g.Revisions, ", "))
			}
		}
		return tw.Flush()
	}
	_, _ = fmt.Fprintln(tw, "WAVE\tTARGETS\tREPOSITORIES")
	for _, wave := range plan.Waves {
		_, _ = fmt.Fprintf(tw, "%s\t%d\t%s\n", wave.Name, len(wave.Targets), strings.Join(wave.Targets, ", "))
	}
	return tw.Flush()
}

// NewCmdRolloutStatus returns `scion rollout status`.
func NewCmdRolloutStatus(streams Streams) *cobra.Command {
	kube := &KubeFlags{}
	var watch bool
	cmd := &cobra.Command{
		Use:   "status NAME [--watch]",
		Short: "Show a rollout's waves and their targets as a tree: state, counts, health and why not",
		Long: `Show a rollout as a tree: the rollout (Ready, what blocks it), its waves
(state, counts, who approved them) and each wave's targets (repository,
revision, published or not, healthy or not by the rollout's health condition,
and why not). Reasons are shown whole, wrapped on the lines below when long.
--watch prints the tree again whenever the rollout or a revision of the
namespace changes, until interrupted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, ns, err := kube.Config()
			if err != nil {
				return err
			}
			c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
			if err != nil {
				return err
			}
			ctx := cmdContext(cmd)
			show := func() error {
				ro, err := (&rolloutctl.Client{Client: c, Namespace: ns}).Get(ctx, args[0])
				if err != nil {
					return err
				}
				n, err := tree.RolloutTree(ctx, c, ro)
				if err != nil {
					return err
				}
				return tree.Print(streams.Out, n, false)
			}
			if err := show(); err != nil || !watch {
				return err
			}
			for range changes.Watch(ctx, c, ns, time.Second, &configv1alpha1.PackageRolloutList{}, &porchv1alpha1.PackageRevisionList{}) {
				fmt.Fprintf(streams.Out, "\n--- %s\n", time.Now().Format(time.TimeOnly))
				if err := show(); err != nil {
					return err
				}
			}
			return nil
		},
	}
	kube.AddFlags(cmd.Flags())
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "print the tree again on every change, until interrupted")
	return cmd
}

// printRolloutStatus renders a rollout's status as a tree (scion tree's).
func printRolloutStatus(w io.Writer, ro *configv1alpha1.PackageRollout) error {
	return tree.Print(w, tree.RolloutNode(ro), false)
}
