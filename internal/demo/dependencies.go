package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgdeps"
	"github.com/scion-dev/scion/internal/rpkg"
	"github.com/scion-dev/scion/internal/tree"
)

// The objects of the dependencies act.
const (
	// depsSet is the set whose package needs widget-crds in each cluster.
	depsSet = "widget-app"
	// conflictVariant puts widgets-legacy, which serves the same kind as
	// widget-crds, into cluster-01.
	conflictVariant = "widgets-legacy-cluster-01"
	// depsCluster is where the act looks.
	depsCluster = "cluster-01"
)

// showDependencies shows widget-app's dependency installed into every
// cluster by its variants, publishes it in cluster-01 (the dependants'
// gate there turns True), and shows the deliberate conflict of
// cluster-01's lock: the second provider's publication is refused.
func (o *Options) showDependencies(ctx context.Context, ns string) error {
	set := &configv1alpha2.PackageVariantSet{}
	if err := o.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: depsSet}, set); err != nil {
		return err
	}
	pvs := &configv1alpha1.PackageVariantList{}
	if err := o.Client.List(ctx, pvs, client.InNamespace(ns)); err != nil {
		return err
	}
	var dependant string
	installed := 0
	for _, pv := range pvs.Items {
		if pv.Labels[configv1alpha1.DependencyLabel] != "" {
			installed++
		}
		if pv.Labels[configv1alpha2.PackageVariantSetLabel] == string(set.UID) && pv.Spec.Downstream.Repo == depsCluster {
			dependant = pv.Name
		}
	}
	if dependant == "" {
		return fmt.Errorf("PackageVariantSet %s has no variant in %s", depsSet, depsCluster)
	}
	o.say("")
	o.say("==> dependencies: widget-app needs widget-crds; its variants installed it into each cluster (%d PackageVariants labelled %s)", installed, configv1alpha1.DependencyLabel)
	crds := pkgdeps.DependencyVariantName(depsCluster, "widget-crds")
	if err := o.printTree(ctx, ns, "pvar", dependant); err != nil {
		return err
	}

	rc := &rpkg.Client{Client: o.Client, Namespace: ns, Timeout: o.timeout()}
	crdsDraft, err := o.draftOf(ctx, ns, crds)
	if err != nil {
		return err
	}
	if crdsDraft.Spec.Lifecycle != porchv1alpha1.LifecyclePublished {
		o.say("==> %s rpkg propose %s && %s rpkg approve %s", o.scion(), crdsDraft.Name, o.scion(), crdsDraft.Name)
		if _, err := rc.Propose(ctx, crdsDraft.Name); err != nil {
			return err
		}
		if _, err := rc.Approve(ctx, crdsDraft.Name); err != nil {
			return err
		}
	}
	o.say("    widget-crds is Published in %s: the dependencies gate of %s turns True", depsCluster, dependant)
	if err := o.waitVariant(ctx, ns, dependant, func(pv *configv1alpha1.PackageVariant) bool {
		return meta.IsStatusConditionTrue(pv.Status.Conditions, configv1alpha1.DependenciesReadyCondition)
	}); err != nil {
		return err
	}
	if err := o.printTree(ctx, ns, "pvar", dependant); err != nil {
		return err
	}

	o.say("")
	o.say("==> a deliberate conflict: %s puts widgets-legacy, which also serves example.com/v1/Widget, into %s", conflictVariant, depsCluster)
	legacyPV := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: conflictVariant, Namespace: ns}}
	if err := createOrUpdate(ctx, o.Client, legacyPV, func() {
		legacyPV.Spec.Upstream = &configv1alpha1.Upstream{Repo: "blueprints", Package: "widgets-legacy", Revision: "v1"}
		legacyPV.Spec.Downstream = &configv1alpha1.Downstream{Repo: depsCluster, Package: "widgets-legacy"}
	}); err != nil {
		return err
	}
	if err := o.waitVariant(ctx, ns, conflictVariant, func(pv *configv1alpha1.PackageVariant) bool {
		return meta.IsStatusConditionTrue(pv.Status.Conditions, configv1alpha1.PackageConflictCondition)
	}); err != nil {
		return fmt.Errorf("%s shows no PackageConflict: %w", conflictVariant, err)
	}
	var conflict string
	err = wait.PollUntilContextTimeout(ctx, time.Second, o.timeout(), true, func(ctx context.Context) (bool, error) {
		lock := &configv1alpha1.PackageLock{}
		if err := o.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: depsCluster}, lock); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, c := range lock.Conflicts {
			conflict = c.Message
		}
		return conflict != "", nil
	})
	if err != nil {
		return fmt.Errorf("cluster-01's PackageLock shows no conflict: %w", err)
	}
	o.say("==> kubectl get plock %s -o jsonpath='{.conflicts[*].message}'", depsCluster)
	o.say("    %s", conflict)
	legacy, err := o.draftOf(ctx, ns, conflictVariant)
	if err != nil {
		return err
	}
	o.say("==> %s rpkg propose %s && %s rpkg approve %s", o.scion(), legacy.Name, o.scion(), legacy.Name)
	if legacy.Spec.Lifecycle == porchv1alpha1.LifecycleDraft {
		if _, err := rc.Propose(ctx, legacy.Name); err != nil {
			return err
		}
	}
	got, err := rc.Approve(ctx, legacy.Name)
	switch {
	case err != nil:
		return err
	case got.GitLifecycle() == porchv1alpha1.LifecyclePublished:
		return errors.New("widgets-legacy was published next to widget-crds")
	}
	o.say("    %s is %s", got.Name, got.ShownLifecycle())
	o.say("    the approval is recorded and waits: kubectl shows LIFECYCLE Proposed (what git has), REQUESTED Published; it publishes once the conflict is gone")
	o.say("    %s stays Ready: a draft that cannot be published does not unsettle what the cluster runs", dependant)
	o.say("    (delete %s to end the conflict: kubectl delete pvar %s)", conflictVariant, conflictVariant)
	return nil
}

// printTree prints one object's tree.
func (o *Options) printTree(ctx context.Context, ns, kind, name string) error {
	t, err := tree.Build(ctx, o.Client, ns, kind, name, tree.Options{})
	if err != nil {
		return err
	}
	return tree.Print(o.Out, t, false)
}

// waitVariant waits until a variant satisfies ok.
func (o *Options) waitVariant(ctx context.Context, ns, name string, ok func(*configv1alpha1.PackageVariant) bool) error {
	return wait.PollUntilContextTimeout(ctx, time.Second, o.timeout(), true, func(ctx context.Context) (bool, error) {
		pv := &configv1alpha1.PackageVariant{}
		if err := o.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pv); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return ok(pv), nil
	})
}
