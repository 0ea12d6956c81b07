package engine

import (
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/scion-dev/scion/internal/pkg"
)

// ResID identifies a resource inside a package across versions: the
// (sub)package folder it belongs to, its group, kind, namespace and name.
type ResID struct {
	Package   string
	Group     string
	Kind      string
	Namespace string
	Name      string
}

func (id ResID) String() string {
	s := id.Kind + " " + id.Name
	if id.Group != "" {
		s = id.Group + "/" + s
	}
	if id.Namespace != "" {
		s = id.Kind + " " + id.Namespace + "/" + id.Name
		if id.Group != "" {
			s = id.Group + "/" + s
		}
	}
	if id.Package != "" {
		s += " (in " + id.Package + ")"
	}
	return s
}

// kptMergeRE matches the identity comment kpt writes on metadata.
var kptMergeRE = regexp.MustCompile(`kpt-merge:\s*([^/\s]*)/(\S+)`)

func groupOf(apiVersion string) string {
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		return g
	}
	return ""
}

// resID returns a resource's identity. With useComment, a "kpt-merge:
// <namespace>/<name>" comment on metadata (written at clone time) wins over
// the current namespace and name, so renamed resources keep matching their
// upstream.
func resID(owner string, n *yaml.RNode, useComment bool) ResID {
	id := ResID{Package: owner, Group: groupOf(n.GetApiVersion()), Kind: n.GetKind(), Namespace: n.GetNamespace(), Name: n.GetName()}
	if useComment {
		if ns, name, ok := kptMergeIdentity(n); ok {
			id.Namespace, id.Name = ns, name
		}
	}
	return id
}

func metadataKey(n *yaml.RNode) *yaml.Node {
	y := n.YNode()
	for i := 0; i+1 < len(y.Content); i += 2 {
		if y.Content[i].Value == "metadata" {
			return y.Content[i]
		}
	}
	return nil
}

func kptMergeIdentity(n *yaml.RNode) (string, string, bool) {
	k := metadataKey(n)
	if k == nil {
		return "", "", false
	}
	m := kptMergeRE.FindStringSubmatch(k.LineComment)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// setKptMergeComment records a resource's identity on its metadata key.
func setKptMergeComment(n *yaml.RNode) {
	k := metadataKey(n)
	if k == nil {
		return
	}
	c := fmt.Sprintf("# kpt-merge: %s/%s", n.GetNamespace(), n.GetName())
	rest := strings.TrimSpace(kptMergeRE.ReplaceAllString(strings.TrimPrefix(k.LineComment, "#"), ""))
	if rest != "" {
		c += " " + rest
	}
	k.LineComment = c
}

// resourceFile returns the file a resource was read from (or is to be
// written to).
func resourceFile(n *yaml.RNode) string { return pkg.PathOf(n) }
