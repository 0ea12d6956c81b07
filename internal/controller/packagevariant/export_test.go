package packagevariant

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/kindwatch"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/variant"
)

// ClusterObjects exposes the controller's injection source to the tests.
func ClusterObjects(reader client.Reader, mapper meta.RESTMapper, namespace string, kinds kindwatch.Kinds) variant.ObjectSource {
	return &clusterObjects{reader: reader, definitions: reader, watches: &kindwatch.Watches{Caches: &kindwatch.Caches{Kinds: kinds}}, mapper: mapper, namespace: namespace}
}

// Watch exposes the controller's watches (with their priorities) to the
// tests.
func (r *Reconciler) Watch(b *builder.Builder) *builder.Builder { return r.watch(b) }

// WriteEnsuredStatus writes pv's status as a complete reconcile that
// ensured its downstream does, through the controller's one status write.
func (r *Reconciler) WriteEnsuredStatus(ctx context.Context, pv *configv1alpha1.PackageVariant) error {
	s := &scope{pv: pv, conditions: []metav1.Condition{{Type: configv1alpha1.DownstreamEnsuredCondition, Status: metav1.ConditionTrue,
		Reason: "DownstreamReady", Message: "the downstream draft reflects the variant"}}}
	return r.patchStatus(ctx, s, reconciler.Outcome{})
}
