// Package deployed reads what target clusters run of the packages Scion
// publishes, from the GitOps engine that deploys them there (Flux's
// Kustomizations), and compares it with what was published: which
// published revision each cluster runs, and whether it is healthy, behind
// or drifted. Clusters are reached with a kubeconfig from a Secret, read
// with no more than get on Kustomizations.
package deployed

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// KustomizationGVR is the resource of Flux's Kustomizations.
var KustomizationGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}

// Kustomization is what Scion reads of a Flux Kustomization.
type Kustomization struct {
	Namespace, Name string
	// Generation and ObservedGeneration (its Ready condition's, else
	// status.observedGeneration): Flux has acted on the latest spec when
	// they are equal.
	Generation, ObservedGeneration int64
	// Suspended: spec.suspend.
	Suspended bool
	// Waits: spec.wait, or spec.healthChecks: Ready then says what it
	// applied is healthy (kstatus), not only applied.
	Waits bool
	// Ready is its Ready condition ("" when it has none yet).
	Ready                  metav1.ConditionStatus
	ReadyReason, ReadyText string
	// LastAppliedRevision and LastAttemptedRevision, as Flux writes them.
	LastAppliedRevision, LastAttemptedRevision string
}

// Key is namespace/name.
func (k *Kustomization) Key() string { return k.Namespace + "/" + k.Name }

// KustomizationFrom reads a Kustomization as the API server returns it.
func KustomizationFrom(u *unstructured.Unstructured) *Kustomization {
	k := &Kustomization{Namespace: u.GetNamespace(), Name: u.GetName(), Generation: u.GetGeneration()}
	k.ObservedGeneration, _, _ = unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	k.Suspended, _, _ = unstructured.NestedBool(u.Object, "spec", "suspend")
	k.Waits, _, _ = unstructured.NestedBool(u.Object, "spec", "wait")
	if checks, _, _ := unstructured.NestedSlice(u.Object, "spec", "healthChecks"); len(checks) > 0 {
		k.Waits = true
	}
	k.LastAppliedRevision, _, _ = unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
	k.LastAttemptedRevision, _, _ = unstructured.NestedString(u.Object, "status", "lastAttemptedRevision")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		s, _ := m["status"].(string)
		k.Ready = metav1.ConditionStatus(s)
		// The generation the Ready condition describes: Flux writes
		// status.observedGeneration only at the end of a reconcile (it
		// reads -1 for a while after Ready turned True).
		switch g := m["observedGeneration"].(type) {
		case int64:
			k.ObservedGeneration = g
		case float64:
			k.ObservedGeneration = int64(g)
		}
		k.ReadyReason, _ = m["reason"].(string)
		k.ReadyText, _ = m["message"].(string)
	}
	return k
}

// SourceRevision is a revision as Flux writes it: main@sha1:<commit> for
// a git source, v3@sha256:<digest> for an OCI one.
type SourceRevision struct {
	// Ref is the branch, tag or OCI tag ("" when it names none).
	Ref string
	// ID is the commit (hex) or the digest (sha256:hex).
	ID string
}

// ParseRevision reads a Flux source revision: REF@sha1:HEX,
// REF@sha256:HEX, sha1:HEX, sha256:HEX, or the older REF/HEX.
func ParseRevision(s string) (SourceRevision, error) {
	ref, id := "", s
	if i := strings.LastIndex(s, "@"); i >= 0 {
		ref, id = s[:i], s[i+1:]
	}
	switch {
	case strings.HasPrefix(id, "sha1:"):
		id = strings.TrimPrefix(id, "sha1:")
	case strings.HasPrefix(id, "sha256:"):
	case !strings.Contains(s, "@") && strings.Contains(s, "/"):
		i := strings.LastIndex(s, "/")
		ref, id = s[:i], s[i+1:]
	default:
		return SourceRevision{}, fmt.Errorf("source revision %q: not REF@sha1:COMMIT or REF@sha256:DIGEST", s)
	}
	hex := strings.TrimPrefix(id, "sha256:")
	if len(hex) < 7 || strings.Trim(hex, "0123456789abcdef") != "" {
		return SourceRevision{}, fmt.Errorf("source revision %q: %q is not a commit or digest", s, id)
	}
	return SourceRevision{Ref: ref, ID: id}, nil
}
