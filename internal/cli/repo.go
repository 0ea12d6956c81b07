package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/pkgservice"
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
		Use:   "mirror (GIT-URL oci://REGISTRY/PREFIX | oci://REGISTRY/PREFIX GIT-URL)",
		Short: "Copy every published revision of a git repository into an OCI registry, or back",
		Long: `Copy every published revision of a git repository into an OCI registry, for
sites that have a registry and no git: package P's revision N goes to
oci://REGISTRY/PREFIX/P:vN, as the artifact docs/oci-layout.md describes, and
its floating tags (stable, v1.4.0, ...) to PREFIX/P:TAG, moved to where git
has them. Drafts and proposals are not copied. It is idempotent: a revision already
there is left alone, so run it again to copy what was published since. A tag
that holds other content is never moved (published revisions are immutable):
it is reported, the other revisions are still copied, and the command exits
non-zero. Git is read with your own credentials (SCION_GIT_USERNAME and
SCION_GIT_PASSWORD, or SCION_GIT_TOKEN); the registry's come from the Docker
config file.

The other way round (oci://REGISTRY/PREFIX first), every PREFIX/P:vN tag
becomes revision N of package P in git, each package's in order, with the
same files, and every other tag that names one of those artifacts becomes a
floating tag in git; a revision git has with the same files is left alone. A revision
git has with other files, or a tag that would not get its number in git
(git's latest revision of the package is not N-1), is reported, and that
package's later revisions are not copied.`,
		Example: `  scion repo mirror https://git.example.com/platform/blueprints.git oci://registry.site-a.example/blueprints
  scion repo mirror file:///srv/git/blueprints.git oci://registry.local:5000/blueprints --ca-file site-ca.pem
  scion repo mirror oci://registry.site-a.example/blueprints https://git.site-a.example/blueprints.git`,
		Args: cobra.ExactArgs(2),
		RunE: func(cc *cobra.Command, args []string) error {
			src, dst := args[0], args[1]
			gitURL, prefix, toGit := src, dst, false
			if p, ok := strings.CutPrefix(src, oci.Scheme); ok {
				gitURL, prefix, toGit = dst, p, true
				if strings.HasPrefix(dst, oci.Scheme) {
					return errors.New("one side is a git URL, the other oci://REGISTRY/PREFIX")
				}
			} else if p, ok := strings.CutPrefix(dst, oci.Scheme); ok {
				prefix = p
			} else {
				return fmt.Errorf("%q is not an OCI prefix: write oci://REGISTRY/PREFIX", dst)
			}
			if prefix == "" {
				return errors.New("the OCI prefix is empty: write oci://REGISTRY/PREFIX")
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
			st, err := store.Open(ctx, store.Options{URL: gitURL, Branch: branch, Directory: directory, Credentials: gitCredentials(), CacheDir: cache, CreateBranch: toGit})
			if err != nil {
				return err
			}
			var done []oci.Mirrored
			if toGit {
				done, err = oci.MirrorToGit(ctx, prefix, st, &pkgservice.Service{}, o)
			} else {
				done, err = oci.MirrorGit(ctx, st, prefix, o)
			}
			revisions, copied, tags, moved := 0, 0, 0, 0
			for _, m := range done {
				what := "there already"
				if m.Tag != "" {
					tags++
					if m.Copied {
						what, moved = "moved", moved+1
					}
					_, _ = fmt.Fprintf(streams.Out, "%s tag %s (revision %d): %s %s\n", m.Package, m.Tag, m.Revision, what, m.Ref)
					continue
				}
				revisions++
				if m.Copied {
					what, copied = "copied", copied+1
				}
				_, _ = fmt.Fprintf(streams.Out, "%s revision %d: %s %s (%s)\n", m.Package, m.Revision, what, m.Ref, m.Digest)
			}
			_, _ = fmt.Fprintf(streams.Out, "%d published revisions, %d copied; %d floating tags, %d moved\n", revisions, copied, tags, moved)
			return err
		},
	}
	cmd.Flags().StringVar(&branch, "branch", "", "the branch holding the packages (main)")
	cmd.Flags().StringVar(&directory, "directory", "", "the folder of the packages in the repository")
	f.add(cmd)
	return cmd
}
