// Package tree shows what a PackageVariantSet or PackageVariant made: the
// set, its PackageVariants, their PackageRevisions and their dependencies,
// with lifecycle, readiness and readiness gates, one line each (as
// clusterctl describe does for clusters); and a PackageRollout with its
// waves.
package tree

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/deployed"
	"github.com/scion-dev/scion/internal/pkgservice"
)

// Node is one object of the tree.
type Node struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Ready is the status of the Ready condition (True, False, Unknown),
	// with its reason and message when not True.
	Ready   string `json:"ready"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Lifecycle of a PackageRevision.
	Lifecycle string `json:"lifecycle,omitempty"`
	// Gates of a PackageRevision: condition type to status.
	Gates []Gate `json:"gates,omitempty"`
	// Summary of a PackageVariantSet ("3/3 ready"), of a variant's
	// dependencies ("dependencies 1/2 satisfied"), of a dependency
	// ("1.0.0 Pending in lib (Draft 1.0.0)").
	Summary  string  `json:"summary,omitempty"`
	Children []*Node `json:"children,omitempty"`
}

// Gate is a readiness gate and the status of its condition (NotSet when
// the revision has no such condition).
type Gate struct {
	ConditionType string `json:"conditionType"`
	Status        string `json:"status"`
}

// RevisionGates are pr's readiness gates with their conditions' status.
func RevisionGates(pr *porchv1alpha1.PackageRevision) []Gate {
	var gates []Gate
	for _, g := range pr.Spec.ReadinessGates {
		status := "NotSet"
		for _, c := range pr.Status.Conditions {
			if c.Type == g.ConditionType {
				status = string(c.Status)
			}
		}
		gates = append(gates, Gate{ConditionType: g.ConditionType, Status: status})
	}
	return gates
}

// Options are how much of a tree Build reads.
type Options struct {
	// All shows every variant of a set, however many.
	All bool
	// BigSet is the number of variants above which a set's tree shows
	// only the variants its status names as not Ready (status.summary.
	// notReady, ten at most), unless All: reading every variant of a set
	// of 10,000 takes seconds, and its 20,000 lines are not read by a
	// person. 0 means DefaultBigSet.
	BigSet int
}

// DefaultBigSet is Options.BigSet's default.
const DefaultBigSet = 1000

// Build reads the tree of kind/name (packagevariantset or packagevariant,
// also their short names pvs and pvar, and pv as it was) in namespace.
func Build(ctx context.Context, c client.Client, namespace, kind, name string, opts Options) (*Node, error) {
	switch strings.ToLower(kind) {
	case "packagevariantset", "packagevariantsets", "pvs":
		return buildSet(ctx, c, namespace, name, opts)
	case "packagerollout", "packagerollouts", "prollout", "rollout":
		ro := &configv1alpha1.PackageRollout{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, ro); err != nil {
			return nil, fmt.Errorf("PackageRollout %s/%s: %w", namespace, name, err)
		}
		return RolloutTree(ctx, c, ro)
	case "packagevariant", "packagevariants", "pvar", "pv":
		pv := &configv1alpha1.PackageVariant{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, pv); err != nil {
			return nil, fmt.Errorf("PackageVariant %s/%s: %w", namespace, name, err)
		}
		return variantNode(ctx, c, pv)
	default:
		return nil, fmt.Errorf("unknown kind %q: want packagevariantset (pvs), packagevariant (pvar) or packagerollout (prollout)", kind)
	}
}

// RolloutNode is the tree of a PackageRollout: the rollout (Ready, what it
// waits on) and its waves (state and counts).
func RolloutNode(ro *configv1alpha1.PackageRollout) *Node {
	n := &Node{Kind: "PackageRollout", Name: ro.Name, Lifecycle: RolloutState(ro)}
	// The object's Ready, as kubectl shows it (a spec change not observed
	// yet does not turn it Unknown here: the state says what happens).
	n.Ready = "Unknown"
	if c := meta.FindStatusCondition(ro.Status.Conditions, configv1alpha1.ReadyCondition); c != nil {
		n.Ready = string(c.Status)
		if c.Status != metav1.ConditionTrue {
			n.Reason, n.Message = c.Reason, c.Message
		}
	}
	if ro.Status.Blocked != "" {
		n.Message = ro.Status.Blocked
		if n.Reason == "" {
			n.Reason = "Blocked"
		}
	}
	if ro.Status.CurrentWave != "" {
		n.Summary = "at wave " + ro.Status.CurrentWave
	}
	for _, w := range ro.Status.Waves {
		wn := &Node{Kind: "Wave", Name: w.Name, Lifecycle: string(w.State), Ready: "Unknown"}
		switch w.State {
		case configv1alpha1.WaveComplete:
			wn.Ready = "True"
		case configv1alpha1.WaveFailed:
			wn.Ready = "False"
		}
		wn.Summary = fmt.Sprintf("%d targets, %d published, %d healthy, %d failed", w.Targets, w.Published, w.Healthy, w.Failed)
		if w.Dropped > 0 {
			wn.Summary += fmt.Sprintf(", %d dropped", w.Dropped)
		}
		if w.ApprovedBy != "" {
			wn.Summary += ", approved by " + w.ApprovedBy
			if w.ApprovedAt != nil {
				wn.Summary += " at " + w.ApprovedAt.UTC().Format(time.RFC3339)
			}
		}
		if w.RolledBack > 0 {
			wn.Summary += fmt.Sprintf(", %d rolled back", w.RolledBack)
		}
		n.Children = append(n.Children, wn)
	}
	return n
}

// The states of a rollout: one judgement, shown by scion rollout status,
// scion tree and every console page.
const (
	// RolloutComplete: every wave published and healthy.
	RolloutComplete = "Complete"
	// RolloutFailed: stopped, a wave's targets unhealthy past the
	// progress deadline (rolled back when asked).
	RolloutFailed = "Failed"
	// RolloutAborted: stopped by a person.
	RolloutAborted = "Aborted"
	// RolloutPaused: publishes nothing until resumed.
	RolloutPaused = "Paused"
	// RolloutAwaitingApproval: a wave waits for a person's approval.
	RolloutAwaitingApproval = "AwaitingApproval"
	// RolloutProgressing: publishing, or waiting for targets to be
	// healthy within the progress deadline.
	RolloutProgressing = "Progressing"
)

// RolloutState judges a rollout from its conditions and spec.
func RolloutState(ro *configv1alpha1.PackageRollout) string {
	ready := meta.FindStatusCondition(ro.Status.Conditions, configv1alpha1.ReadyCondition)
	stalled := meta.FindStatusCondition(ro.Status.Conditions, configv1alpha1.StalledCondition)
	switch {
	case stalled != nil && stalled.Status == metav1.ConditionTrue && (stalled.Reason == configv1alpha1.AbortedReason || ro.Spec.Aborted):
		return RolloutAborted
	case stalled != nil && stalled.Status == metav1.ConditionTrue:
		return RolloutFailed
	case ready != nil && ready.Status == metav1.ConditionTrue:
		return RolloutComplete
	case ro.Spec.Aborted:
		return RolloutAborted
	case ro.Spec.Paused:
		return RolloutPaused
	case ready != nil && ready.Reason == configv1alpha1.AwaitingApprovalReason:
		return RolloutAwaitingApproval
	}
	return RolloutProgressing
}

// RolloutFinished says whether a state is final: nothing to pause, resume
// or abort.
func RolloutFinished(state string) bool {
	return state == RolloutComplete || state == RolloutFailed || state == RolloutAborted
}

// The states of a rollout's target, as its wave's square shows it.
const (
	// TargetHealthy: published and healthy.
	TargetHealthy = "healthy"
	// TargetWaiting: published, not healthy yet, within the deadline.
	TargetWaiting = "waiting"
	// TargetFailed: published and not healthy in a wave that failed.
	TargetFailed = "failed"
	// TargetPending: not published.
	TargetPending = "pending"
)

// TargetState judges a target in its wave: unhealthy is failed only once
// the wave failed (what its counts say), waiting before.
func TargetState(t Target, wave configv1alpha1.WaveState) string {
	switch {
	case !t.Published:
		return TargetPending
	case t.Status == "True":
		return TargetHealthy
	case wave == configv1alpha1.WaveFailed:
		return TargetFailed
	default:
		return TargetWaiting
	}
}

// RolloutTree is RolloutNode with the targets of each wave under it: each
// revision with its repository, revision number, whether git has it
// published, and whether it is healthy (by the rollout's health
// condition, when it has one) and why not.
func RolloutTree(ctx context.Context, c client.Client, ro *configv1alpha1.PackageRollout) (*Node, error) {
	n := RolloutNode(ro)
	repos := map[string]*configv1alpha1.Repository{}
	repository := func(name string) (*configv1alpha1.Repository, error) {
		if r, ok := repos[name]; ok {
			return r, nil
		}
		r := &configv1alpha1.Repository{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ro.Namespace, Name: name}, r); err != nil {
			if !apierrors.IsNotFound(err) {
				return nil, err
			}
			r = nil
		}
		repos[name] = r
		return r, nil
	}
	for i, w := range ro.Status.Waves {
		for _, name := range w.Revisions {
			pr := &porchv1alpha1.PackageRevision{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: ro.Namespace, Name: name}, pr); err != nil {
				if apierrors.IsNotFound(err) {
					n.Children[i].Children = append(n.Children[i].Children, &Node{Kind: "PackageRevision", Name: name, Ready: "Unknown", Reason: "NotFound", Message: "the revision no longer exists"})
					continue
				}
				return nil, err
			}
			repo, err := repository(pr.Spec.Repository)
			if err != nil {
				return nil, err
			}
			n.Children[i].Children = append(n.Children[i].Children, targetNode(pr, ro.Spec.Health, repo))
		}
	}
	return n, nil
}

// Target is one target of a rollout's wave: its revision, repository,
// whether git has it published, and its health (Status True, False or
// Unknown, with why when not True).
type Target struct {
	Name, Repository, Package string
	Revision                  int
	Lifecycle                 string
	Published                 bool
	// Health is the condition health is judged by ("" when the rollout
	// judges it with an expression over other objects; the engine's name
	// when it judges by a GitOps engine).
	Health                  string
	Status, Reason, Message string
	// Deployed is what the target's cluster runs of the package, as its
	// Repository's status.cluster says (nil when nothing says).
	Deployed *configv1alpha1.DeployedPackage
}

// DeployedOf is what a Repository's cluster runs of a package (nil when
// its status.cluster does not say).
func DeployedOf(repo *configv1alpha1.Repository, pkg string) *configv1alpha1.DeployedPackage {
	if repo == nil {
		return nil
	}
	return repo.Status.Cluster.Package(pkg)
}

// DeployedSummary says in a few words what a cluster runs of a package
// beside what was published: "runs revision 2 of 3 (Behind)", "runs
// content Scion never published (Drifted)".
func DeployedSummary(d *configv1alpha1.DeployedPackage) string {
	if d == nil {
		return ""
	}
	switch {
	case d.Revision > 0:
		return fmt.Sprintf("cluster runs revision %d of %d (%s)", d.Revision, d.Latest, d.State)
	case d.State == configv1alpha1.DeployDrifted:
		return fmt.Sprintf("cluster runs what Scion never published (%s)", d.State)
	default:
		return fmt.Sprintf("cluster runs no published revision (%s)", d.State)
	}
}

// RolloutTarget is what a rollout's target pr is, judged by the rollout's
// health (Ready when it names no condition; by what its Repository repo,
// which may be nil, says of its cluster with a health engine).
func RolloutTarget(pr *porchv1alpha1.PackageRevision, health *configv1alpha1.RolloutHealth, repo *configv1alpha1.Repository) Target {
	t := Target{Name: pr.Name, Repository: pr.Spec.Repository, Package: pr.Spec.PackageName, Revision: pr.Spec.Revision, Lifecycle: pr.ShownLifecycle(),
		Published: pr.GitLifecycle() == porchv1alpha1.LifecyclePublished, Health: configv1alpha1.ReadyCondition, Status: "Unknown",
		Deployed: DeployedOf(repo, pr.Spec.PackageName)}
	if health != nil && health.Engine != "" {
		t.Health = string(health.Engine)
		switch {
		case !t.Published:
			t.Reason, t.Message = "NotPublished", "not published yet"
		case repo == nil:
			t.Reason, t.Message = "NotFound", "repository "+pr.Spec.Repository+" not found"
		default:
			ok, why := deployed.Healthy(repo, pr.Spec.PackageName, pr.Spec.Revision)
			switch {
			case ok:
				t.Status = "True"
			case t.Deployed != nil && (t.Deployed.State == configv1alpha1.DeployFailed || t.Deployed.State == configv1alpha1.DeployDrifted ||
				t.Deployed.State == configv1alpha1.DeployUnknown || t.Deployed.LastFailure != ""):
				t.Status, t.Reason, t.Message = "False", "Deploy"+string(t.Deployed.State), why
			default:
				// On its way (Flux has not applied it yet, or waits for
				// what it applied): waiting, not failed.
				t.Reason, t.Message = "Waiting", why
			}
		}
		return t
	}
	if health != nil && health.ConditionType != "" {
		t.Health = health.ConditionType
	}
	for _, c := range pr.Status.Conditions {
		if c.Type == t.Health {
			t.Status = string(c.Status)
			if c.Status != "True" {
				t.Reason, t.Message = c.Reason, c.Message
			}
		}
	}
	if t.Status == "Unknown" && t.Reason == "" {
		t.Reason, t.Message = "NotSet", t.Health+" is not set"
		if health != nil && health.Expr != "" {
			t.Health = ""
			t.Message = "the rollout judges health with its expression over " + health.Object.Kind + " objects: see the wave's counts"
		}
	}
	return t
}

// targetNode is one target of a rollout's wave.
func targetNode(pr *porchv1alpha1.PackageRevision, health *configv1alpha1.RolloutHealth, repo *configv1alpha1.Repository) *Node {
	t := RolloutTarget(pr, health, repo)
	n := &Node{Kind: "PackageRevision", Name: t.Name, Lifecycle: t.Lifecycle, Ready: t.Status, Reason: t.Reason, Message: t.Message}
	n.Summary = "repository " + t.Repository
	if t.Revision > 0 {
		n.Summary += fmt.Sprintf(", revision %d", t.Revision)
	}
	// The repository's own number is not the upstream's version.
	if up := pkgservice.UpstreamVersion(pr.Status.UpstreamLock); up != "" {
		n.Summary += " (" + up + ")"
	}
	if t.Published {
		n.Summary += ", published"
	} else {
		n.Summary += ", not published"
	}
	if health != nil && (health.ConditionType != "" || health.Engine != "") {
		n.Summary += ", health " + t.Health
	}
	if t.Deployed != nil {
		n.Summary += ", " + DeployedSummary(t.Deployed)
	}
	return n
}

func buildSet(ctx context.Context, c client.Client, namespace, name string, opts Options) (*Node, error) {
	pvs := &configv1alpha2.PackageVariantSet{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, pvs); err != nil {
		return nil, fmt.Errorf("PackageVariantSet %s/%s: %w", namespace, name, err)
	}
	n := &Node{Kind: "PackageVariantSet", Name: pvs.Name}
	setReady(n, pvs.Status.Conditions, pvs.Generation, pvs.Status.ObservedGeneration)
	if s := pvs.Status.Summary; s != nil {
		n.Summary = fmt.Sprintf("%d/%d ready", s.Ready, s.Desired)
		big := opts.BigSet
		if big <= 0 {
			big = DefaultBigSet
		}
		if !opts.All && s.Desired > big {
			return notReadyOf(ctx, c, n, pvs)
		}
	}
	list := &configv1alpha1.PackageVariantList{}
	if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{configv1alpha2.PackageVariantSetLabel: string(pvs.UID)}); err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b configv1alpha1.PackageVariant) int { return strings.Compare(a.Name, b.Name) })
	var revisions map[string][]porchv1alpha1.PackageRevision
	if len(list.Items) > oneListAbove {
		// One list of every variant's revisions rather than a list per
		// variant (10,000 requests for a set of 10,000).
		all := &porchv1alpha1.PackageRevisionList{}
		if err := c.List(ctx, all, client.InNamespace(namespace), client.HasLabels{configv1alpha1.PackageVariantLabel}); err != nil {
			return nil, err
		}
		revisions = map[string][]porchv1alpha1.PackageRevision{}
		for _, pr := range all.Items {
			v := pr.Labels[configv1alpha1.PackageVariantLabel]
			revisions[v] = append(revisions[v], pr)
		}
	}
	for i := range list.Items {
		pv := &list.Items[i]
		var child *Node
		var err error
		if revisions != nil {
			child = variantNodeOf(pv, revisions[pkgservice.LabelValue(pv.Name)])
		} else {
			child, err = variantNode(ctx, c, pv)
		}
		if err != nil {
			return nil, err
		}
		n.Children = append(n.Children, child)
	}
	return n, nil
}

// notReadyOf gives the node n of a big set the variants its status names
// as not Ready, each with its revisions, and says so in its summary.
func notReadyOf(ctx context.Context, c client.Client, n *Node, pvs *configv1alpha2.PackageVariantSet) (*Node, error) {
	s := pvs.Status.Summary
	for _, name := range s.NotReady {
		pv := &configv1alpha1.PackageVariant{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: pvs.Namespace, Name: name}, pv); err != nil {
			if apierrors.IsNotFound(err) {
				continue // deleted since the status was written
			}
			return nil, fmt.Errorf("PackageVariant %s/%s: %w", pvs.Namespace, name, err)
		}
		child, err := variantNode(ctx, c, pv)
		if err != nil {
			return nil, err
		}
		n.Children = append(n.Children, child)
	}
	switch notReady := s.Desired - s.Ready; {
	case notReady == 0:
		n.Summary += "; every variant Ready (--all shows them)"
	case notReady > len(n.Children):
		n.Summary += fmt.Sprintf("; %d of the %d not Ready shown (--all shows every variant)", len(n.Children), notReady)
	default:
		n.Summary += "; the variants not Ready shown (--all shows every variant)"
	}
	return n, nil
}

// oneListAbove is the size of a set above which its tree reads the
// revisions of every variant of the namespace at once: below it, a list
// per variant reads less.
const oneListAbove = 20

func variantNode(ctx context.Context, c client.Client, pv *configv1alpha1.PackageVariant) (*Node, error) {
	list := &porchv1alpha1.PackageRevisionList{}
	if err := c.List(ctx, list, client.InNamespace(pv.Namespace), client.MatchingLabels{configv1alpha1.PackageVariantLabel: pkgservice.LabelValue(pv.Name)}); err != nil {
		return nil, err
	}
	return variantNodeOf(pv, list.Items), nil
}

// variantNodeOf is the node of a variant with the revisions labelled as
// its own (those another object controls are left out).
func variantNodeOf(pv *configv1alpha1.PackageVariant, revisions []porchv1alpha1.PackageRevision) *Node {
	n := &Node{Kind: "PackageVariant", Name: pv.Name}
	setReady(n, pv.Status.Conditions, pv.Generation, pv.Status.ObservedGeneration)
	slices.SortFunc(revisions, func(a, b porchv1alpha1.PackageRevision) int { return strings.Compare(a.Name, b.Name) })
	for _, pr := range revisions {
		if ref := metav1.GetControllerOf(&pr); ref != nil && ref.UID != pv.UID {
			continue
		}
		rn := &Node{Kind: "PackageRevision", Name: pr.Name, Lifecycle: pr.ShownLifecycle(), Ready: "Unknown"}
		for _, cond := range pr.Status.Conditions {
			if cond.Type == configv1alpha1.ReadyCondition {
				rn.Ready = string(cond.Status)
				if cond.Status != "True" {
					rn.Reason, rn.Message = cond.Reason, cond.Message
				}
			}
		}
		rn.Gates = RevisionGates(&pr)
		n.Children = append(n.Children, rn)
	}
	addDependencies(n, pv)
	return n
}

// addDependencies shows a variant's dependencies (status.dependencies)
// under it, and how many are satisfied.
func addDependencies(n *Node, pv *configv1alpha1.PackageVariant) {
	if pv.Spec.Dependencies == nil {
		return
	}
	satisfied := 0
	for _, d := range pv.Status.Dependencies {
		dn := &Node{Kind: "Dependency", Name: d.Package, Ready: "Unknown", Summary: d.Version + " " + string(d.State)}
		switch d.State {
		case configv1alpha1.DependencySatisfied:
			dn.Ready = "True"
			satisfied++
		case configv1alpha1.DependencyMissing, configv1alpha1.DependencyConflict:
			dn.Ready = "False"
		}
		if d.SatisfiedBy != "" {
			dn.Summary += " in " + d.SatisfiedBy
		}
		if d.InstalledBy != "" {
			dn.Summary += ", installed by PackageVariant/" + d.InstalledBy
		}
		n.Children = append(n.Children, dn)
	}
	n.Summary = fmt.Sprintf("dependencies %d/%d satisfied", satisfied, len(pv.Status.Dependencies))
	if c := meta.FindStatusCondition(pv.Status.Conditions, configv1alpha1.DependenciesReadyCondition); c != nil && len(pv.Status.Dependencies) == 0 && c.Status != metav1.ConditionTrue {
		n.Summary = "dependencies: " + c.Reason
	}
}

// setReady fills the node's readiness from a Ready condition that
// describes the current generation (Unknown otherwise).
func setReady(n *Node, conds []metav1.Condition, gen, observed int64) {
	n.Ready = "Unknown"
	c := meta.FindStatusCondition(conds, configv1alpha1.ReadyCondition)
	if c == nil {
		return
	}
	if observed != gen {
		n.Reason = "Reconciling"
		return
	}
	n.Ready = string(c.Status)
	if c.Status != metav1.ConditionTrue {
		n.Reason, n.Message = c.Reason, c.Message
	}
}

// PrintJSON writes the tree as JSON.
func PrintJSON(w io.Writer, n *Node) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(n)
}

const (
	green  = "\x1b[32m"
	red    = "\x1b[31m"
	yellow = "\x1b[33m"
	reset  = "\x1b[0m"
)

// Print writes the tree, one object per line; color adds ANSI colours to
// statuses.
func Print(w io.Writer, n *Node, color bool) error {
	var b strings.Builder
	var walk func(n *Node, prefix string, last, root bool)
	walk = func(n *Node, prefix string, last, root bool) {
		branch, next := "", ""
		if !root {
			branch, next = "├─", "│ "
			if last {
				branch, next = "└─", "  "
			}
		}
		line := fmt.Sprintf("%s%s%s/%s  %s", prefix, branch, n.Kind, n.Name, describe(n, color))
		w := why(n)
		if w == "" || len(line)+2+len(w) <= inlineWidth {
			if w != "" {
				line += "  " + w
			}
			fmt.Fprintln(&b, line)
		} else {
			// A long reason goes whole on the lines below, wrapped.
			fmt.Fprintln(&b, line)
			cont := prefix + next
			if len(n.Children) > 0 {
				cont += "│ "
			}
			for _, l := range wrap(w, wrapWidth) {
				fmt.Fprintf(&b, "%s    %s\n", cont, l)
			}
		}
		for i, c := range n.Children {
			walk(c, prefix+next, i == len(n.Children)-1, false)
		}
	}
	walk(n, "", true, true)
	_, err := io.WriteString(w, b.String())
	return err
}

func describe(n *Node, color bool) string {
	var parts []string
	switch {
	case n.Kind == "PackageRollout" && color:
		// The rollout's state in its colour: finished well green,
		// stopped red, anything still moving amber.
		c := yellow
		switch n.Lifecycle {
		case RolloutComplete:
			c = green
		case RolloutFailed, RolloutAborted:
			c = red
		}
		parts = append(parts, c+n.Lifecycle+reset)
	case n.Lifecycle != "":
		parts = append(parts, n.Lifecycle)
	}
	parts = append(parts, "Ready="+paint(n.Ready, color))
	if n.Summary != "" {
		parts = append(parts, n.Summary)
	}
	for _, g := range n.Gates {
		parts = append(parts, "gate "+g.ConditionType+"="+paint(g.Status, color))
	}
	return strings.Join(parts, "  ")
}

// why is the reason a node is not Ready, with its whole message, "" when
// there is none.
func why(n *Node) string {
	if n.Reason == "" {
		return ""
	}
	w := n.Reason
	if n.Message != "" {
		w += ": " + n.Message
	}
	return "(" + w + ")"
}

// A reason that would make its line longer than inlineWidth goes whole
// on the lines below it, wrapped at wrapWidth: reasons are never cut.
const (
	inlineWidth = 160
	wrapWidth   = 120
)

// wrap cuts text at spaces into lines of at most width characters (a word
// longer than width has a line of its own).
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	return append(lines, line)
}

func paint(status string, color bool) string {
	if !color {
		return status
	}
	switch status {
	case "True":
		return green + status + reset
	case "False":
		return red + status + reset
	default:
		return yellow + status + reset
	}
}
