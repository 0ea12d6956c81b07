package console

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/tree"
)

// maxColumns bounds the packages the targets table shows side by side;
// more are named, to be picked with ?package=.
const maxColumns = 30

// targetCell is one package in one repository: its newest published
// revision and the newest revision on its way (Draft or Proposed).
type targetCell struct {
	Published     int
	PublishedName string
	// PublishedUpstream and PendingUpstream name the upstream package and
	// version the revisions carry ("regional-app v4"): the revision
	// numbers are the deployment repository's own.
	PublishedUpstream, PendingUpstream string
	// Pending is the lifecycle git has the revision on its way in (Draft
	// or Proposed); PendingShown is what kubectl shows (an approval
	// waiting says so).
	Pending, PendingShown, PendingName string
	// Deployed is what the repository's cluster runs of the package, as
	// its status.cluster says (nil when it has no spec.cluster).
	Deployed *configv1alpha1.DeployedPackage
	// DeployedTitle says it in words.
	DeployedTitle string
}

type targetRow struct {
	Repository string
	Cells      []*targetCell
}

type targetsData struct {
	Repository, Package string
	Packages            []string
	MorePackages        []string
	Rows                []targetRow
	Revisions           int
	Paging
}

// targets: the fleet as a table, a repository (target) per row and a
// package per column, each cell the revision published there and the one
// on its way; filtered by ?repository= (a part of the name) and
// ?package=, a page of repositories at a time. It reads the console's
// cached view of the revisions, so it costs no list per load.
func (s *Server) targets(r *http.Request) (any, error) {
	q := r.URL.Query()
	d := &targetsData{Repository: q.Get("repository"), Package: q.Get("package")}
	revs, err := s.allRevisions(r.Context())
	if err != nil {
		return d, err
	}
	cells := map[string]map[string]*targetCell{}
	packages := map[string]bool{}
	for _, pr := range revs {
		repo, pkg := pr.Spec.Repository, pr.Spec.PackageName
		if !strings.Contains(repo, d.Repository) || (d.Package != "" && pkg != d.Package) {
			continue
		}
		d.Revisions++
		packages[pkg] = true
		if cells[repo] == nil {
			cells[repo] = map[string]*targetCell{}
		}
		c := cells[repo][pkg]
		if c == nil {
			c = &targetCell{}
			cells[repo][pkg] = c
		}
		switch pr.GitLifecycle() {
		case porchv1alpha1.LifecyclePublished, porchv1alpha1.LifecycleDeletionProposed:
			if pr.Spec.Revision > c.Published {
				c.Published, c.PublishedName = pr.Spec.Revision, pr.Name
				c.PublishedUpstream = pkgservice.UpstreamVersion(pr.Status.UpstreamLock)
			}
		default:
			// The newest draft or proposal (by name when several).
			if c.PendingName == "" || pr.Name > c.PendingName {
				c.PendingName, c.Pending, c.PendingShown = pr.Name, string(pr.GitLifecycle()), pr.ShownLifecycle()
				c.PendingUpstream = pkgservice.UpstreamVersion(pr.Status.UpstreamLock)
			}
		}
	}
	repos := &configv1alpha1.RepositoryList{}
	if err := s.opts.Client.List(r.Context(), repos, client.InNamespace(s.opts.Namespace)); err != nil {
		return d, fmt.Errorf("listing the Repositories: %w", err)
	}
	for i := range repos.Items {
		for pkg, c := range cells[repos.Items[i].Name] {
			if dp := tree.DeployedOf(&repos.Items[i], pkg); dp != nil {
				c.Deployed, c.DeployedTitle = dp, tree.DeployedSummary(dp)
				if dp.Message != "" {
					c.DeployedTitle += ": " + dp.Message
				}
			}
		}
	}
	all := slices.Sorted(maps.Keys(packages))
	d.Packages = all[:min(len(all), maxColumns)]
	d.MorePackages = all[len(d.Packages):]
	names := slices.Sorted(maps.Keys(cells))
	var from, to int
	d.Paging, from, to = pageOf(r, len(names), s.opts.PageSize)
	for _, repo := range names[from:to] {
		row := targetRow{Repository: repo}
		for _, pkg := range d.Packages {
			row.Cells = append(row.Cells, cells[repo][pkg])
		}
		d.Rows = append(d.Rows, row)
	}
	return d, nil
}
