package v1alpha1

import "testing"

// What people are shown: git's lifecycle, and the requested one with why
// it waits when they differ.
func TestPackageRevision_ShownLifecycle(t *testing.T) {
	waiting := Condition{Type: "Ready", Status: "False", Reason: "PackageConflict", Message: "the kind Widget.example.com is provided by widgets in cluster-01"}
	for _, tc := range []struct {
		name       string
		spec, git  Lifecycle
		label      string
		conditions []Condition
		want       string
	}{
		{"new, never shown", LifecycleDraft, "", "", nil, "Draft"},
		{"no lifecycle is Draft", "", "", "", nil, "Draft"},
		{"as asked", LifecyclePublished, LifecyclePublished, "", nil, "Published"},
		{"waiting, with why", LifecyclePublished, LifecycleProposed, "", []Condition{waiting},
			"Proposed → Published (waiting: PackageConflict: the kind Widget.example.com is provided by widgets in cluster-01)"},
		{"not carried out yet", LifecycleProposed, LifecycleDraft, "", []Condition{{Type: "Ready", Status: "True", Reason: "Ready"}}, "Draft → Proposed"},
		{"shown before status.lifecycle existed: the label", LifecyclePublished, "", "Proposed", nil, "Proposed → Published"},
	} {
		pr := &PackageRevision{Spec: PackageRevisionSpec{Lifecycle: tc.spec}, Status: PackageRevisionStatus{Lifecycle: tc.git, Conditions: tc.conditions}}
		if tc.label != "" {
			pr.Labels = map[string]string{LifecycleLabel: tc.label}
		}
		if got := pr.ShownLifecycle(); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	// A table's column: the reason, not the message.
	pr := &PackageRevision{Spec: PackageRevisionSpec{Lifecycle: LifecyclePublished}, Status: PackageRevisionStatus{Lifecycle: LifecycleProposed, Conditions: []Condition{waiting}}}
	if got, want := pr.ShortLifecycle(), "Proposed → Published (waiting: PackageConflict)"; got != want {
		t.Errorf("ShortLifecycle: got %q, want %q", got, want)
	}
}
