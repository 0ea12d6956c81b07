package deployed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/store"
)

// Observe reads what a Repository's target cluster (spec.cluster) runs of
// each of its published packages, from st, the Repository's store. A
// cluster that cannot be read gives a status whose Error says why, with
// every package Unknown. before is the status observed last time: a
// package's Since is kept while its state stays.
func (c *Clusters) Observe(ctx context.Context, repo *configv1alpha1.Repository, st store.Store, before *configv1alpha1.ClusterStatus, now time.Time) (*configv1alpha1.ClusterStatus, error) {
	revs, err := st.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the revisions of repository %s: %w", repo.Name, err)
	}
	published := map[string][]Published{}
	for _, r := range revs {
		if r.Lifecycle == porchv1alpha1.LifecyclePublished || r.Lifecycle == porchv1alpha1.LifecycleDeletionProposed {
			published[r.Package] = append(published[r.Package], Published{Package: r.Package, Revision: r.Revision, ID: r.Commit})
		}
	}
	pkgs := make([]string, 0, len(published))
	for p, list := range published {
		slices.SortFunc(list, func(a, b Published) int { return b.Revision - a.Revision })
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	out := &configv1alpha1.ClusterStatus{ObservedAt: &metav1.Time{Time: now.Truncate(time.Second)}}
	ns := repo.Spec.Cluster.FluxNamespace()
	read := map[string]*Kustomization{}
	var readErr error
	match := Matcher(func(ctx context.Context, applied SourceRevision, rev Published) (bool, error) {
		return same(ctx, st, applied, rev)
	})
	for _, p := range pkgs {
		d := configv1alpha1.DeployedPackage{Package: p, Latest: published[p][0].Revision}
		name := repo.Spec.Cluster.KustomizationFor(repo.Name, p)
		if name == "" {
			d.State, d.Message = configv1alpha1.DeployNotDeployed, "no Kustomization of spec.cluster.flux.kustomizations names it"
			out.Packages = append(out.Packages, since(d, before, now))
			continue
		}
		d.Kustomization = ns + "/" + name
		k, seen := read[name]
		if !seen && readErr == nil {
			k, readErr = c.Kustomization(ctx, repo, name)
			read[name] = k
		}
		if readErr != nil {
			d.State, d.Message = configv1alpha1.DeployUnknown, "the cluster could not be read"
			out.Packages = append(out.Packages, since(d, before, now))
			continue
		}
		v, err := Judge(ctx, k, published[p], match)
		if err != nil {
			return nil, fmt.Errorf("package %s: %w", p, err)
		}
		d.State, d.Revision, d.AppliedRevision, d.Message, d.HealthChecked = v.State, v.Revision, v.Applied, v.Message, v.Waits
		d.LastFailure = lastFailure(d, v, before)
		out.Packages = append(out.Packages, since(d, before, now))
	}
	if readErr != nil {
		out.Error = readErr.Error()
	}
	return out, nil
}

// lastFailure is what a package's LastFailure becomes: the failure seen
// now, or the one seen before while Flux retries the same attempt.
func lastFailure(d configv1alpha1.DeployedPackage, v Verdict, before *configv1alpha1.ClusterStatus) string {
	switch d.State {
	case configv1alpha1.DeployFailed:
		return d.Message
	case configv1alpha1.DeployProgressing:
		if b := before.Package(d.Package); b != nil && b.AppliedRevision == d.AppliedRevision && v.Attempted != v.Applied {
			return b.LastFailure
		}
	}
	return ""
}

// since keeps the time a package's state last changed.
func since(d configv1alpha1.DeployedPackage, before *configv1alpha1.ClusterStatus, now time.Time) configv1alpha1.DeployedPackage {
	if b := before.Package(d.Package); b != nil && b.State == d.State && b.Revision == d.Revision && b.Since != nil {
		d.Since = b.Since
		return d
	}
	d.Since = &metav1.Time{Time: now.Truncate(time.Second)}
	return d
}

// same says whether the package's content at an applied source revision
// is that of a published revision: the same commit or digest, or the
// same files (a git branch moves on with other packages' publications;
// an OCI tag may be read by a digest of the same layer). A commit the
// store does not have is looked for with a fetch, unless the store
// fetched in the last minute (a drifted cluster is read every few
// seconds for a while: one fetch a minute, not one a read).
func same(ctx context.Context, st store.Store, applied SourceRevision, rev Published) (bool, error) {
	if applied.ID == rev.ID {
		return true, nil
	}
	ok, err := st.SamePackage(ctx, rev.Package, applied.ID, rev.ID)
	if errors.Is(err, store.ErrUnknownCommit) {
		if ferr := st.FetchIfOlder(ctx, unknownCommitFetchAge); ferr != nil {
			return false, ferr
		}
		ok, err = st.SamePackage(ctx, rev.Package, applied.ID, rev.ID)
	}
	if errors.Is(err, store.ErrUnknownCommit) {
		return false, fmt.Errorf("%s: %w", applied.ID, ErrUnknownSource)
	}
	return ok, err
}

// unknownCommitFetchAge is how old the store's last fetch may be before
// a commit it lacks is looked for in the remote again.
const unknownCommitFetchAge = time.Minute

// Healthy says whether a Repository's target cluster runs revision of
// pkg healthily, as its status.cluster last read it: the Kustomization
// applying it runs that revision, is Ready on its latest spec, and waits
// for what it applied to be healthy. Otherwise it says why.
func Healthy(repo *configv1alpha1.Repository, pkg string, revision int) (bool, string) {
	if repo.Spec.Cluster == nil {
		return false, fmt.Sprintf("repository %s has no spec.cluster: nothing says where it is deployed", repo.Name)
	}
	st := repo.Status.Cluster
	if st == nil {
		return false, fmt.Sprintf("the cluster of repository %s has not been read yet", repo.Name)
	}
	if st.Error != "" {
		return false, fmt.Sprintf("the cluster of repository %s cannot be read: %s", repo.Name, st.Error)
	}
	d := st.Package(pkg)
	if d == nil {
		return false, fmt.Sprintf("the cluster of repository %s has not been read since %s was published", repo.Name, pkg)
	}
	switch {
	case d.Revision != revision && d.Revision != 0:
		why := fmt.Sprintf("%s runs revision %d", d.Kustomization, d.Revision)
		if d.Message != "" {
			why += " (" + d.Message + ")"
		}
		return false, withFailure(why, *d)
	case d.Revision != revision:
		return false, withFailure(d.Message, *d)
	case d.State != configv1alpha1.DeployCurrent && d.State != configv1alpha1.DeployBehind:
		return false, withFailure(d.Message, *d)
	case !d.HealthChecked:
		return false, fmt.Sprintf("Kustomization %s runs it, but does not wait for what it applied to be healthy: set its spec.wait: true (or spec.healthChecks)", d.Kustomization)
	}
	return true, ""
}

// withFailure adds a package's last failure to why, when it is not
// already what why says.
func withFailure(why string, d configv1alpha1.DeployedPackage) string {
	if d.LastFailure == "" || d.State == configv1alpha1.DeployFailed {
		return why
	}
	return why + "; its last attempt failed: " + d.LastFailure
}
