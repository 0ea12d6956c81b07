// Package requests counts the requests a client sends to the API server:
// in all, by method and resource, and those answered with a conflict.
package requests

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// Counter counts requests sent through the transports Wrap returns. Its
// zero value is ready to use; it is safe for concurrent use.
type Counter struct {
	// KindOf names a request for Kinds (Kind, an API server's resource,
	// when nil; a registry's test names its requests otherwise).
	KindOf func(*http.Request) string

	total, conflicts atomic.Int64
	// kinds maps Kind(request) to an *atomic.Int64.
	kinds sync.Map
}

// Wrap returns a transport that counts the requests sent through it to
// next.
func (c *Counter) Wrap(next http.RoundTripper) http.RoundTripper {
	return transport{c: c, next: next}
}

type transport struct {
	c    *Counter
	next http.RoundTripper
}

func (t transport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.c.total.Add(1)
	kind := Kind
	if t.c.KindOf != nil {
		kind = t.c.KindOf
	}
	n, _ := t.c.kinds.LoadOrStore(kind(r), new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	res, err := t.next.RoundTrip(r)
	if err == nil && res.StatusCode == http.StatusConflict {
		t.c.conflicts.Add(1)
	}
	return res, err
}

// Total is the number of requests sent so far.
func (c *Counter) Total() int64 { return c.total.Load() }

// Conflicts is the number of requests answered 409 Conflict so far.
func (c *Counter) Conflicts() int64 { return c.conflicts.Load() }

// Kinds returns the requests sent since the last ResetKinds, by Kind (or
// KindOf).
func (c *Counter) Kinds() map[string]int64 {
	out := map[string]int64{}
	c.kinds.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// Method is the number of requests with method m (http.MethodGet, ...)
// sent since the last ResetKinds.
func (c *Counter) Method(m string) int64 {
	var n int64
	for k, v := range c.Kinds() {
		if strings.HasPrefix(k, m+" ") {
			n += v
		}
	}
	return n
}

// ResetKinds starts the counts by kind again (Total and Conflicts go on).
func (c *Counter) ResetKinds() { c.kinds.Clear() }

// Kind names a request by its method and resource, with the subresource
// and "?watch" for a watch: "PATCH packagevariants/status",
// "GET packagerevisions?watch".
func Kind(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	resource := r.URL.Path
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			parts = parts[i+2:]
			resource = parts[0]
			if len(parts) > 2 {
				resource += "/" + parts[2]
			}
			break
		}
	}
	if r.URL.Query().Get("watch") == "true" {
		resource += "?watch"
	}
	return r.Method + " " + resource
}
