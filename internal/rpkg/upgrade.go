package rpkg

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgservice"
)

// Upgraded is one object a bulk upgrade changed (or found at the
// revision already): a PackageVariantSet, whose entries of spec.upstream
// or spec.upstreams it moved, or a PackageVariant of no set.
type Upgraded struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Changes are the upstreams moved, "PACKAGE FROM -> TO"; empty when
	// every one was at the revision already.
	Changes []string `json:"changes,omitempty"`
	// Variants counts the selected revisions' variants it drafts for.
	Variants int `json:"variants"`
}

// UpgradeVariants moves the upstream of every variant that made one of the
// revisions sel selects to revision to (of the same upstream package):
// for a variant a PackageVariantSet generated, the set's upstream entry
// (one edit per set, which the set passes on to all its variants of that
// upstream); for any other, the variant's own spec.upstream. Each variant
// then drafts the upgrade, as it does for any upstream change. packages,
// when given, limits it to variants of those upstream packages.
//
// Nothing is changed unless everything can be: every selected revision
// must be a variant's, and the revision must be published for each
// upstream package (to -1, the latest, is not checked).
func (c *Client) UpgradeVariants(ctx context.Context, sel Selection, to configv1alpha1.RevisionNumber, packages []string) ([]Upgraded, error) {
	n, err := to.Number()
	if err != nil && !to.Latest() {
		return nil, fmt.Errorf("--to: %w, or -1 for the latest", err)
	}
	revs, err := c.Select(ctx, sel)
	if err != nil {
		return nil, err
	}
	pvl := &configv1alpha1.PackageVariantList{}
	if err := c.Client.List(ctx, pvl, client.InNamespace(c.Namespace)); err != nil {
		return nil, fmt.Errorf("listing PackageVariants: %w", err)
	}
	byLabel := map[string]*configv1alpha1.PackageVariant{}
	for i := range pvl.Items {
		byLabel[pkgservice.LabelValue(pvl.Items[i].Name)] = &pvl.Items[i]
	}
	// What to change: sets by name, with the packages of their selected
	// variants; variants of no set by name.
	sets := map[string]map[string]bool{}
	setVariants := map[string]map[string]bool{}
	own := map[string]*configv1alpha1.PackageVariant{}
	upstreams := map[string]bool{} // repo/package to check
	var orphans []string
	for _, pr := range revs {
		pv := byLabel[pr.Labels[configv1alpha1.PackageVariantLabel]]
		if pv == nil || pv.Spec.Upstream == nil {
			orphans = append(orphans, pr.Name)
			continue
		}
		u := pv.Spec.Upstream
		if len(packages) > 0 && !slices.Contains(packages, u.Package) {
			continue
		}
		upstreams[u.Repo+"/"+u.Package] = true
		owner := metav1.GetControllerOf(pv)
		if owner == nil || owner.Kind != "PackageVariantSet" {
			own[pv.Name] = pv
			continue
		}
		ref := owner.Name
		if sets[ref] == nil {
			sets[ref], setVariants[ref] = map[string]bool{}, map[string]bool{}
		}
		sets[ref][u.Package] = true
		setVariants[ref][pv.Name] = true
	}
	if len(orphans) > 0 {
		return nil, fmt.Errorf("%s: not made by a PackageVariant; upgrade each with scion rpkg upgrade NAME --revision N --workspace WS, or narrow the selection", strings.Join(orphans, ", "))
	}
	if len(sets)+len(own) == 0 {
		return nil, fmt.Errorf("the selection matches no revision of a PackageVariant%s", packagesNote(packages))
	}
	if !to.Latest() {
		if err := c.checkPublished(ctx, upstreams, n, to); err != nil {
			return nil, err
		}
	}
	var out []Upgraded
	for _, name := range slices.Sorted(maps.Keys(sets)) {
		changes, err := c.upgradeSet(ctx, name, sets[name], to)
		if err != nil {
			return out, err
		}
		out = append(out, Upgraded{Kind: "PackageVariantSet", Name: name, Changes: changes, Variants: len(setVariants[name])})
	}
	for _, name := range slices.Sorted(maps.Keys(own)) {
		changes, err := c.upgradeVariant(ctx, name, to)
		if err != nil {
			return out, err
		}
		out = append(out, Upgraded{Kind: "PackageVariant", Name: name, Changes: changes, Variants: 1})
	}
	return out, nil
}

func packagesNote(packages []string) string {
	if len(packages) == 0 {
		return ""
	}
	return " of upstream package " + strings.Join(packages, ", ")
}

// checkPublished says which upstream package (repo/package) has no
// published revision n.
func (c *Client) checkPublished(ctx context.Context, upstreams map[string]bool, n int, to configv1alpha1.RevisionNumber) error {
	list := &porchv1alpha1.PackageRevisionList{}
	if err := c.Client.List(ctx, list, client.InNamespace(c.Namespace)); err != nil {
		return fmt.Errorf("listing PackageRevisions: %w", err)
	}
	have := map[string]bool{}
	for _, pr := range list.Items {
		if pr.GitLifecycle() == porchv1alpha1.LifecyclePublished && pr.Spec.Revision == n {
			have[pr.Spec.Repository+"/"+pr.Spec.PackageName] = true
		}
	}
	var missing []string
	for _, u := range slices.Sorted(maps.Keys(upstreams)) {
		if !have[u] {
			missing = append(missing, u)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("--to %s: no published revision %d of %s; nothing was changed", to, n, strings.Join(missing, ", "))
	}
	return nil
}

// moveUpstream sets the upstream u (as the API server holds it) to
// revision to, and says what changed ("" when it was there).
func moveUpstream(u map[string]any, to configv1alpha1.RevisionNumber) string {
	cur := configv1alpha1.RevisionNumber(fmt.Sprint(u["revision"]))
	from := string(cur)
	switch {
	case u["tag"] != nil:
		from = fmt.Sprint("tag ", u["tag"])
	case u["versionRange"] != nil:
		from = fmt.Sprint("versionRange ", u["versionRange"])
	case u["workspaceName"] != nil:
		from = fmt.Sprint("workspace ", u["workspaceName"])
	case sameRevision(cur, to):
		return ""
	}
	for _, k := range []string{"tag", "versionRange", "workspaceName", "updatePolicy"} {
		delete(u, k)
	}
	u["revision"] = string(to)
	return fmt.Sprintf("%s %s -> %s", u["package"], from, to)
}

// moveAttempts bounds the compare-and-swaps of one object's upstreams
// that others' writes of them make fail.
const moveAttempts = 10

// moveUpstreams moves the upstreams (spec.upstream, or spec.upstreams) of
// an object whose packages are in packages (all when nil) to revision to,
// as a compare-and-swap of that field alone (a JSON patch testing its
// value): others editing the object meanwhile (labels, targets,
// templates) neither fail it nor are overwritten; someone moving the same
// upstreams makes it read them again.
func (c *Client) moveUpstreams(ctx context.Context, kind schema.GroupVersionKind, name string, packages map[string]bool, to configv1alpha1.RevisionNumber) ([]string, error) {
	var err error
	for range moveAttempts {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(kind)
		if err = c.Client.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: name}, obj); err != nil {
			return nil, fmt.Errorf("%s %s: %w", kind.Kind, name, err)
		}
		spec, _ := obj.Object["spec"].(map[string]any)
		path, old := "/spec/upstream", spec["upstream"]
		if old == nil {
			path, old = "/spec/upstreams", spec["upstreams"]
		}
		next := runtime.DeepCopyJSONValue(old)
		entries := []any{next}
		if path == "/spec/upstreams" {
			entries, _ = next.([]any)
		}
		var changes []string
		for _, e := range entries {
			u, ok := e.(map[string]any)
			if ok && (packages == nil || packages[fmt.Sprint(u["package"])]) {
				if ch := moveUpstream(u, to); ch != "" {
					changes = append(changes, ch)
				}
			}
		}
		if len(changes) == 0 {
			return nil, nil
		}
		ops, err := json.Marshal([]map[string]any{{"op": "test", "path": path, "value": old}, {"op": "replace", "path": path, "value": next}})
		if err != nil {
			return nil, err
		}
		if err = c.Client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, ops)); err == nil {
			return changes, nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsInvalid(err) {
			break
		}
	}
	return nil, fmt.Errorf("%s %s: %w", kind.Kind, name, err)
}

// upgradeSet moves the set's upstream entries of packages to revision to.
func (c *Client) upgradeSet(ctx context.Context, name string, packages map[string]bool, to configv1alpha1.RevisionNumber) ([]string, error) {
	return c.moveUpstreams(ctx, configv1alpha2.GroupVersion.WithKind("PackageVariantSet"), name, packages, to)
}

// upgradeVariant moves a variant's upstream to revision to.
func (c *Client) upgradeVariant(ctx context.Context, name string, to configv1alpha1.RevisionNumber) ([]string, error) {
	return c.moveUpstreams(ctx, configv1alpha1.GroupVersion.WithKind("PackageVariant"), name, nil, to)
}

// sameRevision says whether a and b name one revision ("2", "v2", 2).
func sameRevision(a, b configv1alpha1.RevisionNumber) bool {
	if a.Latest() || b.Latest() {
		return a.Latest() && b.Latest()
	}
	na, errA := a.Number()
	nb, errB := b.Number()
	return errA == nil && errB == nil && na == nb
}
