package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/engine"
	"github.com/scion-dev/scion/internal/pkg"
)

// NewCmdPkg returns `scion pkg`, the offline package commands.
func NewCmdPkg(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pkg",
		Short: "Work on packages in local folders (clone, update), and store them in OCI registries (push, pull)",
	}
	cmd.AddCommand(NewCmdPkgClone(streams), NewCmdPkgUpdate(streams), NewCmdPkgPush(streams), NewCmdPkgPull(streams))
	return cmd
}

// PkgCloneOptions are the options of `scion pkg clone`.
type PkgCloneOptions struct {
	Streams
	Source, Dest  string
	ForDeployment bool
	Name          string
	Origin        engine.Origin
}

// NewCmdPkgClone returns `scion pkg clone SRC DEST`.
func NewCmdPkgClone(streams Streams) *cobra.Command {
	o := &PkgCloneOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "clone SRC DEST",
		Short: "Clone the package in folder SRC into a new folder DEST",
		Long: `Clone the package in folder SRC into a new folder DEST. The new Kptfile records
SRC as its upstream (override the recorded repository, directory, ref and
commit with the flags), every resource gets a kpt-merge identity comment, and
--for-deployment writes the package context (package-context.yaml).`,
		Args: cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			o.Source, o.Dest = args[0], args[1]
			if err := o.Complete(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	cmd.Flags().BoolVar(&o.ForDeployment, "for-deployment", false, "write the package context for a deployment package")
	cmd.Flags().StringVar(&o.Name, "name", "", "package name (default: the base name of DEST)")
	cmd.Flags().StringVar(&o.Origin.Repo, "repo", "", "upstream repository to record (default: file://SRC)")
	cmd.Flags().StringVar(&o.Origin.Directory, "directory", "", "upstream directory to record")
	cmd.Flags().StringVar(&o.Origin.Ref, "ref", "", "upstream ref to record, such as app/v3")
	cmd.Flags().StringVar(&o.Origin.Commit, "commit", "", "upstream commit to record")
	return cmd
}

// Complete fills in defaults.
func (o *PkgCloneOptions) Complete() error {
	if o.Origin.Repo == "" {
		abs, err := filepath.Abs(o.Source)
		if err != nil {
			return err
		}
		o.Origin.Repo = "file://" + abs
	}
	if o.Name == "" {
		o.Name = filepath.Base(filepath.Clean(o.Dest))
	}
	return nil
}

// Run clones.
func (o *PkgCloneOptions) Run() error {
	if _, err := os.Stat(o.Dest); err == nil {
		return fmt.Errorf("%s already exists; clone writes a new folder", o.Dest)
	}
	src, err := pkg.ReadDir(o.Source)
	if err != nil {
		return err
	}
	out, err := engine.Clone(src, o.Origin, engine.CloneOptions{Name: o.Name, PackagePath: o.Name, ForDeployment: o.ForDeployment})
	if err != nil {
		return err
	}
	if err := out.WriteDir(o.Dest); err != nil {
		return err
	}
	changes, err := engine.Diff(pkg.New(nil), out)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "cloned %s to %s as package %s\n", o.Source, o.Dest, o.Name)
	return printChanges(o.Out, changes)
}

// PkgUpdateOptions are the options of `scion pkg update`.
type PkgUpdateOptions struct {
	Streams
	Dir, Origin, Updated string
	Strategy             string
	Ref, Commit          string
}

// NewCmdPkgUpdate returns `scion pkg update DIR`.
func NewCmdPkgUpdate(streams Streams) *cobra.Command {
	o := &PkgUpdateOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "update DIR --origin ORIGIN --updated UPDATED",
		Short: "3-way merge the change from ORIGIN to UPDATED into the package in DIR",
		Long: `Update the package in DIR, derived from the package in folder ORIGIN, to the
package in folder UPDATED, keeping DIR's own changes. Strategies:
resource-merge (default; field by field), fast-forward (refuses when DIR has
changes of its own), force-delete-replace (takes UPDATED, dropping DIR's
changes), copy-merge (takes UPDATED's files, keeping DIR-only ones).`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			o.Dir = args[0]
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	cmd.Flags().StringVar(&o.Origin, "origin", "", "folder with the upstream package DIR was derived from (required)")
	cmd.Flags().StringVar(&o.Updated, "updated", "", "folder with the new upstream package (required)")
	cmd.Flags().StringVar(&o.Strategy, "strategy", "", "resource-merge, fast-forward, force-delete-replace or copy-merge (default: the Kptfile's, else resource-merge)")
	cmd.Flags().StringVar(&o.Ref, "ref", "", "upstream ref to record (default: the current one)")
	cmd.Flags().StringVar(&o.Commit, "commit", "", "upstream commit to record (default: the current one)")
	return cmd
}

// Validate checks the flags.
func (o *PkgUpdateOptions) Validate() error {
	var errs []error
	if o.Origin == "" {
		errs = append(errs, errors.New("--origin is required"))
	}
	if o.Updated == "" {
		errs = append(errs, errors.New("--updated is required"))
	}
	switch kptfilev1.UpdateStrategy(o.Strategy) {
	case "", kptfilev1.ResourceMerge, kptfilev1.FastForward, kptfilev1.ForceDeleteReplace, kptfilev1.CopyMerge:
	default:
		errs = append(errs, fmt.Errorf("--strategy %q: want resource-merge, fast-forward, force-delete-replace or copy-merge", o.Strategy))
	}
	return errors.Join(errs...)
}

// Run updates DIR in place.
func (o *PkgUpdateOptions) Run() error {
	local, err := pkg.ReadDir(o.Dir)
	if err != nil {
		return err
	}
	origin, err := pkg.ReadDir(o.Origin)
	if err != nil {
		return err
	}
	updated, err := pkg.ReadDir(o.Updated)
	if err != nil {
		return err
	}
	kf, err := local.Kptfile()
	if err != nil {
		return fmt.Errorf("%s: %w", o.Dir, err)
	}
	next := engine.Origin{Ref: o.Ref, Commit: o.Commit}
	if kf.Upstream != nil && kf.Upstream.Git != nil {
		next.Repo, next.Directory = kf.Upstream.Git.Repo, kf.Upstream.Git.Directory
		if next.Ref == "" {
			next.Ref = kf.Upstream.Git.Ref
		}
	}
	if next.Repo == "" {
		abs, err := filepath.Abs(o.Updated)
		if err != nil {
			return err
		}
		next.Repo = "file://" + abs
	}
	if next.Commit == "" && kf.UpstreamLock != nil && kf.UpstreamLock.Git != nil && next.Ref == kf.UpstreamLock.Git.Ref {
		next.Commit = kf.UpstreamLock.Git.Commit
	}
	out, changes, err := engine.Update(local, origin, updated, next, kptfilev1.UpdateStrategy(o.Strategy))
	if err != nil {
		return err
	}
	if err := out.WriteDir(o.Dir); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "updated %s\n", o.Dir)
	return printChanges(o.Out, changes)
}

func printChanges(w io.Writer, changes []engine.Change) error {
	if len(changes) == 0 {
		_, err := fmt.Fprintln(w, "  no changes")
		return err
	}
	for _, c := range changes {
		if _, err := fmt.Fprintf(w, "  %s\n", c); err != nil {
			return err
		}
	}
	return nil
}
