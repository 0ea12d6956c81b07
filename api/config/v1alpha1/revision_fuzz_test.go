package v1alpha1

import (
	"encoding/json"
	"strconv"
	"testing"
)

// FuzzRevisionNumber: any JSON value either decodes or is refused, never
// panics; a number that parses is in range and round-trips through Ref.
// go test -fuzz FuzzRevisionNumber ./api/config/v1alpha1/
func FuzzRevisionNumber(f *testing.F) {
	for _, s := range []string{`3`, `"v3"`, `"3"`, `-1`, `1e9`, `"v99999999999999999999"`, `"+3"`, `""`, `null`, `true`, `3.5`, `"v"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var r RevisionNumber
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			return
		}
		n, err := r.Number()
		if err != nil {
			return
		}
		if n < 0 || n > MaxRevision {
			t.Fatalf("%s: %d out of range", raw, n)
		}
		if r.Ref() != "v"+strconv.Itoa(n) {
			t.Fatalf("%s: Ref %q for %d", raw, r.Ref(), n)
		}
	})
}
