package rpkg

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
)

// openGit opens the git repository of a revision with the user's own
// credentials, in a throwaway cache, and finds the revision in it.
func (c *Client) openGit(ctx context.Context, name string, creds store.Credentials) (*configv1alpha1.Repository, *store.Repository, store.Revision, func(), error) {
	var none store.Revision
	pr, err := c.Get(ctx, name)
	if err != nil {
		return nil, nil, none, nil, err
	}
	repoObj := &configv1alpha1.Repository{}
	if err := c.Client.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: pr.Spec.Repository}, repoObj); err != nil {
		return nil, nil, none, nil, fmt.Errorf("repository %s of %s: %w", pr.Spec.Repository, name, err)
	}
	if repoObj.Spec.Git == nil {
		return nil, nil, none, nil, fmt.Errorf("repository %s has no spec.git", repoObj.Name)
	}
	dir, err := os.MkdirTemp("", "scion-rpkg")
	if err != nil {
		return nil, nil, none, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	g := repoObj.Spec.Git
	st, err := store.Open(ctx, store.Options{URL: g.Repo, Branch: g.Branch, Directory: g.Directory, Credentials: creds, Author: g.Author, Email: g.Email, CacheDir: dir})
	if err == nil {
		var rev store.Revision
		if rev, err = st.Get(ctx, pr.Spec.PackageName, pr.Spec.WorkspaceName, 0); err == nil {
			return repoObj, st, rev, cleanup, nil
		}
	}
	cleanup()
	return nil, nil, none, nil, err
}

// Pull writes the files of a revision into dir (which is created, and
// emptied of files that are not in the package).
func (c *Client) Pull(ctx context.Context, name, dir string, creds store.Credentials) (store.Revision, error) {
	_, st, rev, cleanup, err := c.openGit(ctx, name, creds)
	if err != nil {
		return store.Revision{}, err
	}
	defer cleanup()
	p, err := st.Read(ctx, rev)
	if err != nil {
		return store.Revision{}, err
	}
	return rev, p.WriteDir(dir)
}

// Push writes dir as one new commit of a draft, against the draft commit
// the object shows (so edits made meanwhile are not overwritten), and asks
// the Repository to sync.
func (c *Client) Push(ctx context.Context, name, dir string, creds store.Credentials) (store.Revision, error) {
	repoObj, st, rev, cleanup, err := c.openGit(ctx, name, creds)
	if err != nil {
		return store.Revision{}, err
	}
	defer cleanup()
	if rev.Lifecycle != porchv1alpha1.LifecycleDraft {
		return store.Revision{}, fmt.Errorf("%s is %s: only drafts can be pushed; copy it to a new draft first", name, rev.Lifecycle)
	}
	p, err := pkg.ReadDir(dir)
	if err != nil {
		return store.Revision{}, err
	}
	// The draft's trailers (its object, its PackageVariant) carry over.
	out, err := st.WriteDraft(ctx, store.DraftWrite{Package: rev.Package, Workspace: rev.Workspace, Expected: rev.Commit,
		Contents: p, Message: "Push " + dir})
	if err != nil {
		return store.Revision{}, err
	}
	patch := client.MergeFrom(repoObj.DeepCopy())
	if repoObj.Annotations == nil {
		repoObj.Annotations = map[string]string{}
	}
	repoObj.Annotations[configv1alpha1.SyncRequestedAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
	if err := c.Client.Patch(ctx, repoObj, patch); err != nil {
		return out, fmt.Errorf("pushed, but asking %s to sync failed (it syncs at its next period): %w", repoObj.Name, err)
	}
	return out, nil
}
