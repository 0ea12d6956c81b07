package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgdiff"
	"github.com/scion-dev/scion/internal/rpkg"
	"github.com/scion-dev/scion/internal/tree"
)

// Paging is one page of a longer list, with the queries of the pages
// before and after it ("" for none).
type Paging struct {
	Page, Pages, Total int
	Prev, Next         string
}

// pageOf cuts n rows into pages of size; it returns the page r asks for
// (?page=, from 1) and the bounds of its rows.
func pageOf(r *http.Request, n, size int) (Paging, int, int) {
	p := Paging{Total: n, Pages: max(1, (n+size-1)/size), Page: 1}
	q := r.URL.Query()
	if v, err := strconv.Atoi(q.Get("page")); err == nil && v >= 1 && v <= p.Pages {
		p.Page = v
	}
	link := func(page int) string {
		q.Set("page", strconv.Itoa(page))
		return q.Encode()
	}
	if p.Page > 1 {
		p.Prev = link(p.Page - 1)
	}
	if p.Page < p.Pages {
		p.Next = link(p.Page + 1)
	}
	from := (p.Page - 1) * size
	return p, from, min(from+size, n)
}

type setRow struct {
	Name, Upstream, Ready, Message string
	Desired, ReadyCount            int
}

type variantRow struct {
	Name, Set, Downstream, Reason, Message string
}

type fleetData struct {
	Sets              []setRow
	Variants, ReadyPV int
	NotReady          []variantRow
	Paging
}

// fleet: the PackageVariantSets with how many of their variants are
// Ready, and the variants that are not, with why (a page at a time).
func (s *Server) fleet(r *http.Request) (any, error) {
	ctx := r.Context()
	d := &fleetData{}
	sets := &configv1alpha2.PackageVariantSetList{}
	if err := s.opts.Client.List(ctx, sets, client.InNamespace(s.opts.Namespace)); err != nil {
		return d, fmt.Errorf("listing PackageVariantSets: %w", err)
	}
	setOf := map[string]string{}
	for _, set := range sets.Items {
		row := setRow{Name: set.Name, Ready: "Unknown"}
		var ups []string
		for _, u := range set.Spec.AllUpstreams() {
			ups = append(ups, strings.TrimSpace(u.Package+" "+string(u.Revision)+u.Tag))
		}
		row.Upstream = strings.Join(ups, ", ")
		if sum := set.Status.Summary; sum != nil {
			row.Desired, row.ReadyCount = sum.Desired, sum.Ready
		}
		if c := meta.FindStatusCondition(set.Status.Conditions, configv1alpha1.ReadyCondition); c != nil {
			row.Ready, row.Message = string(c.Status), c.Message
		}
		d.Sets = append(d.Sets, row)
		setOf[string(set.UID)] = set.Name
	}
	pvs, err := s.allVariants(ctx)
	if err != nil {
		return d, err
	}
	d.Variants = len(pvs)
	var notReady []variantRow
	for _, pv := range pvs {
		c := meta.FindStatusCondition(pv.Status.Conditions, configv1alpha1.ReadyCondition)
		if c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == pv.Generation {
			d.ReadyPV++
			continue
		}
		row := variantRow{Name: pv.Name, Set: setOf[pv.Labels[configv1alpha2.PackageVariantSetLabel]], Reason: "NotObserved", Message: "the controller has not looked at this generation yet"}
		if pv.Spec.Downstream != nil {
			row.Downstream = pv.Spec.Downstream.Repo + "/" + pv.Spec.Downstream.Package
		}
		if c != nil {
			row.Reason, row.Message = c.Reason, c.Message
		}
		notReady = append(notReady, row)
	}
	slices.SortFunc(notReady, func(a, b variantRow) int { return strings.Compare(a.Name, b.Name) })
	var from, to int
	d.Paging, from, to = pageOf(r, len(notReady), s.opts.PageSize)
	d.NotReady = notReady[from:to]
	return d, nil
}

type revisionRow struct {
	Name, Repository, Package, Lifecycle, Ready, Message string
	Gates                                                []tree.Gate
	// Unmet says, for each readiness gate not True, its condition and
	// why ("example.com/canary-passed: not set").
	Unmet []string
}

type groupView struct {
	rpkg.DiffGroup
	Rows []revisionRow
	// Blocked: a revision of the group has a readiness gate not met, so
	// an approval would be refused: the page says what blocks it instead
	// of offering the button.
	Blocked bool
}

type proposalsData struct {
	Set, Lifecycle string
	Sets           []string
	Groups         []groupView
	Failures       []rpkg.DiffFailure
	Paging
}

// proposals: the revisions waiting for review (Proposed, or ?lifecycle=,
// of one set with ?set=), a page at a time, their changes grouped (the
// most common first), each with its gates and readiness, for approval.
func (s *Server) proposals(r *http.Request) (any, error) {
	ctx := r.Context()
	q := r.URL.Query()
	d := &proposalsData{Set: q.Get("set"), Lifecycle: q.Get("lifecycle")}
	if d.Lifecycle == "" {
		d.Lifecycle = string(porchv1alpha1.LifecycleProposed)
	}
	if lcs := lifecycles(); !slices.Contains(lcs, d.Lifecycle) {
		return d, fmt.Errorf("?lifecycle=%s: one of %s", d.Lifecycle, strings.Join(lcs, ", "))
	}
	sets := &configv1alpha2.PackageVariantSetList{}
	if err := s.opts.Client.List(ctx, sets, client.InNamespace(s.opts.Namespace)); err != nil {
		return d, fmt.Errorf("listing PackageVariantSets: %w", err)
	}
	for _, set := range sets.Items {
		d.Sets = append(d.Sets, set.Name)
	}
	m, err := s.session(ctx).revs.Matcher(ctx, rpkg.Selection{VariantSet: d.Set, Lifecycle: porchv1alpha1.Lifecycle(d.Lifecycle)})
	if err != nil {
		return d, err
	}
	all, err := s.allRevisions(ctx)
	if err != nil {
		return d, err
	}
	var revs []porchv1alpha1.PackageRevision
	for _, pr := range all {
		if m.Match(pr) {
			revs = append(revs, *pr)
		}
	}
	slices.SortFunc(revs, func(a, b porchv1alpha1.PackageRevision) int { return strings.Compare(a.Name, b.Name) })
	var from, to int
	d.Paging, from, to = pageOf(r, len(revs), s.opts.PageSize)
	revs = revs[from:to]
	byName := map[string]revisionRow{}
	for _, pr := range revs {
		byName[pr.Name] = revisionOf(&pr)
	}
	se := s.session(ctx)
	sum, err := se.revs.DiffManyFrom(ctx, revs, rpkg.AgainstPublished, rpkg.DiffSource{Revisions: all, Memo: se.diffs})
	if err != nil {
		return d, err
	}
	for _, g := range sum.Groups {
		gv := groupView{DiffGroup: g}
		for _, n := range g.Revisions {
			row := byName[n]
			gv.Rows = append(gv.Rows, row)
			gv.Blocked = gv.Blocked || len(row.Unmet) > 0
		}
		d.Groups = append(d.Groups, gv)
	}
	d.Failures = sum.Failures
	return d, nil
}

func revisionOf(pr *porchv1alpha1.PackageRevision) revisionRow {
	ready := rpkg.Ready(pr)
	row := revisionRow{Name: pr.Name, Repository: pr.Spec.Repository, Package: pr.Spec.PackageName, Lifecycle: pr.ShownLifecycle(), Ready: string(ready.Status), Message: ready.Message}
	if row.Ready == "" {
		row.Ready = "Unknown"
	}
	row.Gates = tree.RevisionGates(pr)
	for _, g := range row.Gates {
		if g.Status == "True" {
			continue
		}
		why := "not set"
		for _, c := range pr.Status.Conditions {
			if c.Type == g.ConditionType {
				why = string(c.Status)
				if c.Message != "" {
					why += ": " + c.Message
				}
			}
		}
		row.Unmet = append(row.Unmet, g.ConditionType+": "+why)
	}
	return row
}

type historyRow struct {
	revisionRow
	Revision    int
	PublishedBy string
	PublishedAt *metav1.Time
	ProposedBy  string
	ProposedAt  string
	Commit      string
	Against     string
	Diff        *pkgdiff.Diff
	Error       string
}

type historyData struct {
	Repository, Package string
	Revisions           []historyRow
}

// history: a package's revisions, newest first, who proposed and
// approved them and when, and what each changed against the one before
// (from the console's cached view, diffs remembered by their commits).
func (s *Server) history(r *http.Request) (any, error) {
	ctx := r.Context()
	d := &historyData{Repository: r.URL.Query().Get("repository"), Package: r.URL.Query().Get("package")}
	if d.Repository == "" || d.Package == "" {
		return d, fmt.Errorf("name a package: ?repository=REPO&package=PACKAGE")
	}
	all, err := s.allRevisions(ctx)
	if err != nil {
		return d, err
	}
	var revs []*porchv1alpha1.PackageRevision
	for _, pr := range all {
		if pr.Spec.Repository == d.Repository && pr.Spec.PackageName == d.Package {
			revs = append(revs, pr)
		}
	}
	slices.SortFunc(revs, func(a, b *porchv1alpha1.PackageRevision) int {
		if a.Spec.Revision != b.Spec.Revision {
			return b.Spec.Revision - a.Spec.Revision
		}
		return strings.Compare(a.Name, b.Name)
	})
	se := s.session(ctx)
	for _, pr := range revs {
		h := historyRow{revisionRow: revisionOf(pr), Revision: pr.Spec.Revision, PublishedBy: pr.Status.PublishedBy, PublishedAt: pr.Status.PublishTimestamp,
			ProposedBy: pr.Annotations[porchv1alpha1.ProposedByAnnotation], ProposedAt: pr.Annotations[porchv1alpha1.ProposedAtAnnotation], Commit: shortCommit(pr.Status.Commit)}
		if rd, err := se.revs.DiffFrom(ctx, pr, rpkg.AgainstPublished, rpkg.DiffSource{Revisions: all, Memo: se.diffs}); err != nil {
			h.Error = err.Error()
		} else {
			h.Against, h.Diff = rd.Against, rd.Diff
		}
		d.Revisions = append(d.Revisions, h)
	}
	return d, nil
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

type rolloutRow struct {
	Name, Ready, Message, CurrentWave, Blocked string
	Paused, Aborted, Manual                    bool
	Waves                                      []configv1alpha1.WaveStatus
	// State is the rollout's one judgement (tree.RolloutState); a
	// Finished one has no actions.
	State    string
	Finished bool
}

// rolloutsPage: each PackageRollout with its waves (targets, published,
// healthy, failed, soaking), what blocks it, and who approved each wave
// and when.
func (s *Server) rolloutsPage(r *http.Request) (any, error) {
	list := &configv1alpha1.PackageRolloutList{}
	if err := s.opts.Client.List(r.Context(), list, client.InNamespace(s.opts.Namespace)); err != nil {
		return nil, fmt.Errorf("listing PackageRollouts: %w", err)
	}
	var rows []rolloutRow
	for i := range list.Items {
		rows = append(rows, rolloutOf(&list.Items[i]))
	}
	slices.SortFunc(rows, func(a, b rolloutRow) int { return strings.Compare(a.Name, b.Name) })
	return rows, nil
}

// moveRevisions proposes, approves or rejects (a proposal withdrawn: back
// to Draft) the revisions the form names, all at once, as the person.
func (s *Server) moveRevisions(r *http.Request) ([]outcome, error) {
	names := r.PostForm["revision"]
	if len(names) == 0 {
		return nil, fmt.Errorf("no revision selected")
	}
	var fn func(context.Context, string) (*porchv1alpha1.PackageRevision, error)
	switch r.PostFormValue("verb") {
	case "propose":
		fn = s.session(r.Context()).revs.Propose
	case "approve":
		fn = s.session(r.Context()).revs.Approve
	case "reject":
		fn = s.session(r.Context()).revs.Reject
	default:
		return nil, fmt.Errorf("unknown verb %q: propose, approve or reject", r.PostFormValue("verb"))
	}
	var out []outcome
	for _, res := range rpkg.Batch(r.Context(), names, fn) {
		o := outcome{Name: res.Name}
		if res.Err != nil {
			o.Error = res.Err.Error()
		} else {
			o.Done = "is " + res.Revision.ShownLifecycle()
		}
		out = append(out, o)
	}
	return out, nil
}

// moveRollout approves a wave of a rollout, or pauses, resumes or aborts
// it, as the person.
func (s *Server) moveRollout(r *http.Request) ([]outcome, error) {
	name, wave := r.PostFormValue("rollout"), r.PostFormValue("wave")
	ctx := r.Context()
	var err error
	done := ""
	switch verb := r.PostFormValue("verb"); verb {
	case "approve":
		err, done = s.rollouts.Approve(ctx, name, wave), "wave "+wave+" approved"
	case "pause":
		err, done = s.rollouts.Pause(ctx, name), "paused"
	case "resume":
		err, done = s.rollouts.Resume(ctx, name), "resumed"
	case "abort":
		err, done = s.rollouts.Abort(ctx, name), "aborted"
	default:
		return nil, fmt.Errorf("unknown verb %q: approve, pause, resume or abort", verb)
	}
	if err != nil {
		return []outcome{{Name: name, Error: err.Error()}}, nil
	}
	return []outcome{{Name: name, Done: done}}, nil
}
