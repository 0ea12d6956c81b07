package v1alpha1

import (
	"encoding/json"
	"testing"
)

func TestRevisionNumber(t *testing.T) {
	for _, tc := range []struct {
		json string
		n    int
		ref  string
		bad  bool
	}{
		{`3`, 3, "v3", false},
		{`"3"`, 3, "v3", false},
		{`"v3"`, 3, "v3", false},
		{`0`, 0, "v0", false},
		{`999999999`, 999999999, "v999999999", false},
		{`1000000000`, 0, "1000000000", true},
		{`-1`, 0, "-1", true},
		{`"v99999999999999999999"`, 0, "v99999999999999999999", true},
		{`"latest"`, 0, "latest", true},
		{`"v"`, 0, "v", true},
		{`"+3"`, 0, "+3", true},
		{`3.5`, 0, "3.5", true},
	} {
		var u Upstream
		if err := json.Unmarshal([]byte(`{"repo":"r","package":"p","revision":`+tc.json+`}`), &u); err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		n, err := u.Revision.Number()
		if (err != nil) != tc.bad || n != tc.n || u.Revision.Ref() != tc.ref {
			t.Errorf("%s: Number() = %d, %v; Ref() = %q", tc.json, n, err, u.Revision.Ref())
		}
	}
	var u Upstream
	if err := json.Unmarshal([]byte(`{"revision":true}`), &u); err == nil {
		t.Error("a boolean revision is refused")
	}
}
