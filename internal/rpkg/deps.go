package rpkg

import (
	"context"
	"fmt"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/deps"
	"github.com/scion-dev/scion/internal/pkgdeps"
	"github.com/scion-dev/scion/internal/store"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Resolve resolves requests for one deployment Repository as the
// controller does: the catalog is every other (non-deployment) Repository
// of the namespace, what is installed is read from the repository's git
// (drafts included), and what PackageVariants are installing is read from
// its PackageLock. Git is read with the user's own credentials. The error
// is a *deps.UnsatisfiableError when there is no solution.
func (c *Client) Resolve(ctx context.Context, repository string, p deps.Problem, creds store.Credentials) (*deps.Result, error) {
	list := &configv1alpha1.RepositoryList{}
	if err := c.Client.List(ctx, list, client.InNamespace(c.Namespace)); err != nil {
		return nil, err
	}
	var target store.Store
	var targetObj *configv1alpha1.Repository
	var sources []pkgdeps.Source
	for i := range list.Items {
		repo := &list.Items[i]
		if repo.Name != repository && repo.Spec.Deployment {
			continue
		}
		_, st, cleanup, err := c.openRepository(ctx, repo.Name, creds)
		if err != nil {
			return nil, fmt.Errorf("repository %s: %w", repo.Name, err)
		}
		defer cleanup()
		if repo.Name == repository {
			target, targetObj = st, repo
			continue
		}
		sources = append(sources, pkgdeps.Source{Name: repo.Name, Store: st})
	}
	if target == nil {
		return nil, fmt.Errorf("repository %s not found in namespace %s", repository, c.Namespace)
	}
	if !targetObj.Spec.Deployment {
		return nil, fmt.Errorf("repository %s is not a deployment repository (spec.deployment): dependencies are resolved for deployment repositories", repository)
	}
	r := pkgdeps.NewReader()
	cat, err := r.Catalog(ctx, sources)
	if err != nil {
		return nil, err
	}
	installed, err := r.Installed(ctx, target, cat)
	if err != nil {
		return nil, fmt.Errorf("repository %s: %w", repository, err)
	}
	lock, _, err := pkgdeps.ReadLock(ctx, c.Client, targetObj)
	if err != nil {
		return nil, err
	}
	problem := pkgdeps.RepositoryProblem(cat, installed, pkgdeps.Planned(lock))
	problem.Requests, problem.AllowDowngrade, problem.Prerelease, problem.Overrides = p.Requests, p.AllowDowngrade, p.Prerelease, p.Overrides
	return deps.Resolve(problem)
}
