package functions_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/scion-dev/scion/internal/fn"
	"github.com/scion-dev/scion/internal/fn/builtin"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgdiff"
	"github.com/scion-dev/scion/internal/testutil/podman"
	"github.com/scion-dev/scion/internal/testutil/registry"
)

// catalogFunction is a function hack/catalog-functions.sh built.
type catalogFunction struct {
	Name, Version, Module, Source string
}

// catalogDir is where make catalog-functions puts the catalog's
// functions, unless SCION_CATALOG_FUNCTIONS names another folder.
func catalogDir() string {
	if d := os.Getenv("SCION_CATALOG_FUNCTIONS"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "bin", "catalog")
}

func catalogFunctions(t *testing.T) []catalogFunction {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(catalogDir(), "VERSIONS"))
	if err != nil {
		t.Fatalf("the catalog's functions are not built: make test builds them (make catalog-functions): %v", err)
	}
	var out []catalogFunction
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 {
			t.Fatalf("VERSIONS: want name version module source, got %q", sc.Text())
		}
		out = append(out, catalogFunction{Name: f[0], Version: f[1], Module: f[2], Source: f[3]})
	}
	return out
}

// diffCase is one input given to a builtin and to the catalog's image.
type diffCase struct {
	Name string
	// Files are the package's files, as the engine reads them into items
	// (with their path and index annotations).
	Files map[string]string
	// Config is the functionConfig.
	Config string
}

// outcome is what a run of a function produced, as compared.
type outcome struct {
	// Failed is true when the run returned an error or an error result:
	// a render stops there either way.
	Failed bool
	// Package is the package with the resources written back.
	Package *pkg.Package
	// Err is the error or error results, for the report (not compared).
	Err string
}

// compare says how the builtin's outcome differs from the image's ("" when
// it does not).
func compare(t *testing.T, image, builtin outcome) string {
	t.Helper()
	switch {
	case image.Failed && builtin.Failed:
		return ""
	case image.Failed:
		return "the image failed (" + image.Err + "), the builtin succeeded"
	case builtin.Failed:
		return "the builtin failed (" + builtin.Err + "), the image succeeded"
	}
	d, err := pkgdiff.Compute(image.Package, builtin.Package)
	if err != nil {
		t.Fatal(err)
	}
	if d.Empty() {
		return ""
	}
	var b strings.Builder
	_ = d.WriteUnified(&b)
	return "from the image's package to the builtin's:\n" + b.String()
}

// run gives c to f and returns what came out.
func run(t *testing.T, f fn.Function, c diffCase) outcome {
	t.Helper()
	items, err := casePackage(c).Resources()
	if err != nil {
		t.Fatalf("%s: reading its files: %v", c.Name, err)
	}
	cfg, err := yaml.Parse(c.Config)
	if err != nil {
		t.Fatalf("%s: its config: %v", c.Name, err)
	}
	rl := &framework.ResourceList{Items: items, FunctionConfig: cfg}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var o outcome
	if err := f.Run(ctx, rl); err != nil {
		o.Failed, o.Err = true, err.Error()
	}
	for _, r := range rl.Results {
		if r.Severity == framework.Error {
			o.Failed = true
			o.Err += "; " + r.Message
		}
	}
	if o.Failed {
		return o
	}
	o.Package = casePackage(c)
	if err := o.Package.SetResources(rl.Items); err != nil {
		o.Failed, o.Err = true, "writing its resources back: "+err.Error()
	}
	return o
}

// casePackage is the package of c's files.
func casePackage(c diffCase) *pkg.Package {
	files := map[string][]byte{}
	for name, content := range c.Files {
		files[name] = []byte(content)
	}
	return pkg.New(files)
}

// TestCatalogFunctions_differential runs each builtin and the kpt catalog's
// own image of the same function (built from its Go module by
// hack/catalog-functions.sh, pulled by podman from a registry) on the same
// inputs: the catalog's own test cases (read from its _test.go files) and
// ours (comments, multi-document files, subpackages, config as a
// ConfigMap and as a typed object, bad config). Both must fail, or both
// succeed with the same resources, except where knownDifferences says
// why (docs/functions.md lists them): a difference that goes away fails
// the test too, so that the list and the page stay true.
func TestCatalogFunctions_differential(t *testing.T) {
	functions := catalogFunctions(t)
	reg := registry.StartPlain(t)
	bin := podman.Setup(t, reg.Host)
	builtins := builtin.Functions()
	seen := map[string]bool{}
	for _, cf := range functions {
		t.Run(cf.Name, func(t *testing.T) {
			b, ok := builtins[cf.Name]
			if !ok {
				t.Fatalf("%s is built from the catalog but is not a builtin", cf.Name)
			}
			ref := pushBinary(t, reg, filepath.Join(catalogDir(), cf.Name), "catalog/"+cf.Name+":"+cf.Version)
			image := &fn.Container{Runtime: bin, Image: ref, Timeout: time.Minute}
			cases := append(ourCases[cf.Name], catalogCases(t, cf)...)
			if len(cases) == 0 {
				t.Fatalf("no cases for %s", cf.Name)
			}
			for _, c := range cases {
				key := cf.Name + "/" + c.Name
				seen[key] = true
				start := time.Now()
				want := run(t, image, c)
				t.Logf("%s: the image took %s", c.Name, time.Since(start).Round(time.Millisecond))
				got := run(t, b, c)
				diff := compare(t, want, got)
				why, known := knownDifferences[key]
				switch {
				case diff != "" && !known:
					t.Errorf("%s: the builtin differs from the catalog's image %s: %s", c.Name, ref, diff)
				case diff == "" && known:
					t.Errorf("%s: known to differ (%s), but now the same: take it out of knownDifferences and docs/functions.md", c.Name, why)
				}
			}
		})
	}
	for key := range knownDifferences {
		if !seen[key] {
			t.Errorf("knownDifferences names %s, which no case ran", key)
		}
	}
}

// catalogCases reads the catalog's own test cases from the _test.go files
// of its module: struct literals with an input and a config (or fnconfig)
// given as string literals, the form its table tests use. A config
// without a kind is the data of a ConfigMap, as those tests give it.
func catalogCases(t *testing.T, cf catalogFunction) []diffCase {
	t.Helper()
	var out []diffCase
	err := filepath.WalkDir(cf.Source, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			fields := map[string]string{}
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				key, ok1 := kv.Key.(*ast.Ident)
				val, ok2 := kv.Value.(*ast.BasicLit)
				if ok1 && ok2 && val.Kind == token.STRING {
					if s, err := strconv.Unquote(val.Value); err == nil {
						fields[strings.ToLower(key.Name)] = s
					}
				}
			}
			input, config := fields["input"], fields["config"]
			if config == "" {
				config = fields["fnconfig"]
			}
			if strings.TrimSpace(input) == "" || strings.TrimSpace(config) == "" {
				return true
			}
			if n, err := yaml.Parse(config); err != nil || n.GetKind() == "" {
				config = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fn-config\n" + strings.TrimLeft(config, "\n")
			}
			name := fmt.Sprintf("catalog %s:%d %s", filepath.Base(path), len(out)+1, fields["name"])
			out = append(out, diffCase{Name: name, Files: map[string]string{"resources.yaml": input}, Config: config})
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatalf("reading the catalog's cases of %s in %s: %v (make catalog-functions fetches the module again)", cf.Name, cf.Source, err)
	}
	return out
}
