// Package egress decides which network addresses Scion may reach on a
// tenant's behalf (the git remotes and registries that Repositories,
// clone sources and upstreams name), and says what went wrong with such
// a connection by its class only: what answered, and what it said, stay
// on the server.
//
// A Policy is checked at every connection, after the host name is
// resolved (a name that resolves to a denied address later, DNS
// rebinding, is refused then), and at admission for URLs whose host is
// an address literal.
package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DeniedReason is the reason of a condition of an object stalled because
// a URL it names leads to an address the egress policy refuses.
const DeniedReason = "EgressDenied"

// DefaultDeny is what the controllers refuse unless told otherwise:
// loopback, unspecified, link-local (the cloud metadata address
// 169.254.169.254 among them) and AWS's IPv6 metadata address. The
// cluster's own Service and Pod ranges are added when known.
var DefaultDeny = []string{"127.0.0.0/8", "::1/128", "0.0.0.0/8", "::/128", "169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128"}

// Policy is an egress policy. The zero Policy (and a nil one) allows
// everything.
type Policy struct {
	// allowHosts are host names always allowed (exact, or a
	// ".example.com" suffix), whatever they resolve to.
	allowHosts []string
	// allow are ranges always allowed; deny ranges refused otherwise.
	allow, deny []netip.Prefix
}

// New returns the policy of the flags: allow holds host names
// (git.example.com, or *.example.com for its subdomains), addresses and
// CIDR ranges always allowed; deny the addresses and ranges refused
// otherwise. An entry that is none of these is an error naming it.
func New(allow, deny []string) (*Policy, error) {
	p := &Policy{}
	for _, a := range allow {
		a = strings.TrimSpace(a)
		if pfx, err := prefix(a); err == nil {
			p.allow = append(p.allow, pfx)
			continue
		}
		host := strings.ToLower(strings.TrimPrefix(a, "*"))
		if host == "" || host == "." || strings.ContainsAny(host, "/:*[] ") {
			return nil, fmt.Errorf("--egress-allow %q: not a host name, address or CIDR range", a)
		}
		p.allowHosts = append(p.allowHosts, host)
	}
	for _, d := range deny {
		pfx, err := prefix(strings.TrimSpace(d))
		if err != nil {
			return nil, fmt.Errorf("--egress-deny %q: not an address or CIDR range", d)
		}
		p.deny = append(p.deny, pfx)
	}
	return p, nil
}

// Deny adds ranges to the refused ones (the cluster's own, when found).
func (p *Policy) Deny(ranges ...netip.Prefix) {
	p.deny = append(p.deny, ranges...)
}

func prefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		pfx, err := netip.ParsePrefix(s)
		return pfx.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// DeniedError is a connection the policy refused.
type DeniedError struct {
	// Host is the host the URL names; Addr the address refused (the
	// host's own when it is a literal) and Range the deny entry it is in.
	Host  string
	Addr  netip.Addr
	Range netip.Prefix
}

func (e *DeniedError) Error() string {
	what := e.Host
	if e.Addr.String() != e.Host {
		what = fmt.Sprintf("%s (%s)", e.Host, e.Addr)
	}
	return fmt.Sprintf("%s may not be reached from Scion: %s is in the egress policy's denied range %s (an administrator allows it with --egress-allow)", what, e.Addr, e.Range)
}

// StallReason makes reconcilers stall on it (reconciler.Classify): the
// spec, or the administrator's policy, must change.
func (e *DeniedError) StallReason() string { return DeniedReason }

// hostAllowed says whether a host name is allowed whatever it resolves
// to.
func (p *Policy) hostAllowed(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, h := range p.allowHosts {
		if host == h || strings.HasPrefix(h, ".") && strings.HasSuffix(host, h) {
			return true
		}
	}
	return false
}

// checkAddr refuses an address in a denied range that no allowed range
// holds.
func (p *Policy) checkAddr(host string, a netip.Addr) error {
	if p == nil {
		return nil
	}
	a = a.Unmap()
	for _, r := range p.allow {
		if r.Contains(a) {
			return nil
		}
	}
	for _, r := range p.deny {
		if r.Contains(a) {
			return &DeniedError{Host: host, Addr: a, Range: r}
		}
	}
	return nil
}

// CheckURL refuses a URL (http, https, ssh, git's user@host:path, oci or
// a registry's host[:port])
// whose host is an address the policy denies, or a name of the local
// host (localhost): what admission can tell without resolving names.
// Other names are checked when connecting.
func (p *Policy) CheckURL(raw string) error {
	if p == nil {
		return nil
	}
	host := raw
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		host = u.Hostname()
	} else if user, rest, ok := strings.Cut(raw, "@"); ok && !strings.Contains(user, "/") && strings.Contains(rest, ":") && !strings.Contains(raw, "://") {
		// git's scp-like form, user@host:path ([address]:path).
		if r, ok := strings.CutPrefix(rest, "["); ok {
			host, _, _ = strings.Cut(r, "]")
		} else {
			host, _, _ = strings.Cut(rest, ":")
		}
	} else {
		host, _, _ = strings.Cut(strings.TrimPrefix(raw, "//"), "/")
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
	}
	if p.hostAllowed(host) {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return p.checkAddr(host, a)
	}
	if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return p.checkAddr(host, netip.MustParseAddr("127.0.0.1"))
	}
	return nil
}

// Transport returns a copy of base whose connections the policy checks:
// a host name it allows is dialled as is; any other host's address is
// checked once resolved, before connecting. A request through a proxy
// (base.Proxy) has its URL's host resolved and checked first, and the
// proxy itself (the administrator's) is dialled unchecked. A nil policy
// returns base.
func (p *Policy) Transport(base *http.Transport) *http.Transport {
	if p == nil {
		return base
	}
	t := base.Clone()
	var proxies sync.Map // the proxies' host:port, dialled unchecked
	if base.Proxy != nil {
		proxy := base.Proxy
		t.Proxy = func(r *http.Request) (*url.URL, error) {
			u, err := proxy(r)
			if err != nil || u == nil {
				return u, err
			}
			if err := p.resolveAndCheck(r.Context(), r.URL.Hostname()); err != nil {
				return nil, err
			}
			proxies.Store(u.Host, true)
			return u, nil
		}
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if _, proxy := proxies.Load(addr); proxy || p.hostAllowed(host) {
			return dialer.DialContext(ctx, network, addr)
		}
		d := *dialer
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return err
			}
			return p.checkAddr(host, ap.Addr())
		}
		return d.DialContext(ctx, network, addr)
	}
	return t
}

// CheckHost checks every address a host resolves to, right before a
// connection the policy's Transport does not dial (ssh: go-git dials it).
// A nil policy allows every host.
func (p *Policy) CheckHost(ctx context.Context, host string) error {
	if p == nil {
		return nil
	}
	return p.resolveAndCheck(ctx, host)
}

// resolveAndCheck checks every address a host resolves to.
func (p *Policy) resolveAndCheck(ctx context.Context, host string) error {
	if p.hostAllowed(host) {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return p.checkAddr(host, a)
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if err := p.checkAddr(host, a); err != nil {
			return err
		}
	}
	return nil
}

// Class says what kind of failure a connection's error is, without what
// the other end said or who it is (a certificate's names, a response's
// body): "" when err is not one of them. Errors a tenant reads say this
// instead of the library's text.
func Class(err error) string {
	var denied *DeniedError
	var dns *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.As(err, &denied):
		return denied.Error()
	case tlsClass(err) != "":
		return tlsClass(err)
	case errors.As(err, &dns):
		return "its host name does not resolve"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the connection was refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "the connection was reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "the host is unreachable"
	case errors.As(err, &opErr) && opErr.Timeout():
		return "the connection timed out"
	}
	return ""
}

// tlsClass says what is wrong with a TLS handshake, naming no name of
// the certificate's.
func tlsClass(err error) string {
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var unknown x509.UnknownAuthorityError
	var verify *tls.CertificateVerificationError
	var header tls.RecordHeaderError
	switch {
	case errors.As(err, &host):
		return "its TLS certificate is for another host name"
	case errors.As(err, &invalid):
		return "its TLS certificate is not valid (expired, not yet valid, or not for serving)"
	case errors.As(err, &unknown), errors.As(err, &verify):
		return "its TLS certificate is not signed by an authority Scion trusts (a private authority: its certificate goes in the Secret's caFile)"
	case errors.As(err, &header):
		return "it does not answer TLS"
	}
	return ""
}
