package pkgdiff

import (
	"fmt"
	"io"
	"strings"
)

// WriteUnified writes the diff for people: the Kptfiles first, then the
// resources by identity, then the other files; each change a heading
// line and its unified diff.
func (d *Diff) WriteUnified(w io.Writer) error {
	p := &printer{w: w}
	if d.Empty() {
		p.printf("no changes\n")
		return p.err
	}
	for _, f := range d.Kptfiles {
		p.file(f)
	}
	for _, r := range d.Resources {
		where := r.Path
		if r.FromPath != "" {
			where = r.FromPath + " -> " + r.Path
		}
		p.printf("%s %s (%s)\n", r.Action, r.ID(), where)
		if r.Diff != "" {
			p.printf("--- a/%s\n+++ b/%s\n%s", r.ID(), r.ID(), r.Diff)
		}
	}
	for _, f := range d.Files {
		p.file(f)
	}
	return p.err
}

// WriteStat writes one line per change, with the lines it removes and
// adds, and a total.
func (d *Diff) WriteStat(w io.Writer) error {
	p := &printer{w: w}
	removed, added := 0, 0
	line := func(action Action, what, diff string) {
		r, a := counts(diff)
		removed, added = removed+r, added+a
		p.printf("%-9s %s | -%d +%d\n", action, what, r, a)
	}
	for _, f := range d.Kptfiles {
		line(f.Action, f.name(), f.Diff)
	}
	for _, r := range d.Resources {
		line(r.Action, r.ID(), r.Diff)
	}
	for _, f := range d.Files {
		line(f.Action, f.name(), f.Diff)
	}
	p.printf("%d Kptfile(s), %d resource(s), %d file(s) changed; %d line(s) removed, %d added\n",
		len(d.Kptfiles), len(d.Resources), len(d.Files), removed, added)
	return p.err
}

func (f File) name() string {
	if f.FromPath != "" {
		return f.FromPath + " -> " + f.Path
	}
	return f.Path
}

// counts are the lines a unified diff removes and adds.
func counts(diff string) (removed, added int) {
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "-"):
			removed++
		case strings.HasPrefix(l, "+"):
			added++
		}
	}
	return removed, added
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *printer) file(f File) {
	p.printf("%s %s\n", f.Action, f.name())
	switch {
	case f.Binary:
		p.printf("(binary content)\n")
	case f.Diff != "":
		from := f.Path
		if f.Action == Added {
			from = "/dev/null"
		} else {
			from = "a/" + from
		}
		to := "b/" + f.Path
		if f.Action == Deleted {
			to = "/dev/null"
		}
		p.printf("--- %s\n+++ %s\n%s", from, to, f.Diff)
	}
}
