package rpkg

import (
	"context"
	"errors"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/types"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/store"
)

// openGit opens the git repository of a revision with the user's own
// credentials, in a throwaway cache, and finds the revision in it.
func (c *Client) openGit(ctx context.Context, name string, creds store.Credentials) (*configv1alpha1.Repository, store.Store, store.Revision, func(), error) {
	var none store.Revision
	pr, err := c.Get(ctx, name)
	if err != nil {
		return nil, nil, none, nil, err
	}
	repoObj, st, cleanup, err := c.openRepository(ctx, pr.Spec.Repository, creds)
	if err != nil {
		return nil, nil, none, nil, fmt.Errorf("repository %s of %s: %w", pr.Spec.Repository, name, err)
	}
	rev, err := st.Get(ctx, pr.Spec.PackageName, pr.Spec.WorkspaceName, 0)
	if err != nil {
		cleanup()
		return nil, nil, none, nil, err
	}
	return repoObj, st, rev, cleanup, nil
}

// openRepository opens the store of a Repository with the user's own
// credentials: its git repository in a throwaway cache, or its registry
// prefix with the user's Docker credentials (docker login, DOCKER_CONFIG).
func (c *Client) openRepository(ctx context.Context, name string, creds store.Credentials) (*configv1alpha1.Repository, store.Store, func(), error) {
	repoObj := &configv1alpha1.Repository{}
	if err := c.Client.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: name}, repoObj); err != nil {
		return nil, nil, nil, err
	}
	if o := repoObj.Spec.OCI; o != nil {
		st, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: o.Registry, Options: c.OCI})
		if err != nil {
			return nil, nil, nil, err
		}
		return repoObj, st, func() {}, nil
	}
	if repoObj.Spec.Git == nil {
		return nil, nil, nil, fmt.Errorf("repository %s has no spec.git", repoObj.Name)
	}
	dir, err := os.MkdirTemp("", "scion-rpkg")
	if err != nil {
		return nil, nil, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	g := repoObj.Spec.Git
	st, err := store.Open(ctx, store.Options{URL: g.Repo, Branch: g.Branch, Directory: g.Dir(), Credentials: creds, Author: g.Author, Email: g.Email, CacheDir: dir})
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	return repoObj, st, cleanup, nil
}

// Tags returns the floating tags of a package in a Repository and the
// revisions they point at (0: at no published revision).
func (c *Client) Tags(ctx context.Context, repository, pkgPath string, creds store.Credentials) (map[string]int, error) {
	_, st, cleanup, err := c.openRepository(ctx, repository, creds)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	return st.FloatingTags(ctx, pkgPath)
}

// Tag points the floating tag of a package at a published revision, with
// a compare-and-swap against the tag as read, and asks the Repository to
// sync. Variants following the tag move at their next check (the
// controller's --tag-poll-period). It returns the revision the tag pointed
// at before (0: it did not exist).
func (c *Client) Tag(ctx context.Context, repository, pkgPath, tag string, revision int, creds store.Credentials) (int, error) {
	repoObj, st, cleanup, err := c.openRepository(ctx, repository, creds)
	if err != nil {
		return 0, err
	}
	defer cleanup()
	from, err := c.service().SetFloatingTag(ctx, st, pkgPath, tag, revision)
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return from, fmt.Errorf("the tag %s of %s moved while it was being set (%w); run the command again to move it from where it is now", tag, pkgPath, err)
		}
		return from, err
	}
	return from, c.requestSync(ctx, repoObj)
}

// requestSync asks a Repository to sync now.
func (c *Client) requestSync(ctx context.Context, repoObj *configv1alpha1.Repository) error {
	if err := pkgservice.RequestSync(ctx, c.Client, repoObj); err != nil {
		return fmt.Errorf("written to git, but asking %s to sync failed (it syncs at its next period): %w", repoObj.Name, err)
	}
	return nil
}

// PulledFile records, in a pulled folder, which revision and commit were
// pulled: push writes against that commit. It is not part of the package.
const PulledFile = ".scion-pulled"

// pulled is the content of PulledFile.
type pulled struct {
	Name   string `json:"name"`
	Commit string `json:"commit"`
}

// PullGit writes the files of a revision into dir (which is created, and
// must not hold another package), recording the commit in PulledFile.
func (c *Client) PullGit(ctx context.Context, name, dir string, creds store.Credentials) (store.Revision, error) {
	_, st, rev, cleanup, err := c.openGit(ctx, name, creds)
	if err != nil {
		return store.Revision{}, err
	}
	defer cleanup()
	p, err := st.Read(ctx, rev)
	if err != nil {
		return store.Revision{}, err
	}
	if err := p.WriteDir(dir); err != nil {
		return store.Revision{}, err
	}
	return rev, writePulled(dir, name, rev.Commit)
}

// PushGit writes dir as one new commit of a draft, against the commit that
// was pulled into dir (a compare-and-swap): if the draft changed since,
// nothing is written and the error says what changed and how to merge.
// It then asks the Repository to sync. The commit's author is the user
// the API server knows, its message message (else one naming that user).
func (c *Client) PushGit(ctx context.Context, name, dir, message string, creds store.Credentials) (store.Revision, error) {
	pulledAt, err := readPulled(dir, name)
	if err != nil {
		return store.Revision{}, err
	}
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
	p.DeleteFile(PulledFile)
	if rev.Commit != pulledAt {
		return store.Revision{}, c.changedSincePull(ctx, st, name, dir, pulledAt, rev)
	}
	// The draft's trailers (its object, its PackageVariant) carry over.
	who, err := c.Whoami(ctx)
	if err != nil {
		return store.Revision{}, err
	}
	if message == "" {
		message = "Update by " + who
	}
	out, err := c.service().PushDraft(ctx, st, rev, pulledAt, p, message, who)
	if errors.Is(err, store.ErrConflict) {
		// Someone pushed after this mirror last fetched: fetch, so the
		// message names their commit rather than the one pulled.
		if ferr := st.Fetch(ctx); ferr == nil {
			if fresh, gerr := st.Get(ctx, rev.Package, rev.Workspace, 0); gerr == nil {
				return store.Revision{}, c.changedSincePull(ctx, st, name, dir, pulledAt, fresh)
			}
		}
	}
	if err != nil {
		return store.Revision{}, err
	}
	if err := writePulled(dir, name, out.Commit); err != nil {
		return store.Revision{}, err
	}
	return out, c.requestSync(ctx, repoObj)
}

// ErrChangedSincePull is matched when a push finds the draft changed
// since the folder was pulled.
var ErrChangedSincePull = errors.New("the draft changed since it was pulled")

// changedSincePull says what was committed on the draft since the pull,
// and how to merge.
func (c *Client) changedSincePull(ctx context.Context, st store.Store, name, dir, pulledCommit string, now store.Revision) error {
	what := pkgservice.CommittedSince(ctx, st, now, pulledCommit)
	if what != "" {
		what = ": " + what
	}
	return fmt.Errorf("%s changed since %s was pulled (pulled %.12s, now %.12s%s); nothing was pushed. Pull it into another folder, merge your edits into it, and push from there: %w",
		name, dir, pulledCommit, now.Commit, what, ErrChangedSincePull)
}
