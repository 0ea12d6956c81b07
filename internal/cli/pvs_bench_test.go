package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkPvsExpand1000 runs `scion pvs expand` on a set selecting 1,000
// Repository objects by label, with three CEL expressions per variant,
// from reading the files to printing the YAML.
func BenchmarkPvsExpand1000(b *testing.B) {
	benchPvsExpand(b, "  upstream: {repo: catalog, package: app, revision: v1}\n", 1000)
}

// BenchmarkPvsExpandGroup1000 is the same for a group of three upstreams:
// 3,000 variants.
func BenchmarkPvsExpandGroup1000(b *testing.B) {
	benchPvsExpand(b, "  upstreams:\n  - {repo: catalog, package: app, revision: v1}\n  - {repo: catalog, package: app-config, revision: v1}\n  - {repo: catalog, package: app-policy, revision: v1}\n", 3000)
}

func benchPvsExpand(b *testing.B, upstream string, want int) {
	dir := b.TempDir()
	var repos strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&repos, "---\napiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata:\n  name: cluster-%04d\n  namespace: fleet\n  labels: {env: prod, region: region-%d, tier: t%d}\nspec:\n  type: git\n  deployment: true\n  git: {repo: \"http://git.example/cluster-%04d.git\"}\n", i, i%12, i%3, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "repos.yaml"), []byte(repos.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	set := `apiVersion: config.porch.kpt.dev/v1alpha2
kind: PackageVariantSet
metadata: {name: fleet, namespace: fleet}
spec:
` + upstream + `  targets:
  - repositorySelector:
      matchLabels: {env: prod}
    template:
      labelExprs:
      - key: region
        valueExpr: repository.labels['region']
      packageContext:
        dataExprs:
        - key: tier
          valueExpr: "'tier-' + repository.labels['tier']"
      injectors:
      - nameExpr: repository.labels['region'] + '-endpoints'
`
	if err := os.WriteFile(filepath.Join(dir, "set.yaml"), []byte(set), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := run("pvs", "expand", "-f", filepath.Join(dir, "set.yaml"), "--repositories", filepath.Join(dir, "repos.yaml"))
		if err != nil {
			b.Fatal(err)
		}
		if n := strings.Count(out, "kind: PackageVariant\n"); n != want {
			b.Fatalf("%d PackageVariants, want %d", n, want)
		}
	}
}
