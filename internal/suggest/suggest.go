// Package suggest finds what a person probably meant by a name they
// mistyped: a flag, an object of a namespace.
package suggest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Closest is the candidate nearest to name: one that begins with name
// (--repo for --repository), else the nearest by edit distance when that
// is at most max (a typo); "" when none is.
func Closest(name string, candidates []string, max int) string {
	best, bestDist := "", max+1
	for _, c := range candidates {
		d := Distance(name, c)
		if strings.HasPrefix(c, name) {
			d = 0
		}
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// Distance is the Levenshtein distance of a and b.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// NotFound is the error for an object of kind named name that namespace
// does not have, naming the namespace and, when one of list's kind there
// is a typo away, that one ("did you mean ...?"). list is read with c.
func NotFound(ctx context.Context, c client.Reader, list client.ObjectList, kind, namespace, name string) error {
	msg := fmt.Sprintf("%s %s not found in namespace %s", kind, name, namespace)
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return errors.New(msg)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return errors.New(msg)
	}
	var names []string
	for _, o := range items {
		if m, err := meta.Accessor(o); err == nil {
			names = append(names, m.GetName())
		}
	}
	if s := Closest(name, names, 3); s != "" && s != name {
		msg += "; did you mean " + s + "?"
	}
	return errors.New(msg)
}
