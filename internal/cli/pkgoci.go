package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/pkg"
)

// ociFlags are the registry flags of scion pkg push and pull.
type ociFlags struct {
	caFile  string
	timeout time.Duration
}

func (f *ociFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.caFile, "ca-file", "", "PEM file of CAs to trust besides the system's (a registry with a private CA)")
	cmd.Flags().DurationVar(&f.timeout, "timeout", time.Minute, "how long the registry may take")
}

// options are the registry client's: credentials from the Docker config
// file (docker login, DOCKER_CONFIG, credential helpers), the system's CAs
// plus --ca-file.
func (f *ociFlags) options() (oci.Options, error) {
	t, err := oci.TransportWithCA(f.caFile)
	if err != nil {
		return oci.Options{}, fmt.Errorf("--ca-file: %w", err)
	}
	return oci.Options{Timeout: f.timeout, Transport: t}, nil
}

// NewCmdPkgPush returns `scion pkg push DIR oci://REF`.
func NewCmdPkgPush(streams Streams) *cobra.Command {
	var f ociFlags
	var name string
	cmd := &cobra.Command{
		Use:   "push DIR oci://REGISTRY/REPOSITORY:TAG",
		Short: "Store the package in folder DIR in an OCI registry",
		Long: `Store the package in folder DIR in an OCI registry, as the artifact
docs/oci-layout.md describes (Scion's media types: a config with the package's
name, one gzipped tar layer with its files, the Kptfile as an annotation). The
same files always make the same artifact, so the digest printed identifies the
content. Credentials come from the Docker config file (docker login,
DOCKER_CONFIG, credential helpers). For air-gapped sites: push on one side,
pull on the other.`,
		Example: `  scion pkg push ./app oci://registry.example.com/platform/blueprints/app:v1
  scion pkg push ./app oci://registry.local:5000/app:v1 --ca-file site-ca.pem`,
		Args: cobra.ExactArgs(2),
		RunE: func(cc *cobra.Command, args []string) error {
			ref, err := oci.ParseReference(args[1])
			if err != nil {
				return err
			}
			p, err := pkg.ReadDir(args[0])
			if err != nil {
				return err
			}
			if name == "" {
				name = filepath.Base(filepath.Clean(args[0]))
			}
			o, err := f.options()
			if err != nil {
				return err
			}
			digest, err := oci.Push(cmdContext(cc), ref, name, p, o)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			_, _ = fmt.Fprintf(streams.Out, "pushed %s to %s (%s)\n", name, args[1], digest)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the package's name (default: the base name of DIR)")
	f.add(cmd)
	return cmd
}

// NewCmdPkgPull returns `scion pkg pull oci://REF DIR`.
func NewCmdPkgPull(streams Streams) *cobra.Command {
	var f ociFlags
	cmd := &cobra.Command{
		Use:   "pull oci://REGISTRY/REPOSITORY[:TAG|@DIGEST] DIR",
		Short: "Write a package stored in an OCI registry into a new folder DIR",
		Long: `Write a package stored in an OCI registry (scion pkg push, or Scion's OCI
repositories) into a new folder DIR. An artifact that is not a Scion package
(another media type), a layer over 100 MiB, a file path that leaves the package
or a layer without a Kptfile are refused, naming the artifact, and nothing is
written.`,
		Example: `  scion pkg pull oci://registry.example.com/platform/blueprints/app:v1 ./app
  scion pkg pull oci://registry.example.com/platform/blueprints/app@sha256:... ./app`,
		Args: cobra.ExactArgs(2),
		RunE: func(cc *cobra.Command, args []string) error {
			ref, err := oci.ParseReference(args[0])
			if err != nil {
				return err
			}
			if entries, err := os.ReadDir(args[1]); err == nil && len(entries) > 0 {
				return fmt.Errorf("%s exists and is not empty: pull into a new folder", args[1])
			} else if err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			o, err := f.options()
			if err != nil {
				return err
			}
			p, name, digest, err := oci.Pull(cmdContext(cc), ref, o)
			if err != nil {
				return err
			}
			if err := p.WriteDir(args[1]); err != nil {
				return err
			}
			_, _ = fmt.Fprintf(streams.Out, "pulled %s from %s (%s) into %s\n", name, args[0], digest, args[1])
			return nil
		},
	}
	f.add(cmd)
	return cmd
}
