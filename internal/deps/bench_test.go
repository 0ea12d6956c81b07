package deps

import (
	"fmt"
	"math/rand"
	"testing"
)

// benchCatalog builds the catalog: 1,000 packages in 8 layers of
// 125, 20 versions each; every version of a package requires two or three
// packages of the next layer with ranges of several shapes, and one in
// ten of the last layer's packages provides a kind that a tenth of the
// layer above requires.
func benchCatalog(b testing.TB) (*Catalog, [][]string) {
	b.Helper()
	rng := rand.New(rand.NewSource(7))
	const layers, perLayer, versions = 8, 125, 20
	names := make([][]string, layers)
	for l := range names {
		for i := 0; i < perLayer; i++ {
			names[l] = append(names[l], fmt.Sprintf("layer%d/pkg%03d", l, i))
		}
	}
	c := NewCatalog()
	for l := 0; l < layers; l++ {
		for i, name := range names[l] {
			for v := 1; v <= versions; v++ {
				var opts []revOpt
				if l+1 < layers {
					for k := 2 + rng.Intn(2); k > 0; k-- {
						dep := names[l+1][rng.Intn(perLayer)]
						var rngText string
						switch rng.Intn(4) {
						case 0:
							rngText = fmt.Sprintf(">=%d.0.0", 1+rng.Intn(10))
						case 1:
							rngText = fmt.Sprintf("^%d", 1+rng.Intn(versions))
						case 2:
							rngText = fmt.Sprintf(">=%d.0.0 <%d.0.0", 1+rng.Intn(8), 12+rng.Intn(8))
						}
						opts = append(opts, requires(pkgReq(b, dep, rngText)))
					}
					if l == layers-2 && i%10 == 0 {
						opts = append(opts, requires(gvkReq(fmt.Sprintf("example.com/v1/Kind%d", i/10))))
					}
				}
				if l == layers-1 && i%10 == 0 {
					opts = append(opts, provides(fmt.Sprintf("example.com/v1/Kind%d", i/10)))
				}
				if err := c.Add(mkRev(b, name, fmt.Sprintf("%d.0.0", v), opts...)); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	c.index()
	return c, names
}

// BenchmarkResolve: a catalog of 1,000 packages with 20 versions each and
// dependency depth 8.
//
//	go test -run '^$' -bench Resolve -benchmem ./internal/deps/
func BenchmarkResolve(b *testing.B) {
	c, names := benchCatalog(b)
	b.Run("typical", func(b *testing.B) {
		// One top-layer package, into an empty repository.
		for i := 0; i < b.N; i++ {
			if _, err := Resolve(Problem{Catalog: c, Requests: []Request{{Package: names[0][i%len(names[0])]}}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("installed", func(b *testing.B) {
		// One top-layer package into a repository that holds the solution
		// of ten others at their lowest versions: most must be kept or
		// upgraded.
		base, err := Resolve(Problem{Catalog: c, Requests: requestsOf(names[0][100:110])})
		if err != nil {
			b.Fatal(err)
		}
		var inst []Installed
		for _, st := range base.Plan {
			inst = append(inst, installed(c.Revisions(st.Package)[len(c.Revisions(st.Package))-1]))
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := Resolve(Problem{Catalog: c, Installed: inst, Requests: []Request{{Package: names[0][i%100]}}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wide", func(b *testing.B) {
		// Fifty top-layer packages at once.
		for i := 0; i < b.N; i++ {
			if _, err := Resolve(Problem{Catalog: c, Requests: requestsOf(names[0][:50])}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("worst", func(b *testing.B) {
		// The worst built: a chain of 8 packages where every version but
		// the lowest of each needs a version of the next that only the
		// next one's highest has, and the highest of the last needs a kind
		// nobody provides, so every choice the search prefers fails deep
		// down and must be unlearned.
		w := NewCatalog()
		const depth, versions = 8, 20
		for l := 0; l < depth; l++ {
			for v := 1; v <= versions; v++ {
				var opts []revOpt
				switch {
				case l+1 < depth && v > 1:
					opts = append(opts, requires(pkgReq(b, fmt.Sprintf("chain%d", l+1), fmt.Sprintf(">=%d.0.0", versions))))
				case l+1 < depth:
					opts = append(opts, requires(pkgReq(b, fmt.Sprintf("chain%d", l+1), "<2.0.0")))
				case v == versions:
					opts = append(opts, requires(gvkReq("example.com/v1/Nobody")))
				}
				if err := w.Add(mkRev(b, fmt.Sprintf("chain%d", l), fmt.Sprintf("%d.0.0", v), opts...)); err != nil {
					b.Fatal(err)
				}
			}
		}
		for i := 0; i < b.N; i++ {
			if _, err := Resolve(Problem{Catalog: w, Requests: []Request{{Package: "chain0"}}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func requestsOf(names []string) []Request {
	out := make([]Request, len(names))
	for i, n := range names {
		out[i] = Request{Package: n}
	}
	return out
}
