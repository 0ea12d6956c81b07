package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"lifecyle", "lifecycle", 1}, {"kitten", "sitting", 3}, {"abc", "", 3}} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// A prefix wins, then the nearest within max; nothing further.
func TestClosest(t *testing.T) {
	names := []string{"repository", "revision", "regional-app", "cluster-06.web.packagevariant-3"}
	for _, tc := range []struct {
		name string
		max  int
		want string
	}{
		{"repo", 2, "repository"},
		{"revison", 2, "revision"},
		{"regoinal-app", 2, "regional-app"},
		{"cluster-06.web.packagevarient-3", 3, "cluster-06.web.packagevariant-3"},
		{"shop", 2, ""},
	} {
		if got := Closest(tc.name, names, tc.max); got != tc.want {
			t.Errorf("Closest(%q, %d) = %q, want %q", tc.name, tc.max, got, tc.want)
		}
	}
}
