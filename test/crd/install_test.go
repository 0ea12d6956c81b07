package crd

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/scion-dev/scion/internal/cli"
	"github.com/scion-dev/scion/internal/kindwatch"
)

// TestInstallManifests builds config/default as `kubectl apply -k` would
// and has the API server validate every object (server-side dry run).
func TestInstallManifests(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join("..", "..", "config", "default"))
	g.Expect(err).NotTo(HaveOccurred())
	out, err := resMap.AsYaml()
	g.Expect(err).NotTo(HaveOccurred())

	kinds := map[string]int{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		u := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
		kinds[u.GetKind()]++
		if u.GetKind() == "ClusterRole" && u.GetName() == "scion-manager" {
			checkLeastPrivilege(g, u)
		}
		switch u.GetKind() {
		case "Namespace":
			if err = k8sClient.Create(ctx, u); apierrors.IsAlreadyExists(err) {
				err = nil // made by an earlier run against this control plane
			}
		default:
			err = k8sClient.Create(ctx, u, client.DryRunAll)
		}
		if (u.GetKind() == "CustomResourceDefinition" || strings.Contains(u.GetKind(), "AdmissionPolicy") || strings.HasPrefix(u.GetKind(), "ClusterRole") ||
			u.GetKind() == "APIService" || u.GetKind() == "Service") && apierrors.IsAlreadyExists(err) {
			continue // installed by the test environment (or another test) already
		}
		g.Expect(err).NotTo(HaveOccurred(), "%s %s", u.GetKind(), u.GetName())
		if u.GetKind() == "Deployment" {
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			cmd := cli.NewCmdController(cli.Streams{})
			if u.GetName() == "scion-apiserver" {
				cmd = cli.NewCmdAPIServer(cli.Streams{})
			}
			g.Expect(args[0]).To(Equal(cmd.Name()), u.GetName())
			g.Expect(cmd.ParseFlags(args[1:])).To(Succeed(), "the arguments of %s are flags scion %s knows", u.GetName(), cmd.Name())
			g.Expect(u.GetNamespace()).To(Equal("scion-system"))
			g.Expect(args).To(ContainElement("--function-runner=pod"), "%s runs function images as Pods", u.GetName())
		}
		if u.GetKind() == "Role" && u.GetName() == "scion-function-runner" {
			g.Expect(u.GetNamespace()).To(Equal("scion-functions"), "function Pods are made in their own namespace only")
		}
	}
	// Two namespaces: scion-system and scion-functions (function Pods,
	// with its Role, RoleBinding and NetworkPolicy; a Role and a
	// RoleBinding in scion-system let the servers read their own Pods);
	// an APIService per version of porch.kpt.dev.
	g.Expect(kinds).To(Equal(map[string]int{"Namespace": 2, "CustomResourceDefinition": 6, "ServiceAccount": 2, "ClusterRole": 6, "ClusterRoleBinding": 4, "RoleBinding": 3,
		"Role": 2, "NetworkPolicy": 1, "Deployment": 2, "Service": 2, "APIService": 2,
		"ValidatingAdmissionPolicy": 3, "ValidatingAdmissionPolicyBinding": 3, "MutatingAdmissionPolicy": 2, "MutatingAdmissionPolicyBinding": 2}))
}

// checkLeastPrivilege: the shipped role has no wildcard, reads the default
// readable kinds, and only reads Secrets (the controller watches each
// Secret a Repository names, by name: internal/namedwatch), never writes
// them.
func checkLeastPrivilege(g Gomega, role *unstructured.Unstructured) {
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	reads := map[string]bool{}
	for _, r := range rules {
		rule := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
		g.Expect(append(append(groups, resources...), verbs...)).NotTo(ContainElement("*"), "rule %v", rule)
		for _, res := range resources {
			if slices.Contains(groups, "") && slices.Contains(verbs, "watch") {
				reads[res] = true
			}
			if res == "secrets" {
				g.Expect(verbs).To(Equal([]string{"get", "list", "watch"}), "Secrets are only read")
			}
		}
	}
	for _, gk := range kindwatch.DefaultKinds {
		g.Expect(reads).To(HaveKey(strings.ToLower(gk.Kind)+"s"), "the default readable kinds are readable")
	}
}

// The examples of the reference pages are objects the API server accepts.
func TestReferenceExamples(t *testing.T) {
	ctx := context.Background()
	paths, err := filepath.Glob(filepath.Join("..", "..", "docs", "reference", "examples", "*.yaml"))
	if err != nil || len(paths) != 6 {
		t.Fatalf("want the 6 examples, got %v (%v)", paths, err)
	}
	for _, p := range paths {
		u, _ := fixture(t, p)
		u.SetNamespace(newNamespace(t))
		if err := k8sClient.Create(ctx, u, client.DryRunAll); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// No short name of Scion's kinds is a name or short name of any resource a
// stock API server serves: `kubectl get pvar` means a PackageVariant, not
// something else with a warning.
func TestShortNamesCollideWithNothing(t *testing.T) {
	g := NewWithT(t)
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	_, lists, err := dc.ServerGroupsAndResources()
	g.Expect(err).NotTo(HaveOccurred())
	ours := map[string][]string{} // resource -> its short names
	taken := map[string]string{}  // name or short name -> the built-in resource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		g.Expect(err).NotTo(HaveOccurred())
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource
			}
			if gv.Group == "config.porch.kpt.dev" || gv.Group == "porch.kpt.dev" {
				ours[r.Name+"."+gv.Group] = r.ShortNames
				continue
			}
			for _, n := range append([]string{r.Name, r.SingularName}, r.ShortNames...) {
				taken[n] = r.Name + "." + gv.Group
			}
		}
	}
	g.Expect(taken).To(HaveKey("pv"), "discovery lists the built-in resources")
	g.Expect(ours).To(HaveLen(7))
	for res, shorts := range ours {
		if res == "packagerevisionresources.porch.kpt.dev" {
			g.Expect(shorts).To(BeEmpty(), "Porch gives it none")
			continue
		}
		g.Expect(shorts).NotTo(BeEmpty(), res)
		for _, s := range shorts {
			g.Expect(taken).NotTo(HaveKey(s), "the short name %s of %s is also %s", s, res, taken[s])
		}
	}
	g.Expect(ours["packagevariants.config.porch.kpt.dev"]).To(Equal([]string{"pvar"}))
}

// TestConsoleManifests builds config/console (the console behind an
// authenticating proxy) and has the API server validate every object; the
// console acts per request (--auth=bearer) and its service account is
// bound to no role.
func TestConsoleManifests(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join("..", "..", "config", "console"))
	g.Expect(err).NotTo(HaveOccurred())
	out, err := resMap.AsYaml()
	g.Expect(err).NotTo(HaveOccurred())
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "scion-system"}}}
	if err := k8sClient.Create(ctx, ns); !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	kinds := map[string]int{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		u := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
		kinds[u.GetKind()]++
		g.Expect(u.GetNamespace()).To(Equal("scion-system"))
		g.Expect(k8sClient.Create(ctx, u, client.DryRunAll)).To(Succeed(), "%s %s", u.GetKind(), u.GetName())
		if u.GetKind() == "Deployment" {
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			cmd := cli.NewCmdConsole(cli.Streams{})
			g.Expect(args[0]).To(Equal(cmd.Name()))
			g.Expect(cmd.ParseFlags(args[1:])).To(Succeed(), "the arguments are flags scion console knows")
			g.Expect(args).To(ContainElement("--auth=bearer"))
		}
	}
	g.Expect(kinds).To(Equal(map[string]int{"ServiceAccount": 1, "Deployment": 1, "Service": 1}), "no role for the console's own identity")
}
