package pkgdiff

import (
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// context is the number of unchanged lines shown around a change.
const context = 3

type line struct {
	op   byte // ' ', '-' or '+'
	text string
}

// unified is the unified diff of before and after (without the ---/+++
// header, which the printer writes), hunks with context lines; "" when
// they are equal.
func unified(before, after string) string {
	if before == after {
		return ""
	}
	var lines []line
	for _, d := range diff.Do(before, after) {
		op := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = '-'
		case diffmatchpatch.DiffInsert:
			op = '+'
		}
		for _, t := range splitLines(d.Text) {
			lines = append(lines, line{op: op, text: t})
		}
	}
	var b strings.Builder
	for start := 0; start < len(lines); {
		// Find the next change.
		first := start
		for first < len(lines) && lines[first].op == ' ' {
			first++
		}
		if first == len(lines) {
			break
		}
		// The hunk runs from context lines before it to context lines
		// after the last change that is within 2*context of the one
		// before.
		from := max(first-context, start)
		last := first
		for i := first; i < len(lines); i++ {
			if lines[i].op != ' ' {
				last = i
			} else if i-last > 2*context {
				break
			}
		}
		to := min(last+context+1, len(lines))
		oldStart, newStart := position(lines, from)
		oldCount, newCount := 0, 0
		for _, l := range lines[from:to] {
			if l.op != '+' {
				oldCount++
			}
			if l.op != '-' {
				newCount++
			}
		}
		fmt.Fprintf(&b, "@@ -%s +%s @@\n", rangeOf(oldStart, oldCount), rangeOf(newStart, newCount))
		for _, l := range lines[from:to] {
			b.WriteByte(l.op)
			b.WriteString(l.text)
			b.WriteByte('\n')
		}
		start = to
	}
	return b.String()
}

// position is the 1-based line numbers in the old and new text at which
// lines[i] stands.
func position(lines []line, i int) (int, int) {
	o, n := 1, 1
	for _, l := range lines[:i] {
		if l.op != '+' {
			o++
		}
		if l.op != '-' {
			n++
		}
	}
	return o, n
}

// rangeOf writes a hunk range as unified diffs do: an empty range names
// the line before it.
func rangeOf(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprintf("%d", start)
	}
	return fmt.Sprintf("%d,%d", start, count)
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return []string{""}
	}
	return strings.Split(s, "\n")
}
