package demo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/rpkg"
)

const (
	// groupSet is the demo's group: the shop's app, config and policy.
	groupSet = "shop"
	// groupLabel is the label the set's template gives its drafts, which
	// the group's rollout selects.
	groupLabel = "release"
	// heldCluster is where one member of the group is held back for
	// review at first: its whole group waits.
	heldCluster = "cluster-10"
	heldPackage = "shop-policy"
)

// releaseGroup releases the shop group to the eu-west clusters: on the
// first run its first revisions, later the next revision of all three
// packages, published by the platform team and taken in one command
// (scion rpkg upgrade --variant-set shop --to N). Each cluster's three
// drafts are proposed, but for one member held back in heldCluster; a
// PackageRollout with spec.group publishes each cluster's group whole,
// in waves: heldCluster waits, naming the member, with nothing of its
// group published, until that member is proposed.
func (o *Options) releaseGroup(ctx context.Context, f *Fleet) error {
	ns := f.Namespace
	set := &configv1alpha2.PackageVariantSet{}
	if err := o.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: groupSet}, set); err != nil {
		return err
	}
	rc := &rpkg.Client{Client: o.Client, Namespace: ns, Timeout: o.timeout()}
	version := string(set.Spec.Upstreams[0].Revision)
	o.say("")
	if o.groupPublished(ctx, ns) {
		next, earlier, err := o.publishGroupNext(ctx, f, set)
		if err != nil {
			return err
		}
		o.say("==> the platform team publishes %s of the shop group (%s); %s rpkg upgrade --variant-set %s --to %s", next, packagesOf(set), o.scion(), groupSet, next)
		if earlier {
			o.say("    (published by an earlier run: the same revisions again)")
		}
		done, err := rc.UpgradeVariants(ctx, rpkg.Selection{VariantSet: groupSet}, configv1alpha1.RevisionNumber(next), nil)
		if err != nil {
			return err
		}
		for _, u := range done {
			o.say("    %s %s: %s (%d variants)", u.Kind, u.Name, strings.Join(u.Changes, ", "), u.Variants)
		}
		version = next
	} else {
		o.say("==> the shop group (%s) goes to the eu-west clusters: PackageVariantSet %s with spec.upstreams, one variant per cluster and package", packagesOf(set), groupSet)
	}
	drafts, err := o.groupDrafts(ctx, ns, version, int(set.Status.Summary.Desired))
	if err != nil {
		return err
	}
	var held string
	for _, pr := range drafts {
		if pr.Spec.Repository == heldCluster && pr.Spec.PackageName == heldPackage {
			held = pr.Name
			continue
		}
		if _, err := rc.Propose(ctx, pr.Name); err != nil {
			return err
		}
	}
	o.say("==> %d drafts proposed; %s is held back for review (still a Draft)", len(drafts)-1, held)
	name := groupSet + "-" + version
	ro := &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: configv1alpha1.PackageRolloutSpec{
		Group:            &configv1alpha1.RolloutGroup{PackageVariantSet: groupSet},
		RevisionSelector: metav1.LabelSelector{MatchLabels: map[string]string{groupLabel: groupSet}},
		Waves:            []configv1alpha1.RolloutWave{{Name: "canary", MaxTargets: ptr.To[int32](1)}},
		Health:           &configv1alpha1.RolloutHealth{ConditionType: healthCondition},
		SoakTime:         &metav1.Duration{Duration: 2 * time.Second},
		ProgressDeadline: &metav1.Duration{Duration: 30 * time.Second},
	}}
	if err := o.printPlan(ctx, ns, ro); err != nil {
		return err
	}
	var sick atomic.Bool
	stop := o.reportHealth(ctx, ns, name, &sick)
	defer stop()
	if err := o.Client.Create(ctx, ro); err != nil {
		return fmt.Errorf("PackageRollout %s: %w", name, err)
	}
	o.say("==> kubectl apply PackageRollout %s: spec.group %s, waves canary (1 cluster), remainder; each cluster's three revisions are published together", name, groupSet)
	if err := o.waitRollout(ctx, ro, func(ro *configv1alpha1.PackageRollout) bool {
		return ro.Status.CurrentWave == configv1alpha1.RemainderWave && strings.Contains(ro.Status.Blocked, heldCluster+" waits for its group") && !strings.Contains(ro.Status.Blocked, "not published yet")
	}); err != nil {
		return err
	}
	cur := &configv1alpha1.PackageRollout{}
	if err := o.Client.Get(ctx, client.ObjectKeyFromObject(ro), cur); err != nil {
		return err
	}
	o.say("==> %s waits, with nothing of its group published: %s", heldCluster, cur.Status.Blocked)
	o.say("==> %s rpkg propose %s", o.scion(), held)
	if _, err := rc.Propose(ctx, held); err != nil {
		return err
	}
	return o.finishRollout(ctx, ro)
}

func packagesOf(set *configv1alpha2.PackageVariantSet) string {
	var out []string
	for _, u := range set.Spec.AllUpstreams() {
		out = append(out, u.Package)
	}
	return strings.Join(out, ", ")
}

// groupRevisions lists the group's revisions (by its template's label).
func (o *Options) groupRevisions(ctx context.Context, ns string) ([]porchv1alpha1.PackageRevision, error) {
	list := &porchv1alpha1.PackageRevisionList{}
	if err := o.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{groupLabel: groupSet}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// groupPublished says whether the group was released before (a run
// before this one): then this run releases its next revision.
func (o *Options) groupPublished(ctx context.Context, ns string) bool {
	revs, err := o.groupRevisions(ctx, ns)
	return err == nil && slices.ContainsFunc(revs, func(pr porchv1alpha1.PackageRevision) bool {
		return pr.Spec.Lifecycle == porchv1alpha1.LifecyclePublished
	})
}

// groupDrafts waits for the group's n drafts made from upstream revision
// version, sorted by name.
func (o *Options) groupDrafts(ctx context.Context, ns, version string, n int) ([]porchv1alpha1.PackageRevision, error) {
	var drafts []porchv1alpha1.PackageRevision
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, o.timeout(), true, func(ctx context.Context) (bool, error) {
		revs, err := o.groupRevisions(ctx, ns)
		if err != nil {
			return false, nil
		}
		drafts = drafts[:0]
		for _, pr := range revs {
			if lock := pr.Status.UpstreamLock; pr.Spec.Lifecycle == porchv1alpha1.LifecycleDraft && strings.HasSuffix("/"+lock.Ref(), "/"+version) {
				drafts = append(drafts, pr)
			}
		}
		return len(drafts) == n, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the %d drafts of the shop group at %s (have %d): %w", n, version, len(drafts), err)
	}
	slices.SortFunc(drafts, func(a, b porchv1alpha1.PackageRevision) int { return strings.Compare(a.Name, b.Name) })
	return drafts, nil
}

// groupRelease is the release of the shop group after its first: the
// release number in shop-config moves to it; the others are copied.
const groupRelease = 2

// publishGroupNext publishes the group's second release (each package's
// first revision, shop-config's release number moved), as the platform
// team would, unless an earlier run did, and returns its revision (vN)
// and whether an earlier run published it.
func (o *Options) publishGroupNext(ctx context.Context, f *Fleet, set *configv1alpha2.PackageVariantSet) (string, bool, error) {
	st, err := o.openStore(ctx, f.Catalog)
	if err != nil {
		return "", false, err
	}
	if err := st.Fetch(ctx); err != nil {
		return "", false, err
	}
	want := map[string]*pkg.Package{}
	latest := 0
	for _, u := range set.Spec.AllUpstreams() {
		revs, err := st.ListPackage(ctx, u.Package)
		if err != nil {
			return "", false, err
		}
		latest = max(latest, latestRevision(revs))
		p, err := readRevision(ctx, st, u.Package, 1)
		if err != nil {
			return "", false, err
		}
		if data, ok := p.File("configmap.yaml"); ok {
			lines := strings.Split(string(data), "\n")
			for i, l := range lines {
				if strings.HasPrefix(strings.TrimSpace(l), "release:") {
					lines[i] = l[:strings.Index(l, "release:")] + fmt.Sprintf("release: %q", fmt.Sprint(groupRelease))
				}
			}
			if err := p.SetFile("configmap.yaml", []byte(strings.Join(lines, "\n"))); err != nil {
				return "", false, err
			}
		}
		want[u.Package] = p
	}
	if n, err := releasedAs(ctx, st, want); err != nil || n > 0 {
		return fmt.Sprintf("v%d", n), n > 0, err
	}
	next := fmt.Sprintf("v%d", latest+1)
	for _, u := range set.Spec.AllUpstreams() {
		if _, err := publish(ctx, st, u.Package, next, want[u.Package]); err != nil {
			return "", false, err
		}
	}
	// Published in git, outside the Repository's sync: ask it to show
	// them, and wait until the cluster does (what scion rpkg upgrade
	// checks).
	repo := &configv1alpha1.Repository{}
	if err := o.Client.Get(ctx, types.NamespacedName{Namespace: f.Namespace, Name: f.Catalog}, repo); err != nil {
		return "", false, err
	}
	if err := pkgservice.RequestSync(ctx, o.Client, repo); err != nil {
		return "", false, err
	}
	err = wait.PollUntilContextTimeout(ctx, 300*time.Millisecond, o.timeout(), true, func(ctx context.Context) (bool, error) {
		for _, u := range set.Spec.AllUpstreams() {
			pr := &porchv1alpha1.PackageRevision{}
			if err := o.Client.Get(ctx, types.NamespacedName{Namespace: f.Namespace, Name: pkgservice.ObjectName(f.Catalog, u.Package, next)}, pr); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return "", false, fmt.Errorf("waiting for the shop group's %s to show: %w", next, err)
	}
	return next, false, nil
}
