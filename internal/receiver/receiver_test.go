package receiver

import "testing"

// The spellings of one repository by git hosts and Repositories compare
// equal; other repositories do not.
func TestNormalizeURL(t *testing.T) {
	same := []string{
		"https://git.example.com/team/fleet.git",
		"https://git.example.com/team/fleet",
		"https://GIT.example.com/Team/Fleet/",
		"http://user@git.example.com:8443/team/fleet.git",
		"ssh://git@git.example.com:2222/team/fleet.git",
		"git@git.example.com:team/fleet.git",
	}
	for _, u := range same {
		if got := NormalizeURL(u); got != "git.example.com/team/fleet" {
			t.Errorf("%s: %s", u, got)
		}
	}
	for _, u := range []string{"https://git.example.com/team/fleet-2.git", "https://other.example.com/team/fleet.git", "git@git.example.com:fleet.git"} {
		if NormalizeURL(u) == "git.example.com/team/fleet" {
			t.Errorf("%s matches", u)
		}
	}
}
