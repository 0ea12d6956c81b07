package console

import (
	"html/template"
	"strings"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// diffLine is a line of a unified diff with the class it is shown with.
type diffLine struct {
	Class, Text string
}

var funcs = template.FuncMap{
	"join": strings.Join,
	"lifecycles": func() []string {
		return []string{string(porchv1alpha1.LifecycleProposed), string(porchv1alpha1.LifecycleDraft), string(porchv1alpha1.LifecyclePublished), string(porchv1alpha1.LifecycleDeletionProposed)}
	},
	"diffLines": func(diff string) []diffLine {
		var out []diffLine
		for _, l := range strings.Split(strings.TrimSuffix(diff, "\n"), "\n") {
			class := ""
			switch {
			case strings.HasPrefix(l, "@@"):
				class = "hunk"
			case strings.HasPrefix(l, "+"):
				class = "add"
			case strings.HasPrefix(l, "-"):
				class = "del"
			}
			out = append(out, diffLine{Class: class, Text: l})
		}
		return out
	},
}
