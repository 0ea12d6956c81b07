package pkgservice

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/store"
)

// repositoryRetry is how soon an object waiting for a Repository that is
// missing or not usable looks again.
const repositoryRetry = 15 * time.Second

// WaitForRepository is how every controller waits for a repository it
// could not open or use: RepositoryNotFound when the Repository object
// does not exist or is being deleted, RepositoryUnavailable until the
// remote may have recovered (store.RetryAfter) when it did not answer,
// RepositoryNotReady (looked at again after a while) otherwise. The
// message names the Repository.
func WaitForRepository(namespace, name string, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return wait(repositoryRetry, porchv1alpha1.RepositoryNotFoundReason, "Repository %s does not exist in namespace %s (deleted, or not created yet; a Repository of another namespace cannot be named)", name, namespace)
	case errors.Is(err, repocache.ErrDeleting):
		return wait(repositoryRetry, porchv1alpha1.RepositoryNotFoundReason, "Repository %s is being deleted", name)
	}
	// Errors that name the Repository already (OpenNamed's) are not
	// prefixed twice.
	msg, _ := strings.CutPrefix(err.Error(), "repository "+name+": ")
	if after, ok := store.RetryAfter(err); ok {
		return wait(after, porchv1alpha1.RepositoryUnavailableReason, "repository %s: %s", name, msg)
	}
	return wait(repositoryRetry, porchv1alpha1.RepositoryNotReadyReason, "repository %s is not usable: %s", name, msg)
}

// upstreamMaxAge is how stale an upstream repository's refs may be when
// a set or variant resolves its upstream: reconciles in a burst share one
// fetch. A revision not found is always looked for in the remote.
const upstreamMaxAge = time.Second

// FindUpstream opens an upstream's Repository (read with reader, opened
// through cache; both returned) and resolves the revision it names: the one way
// PackageVariants and PackageVariantSets find their upstream, so the two
// never disagree. A Repository that cannot be opened is waited for
// (WaitForRepository); a revision git does not have stalls the caller
// with reason and a message naming the field and what the package has
// instead (at path: spec.upstream, or one of a set's spec.upstreams).
func FindUpstream(ctx context.Context, cache *repocache.Cache, reader client.Reader, ns string, path *field.Path, u *configv1alpha1.Upstream, reason string) (*configv1alpha1.Repository, store.Store, store.Revision, error) {
	repoObj, st, err := cache.OpenNamed(ctx, reader, ns, u.Repo)
	if err != nil {
		return nil, nil, store.Revision{}, WaitForRepository(ns, u.Repo, err)
	}
	rev, err := ResolveUpstream(ctx, st, u, upstreamMaxAge)
	if errors.Is(err, store.ErrNotFound) {
		msg, merr := UpstreamNotFound(ctx, st, path, u, err)
		if merr != nil {
			return nil, nil, store.Revision{}, merr
		}
		return nil, nil, store.Revision{}, &SpecError{Reason: reason, Message: msg}
	}
	return repoObj, st, rev, err
}

// ResolveUpstream is how PackageVariants and PackageVariantSets find the
// revision an upstream names, from git: a floating tag, a published
// revision number or a workspace. The repository's refs are used when
// fetched less than maxAge ago, so a burst of reconciles shares one fetch;
// a revision not found there is looked for in the remote before
// store.ErrNotFound is returned.
func ResolveUpstream(ctx context.Context, st store.Store, u *configv1alpha1.Upstream, maxAge time.Duration) (store.Revision, error) {
	if err := st.FetchIfOlder(ctx, maxAge); err != nil {
		return store.Revision{}, fmt.Errorf("repository %s: %w", u.Repo, err)
	}
	rev, err := resolveUpstream(ctx, st, u)
	if errors.Is(err, store.ErrNotFound) {
		// Perhaps published since the last fetch: look in the remote.
		if err := st.FetchPackage(ctx, u.Package); err != nil {
			return store.Revision{}, fmt.Errorf("repository %s: %w", u.Repo, err)
		}
		rev, err = resolveUpstream(ctx, st, u)
	}
	return rev, err
}

// latestPublished is the package's highest Published revision (one whose
// deletion is proposed is passed over; store.ErrNotFound when it has
// none).
func latestPublished(ctx context.Context, st store.Store, pkgPath string) (store.Revision, error) {
	revs, err := st.ListPackage(ctx, pkgPath)
	if err != nil {
		return store.Revision{}, err
	}
	var latest *store.Revision
	for i, rev := range revs {
		if rev.Lifecycle == porchv1alpha1.LifecyclePublished && (latest == nil || rev.Revision > latest.Revision) {
			latest = &revs[i]
		}
	}
	if latest == nil {
		return store.Revision{}, fmt.Errorf("package %s has no published revision: %w", pkgPath, store.ErrNotFound)
	}
	return *latest, nil
}

func resolveUpstream(ctx context.Context, st store.Store, u *configv1alpha1.Upstream) (store.Revision, error) {
	switch {
	case u.Tag != "":
		return st.ResolveFloatingTag(ctx, u.Package, u.Tag)
	case u.VersionRange != "":
		v, err := NewestInRange(ctx, st, u.Package, u.VersionRange)
		return v.Revision, err
	case u.Revision.Latest():
		return latestPublished(ctx, st, u.Package)
	case u.Revision != "":
		n, err := u.Revision.Number()
		if err != nil {
			return store.Revision{}, err
		}
		return st.Get(ctx, u.Package, "", n)
	default:
		return st.Get(ctx, u.Package, u.WorkspaceName, 0)
	}
}

// UpstreamNotFound is the message of an upstream ResolveUpstream did not
// find (err), the same for sets and variants: for a tag, the tag's error;
// otherwise what the package has instead.
func UpstreamNotFound(ctx context.Context, st store.Store, path *field.Path, u *configv1alpha1.Upstream, err error) (string, error) {
	if u.Tag != "" {
		return path.Child("tag").String() + ": " + err.Error(), nil
	}
	revs, lerr := st.ListPackage(ctx, u.Package)
	if lerr != nil {
		return "", lerr
	}
	var versions []string
	if u.VersionRange != "" {
		vs, err := PublishedVersions(ctx, st, u.Package)
		if err != nil {
			return "", err
		}
		for _, v := range vs {
			versions = append(versions, v.Version.String())
		}
	}
	return UpstreamNotFoundMessage(path, u, revs, versions), nil
}

// UpstreamNotFoundMessage says which upstream is missing, in the terms of
// the spec (the Repository's name, the revision as written), and what the
// package has instead (versions: the published versions, for a
// versionRange).
func UpstreamNotFoundMessage(path *field.Path, u *configv1alpha1.Upstream, revs []store.Revision, versions []string) string {
	fp, what := path.Child("workspaceName"), "workspace "+u.WorkspaceName
	switch {
	case u.Revision != "":
		fp, what = path.Child("revision"), "revision "+string(u.Revision)
	case u.VersionRange != "":
		fp, what = path.Child("versionRange"), "published revision in range "+u.VersionRange
	}
	var numbers []int
	var published, workspaces []string
	for _, rev := range revs {
		switch {
		case rev.Lifecycle == porchv1alpha1.LifecyclePublished || rev.Lifecycle == porchv1alpha1.LifecycleDeletionProposed:
			numbers = append(numbers, rev.Revision)
		default:
			workspaces = append(workspaces, rev.Workspace)
		}
	}
	slices.Sort(numbers)
	for _, n := range numbers {
		published = append(published, strconv.Itoa(n))
	}
	slices.Sort(workspaces)
	msg := fmt.Sprintf("%s: Repository %s has no %s of package %s", fp, u.Repo, what, u.Package)
	switch {
	case len(revs) == 0:
		msg += " (the package is not in that repository)"
	case (u.Revision != "" || u.VersionRange != "") && len(published) == 0:
		msg += " (it has no published revision yet)"
	case u.VersionRange != "":
		msg += " (published versions: " + strings.Join(versions, ", ") + ")"
	case u.Revision != "":
		msg += " (published revisions: " + strings.Join(published, ", ") + ")"
	case len(workspaces) > 0:
		msg += " (unpublished workspaces: " + strings.Join(workspaces, ", ") + ")"
	}
	return msg
}

// RequestSync asks a Repository to show what git has now (its
// sync-requested annotation): for a writer that changed git outside the
// Repository's own sync, or a reader that found git ahead of the objects.
func RequestSync(ctx context.Context, c client.Client, repo *configv1alpha1.Repository) error {
	patch := client.MergeFrom(repo.DeepCopy())
	if repo.Annotations == nil {
		repo.Annotations = map[string]string{}
	}
	repo.Annotations[configv1alpha1.SyncRequestedAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
	return client.IgnoreNotFound(c.Patch(ctx, repo, patch))
}
