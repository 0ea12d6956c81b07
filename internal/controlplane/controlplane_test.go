package controlplane_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/scion-dev/scion/config/crd"
	"github.com/scion-dev/scion/internal/controlplane"
	"github.com/scion-dev/scion/internal/testutil/syncbuf"
)

func assets(t *testing.T) string {
	if a := os.Getenv("KUBEBUILDER_ASSETS"); a != "" {
		return a
	}
	a, err := filepath.Abs(filepath.Join("..", "..", "bin", "k8s"))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Started, stopped and started again on the same folder: the objects
// are kept, the CRDs installed once and updated the second time, and the
// administrator's kubeconfig works each time.
func TestStart_keepsItsData(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dir := t.TempDir()
	crds, err := crd.Definitions()
	g.Expect(err).NotTo(HaveOccurred())
	log := &syncbuf.Buffer{}
	start := func() (*controlplane.ControlPlane, *kubernetes.Clientset) {
		cp, err := controlplane.Start(ctx, controlplane.Options{Assets: assets(t), Dir: dir, EtcdLog: log, APIServerLog: log})
		g.Expect(err).NotTo(HaveOccurred(), log.String())
		g.Expect(controlplane.InstallCRDs(ctx, cp.Config, crds)).To(Succeed())
		cfg, err := clientcmd.RESTConfigFromKubeConfig(cp.Kubeconfig)
		g.Expect(err).NotTo(HaveOccurred())
		cs, err := kubernetes.NewForConfig(cfg)
		g.Expect(err).NotTo(HaveOccurred())
		return cp, cs
	}
	cp, cs := start()
	_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cp.Stop()).To(Succeed())

	cp, cs = start()
	defer func() { g.Expect(cp.Stop()).To(Succeed()) }()
	_, err = cs.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred(), "etcd's data outlives the processes")
	res, err := cs.Discovery().ServerResourcesForGroupVersion("config.porch.kpt.dev/v1alpha1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.APIResources).NotTo(BeEmpty())
}

// A kube-apiserver that cannot start is named, and etcd is stopped.
func TestStart_apiServerFails(t *testing.T) {
	g := NewWithT(t)
	fake := t.TempDir()
	g.Expect(os.Symlink(filepath.Join(assets(t), "etcd"), filepath.Join(fake, "etcd"))).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(fake, "kube-apiserver"), []byte("#!/bin/sh\necho cannot start >&2\nexit 1\n"), 0o755)).To(Succeed())
	log := &syncbuf.Buffer{}
	_, err := controlplane.Start(context.Background(), controlplane.Options{Assets: fake, Dir: t.TempDir(), EtcdLog: &syncbuf.Buffer{}, APIServerLog: log})
	g.Expect(err).To(MatchError(ContainSubstring("kube-apiserver exited: exit status 1")))
	g.Expect(log.String()).To(ContainSubstring("cannot start"))
}
