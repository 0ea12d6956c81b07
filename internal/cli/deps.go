package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/scion-dev/scion/internal/deps"
)

// NewCmdDeps returns `scion deps`, package dependency tools.
func NewCmdDeps(streams Streams) *cobra.Command {
	cmd := &cobra.Command{Use: "deps", Short: "Package dependency tools that work offline"}
	cmd.AddCommand(NewCmdDepsResolve(streams))
	return cmd
}

// DepsResolveOptions are the options of `scion deps resolve`.
type DepsResolveOptions struct {
	Streams
	Catalog, Installed, Output string
	AllowDowngrade, Prerelease bool
	Requests                   []deps.Request
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
			return o.Run()
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Catalog, "catalog", "", "folder of published revisions, <package path>/<version>/ (required)")
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

// depsDocument is the yaml and json output.
type depsDocument struct {
	Resolved    bool              `json:"resolved"`
	Plan        []deps.Step       `json:"plan,omitempty"`
	Providers   map[string]string `json:"providers,omitempty"`
	Explanation string            `json:"explanation,omitempty"`
}

// Run resolves and prints.
func (o *DepsResolveOptions) Run() error {
	catalog, err := deps.LoadCatalog(o.Catalog)
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
	var unsat *deps.UnsatisfiableError
	if err != nil && !errors.As(err, &unsat) {
		return err
	}
	if o.Output == "text" {
		if unsat != nil {
			return fmt.Errorf("cannot resolve: %s", unsat.Explanation)
		}
		return deps.WriteText(o.Out, res)
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
	if o.Output == "json" {
		enc := json.NewEncoder(o.Out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		err = enc.Encode(doc)
	} else {
		var out []byte
		if out, err = yaml.Marshal(doc); err == nil {
			_, err = o.Out.Write(out)
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
