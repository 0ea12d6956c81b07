package apiserver_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
)

// bodyOf is a request body of n bytes that counts what was read of it.
type bodyOf struct {
	n, read int64
	seen    *atomic.Int64
}

func (b *bodyOf) Read(p []byte) (int, error) {
	if b.read >= b.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), b.n-b.read)
	clear(p[:k])
	b.read += k
	b.seen.Add(k)
	return int(k), nil
}

// A push whose body is larger than a package may be (max-package-size,
// 64Mi here, and 1Mi for the object) is refused before its body is
// read: four such pushes at once (80Mi each) are answered 413 naming
// the object and the limit, with only what the connections had sent
// already read. A body of unknown length is cut at the limit, with the
// same answer.
func TestPackageRevisionResources_largeBodies(t *testing.T) {
	ns := env.Namespace(t, "big")
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("%s/apis/porch.kpt.dev/v1alpha1/namespaces/%s/packagerevisionresources/cluster-01.big.ws", strings.TrimSuffix(env.Config.Host, "/"), ns)
	const size = 80 << 20
	push := func(body io.Reader, length int64) (int, string) {
		req, err := http.NewRequest(http.MethodPut, url, body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = length
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}

	var seen atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			code, out := push(&bodyOf{n: size, seen: &seen}, size)
			if code != http.StatusRequestEntityTooLarge || !strings.Contains(out, "PackageRevisionResources cluster-01.big.ws: the request body of 83886080 bytes is over the 65Mi a push may send (the max-package-size limit of 64Mi") {
				t.Errorf("a declared 80Mi push: %d %s", code, out)
			}
		})
	}
	wg.Wait()
	if read := seen.Load(); read > 4*size/2 {
		t.Errorf("%d bytes of the four refused bodies were sent: the server read them", read)
	}

	// Chunked (no Content-Length): read up to the limit, then refused.
	code, out := push(io.MultiReader(bytes.NewReader([]byte(`{"kind":"PackageRevisionResources"`)), &bodyOf{n: size, seen: &seen}), -1)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(out, "PackageRevisionResources cluster-01.big.ws: the request body of unknown length is over the 65Mi a push may send") {
		t.Errorf("a chunked 80Mi push: %d %s", code, out)
	}
}
