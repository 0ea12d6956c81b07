package demo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/rollout"
	"github.com/scion-dev/scion/internal/rolloutctl"
	"github.com/scion-dev/scion/internal/rpkg"
	"github.com/scion-dev/scion/internal/tree"
)

const (
	// badImage is the image of the demo's bad release of regional-app.
	badImage = webImage + ":2.0.0-rc.1"
	// healthCondition is what the simulated deployer reports.
	healthCondition = "example.com/synced"
	// rolloutLabel marks the proposals the rollout takes.
	rolloutLabel = "app"
	// sickCluster is the target the simulated deployer reports unhealthy
	// until the fix.
	sickCluster = "cluster-06"
	// sickVariant is regional-app's variant in sickCluster: the target
	// of the bad release's canary.
	sickVariant = "regional-app-" + sickCluster + "-web"
)

// badRelease shows a rollback that sticks: the platform team publishes a
// bad revision of regional-app (a command its image lacks) and moves the
// set to it; sickCluster's draft is proposed and rolled out alone with
// rollbackOnFailure; the cluster reports unhealthy, the rollout rolls it
// back in git and holds the variant on the revision before (no new draft
// with the bad content, although the set still names it); the set is
// then pinned back to the good revision (where a later run's startOver
// finds it). With a target cluster, all of it is real: Flux deploys the bad
// revision, its Pods crash-loop, Flux's Kustomization fails its health
// check, and Flux deploys the rollback; else a health reporter the demo
// runs says sickCluster is unhealthy.
func (o *Options) badRelease(ctx context.Context, f *Fleet) error {
	ns := f.Namespace
	set := &configv1alpha2.PackageVariantSet{}
	if err := o.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: appSet}, set); err != nil {
		return err
	}
	good := string(set.Spec.Upstream.Revision)
	var tc client.Client
	if o.Target != nil {
		var err error
		if tc, err = o.deployWithFlux(ctx, ns); err != nil {
			return err
		}
	}
	bad, earlier, err := o.releaseApp(ctx, f, badImage, badCommand)
	if err != nil {
		return err
	}
	o.say("")
	o.say("==> a bad release: the platform team publishes regional-app %s (image %s, command %s, which the image lacks); the set moves to it", bad, badImage, badCommand)
	if earlier {
		o.say("    (published by an earlier run: the same revision again)")
	}
	if err := o.moveSet(ctx, ns, bad); err != nil {
		return err
	}
	if _, err := o.waitDraftImage(ctx, ns, sickVariant, badImage); err != nil {
		return err
	}
	pr, err := o.draftOf(ctx, ns, sickVariant)
	if err != nil {
		return err
	}
	name := "regional-app-" + bad
	if err := o.proposeForRollout(ctx, pr, name); err != nil {
		return err
	}
	ro := &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: configv1alpha1.PackageRolloutSpec{
		RevisionSelector:  metav1.LabelSelector{MatchLabels: map[string]string{rolloutLabel: name}},
		Waves:             []configv1alpha1.RolloutWave{{Name: "canary"}},
		Health:            &configv1alpha1.RolloutHealth{ConditionType: healthCondition},
		SoakTime:          &metav1.Duration{Duration: 3 * time.Second},
		ProgressDeadline:  &metav1.Duration{Duration: 5 * time.Second},
		RollbackOnFailure: true,
	}}
	health := fmt.Sprintf("health from %s, set by the demo's simulated reporter", healthCondition)
	if o.Target != nil {
		// Flux applies within 5s of the publication and gives up waiting
		// for the Deployment after 45s: the deadline leaves it time.
		ro.Spec.Health = &configv1alpha1.RolloutHealth{Engine: configv1alpha1.HealthEngineFlux}
		ro.Spec.ProgressDeadline = &metav1.Duration{Duration: 75 * time.Second}
		health = "health from Flux (spec.health.engine: Flux): what the cluster runs, read through Repository " + sickCluster + "'s spec.cluster"
	} else {
		var sick atomic.Bool
		sick.Store(true)
		stop := o.reportHealth(ctx, ns, name, &sick)
		defer stop()
	}
	if err := o.Client.Create(ctx, ro); err != nil {
		return fmt.Errorf("PackageRollout %s: %w", name, err)
	}
	o.say("==> %s rpkg propose %s; kubectl apply PackageRollout %s: one wave, %s, %s to become healthy, rollbackOnFailure: true", o.scion(), pr.Name, name, health, ro.Spec.ProgressDeadline.Duration)
	if tc != nil {
		if err := o.waitCrashLoop(ctx, tc); err != nil {
			return err
		}
		o.say("==> Flux deploys %s to %s; the new Pod cannot start (the old ones keep serving):", bad, sickCluster)
		if err := o.printPods(ctx, tc); err != nil {
			return err
		}
	}
	if err := o.waitRollout(ctx, ro, func(ro *configv1alpha1.PackageRollout) bool {
		rolledBack := int32(0)
		for _, w := range ro.Status.Waves {
			rolledBack += w.RolledBack
		}
		return meta.IsStatusConditionTrue(ro.Status.Conditions, configv1alpha1.StalledCondition) && rolledBack > 0
	}); err != nil {
		return err
	}
	if tc != nil {
		o.say("==> Flux reports it (its Kustomization %s fails its health check): the rollout stops at its deadline and rolls the published revision back, in git", sickCluster)
	} else {
		o.say("==> %s reports unhealthy on %s (simulated: `make demo` as root runs it on a real node with Flux): the rollout stops and rolls the published revision back, in git", sickCluster, bad)
	}
	o.say("==> %s rollout status %s", o.scion(), name)
	if err := o.printRollout(ctx, ro); err != nil {
		return err
	}
	if tc != nil {
		d, err := o.waitRunning(ctx, ns, tc, 0)
		if err != nil {
			return err
		}
		o.say("==> Flux deploys the rollback: %s runs %s revision %d (%s), and its Pods are Ready again:", sickCluster, webPackage, d.Revision, d.State)
		if err := o.printPods(ctx, tc); err != nil {
			return err
		}
		o.say("==> what runs where: %s rollout status %s (each target: the revision its cluster runs of the newest published), kubectl get repository %s -o jsonpath='{.status.cluster}', and the console's targets page", o.scion(), name, sickCluster)
		o.say("    %s: %s", sickCluster, tree.DeployedSummary(d))
	}
	// The rollback sticks: the variant, whose set still names the bad
	// revision, stays on the good one and writes no new draft.
	pv := &configv1alpha1.PackageVariant{}
	var held *metav1.Condition
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, o.timeout(), true, func(ctx context.Context) (bool, error) {
		if err := o.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: sickVariant}, pv); err != nil {
			return false, nil
		}
		held = meta.FindStatusCondition(pv.Status.Conditions, configv1alpha1.UpdateAvailableCondition)
		return pv.Annotations[configv1alpha1.HoldUpstreamAnnotation] != "" && held != nil && held.Reason == configv1alpha1.UpstreamHeldReason &&
			held.ObservedGeneration == pv.Generation && configv1alpha1.ReadyAt(pv.Status.Conditions, pv.Generation, pv.Status.ObservedGeneration), nil
	})
	if err != nil {
		return fmt.Errorf("PackageVariant %s is not held on the upstream revision before %s: %w", sickVariant, bad, err)
	}
	if draft, err := o.draftOf(ctx, ns, sickVariant); err != nil || draft.Spec.Lifecycle != porchv1alpha1.LifecyclePublished {
		return fmt.Errorf("PackageVariant %s shows %v after the rollback, not its published revision (%v)", sickVariant, draft, err)
	}
	o.say("==> the rollback sticks: PackageVariant %s has %s=%s and writes no new draft, although the set still names %s:", sickVariant, configv1alpha1.HoldUpstreamAnnotation, pv.Annotations[configv1alpha1.HoldUpstreamAnnotation], bad)
	o.say("    %s=%s %s: %s", held.Type, held.Status, held.Reason, held.Message)
	o.say("==> until a fixed revision is published, the set is pinned to %s:", good)
	o.say("    kubectl patch packagevariantset %s --type merge -p '{\"spec\":{\"upstream\":{\"revision\":\"%s\"}}}'", appSet, good)
	if err := o.moveSet(ctx, ns, good); err != nil {
		return err
	}
	return o.WaitReady(ctx, f)
}

// rollOut proposes the rest of regional-app's drafts and publishes them
// with a PackageRollout in three waves, with a health reporter the demo
// runs itself (simulating a deployer): the second wave halts at a target
// that reports unhealthy; after the fix, the rollout is resumed and
// completes.
func (o *Options) rollOut(ctx context.Context, ns string) error {
	set := &configv1alpha2.PackageVariantSet{}
	if err := o.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: appSet}, set); err != nil {
		return err
	}
	pvs := &configv1alpha1.PackageVariantList{}
	if err := o.Client.List(ctx, pvs, client.InNamespace(ns), client.MatchingLabels{configv1alpha2.PackageVariantSetLabel: string(set.UID)}); err != nil {
		return err
	}
	slices.SortFunc(pvs.Items, func(a, b configv1alpha1.PackageVariant) int { return strings.Compare(a.Name, b.Name) })
	name := "regional-app-" + string(set.Spec.Upstream.Revision)
	o.say("")
	o.say("==> the rest of the fleet gets regional-app %s through a PackageRollout", set.Spec.Upstream.Revision)
	var proposed []string
	for _, pv := range pvs.Items {
		pr, err := o.draftOf(ctx, ns, pv.Name)
		if err != nil || pr.Spec.Lifecycle != porchv1alpha1.LifecycleDraft {
			continue
		}
		if err := o.proposeForRollout(ctx, pr, appSet); err != nil {
			return err
		}
		proposed = append(proposed, pr.Name)
	}
	o.say("    proposed, labelled %s=%s: %s", rolloutLabel, appSet, strings.Join(proposed, ", "))
	ro := &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: configv1alpha1.PackageRolloutSpec{
		RevisionSelector: metav1.LabelSelector{MatchLabels: map[string]string{rolloutLabel: appSet}},
		Waves: []configv1alpha1.RolloutWave{
			{Name: "canary", MaxTargets: ptr.To[int32](1)},
			{Name: "us-west", RepositorySelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "us-west"}}},
		},
		Health:           &configv1alpha1.RolloutHealth{ConditionType: healthCondition},
		SoakTime:         &metav1.Duration{Duration: 3 * time.Second},
		ProgressDeadline: &metav1.Duration{Duration: 10 * time.Second},
	}}
	if err := o.printPlan(ctx, ns, ro); err != nil {
		return err
	}
	var sick atomic.Bool
	sick.Store(true)
	stop := o.reportHealth(ctx, ns, name, &sick)
	defer stop()
	o.say("==> a health reporter, simulated by this demo (in a real fleet: Flux, Config Sync or Argo CD), sets %s=True on each published revision a second after it is published; %s reports False", healthCondition, sickCluster)
	if err := o.Client.Create(ctx, ro); err != nil {
		return fmt.Errorf("PackageRollout %s: %w", name, err)
	}
	o.say("==> kubectl apply PackageRollout %s: waves canary (1 target), us-west, remainder; soak 3s; 10s to become healthy; no target may fail", name)
	if err := o.waitRollout(ctx, ro, func(ro *configv1alpha1.PackageRollout) bool {
		return meta.IsStatusConditionTrue(ro.Status.Conditions, configv1alpha1.StalledCondition)
	}); err != nil {
		return err
	}
	o.say("==> the us-west wave halts at %s; nothing after it is published", sickCluster)
	o.say("==> %s rollout status %s", o.scion(), name)
	if err := o.printRollout(ctx, ro); err != nil {
		return err
	}
	sick.Store(false)
	o.say("==> the fix: %s reports healthy; %s rollout resume %s", sickCluster, o.scion(), name)
	if err := (&rolloutctl.Client{Client: o.Client, Namespace: ns}).Resume(ctx, name); err != nil {
		return err
	}
	return o.finishRollout(ctx, ro)
}

// finishRollout waits until the rollout is Ready, and shows it as scion
// rollout status does.
func (o *Options) finishRollout(ctx context.Context, ro *configv1alpha1.PackageRollout) error {
	if err := o.waitRollout(ctx, ro, func(ro *configv1alpha1.PackageRollout) bool {
		return configv1alpha1.ReadyAt(ro.Status.Conditions, ro.Generation, ro.Status.ObservedGeneration)
	}); err != nil {
		return err
	}
	o.say("==> %s rollout status %s", o.scion(), ro.Name)
	return o.printRollout(ctx, ro)
}

// proposeForRollout readies a draft for a rollout as the demo's canary
// process would: its canary gate passed, the label the rollout selects
// (rolloutLabel=value), proposed.
func (o *Options) proposeForRollout(ctx context.Context, pr *porchv1alpha1.PackageRevision, value string) error {
	rc := &rpkg.Client{Client: o.Client, Namespace: pr.Namespace, Timeout: o.timeout()}
	if _, err := rc.SetCondition(ctx, pr.Name, porchv1alpha1.Condition{Type: canaryGate, Status: "True", Reason: "CanaryPassed", Message: "the canary passed"}); err != nil {
		return err
	}
	patch := client.MergeFrom(pr.DeepCopy())
	pr.Labels[rolloutLabel] = value
	if err := o.Client.Patch(ctx, pr, patch); err != nil {
		return err
	}
	_, err := rc.Propose(ctx, pr.Name)
	return err
}

// printPlan prints the waves the rollout will publish, as scion rollout
// plan computes them.
func (o *Options) printPlan(ctx context.Context, ns string, ro *configv1alpha1.PackageRollout) error {
	revs := &porchv1alpha1.PackageRevisionList{}
	if err := o.Client.List(ctx, revs, client.InNamespace(ns)); err != nil {
		return err
	}
	repos := &configv1alpha1.RepositoryList{}
	if err := o.Client.List(ctx, repos, client.InNamespace(ns)); err != nil {
		return err
	}
	repoLabels := map[string]map[string]string{}
	for _, r := range repos.Items {
		repoLabels[r.Name] = r.Labels
	}
	sel := labels.SelectorFromSet(ro.Spec.RevisionSelector.MatchLabels)
	plan, err := rollout.Compute(&ro.Spec, rollout.Targets(sel, ro.Spec.Group != nil, revs.Items, repoLabels))
	if err != nil {
		return err
	}
	o.say("==> %s rollout plan: the waves", o.scion())
	for _, w := range plan.Waves {
		o.say("    %-10s %s", w.Name, strings.Join(w.Targets, ", "))
	}
	return nil
}

func (o *Options) waitRollout(ctx context.Context, ro *configv1alpha1.PackageRollout, done func(*configv1alpha1.PackageRollout) bool) error {
	cur := &configv1alpha1.PackageRollout{}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, o.timeout(), true, func(ctx context.Context) (bool, error) {
		if err := o.Client.Get(ctx, client.ObjectKeyFromObject(ro), cur); err != nil {
			return false, nil
		}
		return done(cur), nil
	})
	if err != nil {
		return fmt.Errorf("PackageRollout %s: %w (last: %s)", ro.Name, err, cur.Status.Blocked)
	}
	return nil
}

func (o *Options) printRollout(ctx context.Context, ro *configv1alpha1.PackageRollout) error {
	t, err := tree.Build(ctx, o.Client, ro.Namespace, "prollout", ro.Name, tree.Options{})
	if err != nil {
		return err
	}
	return tree.Print(o.Out, t, false)
}

// reportHealth simulates a deployer: every published revision the
// rollout published gets the health condition a second after its publish,
// False for sickCluster while sick is set.
func (o *Options) reportHealth(ctx context.Context, ns, rolloutName string, sick *atomic.Bool) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	svc := &pkgservice.Service{Client: o.Client, APIReader: o.Client}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			list := &porchv1alpha1.PackageRevisionList{}
			if err := o.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{configv1alpha1.PackageRolloutLabel: rolloutName}); err == nil {
				for i := range list.Items {
					pr := &list.Items[i]
					if pr.Spec.Lifecycle != porchv1alpha1.LifecyclePublished || pr.Status.PublishTimestamp == nil || time.Since(pr.Status.PublishTimestamp.Time) < time.Second {
						continue
					}
					want := porchv1alpha1.ConditionStatus("True")
					msg := "synced to the cluster (simulated)"
					if pr.Spec.Repository == sickCluster && sick.Load() {
						want, msg = "False", "pods crash-looping (simulated)"
					}
					_, _ = svc.WriteStatus(ctx, pr, func(pr *porchv1alpha1.PackageRevision) bool {
						return pkgservice.SetConditions(&pr.Status.Conditions, porchv1alpha1.Condition{Type: healthCondition, Status: want, Reason: "Reported", Message: msg})
					})
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}
