package rpkg

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgdiff"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/suggest"
)

// What a revision is compared with (besides another revision's name).
const (
	// AgainstPublished compares with the revision it replaces: the
	// latest published revision of its package (before it, when it is
	// published itself); nothing for a first revision.
	AgainstPublished = "published"
	// AgainstUpstream compares with the published upstream revision its
	// upstreamLock records: the downstream's own changes.
	AgainstUpstream = "upstream"
)

// RevisionDiff is what one revision changes. Its JSON form is documented
// (docs/diff.md) and stable.
type RevisionDiff struct {
	Revision   string `json:"revision"`
	Repository string `json:"repository"`
	Package    string `json:"package"`
	// Against is the revision compared with; "" when there is none (a
	// first revision: everything is added).
	Against string        `json:"against"`
	Diff    *pkgdiff.Diff `json:"diff"`
}

// Diff computes what the revision name changes against against
// (AgainstPublished, AgainstUpstream or a revision's name). Content is
// read through Porch's API.
func (c *Client) Diff(ctx context.Context, name, against string) (*RevisionDiff, error) {
	pr, err := c.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	return c.diff(ctx, pr, against, nil, DiffSource{})
}

// DiffFrom is Diff of a revision the caller has, with its base found in
// src.Revisions and the diff remembered in src.Memo, when set.
func (c *Client) DiffFrom(ctx context.Context, pr *porchv1alpha1.PackageRevision, against string, src DiffSource) (*RevisionDiff, error) {
	return c.diff(ctx, pr, against, nil, src)
}

// diff computes pr's change; read, when set, reads the content of
// revisions (so that a summary reads each base once).
func (c *Client) diff(ctx context.Context, pr *porchv1alpha1.PackageRevision, against string, read func(string) (*pkg.Package, error), src DiffSource) (*RevisionDiff, error) {
	if read == nil {
		read = func(n string) (*pkg.Package, error) {
			p, _, err := c.Content(ctx, n)
			return p, err
		}
	}
	var base string
	var err error
	if src.Revisions != nil && (against == "" || against == AgainstPublished) {
		base = previousPublished(pr, src.Revisions)
	} else if base, err = c.base(ctx, pr, against); err != nil {
		return nil, err
	}
	key := src.memoKey(pr, base)
	if rd, ok := src.Memo.get(key); ok {
		return rd, nil
	}
	rd, err := c.compare(pr, base, read)
	if err == nil {
		src.Memo.put(key, rd)
	}
	return rd, err
}

// compare diffs pr against base ("" for nothing), reading both with read.
func (c *Client) compare(pr *porchv1alpha1.PackageRevision, base string, read func(string) (*pkg.Package, error)) (*RevisionDiff, error) {
	after, err := read(pr.Name)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", pr.Name, err)
	}
	var before *pkg.Package
	if base != "" {
		if before, err = read(base); err != nil {
			return nil, fmt.Errorf("reading %s: %w", base, err)
		}
	}
	d, err := pkgdiff.Compute(before, after)
	if err != nil {
		return nil, fmt.Errorf("comparing %s with %s: %w", pr.Name, orNothing(base), err)
	}
	return &RevisionDiff{Revision: pr.Name, Repository: pr.Spec.Repository, Package: pr.Spec.PackageName, Against: base, Diff: d}, nil
}

// previousPublished names, of revs, the revision pr replaces: the newest
// published revision of its package in its repository before it ("" for
// none).
func previousPublished(pr *porchv1alpha1.PackageRevision, revs []*porchv1alpha1.PackageRevision) string {
	var best *porchv1alpha1.PackageRevision
	for _, r := range revs {
		if r.Spec.Repository != pr.Spec.Repository || r.Spec.PackageName != pr.Spec.PackageName || r.GitLifecycle() != porchv1alpha1.LifecyclePublished ||
			r.Name == pr.Name || pr.Spec.Revision > 0 && r.Spec.Revision >= pr.Spec.Revision {
			continue
		}
		if best == nil || r.Spec.Revision > best.Spec.Revision {
			best = r
		}
	}
	if best == nil {
		return ""
	}
	return best.Name
}

// DiffSource tells DiffManyFrom where to find what it compares, for a
// caller that keeps a view of the namespace (scion console).
type DiffSource struct {
	// Revisions, when set, are every revision of the namespace: each
	// revision's base (the published one it replaces) is found among
	// them instead of by a list per revision.
	Revisions []*porchv1alpha1.PackageRevision
	// Memo, when set, keeps diffs across calls by the commits compared.
	Memo *DiffMemo
}

// memoKey identifies the diff of pr against base by their commits ("" when
// src cannot tell them: nothing is remembered).
func (src DiffSource) memoKey(pr *porchv1alpha1.PackageRevision, base string) string {
	if src.Memo == nil || pr.Status.Commit == "" {
		return ""
	}
	baseCommit := ""
	if base != "" {
		for _, r := range src.Revisions {
			if r.Name == base {
				baseCommit = r.Status.Commit
			}
		}
		if baseCommit == "" {
			return ""
		}
	}
	return pr.Name + "@" + pr.Status.Commit + "|" + base + "@" + baseCommit
}

// DiffMemo keeps recent diffs (at most its size; the oldest go first).
type DiffMemo struct {
	mu    sync.Mutex
	size  int
	diffs map[string]*RevisionDiff
	order []string
}

// NewDiffMemo returns a DiffMemo keeping at most size diffs.
func NewDiffMemo(size int) *DiffMemo {
	return &DiffMemo{size: size, diffs: map[string]*RevisionDiff{}}
}

func (m *DiffMemo) get(key string) (*RevisionDiff, bool) {
	if m == nil || key == "" {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rd, ok := m.diffs[key]
	return rd, ok
}

func (m *DiffMemo) put(key string, rd *RevisionDiff) {
	if m == nil || key == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.diffs[key]; ok {
		return
	}
	if len(m.order) >= m.size {
		delete(m.diffs, m.order[0])
		m.order = m.order[1:]
	}
	m.diffs[key] = rd
	m.order = append(m.order, key)
}

// base names the revision pr is compared with ("" for none).
func (c *Client) base(ctx context.Context, pr *porchv1alpha1.PackageRevision, against string) (string, error) {
	switch against {
	case "", AgainstPublished:
		revs, err := c.List(ctx, Filter{Repository: pr.Spec.Repository, Package: pr.Spec.PackageName, Lifecycle: porchv1alpha1.LifecyclePublished})
		if err != nil {
			return "", err
		}
		all := make([]*porchv1alpha1.PackageRevision, len(revs))
		for i := range revs {
			all[i] = &revs[i]
		}
		return previousPublished(pr, all), nil
	case AgainstUpstream:
		up, err := c.lockedUpstream(ctx, pr)
		if err != nil {
			return "", err
		}
		return up.Name, nil
	default:
		if _, err := c.Get(ctx, against); err != nil {
			return "", fmt.Errorf("--against: %w", err)
		}
		return against, nil
	}
}

func orNothing(name string) string {
	if name == "" {
		return "nothing"
	}
	return name
}

// Selection names many revisions: those with the labels Labels selects,
// those of the PackageVariants of the PackageVariantSet VariantSet, or
// those the PackageRollout Rollout selects; of the lifecycle Lifecycle
// (the lifecycle git has). At least one of Labels, VariantSet and Rollout
// is set; several narrow one another.
type Selection struct {
	Labels, VariantSet, Rollout string
	Lifecycle                   porchv1alpha1.Lifecycle
}

// Select lists the revisions s names, sorted by name.
func (c *Client) Select(ctx context.Context, s Selection) ([]porchv1alpha1.PackageRevision, error) {
	if s.Labels == "" && s.VariantSet == "" && s.Rollout == "" {
		return nil, fmt.Errorf("name revisions, or select them with --selector, --variant-set or --rollout")
	}
	m, err := c.Matcher(ctx, s)
	if err != nil {
		return nil, err
	}
	list := &porchv1alpha1.PackageRevisionList{}
	if err := c.Client.List(ctx, list, client.InNamespace(c.Namespace), client.MatchingLabelsSelector{Selector: m.labels}); err != nil {
		return nil, err
	}
	var out []porchv1alpha1.PackageRevision
	for _, pr := range list.Items {
		if m.Match(&pr) {
			out = append(out, pr)
		}
	}
	slices.SortFunc(out, func(a, b porchv1alpha1.PackageRevision) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Matcher is a Selection resolved against the cluster (the rollout's
// selector, the set's variants): it tells whether a revision is selected.
type Matcher struct {
	labels    labels.Selector
	variants  map[string]bool
	lifecycle porchv1alpha1.Lifecycle
}

// Match reports whether pr is selected.
func (m *Matcher) Match(pr *porchv1alpha1.PackageRevision) bool {
	return m.labels.Matches(labels.Set(pr.Labels)) &&
		(m.variants == nil || m.variants[pr.Labels[configv1alpha1.PackageVariantLabel]]) &&
		(m.lifecycle == "" || pr.GitLifecycle() == m.lifecycle)
}

// Matcher resolves s (an empty Selection selects every revision, of
// s.Lifecycle when set).
func (c *Client) Matcher(ctx context.Context, s Selection) (*Matcher, error) {
	m := &Matcher{labels: labels.Everything(), lifecycle: s.Lifecycle}
	if s.Labels != "" {
		var err error
		if m.labels, err = labels.Parse(s.Labels); err != nil {
			return nil, fmt.Errorf("--selector %q: %w", s.Labels, err)
		}
	}
	if s.Rollout != "" {
		ro := &configv1alpha1.PackageRollout{}
		if err := c.Client.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: s.Rollout}, ro); apierrors.IsNotFound(err) {
			return nil, suggest.NotFound(ctx, c.Client, &configv1alpha1.PackageRolloutList{}, "PackageRollout", c.Namespace, s.Rollout)
		} else if err != nil {
			return nil, fmt.Errorf("PackageRollout %s: %w", s.Rollout, err)
		}
		rs, err := metav1.LabelSelectorAsSelector(&ro.Spec.RevisionSelector)
		if err != nil {
			return nil, fmt.Errorf("PackageRollout %s: spec.revisionSelector: %w", s.Rollout, err)
		}
		reqs, _ := rs.Requirements()
		m.labels = m.labels.Add(reqs...)
	}
	if s.VariantSet != "" {
		pvs := &configv1alpha2.PackageVariantSet{}
		if err := c.Client.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: s.VariantSet}, pvs); apierrors.IsNotFound(err) {
			return nil, suggest.NotFound(ctx, c.Client, &configv1alpha2.PackageVariantSetList{}, "PackageVariantSet", c.Namespace, s.VariantSet)
		} else if err != nil {
			return nil, fmt.Errorf("PackageVariantSet %s: %w", s.VariantSet, err)
		}
		pvl := &configv1alpha1.PackageVariantList{}
		if err := c.Client.List(ctx, pvl, client.InNamespace(c.Namespace), client.MatchingLabels{configv1alpha2.PackageVariantSetLabel: string(pvs.UID)}); err != nil {
			return nil, err
		}
		m.variants = map[string]bool{}
		for _, pv := range pvl.Items {
			m.variants[pkgservice.LabelValue(pv.Name)] = true
		}
	}
	return m, nil
}

// DiffGroup is revisions that make the same change.
type DiffGroup struct {
	// Digest identifies the change (pkgdiff.Diff.Digest).
	Digest       string   `json:"digest"`
	Count        int      `json:"count"`
	Revisions    []string `json:"revisions"`
	Repositories []string `json:"repositories"`
	// Against lists the revisions they were compared with ("" for none).
	Against []string      `json:"against"`
	Diff    *pkgdiff.Diff `json:"diff"`
}

// DiffFailure is a revision whose change could not be computed.
type DiffFailure struct {
	Revision string `json:"revision"`
	Error    string `json:"error"`
}

// DiffSummary is the change of many revisions, grouped: identical
// changes in one group, the largest group first (the outliers are the
// groups after it). Its JSON form is documented (docs/diff.md) and
// stable.
type DiffSummary struct {
	Revisions int           `json:"revisions"`
	Groups    []DiffGroup   `json:"groups"`
	Failures  []DiffFailure `json:"failures,omitempty"`
}

// DiffMany computes and groups the changes of revisions. A revision whose
// content cannot be read is listed in Failures with why; the others are
// still grouped. Each revision compared with is read once.
func (c *Client) DiffMany(ctx context.Context, revs []porchv1alpha1.PackageRevision, against string) (*DiffSummary, error) {
	return c.DiffManyFrom(ctx, revs, against, DiffSource{})
}

// DiffManyFrom is DiffMany with bases found in src.Revisions and diffs
// remembered in src.Memo, when set.
func (c *Client) DiffManyFrom(ctx context.Context, revs []porchv1alpha1.PackageRevision, against string, src DiffSource) (*DiffSummary, error) {
	cache := map[string]*pkg.Package{}
	read := func(n string) (*pkg.Package, error) {
		if p, ok := cache[n]; ok {
			return p, nil
		}
		p, _, err := c.Content(ctx, n)
		if err == nil {
			cache[n] = p
		}
		return p, err
	}
	sum := &DiffSummary{Revisions: len(revs)}
	groups := map[string]*DiffGroup{}
	for i := range revs {
		pr := &revs[i]
		rd, err := c.diff(ctx, pr, against, read, src)
		// Bases stay cached (many revisions share one); a revision's own
		// content is not needed again.
		delete(cache, pr.Name)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			sum.Failures = append(sum.Failures, DiffFailure{Revision: pr.Name, Error: err.Error()})
			continue
		}
		key := rd.Diff.Digest()
		g := groups[key]
		if g == nil {
			g = &DiffGroup{Digest: key, Diff: rd.Diff}
			groups[key] = g
		}
		g.Count++
		g.Revisions = append(g.Revisions, pr.Name)
		if !slices.Contains(g.Repositories, pr.Spec.Repository) {
			g.Repositories = append(g.Repositories, pr.Spec.Repository)
		}
		if !slices.Contains(g.Against, rd.Against) {
			g.Against = append(g.Against, rd.Against)
		}
	}
	for _, g := range groups {
		sort.Strings(g.Repositories)
		sort.Strings(g.Against)
		sum.Groups = append(sum.Groups, *g)
	}
	sort.Slice(sum.Groups, func(i, j int) bool {
		a, b := sum.Groups[i], sum.Groups[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Revisions[0] < b.Revisions[0]
	})
	return sum, nil
}
