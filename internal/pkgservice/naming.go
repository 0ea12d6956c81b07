// Package pkgservice is the package service: the one place that turns git
// package revisions into PackageRevision objects and (with the
// PackageRevision controller) performs writes so that git and the API view
// stay in step.
package pkgservice

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

var (
	invalidNameChars  = regexp.MustCompile(`[^a-z0-9-]+`)
	invalidLabelChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)
)

// ObjectName is the name of the PackageRevision of a package revision:
// <repository>.<package path with / as .>.<workspace>, lowercased. Names
// that had to be changed to be valid, or that are too long, get a hash of
// the exact identity so that they stay unique.
func ObjectName(repository, pkgPath, workspace string) string {
	raw := repository + "." + strings.ReplaceAll(pkgPath, "/", ".") + "." + workspace
	var parts []string
	for _, seg := range strings.Split(strings.ToLower(raw), ".") {
		seg = strings.Trim(invalidNameChars.ReplaceAllString(seg, "-"), "-")
		if seg != "" {
			parts = append(parts, seg)
		}
	}
	name := strings.Join(parts, ".")
	if name == raw && len(name) <= 253 {
		return name
	}
	h := sha256.Sum256([]byte(repository + "\x00" + pkgPath + "\x00" + workspace))
	suffix := "-" + hex.EncodeToString(h[:4])
	if len(name) > 253-len(suffix) {
		name = strings.TrimRight(name[:253-len(suffix)], ".-")
	}
	return name + suffix
}

// LabelValue turns s into a valid label value (at most 63 characters of
// letters, digits, '-', '_' and '.', starting and ending alphanumeric): a
// package path team/app becomes team.app. Values that had to be shortened
// get a hash suffix.
func LabelValue(s string) string {
	v := strings.Trim(invalidLabelChars.ReplaceAllString(strings.ReplaceAll(s, "/", "."), "-"), "._-")
	if len(v) <= 63 {
		return v
	}
	h := sha256.Sum256([]byte(s))
	suffix := "-" + hex.EncodeToString(h[:4])
	return strings.TrimRight(v[:63-len(suffix)], "._-") + suffix
}
