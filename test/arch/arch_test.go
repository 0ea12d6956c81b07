// Package arch_test keeps the house rules of the code's shape
// (docs/development.md) with the compiler's own view of the code: the
// packages are type-checked from the build's export data, so a rule
// about a method or an import cannot be fooled by a name.
package arch_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/scion-dev/scion"

// listed is what `go list -export -deps` says of one package.
type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	Export     string
	Standard   bool
}

var (
	loadOnce sync.Once
	loaded   map[string]*listed
	loadErr  error
)

// load lists the module's packages and their dependencies, with export
// data built (from the build cache when it is warm).
func load(t *testing.T) map[string]*listed {
	t.Helper()
	loadOnce.Do(func() {
		cmd := exec.Command("go", "list", "-e", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,Imports,Export,Standard", "./...")
		cmd.Dir = filepath.Join("..", "..")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			loadErr = fmt.Errorf("go list: %v: %s", err, stderr.String())
			return
		}
		loaded = map[string]*listed{}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			p := &listed{}
			if err := dec.Decode(p); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				loadErr = err
				return
			}
			loaded[p.ImportPath] = p
		}
	})
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return loaded
}

// ours lists the module's own packages, sorted.
func ours(pkgs map[string]*listed) []*listed {
	var out []*listed
	for path, p := range pkgs {
		if path == module || strings.HasPrefix(path, module+"/") {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ImportPath < out[j].ImportPath })
	return out
}

// rel is a package's path inside the module.
func rel(p *listed) string { return strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/") }

// check type-checks one package's non-test files from its dependencies'
// export data.
func check(t *testing.T, pkgs map[string]*listed, p *listed) (*token.FileSet, []*ast.File, *types.Info) {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		dep, ok := pkgs[path]
		if !ok || dep.Export == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(dep.Export)
	})
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}, Uses: map[*ast.Ident]types.Object{}, Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: imp}
	if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
		t.Fatalf("type-checking %s: %v", p.ImportPath, err)
	}
	return fset, files, info
}

// storeWrites are the methods of a store that write to it.
var storeWrites = []string{"WriteDraft", "Propose", "RejectProposal", "Publish", "ProposeDeletion", "RejectDeletion", "Delete", "SetFloatingTag"}

// stores are the store types: the interface, and its git and OCI
// implementations.
var stores = []string{module + "/internal/store.Store", module + "/internal/store.Repository", module + "/internal/oci.Store"}

// Every write to a repository, git or OCI, goes through
// internal/pkgservice: no other package calls the stores' write methods.
func TestGitWritesGoThroughPkgservice(t *testing.T) {
	pkgs := load(t)
	var bad []string
	calls := 0
	for _, p := range ours(pkgs) {
		if len(p.GoFiles) == 0 {
			continue
		}
		fset, _, info := check(t, pkgs, p)
		for sel, s := range info.Selections {
			if s.Kind() != types.MethodVal || !slices.Contains(storeWrites, s.Obj().Name()) {
				continue
			}
			recv := s.Recv()
			if ptr, ok := recv.(*types.Pointer); ok {
				recv = ptr.Elem()
			}
			named, ok := recv.(*types.Named)
			if !ok || named.Obj().Pkg() == nil {
				continue
			}
			store := named.Obj().Pkg().Path() + "." + named.Obj().Name()
			if !slices.Contains(stores, store) {
				continue
			}
			calls++
			if r := rel(p); r == "internal/store" || r == "internal/oci" || r == "internal/pkgservice" || r == "internal/testutil/storetest" {
				continue // the stores themselves, the one write path, and the stores' conformance tests
			}
			bad = append(bad, fmt.Sprintf("%s: %s.%s: write through internal/pkgservice", relPos(fset, sel.Pos()), strings.TrimPrefix(store, module+"/internal/"), s.Obj().Name()))
		}
	}
	if calls == 0 {
		t.Fatal("found no call of a store write method at all: the scan is broken")
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

func relPos(fset *token.FileSet, pos token.Pos) string {
	p := fset.Position(pos)
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	name, err := filepath.Rel(root, p.Filename)
	if err != nil {
		name = p.Filename
	}
	return fmt.Sprintf("%s:%d", name, p.Line)
}

// Imports keep the layers apart: only the manager wires controllers; a
// controller does not import another.
func TestImportLayers(t *testing.T) {
	pkgs := load(t)
	const controllers = "internal/controller/"
	var bad []string
	for _, p := range ours(pkgs) {
		r := rel(p)
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(imp, module+"/")
			switch {
			case strings.HasPrefix(dep, controllers) && strings.HasPrefix(r, controllers) && dep != r:
				bad = append(bad, fmt.Sprintf("%s imports %s: a controller does not import another (move what they share to api/ or a domain package)", r, dep))
			case strings.HasPrefix(dep, controllers) && !strings.HasPrefix(r, controllers) && r != "internal/manager":
				bad = append(bad, fmt.Sprintf("%s imports %s: only internal/manager wires controllers (reasons and constants live in api/)", r, dep))
			}
		}
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// The package service, shared by controllers and the CLI, returns its own
// errors (WaitError, SpecError), which internal/reconciler classifies: it
// uses nothing of the reconciler but the status writer (PatchStatus and
// the StatusWriter it writes with).
func TestPackageServiceReturnsNoReconcilerTypes(t *testing.T) {
	pkgs := load(t)
	p := pkgs[module+"/internal/pkgservice"]
	if p == nil {
		t.Fatal("internal/pkgservice not listed")
	}
	fset, _, info := check(t, pkgs, p)
	var bad []string
	for id, obj := range info.Uses {
		if obj.Pkg() == nil || obj.Pkg().Path() != module+"/internal/reconciler" || obj.Name() == "PatchStatus" || obj.Name() == "StatusWriter" || obj.Name() == "NewStatusWriter" {
			continue
		}
		bad = append(bad, fmt.Sprintf("%s: reconciler.%s: return the package service's own error types", relPos(fset, id.Pos()), obj.Name()))
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// Condition types and reasons are declared once: a name ending in
// Condition or Reason with a value of its own (not another constant) is
// declared in one package of Scion's API group (api/config) and internal/
// together, and no controller declares one (reasons live in api/ or in
// the domain package that decides them, so the CLI, the demo and other
// controllers never import a controller for them). Porch's API group
// (api/porch) has its own.
func TestConditionsAndReasonsDeclaredOnce(t *testing.T) {
	pkgs := load(t)
	where := map[string][]string{}
	var bad []string
	for _, p := range ours(pkgs) {
		r := rel(p)
		if !strings.HasPrefix(r, "api/config/") && !strings.HasPrefix(r, "internal/") {
			continue
		}
		fset := token.NewFileSet()
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, id := range vs.Names {
						if !id.IsExported() || !strings.HasSuffix(id.Name, "Reason") && !strings.HasSuffix(id.Name, "Condition") || i >= len(vs.Values) {
							continue
						}
						if _, literal := vs.Values[i].(*ast.BasicLit); !literal {
							continue
						}
						pos := relPos(fset, id.Pos())
						where[id.Name] = append(where[id.Name], pos)
						if strings.HasPrefix(r, "internal/controller/") {
							bad = append(bad, fmt.Sprintf("%s: %s is declared in a controller: declare it in api/ (or the domain package that decides it)", pos, id.Name))
						}
					}
				}
			}
		}
	}
	if len(where) < 20 {
		t.Fatalf("found only %d condition types and reasons: the scan is broken", len(where))
	}
	for name, at := range where {
		if len(at) > 1 {
			sort.Strings(at)
			bad = append(bad, fmt.Sprintf("%s is declared %d times: %s", name, len(at), strings.Join(at, ", ")))
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

const crclient = "sigs.k8s.io/controller-runtime/pkg/client"

// Field indexes are registered through reconciler.NamespacedIndexer,
// which keeps each value for its namespace only (half of what
// controller-runtime's own indexer keeps), so every list selected by a
// field is in one namespace: a list across namespaces would find nothing.
func TestFieldSelectedListsAreNamespaced(t *testing.T) {
	pkgs := load(t)
	var bad []string
	lists := 0
	for _, p := range ours(pkgs) {
		if len(p.GoFiles) == 0 {
			continue
		}
		fset, files, info := check(t, pkgs, p)
		for sel, s := range info.Selections {
			if name := s.Obj().Name(); name == "GetFieldIndexer" {
				bad = append(bad, fmt.Sprintf("%s: %s: register indexes with reconciler.NamespacedIndexer", relPos(fset, sel.Pos()), name))
			}
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				fields, namespaced := false, false
				for _, arg := range call.Args {
					if tv, ok := info.Types[arg]; ok {
						if named, ok := tv.Type.(*types.Named); ok && named.Obj().Pkg() != nil && named.Obj().Pkg().Path() == crclient && named.Obj().Name() == "MatchingFields" {
							fields = true
						}
					}
					if inner, ok := arg.(*ast.CallExpr); ok {
						if fn, ok := inner.Fun.(*ast.SelectorExpr); ok {
							if obj := info.Uses[fn.Sel]; obj != nil && obj.Pkg() != nil && obj.Pkg().Path() == crclient && obj.Name() == "InNamespace" {
								namespaced = true
							}
						}
					}
				}
				if fields {
					lists++
					if !namespaced {
						bad = append(bad, fmt.Sprintf("%s: a list selected by a field without client.InNamespace: Scion's field indexes answer one namespace", relPos(fset, call.Pos())))
					}
				}
				return true
			})
		}
	}
	if lists < 10 {
		t.Fatalf("found only %d field-selected lists: the scan is broken", lists)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// The binary the image runs links no test library: controller-runtime's
// envtest (whose package init makes a cache folder, so that a container
// with a read-only root filesystem and no /tmp panicked on `scion
// version`) and this module's test utilities stay in tests.
func TestBinaryLinksNoTestLibraries(t *testing.T) {
	pkgs := load(t)
	forbidden := func(path string) bool {
		return strings.HasPrefix(path, "sigs.k8s.io/controller-runtime/pkg/envtest") ||
			strings.HasPrefix(path, "sigs.k8s.io/controller-runtime/pkg/internal/testing") ||
			strings.HasPrefix(path, module+"/internal/testutil/")
	}
	// Breadth first from the command, remembering who brought each in.
	from := map[string]string{module + "/cmd/scion": ""}
	queue := []string{module + "/cmd/scion"}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if forbidden(p) {
			chain := []string{p}
			for q := from[p]; q != ""; q = from[q] {
				chain = append([]string{q}, chain...)
			}
			t.Errorf("cmd/scion links %s: %s", p, strings.Join(chain, " -> "))
			continue
		}
		l, ok := pkgs[p]
		if !ok {
			continue
		}
		for _, imp := range l.Imports {
			if _, seen := from[imp]; !seen {
				from[imp] = p
				queue = append(queue, imp)
			}
		}
	}
}
