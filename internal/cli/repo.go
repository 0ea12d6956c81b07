package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/store"
)

// NewCmdRepo returns `scion repo`, the commands on whole repositories.
func NewCmdRepo(streams Streams) *cobra.Command {
	cmd := &cobra.Command{Use: "repo", Short: "Work on whole package repositories (mirror)"}
	cmd.AddCommand(NewCmdRepoMirror(streams))
	return cmd
}

// NewCmdRepoMirror returns `scion repo mirror GIT-URL oci://PREFIX`.
func NewCmdRepoMirror(streams Streams) *cobra.Command {
	var f ociFlags
	var branch, directory string
	cmd := &cobra.Command{
		Use:   "mirror GIT-URL oci://REGISTRY/PREFIX",
		Short: "Copy every published revision of a git repository into an OCI registry",
		Long: `Copy every published revision of a git repository into an OCI registry, for
sites that have a registry and no git: package P's revision N goes to
oci://REGISTRY/PREFIX/P:vN, as the artifact docs/oci-layout.md describes.
Drafts and proposals are not copied. It is idempotent: a revision already
there is left alone, so run it again to copy what was published since. A tag
that holds other content is never moved (published revisions are immutable):
it is reported, the other revisions are still copied, and the command exits
non-zero. Git is read with your own credentials (SCION_GIT_USERNAME and
SCION_GIT_PASSWORD, or SCION_GIT_TOKEN); the registry's come from the Docker
config file. Copying from a registry into git is not built yet.`,
		Example: `  scion repo mirror https://git.example.com/platform/blueprints.git oci://registry.site-a.example/blueprints
  scion repo mirror file:///srv/git/blueprints.git oci://registry.local:5000/blueprints --ca-file site-ca.pem`,
		Args: cobra.ExactArgs(2),
		RunE: func(cc *cobra.Command, args []string) error {
			src, dst := args[0], args[1]
			if strings.HasPrefix(src, oci.Scheme) {
				return errors.New("copying from a registry into git is not built yet: give a git URL first, then oci://REGISTRY/PREFIX")
			}
			prefix, ok := strings.CutPrefix(dst, oci.Scheme)
			if !ok || prefix == "" {
				return fmt.Errorf("%q is not an OCI prefix: write oci://REGISTRY/PREFIX", dst)
			}
			o, err := f.options()
			if err != nil {
				return err
			}
			cache, err := os.MkdirTemp("", "scion-mirror")
			if err != nil {
				return err
			}
			defer func() { _ = os.RemoveAll(cache) }()
			ctx := cmdContext(cc)
			st, err := store.Open(ctx, store.Options{URL: src, Branch: branch, Directory: directory, Credentials: gitCredentials(), CacheDir: cache})
			if err != nil {
				return err
			}
			done, err := oci.MirrorGit(ctx, st, prefix, o)
			pushed := 0
			for _, m := range done {
				what := "there already"
				if m.Pushed {
					what, pushed = "copied", pushed+1
				}
				_, _ = fmt.Fprintf(streams.Out, "%s revision %d: %s %s (%s)\n", m.Package, m.Revision, what, m.Ref, m.Digest)
			}
			_, _ = fmt.Fprintf(streams.Out, "%d published revisions, %d copied\n", len(done), pushed)
			return err
		},
	}
	cmd.Flags().StringVar(&branch, "branch", "", "the branch holding the packages (main)")
	cmd.Flags().StringVar(&directory, "directory", "", "the folder of the packages in the repository")
	f.add(cmd)
	return cmd
}
