package console

import (
	"html/template"
	"strings"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgdiff"
	"github.com/scion-dev/scion/internal/tree"
)

// diffLine is a line of a unified diff with the class it is shown with.
type diffLine struct {
	Class, Text string
}

// splitRow is a row of a diff shown side by side: the old line on the
// left, the new on the right (either may be empty), or a hunk header
// across both.
type splitRow struct {
	Hunk                  string
	Left, Right           string
	LeftClass, RightClass string
}

// splitLines pairs a unified diff's lines side by side: context on both
// sides, each run of removed lines next to the added lines that follow.
func splitLines(diff string) []splitRow {
	var rows []splitRow
	var dels, adds []string
	flush := func() {
		for i := 0; i < max(len(dels), len(adds)); i++ {
			row := splitRow{}
			if i < len(dels) {
				row.Left, row.LeftClass = dels[i], "del"
			}
			if i < len(adds) {
				row.Right, row.RightClass = adds[i], "add"
			}
			rows = append(rows, row)
		}
		dels, adds = dels[:0], adds[:0]
	}
	for _, l := range strings.Split(strings.TrimSuffix(diff, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "@@"):
			flush()
			rows = append(rows, splitRow{Hunk: l})
		case strings.HasPrefix(l, "-"):
			if len(adds) > 0 {
				flush()
			}
			dels = append(dels, l[1:])
		case strings.HasPrefix(l, "+"):
			adds = append(adds, l[1:])
		default:
			flush()
			l = strings.TrimPrefix(l, " ")
			rows = append(rows, splitRow{Left: l, Right: l})
		}
	}
	flush()
	return rows
}

// diffIn is a diff with how it is shown.
type diffIn struct {
	*pkgdiff.Diff
	Split bool
}

// hunksIn is a file's hunks with how they are shown.
type hunksIn struct {
	Text  string
	Split bool
}

// lifecycles are the lifecycles the proposals page shows, in its order.
func lifecycles() []string {
	return []string{string(porchv1alpha1.LifecycleProposed), string(porchv1alpha1.LifecycleDraft), string(porchv1alpha1.LifecyclePublished), string(porchv1alpha1.LifecycleDeletionProposed)}
}

var funcs = template.FuncMap{
	"diffIn":      func(d *pkgdiff.Diff, split bool) diffIn { return diffIn{Diff: d, Split: split} },
	"hunksIn":     func(text string, split bool) hunksIn { return hunksIn{Text: text, Split: split} },
	"splitLines":  splitLines,
	"targetClass": tree.TargetState,
	"targetTitle": targetTitle,
	"join":        strings.Join,
	"lifecycles":  lifecycles,
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
