package kindwatch

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ErrNotAllowed is matched by errors about a kind the controller may not
// read for tenants.
var ErrNotAllowed = errors.New("kind not allowed")

// DefaultKinds are the kinds tenants may have the controller read when an
// administrator says nothing: ConfigMaps.
var DefaultKinds = Kinds{{Kind: "ConfigMap"}}

// Kinds is an administrator's allow-list of the kinds whose objects
// PackageVariants may inject and PackageVariantSets may select, each
// Kind.group as kubectl writes it (ConfigMap, Team.example.com), or
// *.group for every kind of a group. A wildcard never covers Secrets: only
// "Secret", named, allows them.
type Kinds []schema.GroupKind

// ParseKinds parses the allow-list, refusing what names no kind.
func ParseKinds(items []string) (Kinds, error) {
	var out Kinds
	for _, item := range items {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		gk := schema.ParseGroupKind(item)
		switch {
		case gk.Kind == "*" && gk.Group == "":
			return nil, fmt.Errorf("readable kind %q: a wildcard needs a group (*.example.com); the core group's kinds are named one by one", item)
		case gk.Kind != "*" && len(validation.IsDNS1035Label(strings.ToLower(gk.Kind))) > 0:
			return nil, fmt.Errorf("readable kind %q: %q is not a kind name", item, gk.Kind)
		case gk.Group != "" && len(validation.IsDNS1123Subdomain(gk.Group)) > 0:
			return nil, fmt.Errorf("readable kind %q: %q is not an API group", item, gk.Group)
		}
		out = append(out, gk)
	}
	return out, nil
}

// Allows says whether objects of gk may be read.
func (k Kinds) Allows(gk schema.GroupKind) bool {
	for _, a := range k {
		if a.Group != gk.Group {
			continue
		}
		if a.Kind == gk.Kind || (a.Kind == "*" && !isSecret(gk)) {
			return true
		}
	}
	return false
}

// NotAllowedError says which kind may not be read and how to allow it.
type NotAllowedError struct {
	Message string
}

func (e *NotAllowedError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrNotAllowed) true.
func (e *NotAllowedError) Is(target error) bool { return target == ErrNotAllowed }

// Check returns a NotAllowedError, naming the kind and the list, unless gk
// is allowed.
func (k Kinds) Check(gk schema.GroupKind) error {
	if k.Allows(gk) {
		return nil
	}
	if isSecret(gk) {
		return &NotAllowedError{"Secrets are not read: their data would be copied into git or onto other objects; an administrator can allow it by adding Secret to --readable-kinds"}
	}
	what := gk.Kind
	if gk.Group != "" {
		what += "." + gk.Group
	}
	reads := k.String()
	if reads == "" {
		reads = "no kind"
	}
	return &NotAllowedError{fmt.Sprintf("this controller does not read %s objects (it reads %s); an administrator can add the kind to --readable-kinds and to the controller's ClusterRole", what, reads)}
}

// String lists the kinds as the flag takes them.
func (k Kinds) String() string {
	names := make([]string, len(k))
	for i, gk := range k {
		names[i] = gk.Kind
		if gk.Group != "" {
			names[i] += "." + gk.Group
		}
	}
	return strings.Join(names, ",")
}

func isSecret(gk schema.GroupKind) bool { return gk.Group == "" && gk.Kind == "Secret" }
