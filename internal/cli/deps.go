package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/scion-dev/scion/internal/deps"
	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/rpkg"
)

// NewCmdDeps returns `scion deps`, package dependency tools.
func NewCmdDeps(streams Streams) *cobra.Command {
	cmd := &cobra.Command{Use: "deps", Short: "Package dependency tools: resolve offline, explain on a cluster"}
	cmd.AddCommand(NewCmdDepsResolve(streams), NewCmdDepsExplain(streams))
	return cmd
}

// DepsResolveOptions are the options of `scion deps resolve`.
type DepsResolveOptions struct {
	Streams
	Catalog, Installed, Output string
	AllowDowngrade, Prerelease bool
	Requests                   []deps.Request
	// OCI configures reading a catalog in a registry.
	OCI ociFlags
}

// NewCmdDepsResolve returns `scion deps resolve`.
func NewCmdDepsResolve(streams Streams) *cobra.Command {
	o := &DepsResolveOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "resolve --catalog DIR [--installed DIR] PACKAGE[@RANGE]...",
		Short: "Resolve the dependencies of packages for one deployment repository",
		Long: `Resolve what installing the given packages into one deployment repository
takes: every package they require, transitively, at one version each, and
one provider for every kind they need, keeping what the repository holds
where it can.

--catalog DIR holds the published revisions: every folder
DIR/<package path>/<version>/ with a Kptfile is one revision, <version>
being semver with or without a leading v (1.4.0, v1.4.0) or vN (N.0.0).
--catalog oci://REGISTRY/PREFIX reads them from a registry (as scion repo
mirror writes them): every PREFIX/<package path>:vN artifact is a revision,
its version a semver tag on the same artifact (v1.4.0), else vN.
--installed DIR is a checkout of the deployment repository: every folder
with a Kptfile is an installed package, identified by its Kptfile's
upstreamLock (git.directory and the version at the end of git.ref).

On success the plan is printed and the command exits 0; when the request
cannot be met it prints why and exits 1 (on stderr for text output, in the
document for yaml and json).`,
		Example: `  scion deps resolve --catalog catalog/ app@^2
  scion deps resolve --catalog catalog/ --installed cluster-01/ app@">=2.1.0" -o json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(args); err != nil {
				return err
			}
			return o.Run(cmdContext(cmd))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Catalog, "catalog", "", "folder of published revisions, <package path>/<version>/, or oci://REGISTRY/PREFIX (required)")
	o.OCI.add(cmd)
	f.StringVar(&o.Installed, "installed", "", "checkout of the deployment repository")
	f.BoolVar(&o.AllowDowngrade, "allow-downgrade", false, "let an installed package move to a lower version")
	f.BoolVar(&o.Prerelease, "prerelease", false, "let pre-release versions be chosen where a range does not name one")
	f.StringVarP(&o.Output, "output", "o", "text", "text, yaml or json")
	return cmd
}

// Complete reads and checks the arguments.
func (o *DepsResolveOptions) Complete(args []string) error {
	if o.Catalog == "" {
		return errors.New("--catalog is required")
	}
	if o.Output != "text" && o.Output != "yaml" && o.Output != "json" {
		return fmt.Errorf("--output must be text, yaml or json, not %q", o.Output)
	}
	for _, a := range args {
		r, err := deps.ParseRequest(a)
		if err != nil {
			return err
		}
		o.Requests = append(o.Requests, r)
	}
	return nil
}

// loadCatalog reads --catalog: a folder, or oci://REGISTRY/PREFIX (every
// PREFIX/P:vN artifact a revision of P, its version a semver tag on it or
// vN).
func (o *DepsResolveOptions) loadCatalog(ctx context.Context) (*deps.Catalog, error) {
	prefix, ok := strings.CutPrefix(o.Catalog, oci.Scheme)
	if !ok {
		return deps.LoadCatalog(o.Catalog)
	}
	opts, err := o.OCI.options()
	if err != nil {
		return nil, err
	}
	revs, err := oci.ListRevisions(ctx, prefix, opts)
	if err != nil {
		return nil, err
	}
	c := deps.NewCatalog()
	for _, r := range revs {
		if err := c.AddPackage(r.Package, r.Version, r.Files); err != nil {
			return nil, fmt.Errorf("%s revision %d: %w", r.Package, r.Revision, err)
		}
	}
	return c, nil
}

// depsDocument is the yaml and json output.
type depsDocument struct {
	Resolved    bool              `json:"resolved"`
	Plan        []deps.Step       `json:"plan,omitempty"`
	Providers   map[string]string `json:"providers,omitempty"`
	Explanation string            `json:"explanation,omitempty"`
}

// Run resolves and prints.
func (o *DepsResolveOptions) Run(ctx context.Context) error {
	catalog, err := o.loadCatalog(ctx)
	if err != nil {
		return fmt.Errorf("--catalog: %w", err)
	}
	var installed []deps.Installed
	if o.Installed != "" {
		if installed, err = deps.LoadInstalled(o.Installed); err != nil {
			return fmt.Errorf("--installed: %w", err)
		}
	}
	res, err := deps.Resolve(deps.Problem{Catalog: catalog, Installed: installed, Requests: o.Requests,
		AllowDowngrade: o.AllowDowngrade, Prerelease: o.Prerelease})
	return writeResolution(o.Out, o.Output, res, err)
}

// writeResolution prints a resolution (or why there is none) as text,
// yaml or json; no solution ends the command with exit code 1.
func writeResolution(w io.Writer, output string, res *deps.Result, err error) error {
	var unsat *deps.UnsatisfiableError
	if err != nil && !errors.As(err, &unsat) {
		return err
	}
	if output == "text" {
		if unsat != nil {
			return fmt.Errorf("cannot resolve: %s", unsat.Explanation)
		}
		return deps.WriteText(w, res)
	}
	doc := depsDocument{Resolved: unsat == nil}
	if unsat != nil {
		doc.Explanation = unsat.Explanation
	} else {
		doc.Plan, doc.Providers = res.Plan, res.Providers
		if doc.Plan == nil {
			doc.Plan = []deps.Step{}
		}
	}
	if output == "json" {
		err = writeJSON(w, doc)
	} else {
		var out []byte
		if out, err = yaml.Marshal(doc); err == nil {
			_, err = w.Write(out)
		}
	}
	if err != nil {
		return err
	}
	if unsat != nil {
		return &ExitError{Code: 1}
	}
	return nil
}

// ExitError ends the command with a code and nothing more to print: what
// went wrong was already written.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// DepsExplainOptions are the options of `scion deps explain`.
type DepsExplainOptions struct {
	Streams
	Kube                       KubeFlags
	Output                     string
	AllowDowngrade, Prerelease bool
	Overrides                  []string
	Timeout                    time.Duration
}

// NewCmdDepsExplain returns `scion deps explain`.
func NewCmdDepsExplain(streams Streams) *cobra.Command {
	o := &DepsExplainOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "explain REPOSITORY PACKAGE[@RANGE]...",
		Short: "Resolve packages for a deployment Repository of the cluster, as the controller does",
		Long: `Resolve what installing the given packages into a deployment Repository
takes, from what the cluster has: the catalog is every Repository of the
namespace that is not a deployment repository (their published revisions),
what is installed is read from the Repository's git (drafts and proposals
included), and what PackageVariants are installing comes from its
PackageLock. The output is the one of scion deps resolve: the plan, or why
there is none (exit code 1).

Git is read directly, with your own credentials (SCION_GIT_USERNAME and
SCION_GIT_PASSWORD, or SCION_GIT_TOKEN), as scion rpkg pull does.`,
		Example: `  scion deps explain cluster-01 app
  scion deps explain cluster-01 app@^2 --override lib=">=2.0.0" -o json`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.Run(cmd.Context(), args)
		},
	}
	f := cmd.Flags()
	o.Kube.AddFlags(f)
	f.BoolVar(&o.AllowDowngrade, "allow-downgrade", false, "let an installed package move to a lower version")
	f.BoolVar(&o.Prerelease, "prerelease", false, "let pre-release versions be chosen where a range does not name one")
	f.StringArrayVar(&o.Overrides, "override", nil, "PACKAGE=RANGE: the range every declaration asks for PACKAGE, replaced (as spec.dependencies.overrides)")
	f.StringVarP(&o.Output, "output", "o", "text", "text, yaml or json")
	f.DurationVar(&o.Timeout, "timeout", 2*time.Minute, "how long reading the repositories may take")
	return cmd
}

// Run resolves on the cluster and prints.
func (o *DepsExplainOptions) Run(ctx context.Context, args []string) error {
	if o.Output != "text" && o.Output != "yaml" && o.Output != "json" {
		return fmt.Errorf("--output must be text, yaml or json, not %q", o.Output)
	}
	p := deps.Problem{AllowDowngrade: o.AllowDowngrade, Prerelease: o.Prerelease}
	for _, a := range args[1:] {
		r, err := deps.ParseRequest(a)
		if err != nil {
			return err
		}
		p.Requests = append(p.Requests, r)
	}
	for _, ov := range o.Overrides {
		name, rng, ok := strings.Cut(ov, "=")
		if !ok {
			return fmt.Errorf("--override %q: want PACKAGE=RANGE", ov)
		}
		if _, err := deps.NewPackageRequirement(name, rng); err != nil {
			return fmt.Errorf("--override %q: %w", ov, err)
		}
		if p.Overrides == nil {
			p.Overrides = map[string]string{}
		}
		p.Overrides[name] = rng
	}
	c, ns, err := o.Kube.Client()
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	res, err := (&rpkg.Client{Client: c, Namespace: ns}).Resolve(ctx, args[0], p, gitCredentials())
	return writeResolution(o.Out, o.Output, res, err)
}
