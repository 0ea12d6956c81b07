package crd

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/config/crd"
)

// The status conditions of Scion's own kinds are atomic lists (only their
// controller writes them, as Porch and Flux declare theirs): the
// controller's managed-fields entry for a status write is then one field,
// not six per condition. Installations upgrading from the earlier schema
// (a map list keyed by type) keep objects whose managed fields name each
// condition; a status write to such an object after the upgrade succeeds,
// writes what it sends, and its entry becomes the short one. The
// PackageVariant CRD is installed under a group of the test's own, first
// with the earlier schema, then as shipped.
func TestConditionsAtomic_upgradeFromMapList(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	defs, err := crd.Definitions()
	g.Expect(err).NotTo(HaveOccurred())
	var shipped *apiextensionsv1.CustomResourceDefinition
	for _, d := range defs {
		if d.Spec.Names.Kind == "PackageVariant" {
			shipped = d.DeepCopy()
		}
	}
	g.Expect(shipped).NotTo(BeNil())
	const group = "upgrade.test.scion.dev"
	shipped.Name = shipped.Spec.Names.Plural + "." + group
	shipped.Spec.Group = group
	conditions := func(d *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.JSONSchemaProps {
		p := d.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["conditions"]
		return &p
	}
	g.Expect(*conditions(shipped).XListType).To(Equal("atomic"))
	earlier := shipped.DeepCopy()
	c := conditions(earlier)
	c.XListType, c.XListMapKeys = ptr.To("map"), []string{"type"}
	earlier.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["conditions"] = *c
	g.Expect(env.Storage.Create(ctx, earlier)).To(Succeed())
	t.Cleanup(func() { _ = env.Storage.Delete(context.Background(), earlier) })

	u, _ := fixture(t, filepath.Join("testdata", "valid", "packagevariant.yaml"))
	u.SetAPIVersion(group + "/v1alpha1")
	u.SetNamespace(ns)
	u.SetName("upgraded")
	g.Eventually(func() error { return env.Storage.Create(ctx, u) }).WithTimeout(30 * time.Second).Should(Succeed())
	writeStatus := func(message string) *unstructured.Unstructured {
		patch := `{"status":{"conditions":[` +
			`{"type":"Ready","status":"True","reason":"Done","message":"` + message + `","lastTransitionTime":"2026-01-01T00:00:00Z"},` +
			`{"type":"Reconciling","status":"False","reason":"Done","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`
		out := u.DeepCopy()
		g.Expect(env.Storage.Status().Patch(ctx, out, client.RawPatch("application/merge-patch+json", []byte(patch)))).To(Succeed())
		return out
	}
	statusEntry := func(u *unstructured.Unstructured) string {
		for _, m := range u.GetManagedFields() {
			if m.Subresource == "status" {
				return string(m.FieldsV1.Raw)
			}
		}
		return ""
	}
	g.Expect(statusEntry(writeStatus("before"))).To(ContainSubstring(`k:{\"type\":\"Ready\"}`))

	// The upgrade: the CRD as shipped.
	g.Expect(env.Storage.Get(ctx, client.ObjectKeyFromObject(earlier), earlier)).To(Succeed())
	earlier.Spec = shipped.Spec
	g.Expect(env.Storage.Update(ctx, earlier)).To(Succeed())
	round := 0
	g.Eventually(func(g Gomega) {
		round++
		message := fmt.Sprint("after the upgrade, round ", round)
		out := writeStatus(message)
		conds, _, _ := unstructured.NestedSlice(out.Object, "status", "conditions")
		g.Expect(conds).To(HaveLen(2))
		g.Expect(conds[0]).To(HaveKeyWithValue("message", message))
		entry := map[string]any{}
		g.Expect(json.Unmarshal([]byte(statusEntry(out)), &entry)).To(Succeed())
		g.Expect(entry).To(HaveKeyWithValue("f:status", HaveKeyWithValue("f:conditions", BeEmpty())))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// Every kind of config.porch.kpt.dev that has status conditions declares
// them an atomic list: their controller is their only writer. (A package
// revision's conditions are not: people and controllers set them one by
// one, and its storage keeps no managed fields.)
func TestCRDs_statusConditionsAtomic(t *testing.T) {
	g := NewWithT(t)
	defs, err := crd.Definitions()
	g.Expect(err).NotTo(HaveOccurred())
	checked := 0
	for _, d := range defs {
		if d.Spec.Group != "config.porch.kpt.dev" {
			continue
		}
		for _, v := range d.Spec.Versions {
			c, ok := v.Schema.OpenAPIV3Schema.Properties["status"].Properties["conditions"]
			if !ok {
				continue
			}
			checked++
			g.Expect(c.XListType).To(HaveValue(Equal("atomic")), "%s %s: status.conditions", d.Name, v.Name)
		}
	}
	g.Expect(checked).To(BeNumerically(">=", 4))
}
