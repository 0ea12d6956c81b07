package egress

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestNew_badEntries(t *testing.T) {
	for _, c := range []struct{ allow, deny []string }{
		{allow: []string{"http://git.example.com"}},
		{allow: []string{"*"}},
		{deny: []string{"git.example.com"}},
		{deny: []string{"10.0.0.0/33"}},
	} {
		if _, err := New(c.allow, c.deny); err == nil {
			t.Errorf("%v %v: accepted", c.allow, c.deny)
		}
	}
}

func TestCheckURL(t *testing.T) {
	p, err := New([]string{"*.internal.example", "127.0.0.1"}, DefaultDeny)
	if err != nil {
		t.Fatal(err)
	}
	for url, want := range map[string]string{
		"https://127.0.0.2/x.git":                 "127.0.0.2 may not be reached from Scion: 127.0.0.2 is in the egress policy's denied range 127.0.0.0/8",
		"http://[::1]:8080/x.git":                 "::1 may not be reached",
		"http://169.254.169.254/latest/meta-data": "169.254.0.0/16",
		"http://localhost:6443/":                  "", // 127.0.0.1 is allowed
		"http://[::ffff:169.254.169.254]/":        "169.254.169.254 is in",
		"registry.local:5000":                     "",
		"[fe80::1]:5000/prefix":                   "fe80::/10",
		"http://127.0.0.1:3000/x.git":             "", // allowed by address
		"https://git.internal.example/x.git":      "", // allowed by name
		"https://github.com/example/x.git":        "", // names are checked when connecting
		"oci://10.0.0.1/x":                        "",
		"ssh://git@127.0.0.2:2222/x.git":          "127.0.0.2 is in",
		"git@169.254.169.254:org/x.git":           "169.254.169.254 is in", // scp-like
		"git@[::1]:org/x.git":                     "::1 is in",
		"git@github.com:org/x.git":                "",
	} {
		err := p.CheckURL(url)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", url, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want %q", url, err, want)
		}
	}
	strict, err := New(nil, DefaultDeny)
	if err != nil {
		t.Fatal(err)
	}
	if err := strict.CheckURL("http://api.localhost:6443/"); err == nil || !strings.Contains(err.Error(), "api.localhost (127.0.0.1) may not be reached") {
		t.Errorf("api.localhost: %v", err)
	}
	var nilPolicy *Policy
	if err := nilPolicy.CheckURL("http://127.0.0.1/"); err != nil {
		t.Errorf("a nil policy refused: %v", err)
	}
}

// The transport refuses a denied address once resolved: a name that
// resolves to loopback (localhost) as well as the address itself; a
// host name the policy allows is reached whatever it resolves to.
func TestTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	deny, err := New(nil, DefaultDeny)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{srv.URL, "http://localhost" + port} {
		_, err := (&http.Client{Transport: deny.Transport(http.DefaultTransport.(*http.Transport))}).Get(u)
		var denied *DeniedError
		if !errors.As(err, &denied) || denied.Range != netip.MustParsePrefix("127.0.0.0/8") {
			t.Errorf("%s: %v, want a DeniedError", u, err)
		}
		if Class(err) != denied.Error() {
			t.Errorf("class %q", Class(err))
		}
	}
	allow, err := New([]string{"localhost"}, DefaultDeny)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: allow.Transport(http.DefaultTransport.(*http.Transport))}).Get("http://localhost" + port)
	if err != nil {
		t.Fatalf("an allowed host name: %v", err)
	}
	resp.Body.Close()
}

// A TLS server's certificate is not named in the class of the failure:
// what answered stays on the server.
func TestClass_tls(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	_, err := http.Get(srv.URL)
	if err == nil {
		t.Fatal("an untrusted certificate was accepted")
	}
	if got := Class(err); got != "its TLS certificate is not signed by an authority Scion trusts (a private authority: its certificate goes in the Secret's caFile)" {
		t.Errorf("class %q of %v", got, err)
	}
	if strings.Contains(Class(err), "example.com") {
		t.Error("the certificate's names leak")
	}
}
