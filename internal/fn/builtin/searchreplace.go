package builtin

import (
	"context"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/scion-dev/scion/internal/yamlutil"
)

// searchReplace finds scalar fields by value (by-value), by regular
// expression (by-value-regex) and/or by path (by-path, dot-separated, '*'
// matching any one field, '**' any number of fields), and replaces their
// value with put-value. In put-value, ${1}, ${2}... refer to the groups of
// by-value-regex.
func searchReplace(_ context.Context, rl *framework.ResourceList) error {
	d := configData(rl.FunctionConfig)
	byValue, byRegex, byPath, put := d["by-value"], d["by-value-regex"], d["by-path"], d["put-value"]
	if byValue == "" && byRegex == "" && byPath == "" {
		// As the catalog's: nothing to look for is nothing to do.
		info(rl, "search-replace: none of data.by-value, data.by-value-regex and data.by-path is given: nothing to do")
		return nil
	}
	if byValue != "" && byRegex != "" {
		return fail(rl, "search-replace: only one of data.by-value and data.by-value-regex may be given")
	}
	_, hasPut := d["put-value"]
	var re *regexp.Regexp
	if byRegex != "" {
		var err error
		if re, err = regexp.Compile("^(?:" + byRegex + ")$"); err != nil {
			return fail(rl, "search-replace: data.by-value-regex: %v", err)
		}
		for _, m := range captureRef.FindAllStringSubmatch(put, -1) {
			if i, _ := strconv.Atoi(m[1]); i > re.NumSubexp() {
				return fail(rl, "search-replace: data.put-value refers to capture group ${%d}, and data.by-value-regex has %d", i, re.NumSubexp())
			}
		}
	}
	var pathParts []string
	if byPath != "" {
		pathParts = strings.Split(byPath, ".")
	}
	count := 0
	for _, n := range rl.Items {
		yamlutil.Walk(n.YNode(), func(p []string, _, v *yaml.Node) {
			if v.Kind != yaml.ScalarNode {
				return
			}
			if byValue != "" && v.Value != byValue {
				return
			}
			if re != nil && !re.MatchString(v.Value) {
				return
			}
			if pathParts != nil && !matchPath(pathParts, p) {
				return
			}
			count++
			if !hasPut {
				return
			}
			newValue := put
			if re != nil {
				newValue = re.ReplaceAllString(v.Value, put)
			}
			v.Value = newValue
			v.Tag = resolvedTag(newValue)
			v.Style = 0
		})
	}
	if hasPut && byValue == "" && re == nil && !strings.ContainsAny(byPath, "*[") {
		// A path without wildcards names one field: put-value adds it
		// where it is missing, as the catalog's function does.
		for _, n := range rl.Items {
			if f, err := n.Pipe(yaml.Lookup(pathParts...)); err != nil || f != nil {
				continue
			}
			if err := n.PipeE(yaml.LookupCreate(yaml.MappingNode, pathParts[:len(pathParts)-1]...), yaml.SetField(pathParts[len(pathParts)-1], yaml.NewStringRNode(put))); err != nil {
				return fail(rl, "search-replace: adding %s: %v", byPath, err)
			}
			count++
		}
	}
	verb := "matched"
	if hasPut {
		verb = "replaced"
	}
	info(rl, "search-replace: %s %d fields", verb, count)
	return nil
}

// captureRef finds ${N} in a put-value.
var captureRef = regexp.MustCompile(`\$\{(\d+)\}`)

// matchPath matches a field path against a pattern with '*' (one field)
// and '**' (any number of fields).
func matchPath(pattern, path []string) bool {
	if len(pattern) == 0 {
		return len(path) == 0
	}
	if pattern[0] == "**" {
		for i := 0; i <= len(path); i++ {
			if matchPath(pattern[1:], path[i:]) {
				return true
			}
		}
		return false
	}
	if len(path) == 0 || (pattern[0] != "*" && pattern[0] != path[0]) {
		return false
	}
	return matchPath(pattern[1:], path[1:])
}
