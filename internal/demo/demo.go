package demo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/controller/packagevariant"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/rpkg"
	"github.com/scion-dev/scion/internal/store"
)

// The objects the walk-through works on.
const (
	// appSet is the PackageVariantSet whose upstream the demo moves.
	appSet = "regional-app"
	// appVariant is the variant of appSet whose draft is edited, updated
	// and published.
	appVariant = "regional-app-cluster-01-web"
	// canaryGate is regional-app's readiness gate.
	canaryGate = "example.com/canary-passed"
	// ownerAnnotation is the downstream edit that must survive updates.
	ownerAnnotation = "example.com/owner"
)

// Run walks through Scion's main job on the fleet: load it, wait for the
// variants, show them, diff a draft against its upstream, move the
// upstream and show the drafts updated with a downstream edit kept, and
// publish a draft once its readiness gate is met, then roll the rest of
// the fleet out in waves. On the way it shows a dependency installed into
// every cluster and a conflict of two packages serving one kind. Running it again works: each run publishes the
// next upstream revision.
func (o *Options) Run(ctx context.Context) error {
	f, err := o.Load(ctx)
	if err != nil {
		return err
	}
	ns := f.Namespace
	o.say("==> waiting for the variants to be Ready")
	if err := o.WaitReady(ctx, ns); err != nil {
		return err
	}
	if err := o.printTrees(ctx, ns); err != nil {
		return err
	}
	if err := o.showDependencies(ctx, ns); err != nil {
		return err
	}
	if err := o.showDiff(ctx, ns, f); err != nil {
		return err
	}
	if err := o.editAndUpdate(ctx, ns, f); err != nil {
		return err
	}
	if err := o.approve(ctx, ns); err != nil {
		return err
	}
	return o.rollOut(ctx, ns)
}

// WaitReady waits until every PackageVariantSet of ns is reconciled at
// its generation and every PackageVariant is Ready at its generation, or
// waits for a person: its revision is Proposed (ProposalPending), which
// it says once.
// Progress counts against the total the sets will generate (their
// summaries' desired counts, plus the variants no set owns), so it never
// jumps back.
func (o *Options) WaitReady(ctx context.Context, ns string) error {
	// missing is what the last complete look found not ready (a look the
	// deadline cuts short leaves it alone).
	var missing []string
	start := time.Now()
	last := ""
	pending := map[string]bool{}
	err := wait.PollUntilContextTimeout(ctx, time.Second, o.timeout(), true, func(ctx context.Context) (bool, error) {
		var notReady []string
		sets := &configv1alpha2.PackageVariantSetList{}
		if err := o.Client.List(ctx, sets, client.InNamespace(ns)); err != nil {
			return false, err
		}
		expanded, total := true, 0
		for _, s := range sets.Items {
			sm := s.Status.Summary
			if sm == nil || s.Status.ObservedGeneration != s.Generation {
				expanded = false
			} else {
				total += sm.Desired
			}
			if s.Status.ObservedGeneration != s.Generation || !meta.IsStatusConditionTrue(s.Status.Conditions, configv1alpha1.ReadyCondition) {
				notReady = append(notReady, "PackageVariantSet/"+s.Name+readyReason(s.Status.Conditions, s.Generation, s.Status.ObservedGeneration))
			}
		}
		pvs := &configv1alpha1.PackageVariantList{}
		if err := o.Client.List(ctx, pvs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		readyCount := 0
		for _, pv := range pvs.Items {
			if metav1.GetControllerOf(&pv) == nil {
				total++
			}
			if configv1alpha1.ReadyAt(pv.Status.Conditions, pv.Generation, pv.Status.ObservedGeneration) {
				readyCount++
			} else if c := meta.FindStatusCondition(pv.Status.Conditions, configv1alpha1.ReadyCondition); c != nil && c.Reason == packagevariant.ProposalPendingReason && pv.Status.ObservedGeneration == pv.Generation {
				readyCount++ // waits for its approver, not for Scion
				if !pending[pv.Name] {
					pending[pv.Name] = true
					o.say("    %s waits for its Proposed revision to be approved or rejected (ProposalPending)", pv.Name)
				}
			} else {
				notReady = append(notReady, "PackageVariant/"+pv.Name+readyReason(pv.Status.Conditions, pv.Generation, pv.Status.ObservedGeneration))
			}
		}
		line := "    expanding the PackageVariantSets"
		if expanded {
			line = fmt.Sprintf("    %d of %d PackageVariants ready", min(readyCount, total), total)
		}
		if line != last {
			o.say("%s", line)
			last = line
		}
		missing = notReady
		return expanded && len(missing) == 0 && len(pvs.Items) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("after %s, not ready: %s: %w", time.Since(start).Round(time.Second), describeMissing(missing), err)
	}
	return nil
}

// readyReason says why an object is not Ready: its generation is not
// observed yet, or its Ready condition.
func readyReason(conds []metav1.Condition, gen, observed int64) string {
	if observed != gen {
		return fmt.Sprintf(" (generation %d not observed yet, status is of %d)", gen, observed)
	}
	c := meta.FindStatusCondition(conds, configv1alpha1.ReadyCondition)
	if c == nil {
		return " (no Ready condition yet)"
	}
	return fmt.Sprintf(" (Ready=%s %s: %s)", c.Status, c.Reason, c.Message)
}

func (o *Options) printTrees(ctx context.Context, ns string) error {
	sets := &configv1alpha2.PackageVariantSetList{}
	if err := o.Client.List(ctx, sets, client.InNamespace(ns)); err != nil {
		return err
	}
	o.say("")
	o.say("==> %s tree", o.scion())
	for _, name := range []string{"pvar/policy-cluster-01", "pvs/tenants", "pvs/regional-app", "pvs/team-sandboxes"} {
		kind, n, _ := strings.Cut(name, "/")
		if err := o.printTree(ctx, ns, kind, n); err != nil {
			return err
		}
	}
	return nil
}

// draftOf returns the draft PackageRevision the variant shows.
func (o *Options) draftOf(ctx context.Context, ns, variant string) (*porchv1alpha1.PackageRevision, error) {
	pv := &configv1alpha1.PackageVariant{}
	if err := o.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: variant}, pv); err != nil {
		return nil, fmt.Errorf("PackageVariant %s: %w", variant, err)
	}
	if len(pv.Status.DownstreamTargets) == 0 {
		return nil, fmt.Errorf("PackageVariant %s has no downstream yet", variant)
	}
	pr := &porchv1alpha1.PackageRevision{}
	if err := o.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: pv.Status.DownstreamTargets[0].Name}, pr); err != nil {
		return nil, err
	}
	return pr, nil
}

// read reads a package revision straight from its git repository.
func (o *Options) read(ctx context.Context, repo, pkgPath, workspace string, revision int) (*pkg.Package, store.Revision, error) {
	st, err := o.openStore(ctx, repo)
	if err != nil {
		return nil, store.Revision{}, err
	}
	if err := st.Fetch(ctx); err != nil {
		return nil, store.Revision{}, err
	}
	rev, err := st.Get(ctx, pkgPath, workspace, revision)
	if err != nil {
		return nil, store.Revision{}, err
	}
	p, err := st.Read(ctx, rev)
	return p, rev, err
}

func (o *Options) showDiff(ctx context.Context, ns string, f *Fleet) error {
	pr, err := o.draftOf(ctx, ns, appVariant)
	if err != nil {
		return err
	}
	set := &configv1alpha2.PackageVariantSet{}
	if err := o.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: appSet}, set); err != nil {
		return err
	}
	revision, _ := set.Spec.Upstream.Revision.Number() // the demo's set names a revision
	up, _, err := o.read(ctx, f.Catalog, set.Spec.Upstream.Package, "", revision)
	if err != nil {
		return err
	}
	down, _, err := o.read(ctx, pr.Spec.Repository, pr.Spec.PackageName, pr.Spec.WorkspaceName, pr.Spec.Revision)
	if err != nil {
		return err
	}
	o.say("")
	o.say("==> %s (%s) against its upstream %s/%s %s", pr.Name, pr.Spec.Lifecycle, f.Catalog, set.Spec.Upstream.Package, set.Spec.Upstream.Revision)
	_, err = fmt.Fprint(o.Out, Diff(up, down))
	return err
}

// Diff renders the line changes from a to b, file by file.
func Diff(a, b *pkg.Package) string {
	var out strings.Builder
	names := map[string]bool{}
	for _, n := range a.Paths() {
		names[n] = true
	}
	for _, n := range b.Paths() {
		names[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		before, _ := a.File(n)
		after, _ := b.File(n)
		if string(before) == string(after) {
			continue
		}
		fmt.Fprintf(&out, "--- upstream/%s\n+++ downstream/%s\n", n, n)
		var lines []string // each with its prefix: ' ', '+' or '-'
		for _, d := range diff.Do(string(before), string(after)) {
			prefix := " "
			switch d.Type {
			case diffmatchpatch.DiffInsert:
				prefix = "+"
			case diffmatchpatch.DiffDelete:
				prefix = "-"
			}
			for _, l := range strings.SplitAfter(d.Text, "\n") {
				if l != "" {
					lines = append(lines, prefix+strings.TrimSuffix(l, "\n"))
				}
			}
		}
		writeHunks(&out, lines, diffContext)
	}
	return out.String()
}

// diffContext is how many unchanged lines Diff shows around a change.
const diffContext = 2

// writeHunks writes the changed lines with up to context unchanged lines
// around each, and "@@" between hunks where unchanged lines are left out.
func writeHunks(out *strings.Builder, lines []string, context int) {
	show := make([]bool, len(lines))
	for i, l := range lines {
		if l[0] == ' ' {
			continue
		}
		for j := max(0, i-context); j <= min(len(lines)-1, i+context); j++ {
			show[j] = true
		}
	}
	gap, shown := false, false
	for i, l := range lines {
		if !show[i] {
			gap = true
			continue
		}
		if gap && shown {
			out.WriteString("@@\n")
		}
		gap, shown = false, true
		out.WriteString(l + "\n")
	}
}

// editAndUpdate edits cluster-01's web draft as a person would (rpkg
// pull, edit, push), publishes the next upstream revision with a new
// image, moves the set to it, and shows the draft updated with the edit
// kept.
func (o *Options) editAndUpdate(ctx context.Context, ns string, f *Fleet) error {
	rc := &rpkg.Client{Client: o.Client, Namespace: ns, Timeout: o.timeout()}
	pr, err := o.draftOf(ctx, ns, appVariant)
	if err != nil {
		return err
	}
	if pr.Spec.Lifecycle == porchv1alpha1.LifecycleDraft {
		dir, err := os.MkdirTemp("", "scion-demo")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if _, err := rc.Pull(ctx, pr.Name, dir, store.Credentials{}); err != nil {
			return err
		}
		path := filepath.Join(dir, "deployment.yaml")
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !strings.Contains(string(data), ownerAnnotation) {
			edited := strings.Replace(string(data), "  name: web\n", "  name: web\n  annotations:\n    "+ownerAnnotation+": web-team # a downstream edit\n", 1)
			if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
				return err
			}
			if _, err := rc.Push(ctx, pr.Name, dir, store.Credentials{}); err != nil {
				return err
			}
			o.say("")
			o.say("==> a person edits %s: %s rpkg pull, add the annotation %s, %s rpkg push", pr.Name, o.scion(), ownerAnnotation, o.scion())
		}
	}

	// The platform team publishes the next revision of the blueprint.
	st, err := o.openStore(ctx, f.Catalog)
	if err != nil {
		return err
	}
	if err := st.Fetch(ctx); err != nil {
		return err
	}
	revs, err := st.ListPackage(ctx, "regional-app")
	if err != nil {
		return err
	}
	n := latestRevision(revs)
	latest, err := st.Get(ctx, "regional-app", "", n)
	if err != nil {
		return err
	}
	p, err := st.Read(ctx, latest)
	if err != nil {
		return err
	}
	data, _ := p.File("deployment.yaml")
	image := fmt.Sprintf("registry.example.com/web:1.%d.0", n)
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if strings.Contains(l, "image: registry.example.com/web:") {
			lines[i] = l[:strings.Index(l, "image:")] + "image: " + image
		}
	}
	if err := p.SetFile("deployment.yaml", []byte(strings.Join(lines, "\n"))); err != nil {
		return err
	}
	next := fmt.Sprintf("v%d", n+1)
	if _, err := publish(ctx, st, "regional-app", next, p); err != nil {
		return err
	}
	o.say("")
	o.say("==> the platform team publishes regional-app %s (image %s); the set moves to it", next, image)
	set := &configv1alpha2.PackageVariantSet{}
	if err := o.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: appSet}, set); err != nil {
		return err
	}
	patch := client.MergeFrom(set.DeepCopy())
	set.Spec.Upstream.Revision = configv1alpha1.RevisionNumber(next)
	if err := o.Client.Patch(ctx, set, patch); err != nil {
		return err
	}
	// The set's variants follow; wait until cluster-01's draft has the
	// new image.
	var deployment string
	err = wait.PollUntilContextTimeout(ctx, time.Second, o.timeout(), true, func(ctx context.Context) (bool, error) {
		pr, err := o.draftOf(ctx, ns, appVariant)
		if err != nil || pr.Spec.Lifecycle != porchv1alpha1.LifecycleDraft {
			return false, nil
		}
		p, _, err := o.read(ctx, pr.Spec.Repository, pr.Spec.PackageName, pr.Spec.WorkspaceName, 0)
		if err != nil {
			return false, nil
		}
		d, _ := p.File("deployment.yaml")
		deployment = string(d)
		return strings.Contains(deployment, image), nil
	})
	if err != nil {
		return fmt.Errorf("the draft of %s did not get %s: %w", appVariant, image, err)
	}
	if err := o.WaitReady(ctx, ns); err != nil {
		return err
	}
	if !strings.Contains(deployment, ownerAnnotation) {
		return errors.New("the downstream edit was lost in the update")
	}
	o.say("==> %s updated in place; the downstream edit is kept:", appVariant)
	_, err = fmt.Fprint(o.Out, indent(deployment))
	return err
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

// approve proposes cluster-01's web draft and approves it: refused while
// the canary gate is unmet, published once the condition is set.
func (o *Options) approve(ctx context.Context, ns string) error {
	rc := &rpkg.Client{Client: o.Client, Namespace: ns, Timeout: o.timeout()}
	pr, err := o.draftOf(ctx, ns, appVariant)
	if err != nil {
		return err
	}
	o.say("")
	o.say("==> %s rpkg propose %s", o.scion(), pr.Name)
	if _, err := rc.Propose(ctx, pr.Name); err != nil {
		return err
	}
	o.say("==> %s rpkg approve %s", o.scion(), pr.Name)
	_, err = rc.Approve(ctx, pr.Name)
	if err == nil {
		return errors.New("the approval went through with the canary gate unmet")
	}
	if !errors.Is(err, rpkg.ErrRefused) {
		return err
	}
	o.say("    refused, nothing recorded: %v", err)
	o.say("==> %s rpkg condition set %s %s True", o.scion(), pr.Name, canaryGate)
	if _, err := rc.SetCondition(ctx, pr.Name, porchv1alpha1.Condition{Type: canaryGate, Status: "True", Reason: "CanaryPassed", Message: "the canary in cluster-01 passed"}); err != nil {
		return err
	}
	o.say("==> %s rpkg approve %s", o.scion(), pr.Name)
	got, err := rc.Approve(ctx, pr.Name)
	if err != nil {
		return err
	}
	o.say("    %s is %s (revision %d)", got.Name, got.Spec.Lifecycle, got.Spec.Revision)
	return nil
}
