package variant

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/engine"
	"github.com/scion-dev/scion/internal/fn/builtin"
	"github.com/scion-dev/scion/internal/pkg"
)

// benchUpstream is the package of make bench-scale: a Namespace, a
// Deployment, a ConfigMap with a required injection point and 17 more
// ConfigMaps, one per file, whose values move with replicas.
func benchUpstream(replicas int) *pkg.Package {
	files := map[string][]byte{
		"Kptfile":       []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"),
		"ns.yaml":       []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: example\n"),
		"app.yaml":      []byte(fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: example\nspec:\n  replicas: %d\n", replicas)),
		"settings.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  annotations:\n    kpt.dev/config-injection: required\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  color: placeholder\n"),
	}
	for i := 0; i < 17; i++ {
		files[fmt.Sprintf("cm-%02d.yaml", i)] = []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: example\ndata:\n  key: value-%d\n", i, replicas))
	}
	return pkg.New(files)
}

// benchInput is one variant of make bench-scale: a package context, a
// set-namespace function and an injection from a ConfigMap.
func benchInput(b *testing.B) Input {
	objs, err := ReadObjects([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: useast1-settings\ndata:\n  color: blue\n"))
	if err != nil {
		b.Fatal(err)
	}
	return Input{
		PV: &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: "pv-1", Namespace: "default", Generation: 1},
			Spec: configv1alpha1.PackageVariantSpec{
				Upstream:       &configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "v1"},
				Downstream:     &configv1alpha1.Downstream{Repo: "cluster-01", Package: "app-1"},
				PackageContext: &configv1alpha1.PackageContext{Data: map[string]string{"tenant": "1"}},
				Pipeline:       &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{{Image: "set-namespace", ConfigMap: map[string]string{"namespace": "tenant-1"}}}},
				Injectors:      []configv1alpha1.InjectionSelector{{Name: "useast1-settings"}},
			}},
		Upstream:   benchUpstream(1),
		Origin:     engine.Origin{Repo: "https://git.example.com/catalog.git", Directory: "app", Ref: "app/v1", Commit: "1111111111111111111111111111111111111111"},
		Deployment: true,
		Objects:    &StaticObjects{Objects: objs},
		Runtime:    builtin.ServerRuntime(nil, nil),
	}
}

// BenchmarkProduce is one variant's work in make bench-scale: the create
// (clone and mutate) and the bump (a 3-way update onto the next upstream
// revision, mutate again). Each round reads its packages anew, as a
// reconcile reads them from the store, so no parse is reused.
func BenchmarkProduce(b *testing.B) {
	ctx := context.Background()
	b.Run("create", func(b *testing.B) {
		in := benchInput(b)
		up := in.Upstream.Files()
		b.ReportAllocs()
		for b.Loop() {
			in.Upstream = pkg.New(up)
			if _, err := Produce(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bump", func(b *testing.B) {
		in := benchInput(b)
		created, err := Produce(ctx, in)
		if err != nil {
			b.Fatal(err)
		}
		down, old, up := created.Package.Files(), in.Upstream.Files(), benchUpstream(2).Files()
		in.Origin.Ref, in.Origin.Commit = "app/v2", "2222222222222222222222222222222222222222"
		b.ReportAllocs()
		for b.Loop() {
			in.Downstream, in.OldUpstream, in.Upstream = pkg.New(down), pkg.New(old), pkg.New(up)
			if _, err := Produce(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	})
}
