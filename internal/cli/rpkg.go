package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/api/porch/v1alpha1/content"
	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/rpkg"
	"github.com/scion-dev/scion/internal/store"
)

// RpkgOptions are the options every `scion rpkg` command shares.
type RpkgOptions struct {
	Streams
	Kube    KubeFlags
	Timeout time.Duration
	// RegistryCAFile is trusted, besides the system's CAs, by commands
	// that read a Repository of type oci directly (pull --git, push
	// --git, tag).
	RegistryCAFile string

	client *rpkg.Client
}

// Complete connects to the cluster.
func (o *RpkgOptions) Complete() error {
	c, ns, err := o.Kube.Client()
	if err != nil {
		return err
	}
	t, err := oci.TransportWithCA(o.RegistryCAFile)
	if err != nil {
		return fmt.Errorf("--registry-ca-file: %w", err)
	}
	o.client = &rpkg.Client{Client: c, Namespace: ns, Timeout: o.Timeout, OCI: oci.Options{Transport: t}}
	return nil
}

// NewCmdRpkg returns `scion rpkg`, package revisions in a cluster.
func NewCmdRpkg(streams Streams) *cobra.Command {
	o := &RpkgOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "rpkg",
		Short: "Manage package revisions in a cluster (like porchctl rpkg)",
		Long: `Manage package revisions in a cluster. Commands that change a revision wait
(up to --timeout) until the controller has acted, and fail with its reason,
such as unmet readiness gates.`,
	}
	o.Kube.AddFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().DurationVar(&o.Timeout, "timeout", time.Minute, "how long to wait for the controller (0: do not wait)")
	cmd.PersistentFlags().StringVar(&o.RegistryCAFile, "registry-ca-file", "", "PEM file of CAs to trust besides the system's, for commands that read a Repository of type oci directly (credentials from the Docker config file)")
	cmd.AddCommand(
		newCmdRpkgGet(o), newCmdRpkgInit(o), newCmdRpkgClone(o), newCmdRpkgCopy(o), newCmdRpkgUpgrade(o),
		newCmdRpkgLifecycle(o, "propose", "Propose drafts for publishing", porchv1alpha1.LifecycleDraft, func(ctx context.Context, c *rpkg.Client, name string) (*porchv1alpha1.PackageRevision, error) {
			return c.Propose(ctx, name)
		}),
		newCmdRpkgLifecycle(o, "approve", "Publish proposed revisions", porchv1alpha1.LifecycleProposed, func(ctx context.Context, c *rpkg.Client, name string) (*porchv1alpha1.PackageRevision, error) {
			return c.Approve(ctx, name)
		}),
		newCmdRpkgLifecycle(o, "reject", "Send proposed revisions back to Draft, or keep revisions proposed for deletion", porchv1alpha1.LifecycleProposed, func(ctx context.Context, c *rpkg.Client, name string) (*porchv1alpha1.PackageRevision, error) {
			return c.Reject(ctx, name)
		}),
		newCmdRpkgLifecycle(o, "propose-delete", "Propose published revisions for deletion", porchv1alpha1.LifecyclePublished, func(ctx context.Context, c *rpkg.Client, name string) (*porchv1alpha1.PackageRevision, error) {
			return c.ProposeDelete(ctx, name)
		}),
		newCmdRpkgDelete(o), newCmdRpkgPull(o), newCmdRpkgPush(o), newCmdRpkgCondition(o), newCmdRpkgTag(o), newCmdRpkgDiff(o),
	)
	return cmd
}

func rpkgRun(o *RpkgOptions, fn func(ctx context.Context) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if err := o.Complete(); err != nil {
			return err
		}
		return fn(cmdContext(cmd))
	}
}

func newCmdRpkgGet(o *RpkgOptions) *cobra.Command {
	var f rpkg.Filter
	var sel rpkg.Selection
	var output, lifecycle string
	cmd := &cobra.Command{
		Use:   "get [NAME...]",
		Short: "List package revisions (or show some)",
		Long: `List package revisions, or show the ones named (NAME or kubectl's
packagerevision.porch.kpt.dev/NAME), or those --selector, --variant-set or
--rollout select. -o name prints them as kubectl get -o name does, for the
other verbs to take.`,
	}
	cmd.RunE = func(c *cobra.Command, args []string) error {
		return rpkgRun(o, func(ctx context.Context) error {
			f.Lifecycle = porchv1alpha1.Lifecycle(lifecycle)
			var revs []porchv1alpha1.PackageRevision
			if len(args) > 0 || sel.Labels != "" || sel.VariantSet != "" || sel.Rollout != "" {
				sel.Lifecycle = f.Lifecycle
				names, err := revisionNames(ctx, o, args, sel)
				if err != nil {
					return err
				}
				for _, name := range names {
					pr, err := o.client.Get(ctx, name)
					if err != nil {
						return err
					}
					revs = append(revs, *pr)
				}
			} else {
				var err error
				if revs, err = o.client.List(ctx, f); err != nil {
					return err
				}
				if len(revs) == 0 && (output == "" || output == "wide") {
					// As kubectl: a line that says so, not a bare header.
					if err := o.client.CheckNamespace(ctx); err != nil {
						return err
					}
					fmt.Fprintf(o.ErrOut, "No package revisions found in namespace %s.\n", o.client.Namespace)
					return nil
				}
			}
			return rpkg.Print(o.Out, revs, output)
		})(c, args)
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: wide, yaml, json or name")
	cmd.Flags().StringVar(&f.Repository, "repository", "", "only revisions of this repository")
	cmd.Flags().StringVar(&f.Package, "package", "", "only revisions of this package")
	cmd.Flags().StringVar(&f.NameContains, "name", "", "only revisions whose package name contains this (as porchctl rpkg get --name)")
	cmd.Flags().StringVar(&lifecycle, "lifecycle", "", "only revisions in this lifecycle")
	selectionFlags(cmd, &sel)
	return cmd
}

// selectionFlags adds the flags that select many revisions.
func selectionFlags(cmd *cobra.Command, s *rpkg.Selection) {
	cmd.Flags().StringVarP(&s.Labels, "selector", "l", "", "the revisions with these labels (a label selector)")
	cmd.Flags().StringVar(&s.VariantSet, "variant-set", "", "the revisions of this PackageVariantSet's variants")
	cmd.Flags().StringVar(&s.Rollout, "rollout", "", "the revisions this PackageRollout selects")
}

// revisionNames are the revisions a verb acts on: those named (as NAME or
// packagerevision.porch.kpt.dev/NAME), then those sel selects, each once.
func revisionNames(ctx context.Context, o *RpkgOptions, args []string, sel rpkg.Selection) ([]string, error) {
	var names []string
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for _, arg := range args {
		name, err := rpkg.ParseName(arg)
		if err != nil {
			return nil, err
		}
		add(name)
	}
	if sel.Labels != "" || sel.VariantSet != "" || sel.Rollout != "" {
		revs, err := o.client.Select(ctx, sel)
		if err != nil {
			return nil, err
		}
		for _, pr := range revs {
			add(pr.Name)
		}
	}
	return names, nil
}

func createFlags(cmd *cobra.Command, c *rpkg.CreateOptions, needRepo bool) {
	cmd.Flags().StringVar(&c.Repository, "repository", "", "repository of the new revision")
	cmd.Flags().StringVar(&c.Workspace, "workspace", "", "workspace name of the new revision (required)")
	_ = cmd.MarkFlagRequired("workspace")
	if needRepo {
		_ = cmd.MarkFlagRequired("repository")
	}
}

func printCreated(o *RpkgOptions, pr *porchv1alpha1.PackageRevision, err error) error {
	if pr != nil {
		fmt.Fprintf(o.Out, "%s created\n", pr.Name)
	}
	return err
}

func newCmdRpkgInit(o *RpkgOptions) *cobra.Command {
	var c rpkg.CreateOptions
	var init porchv1alpha1.PackageInitTaskSpec
	cmd := &cobra.Command{Use: "init PACKAGE", Short: "Create a new package as a draft", Args: cobra.ExactArgs(1)}
	cmd.RunE = func(cc *cobra.Command, args []string) error {
		c.Package = args[0]
		return rpkgRun(o, func(ctx context.Context) error {
			pr, err := o.client.Init(ctx, c, init)
			return printCreated(o, pr, err)
		})(cc, args)
	}
	createFlags(cmd, &c, true)
	cmd.Flags().StringVar(&init.Description, "description", "", "package description")
	cmd.Flags().StringSliceVar(&init.Keywords, "keywords", nil, "package keywords")
	cmd.Flags().StringVar(&init.Site, "site", "", "package site")
	return cmd
}

func newCmdRpkgClone(o *RpkgOptions) *cobra.Command {
	var c rpkg.CreateOptions
	var git porchv1alpha1.GitPackage
	var secret string
	cmd := &cobra.Command{
		Use:   "clone SOURCE PACKAGE",
		Short: "Clone a package revision, or a package in a git repository, into a new draft",
		Long: `Clone SOURCE into a new draft of PACKAGE. SOURCE is a PackageRevision (a
published revision in this namespace), or the URL of a git repository that no
Repository names (https://, as porchctl takes it): the package in --directory
at --ref is read once, when the draft is written, with the credentials of the
Secret --secret-ref names (which you must be allowed to read).`,
		Example: `  scion rpkg clone catalog.base.v1 base --repository cluster-01 --workspace v1
  scion rpkg clone https://github.com/example/blueprints.git app --directory blueprints/app --ref v1.0 \
      --repository cluster-01 --workspace v1`,
		Args: cobra.ExactArgs(2),
	}
	cmd.RunE = func(cc *cobra.Command, args []string) error {
		c.Package = args[1]
		return rpkgRun(o, func(ctx context.Context) error {
			if !strings.Contains(args[0], "/") { // no PackageRevision name has one
				if cc.Flags().Changed("ref") || cc.Flags().Changed("directory") || secret != "" {
					return fmt.Errorf("--ref, --directory and --secret-ref are for a SOURCE that is a git URL; %s is a PackageRevision", args[0])
				}
				pr, err := o.client.Clone(ctx, args[0], c)
				return printCreated(o, pr, err)
			}
			git.Repo = args[0]
			if secret != "" {
				git.SecretRef = &porchv1alpha1.SecretRef{Name: secret}
			}
			pr, err := o.client.CloneGit(ctx, git, c)
			return printCreated(o, pr, err)
		})(cc, args)
	}
	createFlags(cmd, &c, true)
	cmd.Flags().StringVar(&git.Ref, "ref", "main", "branch, tag or full commit of a git SOURCE")
	cmd.Flags().StringVar(&git.Directory, "directory", "", "folder of the package in a git SOURCE (default: the repository's root)")
	cmd.Flags().StringVar(&secret, "secret-ref", "", "Secret with the credentials of a git SOURCE (username and password, or bearerToken)")
	return cmd
}

func newCmdRpkgCopy(o *RpkgOptions) *cobra.Command {
	var ws string
	cmd := &cobra.Command{Use: "copy SOURCE", Short: "Copy a revision into a new draft of the same package", Args: cobra.ExactArgs(1)}
	cmd.RunE = func(cc *cobra.Command, args []string) error {
		return rpkgRun(o, func(ctx context.Context) error {
			pr, err := o.client.Copy(ctx, args[0], ws)
			return printCreated(o, pr, err)
		})(cc, args)
	}
	cmd.Flags().StringVar(&ws, "workspace", "", "workspace name of the new draft (required)")
	_ = cmd.MarkFlagRequired("workspace")
	return cmd
}

func newCmdRpkgUpgrade(o *RpkgOptions) *cobra.Command {
	var ws, upstream, strategy, to string
	var revision int
	var sel rpkg.Selection
	var packages []string
	cmd := &cobra.Command{
		Use:   "upgrade (NAME [--upstream NEW | --revision N] --workspace WS | --selector LABELS|--variant-set SET --to REVISION)",
		Short: "Create a new draft of NAME updated to a new upstream revision, or move many variants to a new upstream revision",
		Long: `Create a new draft of NAME updated to a new upstream revision (as porchctl
rpkg upgrade does).

With --selector, --variant-set or --rollout and --to instead of NAME, upgrade
in bulk: every PackageVariant that made a selected revision moves to revision
--to of its upstream package, and drafts the upgrade as for any upstream
change. A variant a PackageVariantSet generated is moved through its set (the
set's spec.upstreams entry, or spec.upstream: one edit per set, which reaches
all of the set's variants of that upstream package), any other through its own
spec.upstream. --package limits it to some upstream packages. Nothing is
changed unless the revision is published for every upstream package and every
selected revision is a variant's. Then scion rpkg diff --variant-set SET
--lifecycle Draft summarises the drafts.`,
		Example: `  scion rpkg upgrade cluster-01.app.v1 --revision 3 --workspace v3
  scion rpkg upgrade --variant-set platform --to v2
  scion rpkg upgrade -l release=platform --to 3 --package app --package app-config`,
		Args: cobra.MaximumNArgs(1),
	}
	cmd.RunE = func(cc *cobra.Command, args []string) error {
		selecting := sel.Labels != "" || sel.VariantSet != "" || sel.Rollout != ""
		switch {
		case len(args) == 1 && (selecting || to != ""):
			return errors.New("name one revision (NAME) or select many with --to: not both")
		case len(args) == 0 && (!selecting || to == ""):
			return errors.New("name the revision to upgrade (NAME --workspace WS), or select revisions (--selector, --variant-set or --rollout) and give --to REVISION")
		case len(args) == 0:
			return rpkgRun(o, func(ctx context.Context) error {
				done, err := o.client.UpgradeVariants(ctx, sel, configv1alpha1.RevisionNumber(to), packages)
				for _, u := range done {
					what := "at " + to + " already"
					if len(u.Changes) > 0 {
						what = strings.Join(u.Changes, ", ")
					}
					_, _ = fmt.Fprintf(o.Out, "%s %s: %s (%d variants)\n", u.Kind, u.Name, what, u.Variants)
				}
				return err
			})(cc, args)
		case ws == "":
			return errors.New("--workspace is required with NAME")
		}
		return rpkgRun(o, func(ctx context.Context) error {
			if upstream != "" && cc.Flags().Changed("revision") {
				return errors.New("--upstream and --revision name the new upstream both: give one")
			}
			if upstream == "" {
				var err error
				if upstream, err = o.client.UpstreamRevision(ctx, args[0], revision); err != nil {
					return err
				}
			}
			pr, err := o.client.Upgrade(ctx, args[0], upstream, ws, kptfilev1.UpdateStrategy(strategy))
			return printCreated(o, pr, err)
		})(cc, args)
	}
	cmd.Flags().StringVar(&ws, "workspace", "", "workspace name of the new draft (required with NAME)")
	cmd.Flags().StringVar(&upstream, "upstream", "", "the new upstream package revision")
	cmd.Flags().IntVar(&revision, "revision", 0, "instead of --upstream, as porchctl: the revision number of the same upstream package to upgrade to (0 or unset: its latest published revision)")
	cmd.Flags().StringVar(&strategy, "strategy", "", "resource-merge (default), fast-forward, force-delete-replace or copy-merge")
	selectionFlags(cmd, &sel)
	cmd.Flags().StringVar(&to, "to", "", "with a selection: the upstream revision to move the variants to (3, v3, or -1 for the latest)")
	cmd.Flags().StringArrayVar(&packages, "package", nil, "with a selection: only the variants of this upstream package (repeatable)")
	return cmd
}

func newCmdRpkgLifecycle(o *RpkgOptions, use, short string, from porchv1alpha1.Lifecycle, fn func(context.Context, *rpkg.Client, string) (*porchv1alpha1.PackageRevision, error)) *cobra.Command {
	var sel rpkg.Selection
	cmd := &cobra.Command{
		Use:   use + " [NAME...]",
		Short: short,
		Long: short + `. Revisions are named (NAME, or packagerevision.porch.kpt.dev/NAME as
kubectl get -o name prints them), or selected with --selector, --variant-set
or --rollout (then only the ` + string(from) + ` ones). They are moved in parallel
(` + strconv.Itoa(rpkg.BatchParallelism) + ` at a time) and waited for together, each on its own: not all or
nothing. Each one's result is printed, and the command fails if any failed.
Interrupted (Ctrl-C), it sends no more, and says which moved and which did
not, as the server has them.`,
	}
	cmd.RunE = func(cc *cobra.Command, args []string) error {
		return rpkgRun(o, func(ctx context.Context) error {
			sel.Lifecycle = from
			names, err := revisionNames(ctx, o, args, sel)
			if err != nil {
				return err
			}
			if len(names) == 0 {
				if len(args) == 0 && sel.Labels == "" && sel.VariantSet == "" && sel.Rollout == "" {
					return fmt.Errorf("name revisions, or select them with --selector, --variant-set or --rollout")
				}
				fmt.Fprintf(o.Out, "no %s revisions selected\n", from)
				return nil
			}
			var errs []error
			results := rpkg.Batch(ctx, names, func(ctx context.Context, name string) (*porchv1alpha1.PackageRevision, error) {
				return fn(ctx, o.client, name)
			})
			if ctx.Err() != nil {
				return interrupted(o, names, from)
			}
			for _, r := range results {
				if r.Err != nil {
					errs = append(errs, r.Err)
					continue
				}
				fmt.Fprintf(o.Out, "%s is %s\n", r.Name, r.Revision.ShownLifecycle())
			}
			return errors.Join(errs...)
		})(cc, args)
	}
	selectionFlags(cmd, &sel)
	return cmd
}

// interrupted reports a batch verb cut short: which revisions moved from
// lifecycle from and which did not, read again from the server.
func interrupted(o *RpkgOptions, names []string, from porchv1alpha1.Lifecycle) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	moved, notMoved, unknown := o.client.Interrupted(ctx, names, from)
	fmt.Fprintf(o.Out, "interrupted: %d of %d moved\n", len(moved), len(names))
	for _, m := range moved {
		fmt.Fprintf(o.Out, "  moved: %s\n", m)
	}
	for _, n := range notMoved {
		fmt.Fprintf(o.Out, "  not moved (still %s): %s\n", from, n)
	}
	for _, n := range slices.Sorted(maps.Keys(unknown)) {
		fmt.Fprintf(o.Out, "  unknown: %s: %v\n", n, unknown[n])
	}
	return fmt.Errorf("interrupted: %d of %d revisions moved, %d not", len(moved), len(names), len(notMoved)+len(unknown))
}

func newCmdRpkgDelete(o *RpkgOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "delete NAME...", Aliases: []string{"del"}, Short: "Delete package revisions (from git too)", Args: cobra.MinimumNArgs(1)}
	cmd.RunE = func(cc *cobra.Command, args []string) error {
		return rpkgRun(o, func(ctx context.Context) error {
			var errs []error
			for _, name := range args {
				pr, err := o.client.Get(ctx, name)
				if err == nil {
					err = o.client.Delete(ctx, name)
				}
				if err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(o.Out, "%s deleted (from git too)\n", name)
				if c := rpkg.Consequence(pr); c != "" {
					fmt.Fprintf(o.Out, "  note: %s\n", c)
				}
			}
			return errors.Join(errs...)
		})(cc, args)
	}
	return cmd
}

// gitCredentials reads the user's own git credentials from the
// environment.
func gitCredentials() store.Credentials {
	return store.Credentials{Username: os.Getenv("SCION_GIT_USERNAME"), Password: os.Getenv("SCION_GIT_PASSWORD"), BearerToken: os.Getenv("SCION_GIT_TOKEN")}
}

func newCmdRpkgPull(o *RpkgOptions) *cobra.Command {
	var viaGit bool
	cmd := &cobra.Command{
		Use:   "pull NAME DIR",
		Short: "Write the files of a package revision into DIR",
		Long: `Write the files of a package revision into DIR, and the commit they come from
into DIR/.scion-pulled (push writes against it). The files are read through
the Kubernetes API (PackageRevisionResources, as porchctl reads them): get on
packagerevisionresources is all it needs, no git credentials. With --git, git
is read directly, with your own credentials from SCION_GIT_USERNAME and
SCION_GIT_PASSWORD, or SCION_GIT_TOKEN.`,
		Args: cobra.ExactArgs(2),
	}
	cmd.Flags().BoolVar(&viaGit, "git", false, "read git directly, with your own credentials, instead of through the API")
	cmd.RunE = func(cc *cobra.Command, args []string) error {
		return rpkgRun(o, func(ctx context.Context) error {
			var commit string
			if viaGit {
				rev, err := o.client.PullGit(ctx, args[0], args[1], gitCredentials())
				if err != nil {
					return err
				}
				commit = rev.Commit
			} else {
				var err error
				if commit, err = o.client.PullContent(ctx, args[0], args[1]); err != nil {
					return err
				}
			}
			fmt.Fprintf(o.Out, "pulled %s (commit %.12s) into %s\n", args[0], commit, args[1])
			return nil
		})(cc, args)
	}
	return cmd
}

func newCmdRpkgPush(o *RpkgOptions) *cobra.Command {
	var viaGit bool
	var message string
	cmd := &cobra.Command{
		Use:   "push NAME DIR",
		Short: "Write DIR as a new commit of a draft",
		Long: `Write the package in DIR as one new commit of the draft NAME, against the
commit scion rpkg pull recorded in DIR/.scion-pulled: if anyone committed on the
draft since, nothing is pushed and the error says what changed (pull into
another folder, merge, push from there). Through the Kubernetes API (update on
packagerevisionresources, as porchctl pushes), the package is rendered and the
result of each function printed; with --git, git is written directly with your
own credentials (as for pull) and nothing is rendered.`,
		Args: cobra.ExactArgs(2),
	}
	cmd.Flags().BoolVar(&viaGit, "git", false, "write git directly, with your own credentials, instead of through the API")
	cmd.Flags().StringVarP(&message, "message", "m", "", "the commit's message, one line (default: one naming you); the commit's author is you, as the API server knows you")
	cmd.RunE = func(cc *cobra.Command, args []string) error {
		return rpkgRun(o, func(ctx context.Context) error {
			var commit string
			if viaGit {
				rev, err := o.client.PushGit(ctx, args[0], args[1], message, gitCredentials())
				if err != nil {
					return err
				}
				commit = rev.Commit
			} else {
				var render content.RenderStatus
				var err error
				if commit, render, err = o.client.PushContent(ctx, args[0], args[1], message); err != nil {
					return err
				}
				printRender(o.Out, render)
			}
			fmt.Fprintf(o.Out, "pushed %s to %s (commit %.12s)\n", args[1], args[0], commit)
			return nil
		})(cc, args)
	}
	return cmd
}

// printRender prints what each function of a render did, and the error
// the render stopped with (the files were written as pushed).
func printRender(w io.Writer, r content.RenderStatus) {
	for _, item := range r.Result.Items {
		fn := item.Image
		if fn == "" {
			fn = item.ExecPath
		}
		state := "PASS"
		if item.ExitCode != 0 {
			state = "FAIL"
		}
		fmt.Fprintf(w, "[%s] %s\n", state, fn)
		for _, res := range item.Results {
			fmt.Fprintf(w, "  %s: %s\n", res.Severity, res.Message)
		}
	}
	if r.Err != "" {
		fmt.Fprintf(w, "pushed, but the package does not render: %s\n", r.Err)
	}
}

func newCmdRpkgCondition(o *RpkgOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "condition", Short: "Set and list package conditions"}
	var reason, message string
	set := &cobra.Command{
		Use:   "set NAME TYPE True|False|Unknown",
		Short: "Set a package condition (written into a draft's Kptfile by the controller)",
		Args:  cobra.ExactArgs(3),
	}
	set.RunE = func(cc *cobra.Command, args []string) error {
		status := porchv1alpha1.ConditionStatus(args[2])
		if status != "True" && status != "False" && status != "Unknown" {
			return fmt.Errorf("status must be True, False or Unknown, not %q", args[2])
		}
		return rpkgRun(o, func(ctx context.Context) error {
			if _, err := o.client.SetCondition(ctx, args[0], porchv1alpha1.Condition{Type: args[1], Status: status, Reason: reason, Message: message}); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "%s: %s=%s\n", args[0], args[1], status)
			return nil
		})(cc, args)
	}
	set.Flags().StringVar(&reason, "reason", "", "condition reason")
	set.Flags().StringVar(&message, "message", "", "condition message")
	list := &cobra.Command{Use: "list NAME", Short: "List a revision's conditions and readiness gates", Args: cobra.ExactArgs(1)}
	list.RunE = func(cc *cobra.Command, args []string) error {
		return rpkgRun(o, func(ctx context.Context) error {
			pr, err := o.client.Get(ctx, args[0])
			if err != nil {
				return err
			}
			return rpkg.PrintConditions(o.Out, pr)
		})(cc, args)
	}
	cmd.AddCommand(set, list)
	return cmd
}

func newCmdRpkgTag(o *RpkgOptions) *cobra.Command {
	var repository string
	var revision int
	cmd := &cobra.Command{
		Use:   "tag PACKAGE [TAG] --repository REPO [--revision N]",
		Short: "Move a floating tag (such as stable) to a published revision, or list a package's tags",
		Long: `Point the floating tag TAG of PACKAGE in the Repository REPO at its published
revision N, creating or moving it; PackageVariants whose spec.upstream.tag
names it follow at their next check (the controller's --tag-poll-period,
a minute by default). The move is a compare-and-swap against the tag as read:
if someone moves it in between, the command fails and says so. Without TAG
(and --revision), list the package's floating tags. Git is written
directly, with your own credentials (as for pull and push).`,
		Example: `  scion rpkg tag app stable --repository catalog --revision 3
  scion rpkg tag app --repository catalog`,
		Args: cobra.RangeArgs(1, 2),
	}
	cmd.Flags().StringVar(&repository, "repository", "", "the Repository holding the package (required)")
	cmd.Flags().IntVar(&revision, "revision", 0, "the published revision to point the tag at (required with TAG)")
	cmd.RunE = func(cc *cobra.Command, args []string) error {
		if repository == "" {
			return errors.New("--repository is required")
		}
		switch {
		case len(args) == 2 && !cc.Flags().Changed("revision"):
			return errors.New("--revision is required with a tag: the published revision number to point it at")
		case len(args) == 2 && revision <= 0:
			return fmt.Errorf("--revision must be a published revision number, 1 or more, not %d", revision)
		}
		if len(args) == 1 && cc.Flags().Changed("revision") {
			return errors.New("--revision needs a tag to move: scion rpkg tag PACKAGE TAG --revision N")
		}
		return rpkgRun(o, func(ctx context.Context) error {
			if len(args) == 1 {
				tags, err := o.client.Tags(ctx, repository, args[0], gitCredentials())
				if err != nil {
					return err
				}
				if len(tags) == 0 {
					fmt.Fprintf(o.Out, "%s has no floating tags in %s\n", args[0], repository)
					return nil
				}
				return printTags(o.Out, tags)
			}
			from, err := o.client.Tag(ctx, repository, args[0], args[1], revision, gitCredentials())
			if err != nil {
				return err
			}
			switch {
			case from == revision:
				fmt.Fprintf(o.Out, "%s/%s already points at revision %d\n", args[0], args[1], revision)
			case from == 0:
				fmt.Fprintf(o.Out, "%s/%s now points at revision %d\n", args[0], args[1], revision)
			default:
				fmt.Fprintf(o.Out, "%s/%s moved from revision %d to %d\n", args[0], args[1], from, revision)
			}
			return nil
		})(cc, args)
	}
	return cmd
}

// printTags prints floating tags and their revisions, by tag name.
func printTags(out io.Writer, tags map[string]int) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "TAG\tREVISION")
	for _, name := range slices.Sorted(maps.Keys(tags)) {
		rev := "(no published revision)"
		if tags[name] > 0 {
			rev = strconv.Itoa(tags[name])
		}
		_, _ = fmt.Fprintf(w, "%s\t%s\n", name, rev)
	}
	return w.Flush()
}
