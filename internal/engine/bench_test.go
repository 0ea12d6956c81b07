package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/scion-dev/scion/internal/fn/builtin"
	"github.com/scion-dev/scion/internal/pkg"
)

// benchPackage is a package of n resources (Deployments, Services and
// ConfigMaps, one per file) with a three-mutator builtin pipeline.
func benchPackage(n int, replicas int) *pkg.Package {
	files := map[string][]byte{
		"Kptfile": []byte(`apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: bench
pipeline:
  mutators:
  - image: gcr.io/kpt-fn/set-namespace:v0.4
    configMap:
      namespace: tenant-a
  - image: gcr.io/kpt-fn/set-labels:v0.2
    configMap:
      team: a
  - image: gcr.io/kpt-fn/set-annotations:v0.1
    configMap:
      owner: platform
`),
	}
	for i := 0; i < n; i++ {
		var doc string
		switch i % 3 {
		case 0:
			doc = fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-%d\n  namespace: example\nspec:\n  replicas: %d\n  selector:\n    matchLabels:\n      app: app-%d\n  template:\n    metadata:\n      labels:\n        app: app-%d\n    spec:\n      containers:\n      - name: app\n        image: nginx:1.25\n        ports:\n        - containerPort: 80\n", i, replicas, i, i)
		case 1:
			doc = fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: svc-%d\n  namespace: example\nspec:\n  selector:\n    app: app-%d\n  ports:\n  - port: 80\n", i, i)
		default:
			doc = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: example\ndata:\n  key: value-%d\n", i, i)
		}
		files[fmt.Sprintf("r-%03d.yaml", i)] = []byte(doc)
	}
	return pkg.New(files)
}

func BenchmarkClone100(b *testing.B) {
	up := benchPackage(100, 1)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Clone(up, catalog, CloneOptions{PackagePath: "tenant-a", ForDeployment: true}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpdate100(b *testing.B) {
	origin, updated := benchPackage(100, 1), benchPackage(100, 3)
	local, err := Clone(origin, catalog, CloneOptions{PackagePath: "tenant-a", ForDeployment: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := Update(local, origin, updated, catalog, ""); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRender100(b *testing.B) {
	p := benchPackage(100, 1)
	rt := builtin.NewRuntime()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := Render(context.Background(), p, rt); err != nil {
			b.Fatal(err)
		}
	}
}

// The Cold variants start from packages that were never parsed (as after
// reading from git), the others reuse parsed inputs (as a controller
// caching upstream revisions by commit does).

func BenchmarkClone100Cold(b *testing.B) {
	files := benchPackage(100, 1).Files()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Clone(pkg.New(files), catalog, CloneOptions{PackagePath: "tenant-a", ForDeployment: true}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpdate100Cold(b *testing.B) {
	origin, updated := benchPackage(100, 1), benchPackage(100, 3)
	local, err := Clone(origin, catalog, CloneOptions{PackagePath: "tenant-a", ForDeployment: true})
	if err != nil {
		b.Fatal(err)
	}
	lf, of, uf := local.Files(), origin.Files(), updated.Files()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := Update(pkg.New(lf), pkg.New(of), pkg.New(uf), catalog, ""); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRender100Cold(b *testing.B) {
	files := benchPackage(100, 1).Files()
	rt := builtin.NewRuntime()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := Render(context.Background(), pkg.New(files), rt); err != nil {
			b.Fatal(err)
		}
	}
}
