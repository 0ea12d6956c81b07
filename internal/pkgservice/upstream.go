package pkgservice

import (
	"context"
	"fmt"
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
// (pkg/vN) and, where both are known, at the lock's commit. It returns ""
// when there is none: the upstream is not a Repository of ns, the ref is
// not a published revision's, or that revision is gone. c lists
// Repositories and PackageRevisions with the field selectors
// spec.repository, spec.packageName and spec.revision (the storage and
// Scion's API server both serve them).
func LockedRevision(ctx context.Context, c client.Reader, ns string, lock *kptfilev1.UpstreamLock) (string, error) {
	if lock == nil || lock.Git == nil || lock.Git.Repo == "" {
		return "", nil
	}
	l := lock.Git
	full := strings.Trim(l.Directory, "/")
	rest, ok := strings.CutPrefix(l.Ref, full+"/v")
	if !ok || full == "" {
		return "", nil
	}
	revision, err := strconv.Atoi(rest)
	if err != nil || revision <= 0 {
		return "", nil
	}
	repos := &configv1alpha1.RepositoryList{}
	if err := c.List(ctx, repos, client.InNamespace(ns)); err != nil {
		return "", fmt.Errorf("listing the Repositories of %s: %w", ns, err)
	}
	for _, repo := range repos.Items {
		if repo.Spec.Git == nil || store.Redact(repo.Spec.Git.Repo) != store.Redact(l.Repo) {
			continue
		}
		pkgPath := full
		if dir := strings.Trim(repo.Spec.Git.Directory, "/"); dir != "" {
			if pkgPath, ok = strings.CutPrefix(full, dir+"/"); !ok {
				continue
			}
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
			if l.Commit != "" && pr.Status.Commit != "" && pr.Status.Commit != l.Commit {
				continue
			}
			return pr.Name, nil
		}
	}
	return "", nil
}
