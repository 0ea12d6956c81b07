package store

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// plainSecret matches passwords that cannot appear in a URL by chance.
var plainSecret = regexp.MustCompile(`^[A-Za-z0-9._~-]{6,}$`)

// FuzzRepositoryURL: whatever a tenant writes in spec.git.repo, checking
// and printing it neither panics nor shows its password.
func FuzzRepositoryURL(f *testing.F) {
	for _, s := range []string{
		"https://git.example.com/pkgs.git", "http://user:s3cret@host/x.git", "file:///srv/git/x.git",
		"ssh://git@host/x.git", "git@host:x.git", "http://[::1", "http://u:p%zz@h/", "https://:tok@h", "",
		"http://user:pa:ss@host/", "HTTP://USER:S3CRET@HOST/X",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var secret string
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			secret, _ = u.User.Password()
		}
		redacted := Redact(raw)
		err := ValidateURL(raw)
		if !plainSecret.MatchString(secret) || strings.Contains(strings.Replace(raw, ":"+secret+"@", "", 1), secret) {
			return // too short or too odd to tell, or also written elsewhere in the URL
		}
		if strings.Contains(redacted, secret) {
			t.Errorf("Redact(%q) = %q shows the password", raw, redacted)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("ValidateURL(%q) = %q shows the password", raw, err)
		}
		if !HasCredentials(raw) {
			t.Errorf("HasCredentials(%q) is false", raw)
		}
	})
}
