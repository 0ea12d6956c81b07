package pkgservice

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/store"
)

// LockedRevision names the published PackageRevision of namespace ns that
// a Kptfile's upstreamLock records: the revision of the Repository whose
// URL and directory the lock names, at the revision tag of the lock's ref
// (pkg/vN) and, where both are known, at the lock's commit; for an OCI
// lock, the revision of the Repository whose registry prefix holds the
// image, at its tag vN and digest. It returns ""
// when there is none: the upstream is not a Repository of ns, the ref is
// not a published revision's, or that revision is gone. c lists
// Repositories and PackageRevisions with the field selectors
// spec.repository, spec.packageName and spec.revision (the storage and
// Scion's API server both serve them).
func LockedRevision(ctx context.Context, c client.Reader, ns string, lock *kptfilev1.UpstreamLock) (string, error) {
	full, revision, ok := lockedPackage(lock)
	if !ok {
		return "", nil
	}
	repos := &configv1alpha1.RepositoryList{}
	if err := c.List(ctx, repos, client.InNamespace(ns)); err != nil {
		return "", fmt.Errorf("listing the Repositories of %s: %w", ns, err)
	}
	for _, repo := range repos.Items {
		pkgPath, ok := lockedIn(&repo, lock, full)
		if !ok {
			continue
		}
		revs := &porchv1alpha1.PackageRevisionList{}
		if err := c.List(ctx, revs, client.InNamespace(ns), client.MatchingFields{
			"spec.repository": repo.Name, "spec.packageName": pkgPath, "spec.revision": strconv.Itoa(revision),
		}); err != nil {
			return "", fmt.Errorf("listing revision %d of %s in %s: %w", revision, pkgPath, repo.Name, err)
		}
		for _, pr := range revs.Items {
			if pr.Spec.Revision != revision || pr.Spec.PackageName != pkgPath || pr.Spec.Repository != repo.Name {
				continue // a reader that ignored a selector
			}
			if l := lock.Commit(); l != "" && pr.Status.Commit != "" && pr.Status.Commit != l {
				continue
			}
			return pr.Name, nil
		}
	}
	return "", nil
}

// UpstreamVersion names the upstream a lock records as people read it:
// the package and its published revision ("regional-app v4"), else the
// package and the commit or digest it pins; "" without a lock.
func UpstreamVersion(lock *kptfilev1.UpstreamLock) string {
	if full, revision, ok := lockedPackage(lock); ok {
		return path.Base(full) + " v" + strconv.Itoa(revision)
	}
	pin := lock.Commit()
	if pin == "" {
		return ""
	}
	if _, hex, ok := strings.Cut(pin, ":"); ok {
		pin = hex // sha256:...
	}
	name := ""
	switch {
	case lock.Git != nil:
		name = path.Base(strings.Trim(lock.Git.Directory, "/"))
	case lock.OCI != nil:
		name = path.Base(strings.TrimSuffix(lock.OCI.Image, ":"+lock.Ref()))
	}
	return name + "@" + pin[:min(12, len(pin))]
}

// lockedPackage reads the package (its full path in the git repository,
// or its OCI repository REGISTRY/PATH) and the published revision number
// a lock records; ok is false when the lock is not at a published
// revision's ref (pkg/vN in git, the tag vN in a registry).
func lockedPackage(lock *kptfilev1.UpstreamLock) (full string, revision int, ok bool) {
	var rest string
	switch {
	case lock == nil:
		return "", 0, false
	case lock.Git != nil && lock.Git.Repo != "":
		full = strings.Trim(lock.Git.Directory, "/")
		rest, ok = strings.CutPrefix(lock.Git.Ref, full+"/v")
	case lock.OCI != nil && lock.OCI.Image != "":
		tag := lock.Ref()
		full = strings.TrimSuffix(lock.OCI.Image, ":"+tag)
		rest, ok = strings.CutPrefix(tag, "v")
	}
	if !ok || full == "" {
		return "", 0, false
	}
	revision, err := strconv.Atoi(rest)
	if err != nil || revision <= 0 {
		return "", 0, false
	}
	return full, revision, true
}

// lockedIn says whether repo holds the package a lock names (full, from
// lockedPackage), and its path there.
func lockedIn(repo *configv1alpha1.Repository, lock *kptfilev1.UpstreamLock, full string) (string, bool) {
	switch {
	case lock.OCI != nil:
		if repo.Spec.OCI == nil {
			return "", false
		}
		p, ok := strings.CutPrefix(full, strings.TrimSuffix(repo.Spec.OCI.Registry, "/")+"/")
		return p, ok && p != ""
	case repo.Spec.Git == nil || store.Redact(repo.Spec.Git.Repo) != store.Redact(lock.Git.Repo):
		return "", false
	}
	if dir := repo.Spec.Git.Dir(); dir != "" {
		p, ok := strings.CutPrefix(full, dir+"/")
		return p, ok
	}
	return full, true
}
