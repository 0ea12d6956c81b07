package console

import (
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
)

// A state-changing request is taken only from the console's own pages:
// its token in the form and in the cookie, from its own origin; the page
// a result links back to is one of the console's.
func TestCheckOrigin(t *testing.T) {
	g := NewWithT(t)
	s := &Server{csrf: "token", cookie: csrfCookie + "-1"}
	post := func(form url.Values, cookie, origin string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/revisions", strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if cookie != "" {
			r.AddCookie(&http.Cookie{Name: s.cookie, Value: cookie})
		}
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		return r
	}
	ok := url.Values{"csrf": {"token"}, "back": {"/proposals?set=app"}}
	g.Expect(s.checkOrigin(post(ok, "token", "http://127.0.0.1:8080"))).To(Succeed())
	g.Expect(s.checkOrigin(post(ok, "token", ""))).To(Succeed(), "no Origin header (an older browser)")
	g.Expect(s.checkOrigin(post(ok, "", ""))).To(MatchError(ContainSubstring("did not come from a page of this console")))
	g.Expect(s.checkOrigin(post(ok, "other", ""))).To(MatchError(ContainSubstring("did not come from a page of this console")))
	g.Expect(s.checkOrigin(post(url.Values{"csrf": {"wrong"}}, "token", ""))).To(MatchError(ContainSubstring("did not come from a page of this console")))
	g.Expect(s.checkOrigin(post(ok, "token", "https://evil.example.com"))).To(MatchError(ContainSubstring("a request from https://evil.example.com")))

	for in, want := range map[string]string{"/proposals?set=app": "/proposals?set=app", "//evil.example.com/x": "/", "https://evil.example.com": "/", "": "/"} {
		r := post(url.Values{"back": {in}}, "", "")
		g.Expect(r.ParseForm()).To(Succeed())
		g.Expect(back(r)).To(Equal(want), in)
	}
}

// Two consoles on one host (two namespaces, two port-forwards) in one
// browser: a browser keeps cookies per host, not per port, so each
// console's token has a cookie of its own and neither page's visits
// refuse the other's buttons.
func TestCheckOrigin_twoConsolesOneHost(t *testing.T) {
	g := NewWithT(t)
	jar, err := cookiejar.New(nil)
	g.Expect(err).NotTo(HaveOccurred())
	var consoles [2]*Server
	var addrs [2]*url.URL
	for i := range consoles {
		csrf, cookie, err := newToken()
		g.Expect(err).NotTo(HaveOccurred())
		consoles[i] = &Server{csrf: csrf, cookie: cookie}
		addrs[i] = &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", 8080+i), Path: "/"}
	}
	g.Expect(consoles[0].cookie).NotTo(Equal(consoles[1].cookie))
	// A page of each, in turn, then again: the last visit is the other's.
	for _, i := range []int{0, 1, 0, 1} {
		w := httptest.NewRecorder()
		consoles[i].setToken(w)
		jar.SetCookies(addrs[i], w.Result().Cookies())
	}
	for i, s := range consoles {
		r := httptest.NewRequest(http.MethodPost, addrs[i].String()+"rollouts", strings.NewReader(url.Values{"csrf": {s.csrf}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Origin", "http://"+addrs[i].Host)
		for _, c := range jar.Cookies(addrs[i]) {
			r.AddCookie(c)
		}
		g.Expect(s.checkOrigin(r)).To(Succeed(), "console %d", i)
	}
}

// A unified diff side by side: context on both sides, a run of removed
// lines next to the added lines that replace it, a longer run padded.
func TestSplitLines(t *testing.T) {
	got := splitLines("@@ -1,4 +1,4 @@\n a: 1\n-b: 2\n-c: 3\n+b: 20\n d: 4\n+e: 5\n")
	want := []splitRow{
		{Hunk: "@@ -1,4 +1,4 @@"},
		{Left: "a: 1", Right: "a: 1"},
		{Left: "b: 2", LeftClass: "del", Right: "b: 20", RightClass: "add"},
		{Left: "c: 3", LeftClass: "del"},
		{Left: "d: 4", Right: "d: 4"},
		{Right: "e: 5", RightClass: "add"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("splitLines:\n got %+v\nwant %+v", got, want)
	}
}

// Without a person's token only API discovery leaves with the console's
// own identity; a client certificate (which the API server would take
// over any token) is refused.
func TestBearerConfig(t *testing.T) {
	for path, want := range map[string]bool{"/api": true, "/apis": true, "/api/v1": true, "/apis/porch.kpt.dev/v1alpha1": true,
		"/api/v1/namespaces": false, "/apis/porch.kpt.dev/v1alpha1/namespaces/a/packagerevisions": false, "/healthz": false} {
		if got := discovery(path); got != want {
			t.Errorf("discovery(%q) = %v, want %v", path, got, want)
		}
	}
	bt := &bearerTransport{next: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
	})}
	if _, err := bt.RoundTrip(httptest.NewRequest(http.MethodGet, "https://k8s/api/v1/namespaces/a/secrets", nil)); err == nil {
		t.Error("a request without the person's token left")
	}
	req := httptest.NewRequest(http.MethodGet, "https://k8s/api/v1/namespaces/a/secrets", nil)
	res, err := bt.RoundTrip(req.WithContext(withToken(req.Context(), "t0k")))
	if err != nil || res.Request.Header.Get("Authorization") != "Bearer t0k" {
		t.Errorf("the person's token was not sent: %v", err)
	}
	if _, err := BearerConfig(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CertData: []byte("x"), KeyData: []byte("y")}}); err == nil {
		t.Error("a client certificate was accepted")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
