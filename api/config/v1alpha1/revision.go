package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// RevisionNumber is a published revision number. It is written as a
// string, "3" or "v3", or as Porch writes it, an integer, 3; all three
// mean revision 3. -1 (or "-1"), as in Porch, is the latest published
// revision (LatestRevision).
//
// +kubebuilder:validation:XIntOrString
// +kubebuilder:validation:Type=""
// +kubebuilder:validation:AnyOf={{type: "integer"},{type: "string"}}
type RevisionNumber string

// MaxRevision is the highest revision number (nine digits).
const MaxRevision = 999999999

// LatestRevision names the latest published revision of the package, the
// way Porch does: the variant follows each new publication.
const LatestRevision RevisionNumber = "-1"

// Latest says whether r is LatestRevision.
func (r RevisionNumber) Latest() bool { return r == LatestRevision }

// UnmarshalJSON reads a string or an integer.
func (r *RevisionNumber) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*r = RevisionNumber(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("a revision number is an integer or a string such as \"v3\", not %s", b)
	}
	*r = RevisionNumber(n.String())
	return nil
}

// Number is the revision as an integer: "v3", "3" and 3 are 3. A value
// that is no revision number (negative, too large, not a number) is an
// error that says so.
func (r RevisionNumber) Number() (int, error) {
	s := strings.TrimPrefix(string(r), "v")
	n, err := strconv.ParseUint(s, 10, 31)
	if err != nil || s == "" || s[0] == '+' || n > MaxRevision {
		return 0, fmt.Errorf("%q is not a revision number: use a whole number from 0 to %d, such as 3 or \"v3\"", string(r), MaxRevision)
	}
	return int(n), nil
}

// Ref is the revision's tag name, v<N>, as written when it is a valid
// number, else the value as it is.
func (r RevisionNumber) Ref() string {
	if n, err := r.Number(); err == nil {
		return "v" + strconv.Itoa(n)
	}
	return string(r)
}
