// Package porchcalls measures what people wait for through Porch's API
// (Scion's API server behind the control plane's APIService): the calls
// kubectl, porchctl and scion make, each timed over many calls. It is
// shared by the scale benchmark (a fleet in place) and the API server's
// own benchmark (revisions stored without a fleet).
package porchcalls

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/api/porch/v1alpha1/content"
	"github.com/scion-dev/scion/internal/rpkg"
)

// Call is one call measured, Calls times.
type Call struct {
	Name  string
	Calls int
	Call  func() error
}

// Standard returns the calls people make on the revisions of ns: a
// kubectl table of all of them and of one, a list of whole objects, a get,
// scion rpkg get of one package, and (when files is true) a pull of one
// revision's files. one names a revision of ns to get.
func Standard(tb testing.TB, c client.Client, cfg *rest.Config, s *runtime.Scheme, ns string, total int, one *porchv1alpha1.PackageRevision, files bool) []Call {
	ctx := context.Background()
	rc := &rpkg.Client{Client: c, Namespace: ns}
	kubectl := KubectlGet(tb, cfg, s, porchv1alpha1.GroupVersion, ns)
	raw := rawList(tb, cfg, s, porchv1alpha1.GroupVersion, ns)
	calls := []Call{
		{fmt.Sprintf("kubectl get packagerevisions (%d, as a table, 500 a page)", total), 100, func() error { return kubectl("") }},
		{fmt.Sprintf("list all %d PackageRevisions as objects, one request", total), 100, func() error {
			return c.List(ctx, &porchv1alpha1.PackageRevisionList{}, client.InNamespace(ns))
		}},
		{"  the same list, the response's bytes only (not decoded)", 100, func() error {
			_, err := raw()
			return err
		}},
		{"kubectl get packagerevision NAME", 100, func() error { return kubectl(one.Name) }},
		{"get one PackageRevision", 100, func() error {
			return c.Get(ctx, client.ObjectKeyFromObject(one), &porchv1alpha1.PackageRevision{})
		}},
		{"scion rpkg get --repository R --package P", 100, func() error {
			_, err := rc.List(ctx, rpkg.Filter{Repository: one.Spec.Repository, Package: one.Spec.PackageName})
			return err
		}},
	}
	if files {
		calls = append(calls, Call{"pull one revision's files (get packagerevisionresources)", 100, func() error {
			return c.Get(ctx, client.ObjectKeyFromObject(one), &content.PackageRevisionResources{})
		}})
	}
	return calls
}

// Measure makes each call its number of times and returns a table of
// their p50 and p99.
func Measure(tb testing.TB, calls []Call) string {
	var out strings.Builder
	out.WriteString("\nthrough Porch's API                                               p50       p99\n")
	for _, c := range calls {
		took := make([]time.Duration, 0, c.Calls)
		for range c.Calls {
			start := time.Now()
			if err := c.Call(); err != nil {
				tb.Fatalf("%s: %v", c.Name, err)
			}
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		fmt.Fprintf(&out, "%-60s %8s %8s  (%d calls)\n", c.Name, took[len(took)/2-1].Round(time.Millisecond), took[(len(took)*99-1)/100].Round(time.Millisecond), c.Calls)
	}
	return out.String()
}

// rawList returns what reads the list of every revision of ns in gv as
// JSON, as client-go asks for it, without decoding it: the server's part
// of a list (and the transfer), apart from the client's decoding.
func rawList(tb testing.TB, cfg *rest.Config, s *runtime.Scheme, gv schema.GroupVersion, ns string) func() ([]byte, error) {
	rc := restClient(tb, cfg, s, gv)
	return func() ([]byte, error) {
		return rc.Get().Namespace(ns).Resource("packagerevisions").SetHeader("Accept", "application/json").DoRaw(context.Background())
	}
}

func restClient(tb testing.TB, cfg *rest.Config, s *runtime.Scheme, gv schema.GroupVersion) *rest.RESTClient {
	cfg = rest.CopyConfig(cfg)
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(s).WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return rc
}

// KubectlGet returns what makes kubectl get packagerevisions [NAME]'s
// requests in gv: the server's table (Accept ...;as=Table), 500 rows a
// page, every page read.
func KubectlGet(tb testing.TB, cfg *rest.Config, s *runtime.Scheme, gv schema.GroupVersion, ns string) func(name string) error {
	rc := restClient(tb, cfg, s, gv)
	const table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
	return func(name string) error {
		next := ""
		for {
			req := rc.Get().Namespace(ns).Resource("packagerevisions").SetHeader("Accept", table)
			if name != "" {
				req = req.Name(name)
			} else {
				req = req.Param("limit", "500")
				if next != "" {
					req = req.Param("continue", next)
				}
			}
			body, err := req.DoRaw(context.Background())
			if err != nil {
				return err
			}
			var page metav1.Table
			if err := json.Unmarshal(body, &page); err != nil {
				return err
			}
			if name != "" && len(page.Rows) != 1 {
				return fmt.Errorf("%d rows for %s", len(page.Rows), name)
			}
			if next = page.Continue; next == "" {
				return nil
			}
		}
	}
}
