package crd

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/scion-dev/scion/internal/cli"
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
		switch u.GetKind() {
		case "Namespace":
			err = k8sClient.Create(ctx, u)
		default:
			err = k8sClient.Create(ctx, u, client.DryRunAll)
		}
		if u.GetKind() == "CustomResourceDefinition" && apierrors.IsAlreadyExists(err) {
			continue // installed by the test environment already
		}
		g.Expect(err).NotTo(HaveOccurred(), "%s %s", u.GetKind(), u.GetName())
		if u.GetKind() == "Deployment" {
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			g.Expect(args[0]).To(Equal("controller"))
			cmd := cli.NewCmdController(cli.Streams{})
			g.Expect(cmd.ParseFlags(args[1:])).To(Succeed(), "the manager's arguments are flags scion controller knows")
			g.Expect(u.GetNamespace()).To(Equal("scion-system"))
		}
	}
	g.Expect(kinds).To(Equal(map[string]int{"Namespace": 1, "CustomResourceDefinition": 4, "ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 1, "Deployment": 1}))
}

// The examples of the reference pages are objects the API server accepts.
func TestReferenceExamples(t *testing.T) {
	ctx := context.Background()
	paths, err := filepath.Glob(filepath.Join("..", "..", "docs", "reference", "examples", "*.yaml"))
	if err != nil || len(paths) != 4 {
		t.Fatalf("want the 4 examples, got %v (%v)", paths, err)
	}
	for _, p := range paths {
		u, _ := fixture(t, p)
		u.SetNamespace(newNamespace(t))
		if err := k8sClient.Create(ctx, u, client.DryRunAll); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
