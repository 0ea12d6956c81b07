package v1alpha2_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	porchv1alpha2 "github.com/scion-dev/scion/api/porch/v1alpha2"
)

// A v1alpha1 revision of each task type reads as v1alpha2 with the task
// as its source, the revision number in the status and the package's
// conditions apart from the controller's; converted back, it is the
// revision it was.
func TestConversion_roundTrip(t *testing.T) {
	now := metav1.Now()
	tasks := []porchv1alpha1.Task{
		{Type: porchv1alpha1.TaskTypeInit, Init: &porchv1alpha1.PackageInitTaskSpec{Description: "d", Keywords: []string{"k"}, Site: "s"}},
		{Type: porchv1alpha1.TaskTypeClone, Clone: &porchv1alpha1.PackageCloneTaskSpec{UpstreamRef: porchv1alpha1.UpstreamPackage{UpstreamRef: &porchv1alpha1.PackageRevisionRef{Name: "catalog.base.v1"}}}},
		{Type: porchv1alpha1.TaskTypeClone, Clone: &porchv1alpha1.PackageCloneTaskSpec{UpstreamRef: porchv1alpha1.UpstreamPackage{Type: "git",
			Git: &porchv1alpha1.GitPackage{Repo: "https://example.com/r.git", Ref: "main", Directory: "pkgs/a", SecretRef: &porchv1alpha1.SecretRef{Name: "creds"}}}}},
		{Type: porchv1alpha1.TaskTypeEdit, Edit: &porchv1alpha1.PackageEditTaskSpec{SourceRef: porchv1alpha1.PackageRevisionRef{Name: "c.app.ws"}}},
		{Type: porchv1alpha1.TaskTypeUpgrade, Upgrade: &porchv1alpha1.PackageUpgradeTaskSpec{OldUpstream: porchv1alpha1.PackageRevisionRef{Name: "o"},
			NewUpstream: porchv1alpha1.PackageRevisionRef{Name: "n"}, LocalPackageRevisionRef: porchv1alpha1.PackageRevisionRef{Name: "l"}, Strategy: kptfilev1.CopyMerge}},
	}
	sources := []string{"init", "clone", "clone", "copy", "upgrade"}
	s := runtime.NewScheme()
	if err := porchv1alpha2.RegisterConversions(s); err != nil {
		t.Fatal(err)
	}
	for i, task := range tasks {
		in := &porchv1alpha1.PackageRevision{
			ObjectMeta: metav1.ObjectMeta{Name: "c.app.ws", Namespace: "ns", ResourceVersion: "7", Labels: map[string]string{"a": "b"}},
			Spec: porchv1alpha1.PackageRevisionSpec{PackageName: "app", Repository: "c", WorkspaceName: "ws", Revision: 3, Lifecycle: porchv1alpha1.LifecyclePublished,
				Tasks: []porchv1alpha1.Task{task}, ReadinessGates: []kptfilev1.ReadinessGate{{ConditionType: "example.com/ok"}}},
			Status: porchv1alpha1.PackageRevisionStatus{
				Conditions: []porchv1alpha1.Condition{
					{Type: "example.com/ok", Status: "True", Reason: "R", Message: "m"},
					{Type: "Ready", Status: "True", Reason: "Synced", LastTransitionTime: &now, ObservedGeneration: 2},
				},
				ObservedGeneration: 2, PublishedBy: "abe", PublishTimestamp: &now, Deployment: true,
				UpstreamLock: &kptfilev1.UpstreamLock{Type: kptfilev1.GitOrigin, Git: &kptfilev1.GitLock{Repo: "r", Ref: "base/v1", Commit: "abc"}},
			},
		}
		var out porchv1alpha2.PackageRevision
		if err := s.Convert(in, &out, nil); err != nil {
			t.Fatal(err)
		}
		if out.Status.Revision != 3 || out.Status.CreationSource != sources[i] || out.Status.PublishedBy != "abe" || out.Status.PublishedAt == nil || !out.Status.Deployment {
			t.Errorf("%s: status %+v", task.Type, out.Status)
		}
		if len(out.Status.PackageConditions) != 1 || out.Status.PackageConditions[0].Type != "example.com/ok" ||
			len(out.Status.Conditions) != 1 || out.Status.Conditions[0].Type != "Ready" || !out.Status.Conditions[0].LastTransitionTime.Equal(&now) {
			t.Errorf("%s: conditions %+v / %+v", task.Type, out.Status.PackageConditions, out.Status.Conditions)
		}
		if out.Spec.Source == nil {
			t.Fatalf("%s: no source", task.Type)
		}
		var back porchv1alpha1.PackageRevision
		if err := s.Convert(&out, &back, nil); err != nil {
			t.Fatal(err)
		}
		want := in.DeepCopy()
		if u := want.Spec.Tasks[0].Clone; u != nil && u.UpstreamRef.Git != nil {
			want.Spec.Tasks[0].Clone.UpstreamRef.Type = "git"
		}
		// Ready keeps its time; the package's condition had none.
		if !equality.Semantic.DeepEqual(back.Spec, want.Spec) || !equality.Semantic.DeepEqual(back.Status, want.Status) || !equality.Semantic.DeepEqual(back.ObjectMeta, want.ObjectMeta) {
			t.Errorf("%s: round trip\n got %+v\nwant %+v", task.Type, back, want)
		}
	}
}

// What v1alpha1 cannot hold is refused naming the field.
func TestConversion_refused(t *testing.T) {
	for _, tc := range []struct {
		spec porchv1alpha2.PackageRevisionSpec
		want string
	}{
		{porchv1alpha2.PackageRevisionSpec{PackageMetadata: &porchv1alpha2.PackageMetadata{Labels: map[string]string{"a": "b"}}}, "spec.packageMetadata: "},
		{porchv1alpha2.PackageRevisionSpec{Source: &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{Subpackage: "x"}}}, "spec.source.init.subpackage: "},
		{porchv1alpha2.PackageRevisionSpec{Source: &porchv1alpha2.PackageSource{}}, "spec.source: exactly one of init, cloneFrom, copyFrom and upgrade must be set, not 0 []"},
		{porchv1alpha2.PackageRevisionSpec{Source: &porchv1alpha2.PackageSource{CopyFrom: &porchv1alpha2.PackageRevisionRef{Name: "a"}, Upgrade: &porchv1alpha2.PackageUpgradeSpec{}}}, "not 2 [copyFrom upgrade]"},
	} {
		err := porchv1alpha2.ToV1alpha1(&porchv1alpha2.PackageRevision{Spec: tc.spec}, &porchv1alpha1.PackageRevision{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.spec, err, tc.want)
		}
	}
	if err := porchv1alpha2.ToV1alpha1(&porchv1alpha2.PackageRevision{Spec: porchv1alpha2.PackageRevisionSpec{PackageMetadata: &porchv1alpha2.PackageMetadata{}}}, &porchv1alpha1.PackageRevision{}); err != nil {
		t.Errorf("an empty packageMetadata: %v", err)
	}
}
