package kptfile

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// encode turns a Kptfile value into YAML nodes with keys in the order of
// the Go struct fields (not sorted, as a JSON round trip would), honoring
// json tags and omitempty. It handles the kinds the Kptfile types use.
func encode(v reflect.Value) (*yaml.Node, error) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil, nil
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			fv := v.Field(i)
			if strings.Contains(opts, "omitempty") && fv.IsZero() {
				continue
			}
			if (fv.Kind() == reflect.Slice || fv.Kind() == reflect.Map) && fv.Len() == 0 && strings.Contains(opts, "omitempty") {
				continue
			}
			n, err := encode(fv)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if n == nil {
				continue
			}
			if n.Kind == yaml.MappingNode && len(n.Content) == 0 && strings.Contains(opts, "omitempty") {
				continue
			}
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}, n)
		}
		return m, nil
	case reflect.Map:
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			n, err := encode(v.MapIndex(k))
			if err != nil {
				return nil, err
			}
			if n == nil {
				n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
			}
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k.String()}, n)
		}
		return m, nil
	case reflect.Slice:
		s := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for i := 0; i < v.Len(); i++ {
			n, err := encode(v.Index(i))
			if err != nil {
				return nil, err
			}
			if n != nil {
				s.Content = append(s.Content, n)
			}
		}
		return s, nil
	case reflect.String:
		return yaml.NewStringRNode(v.String()).YNode(), nil
	case reflect.Bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v.Bool())}, nil
	case reflect.Int, reflect.Int32, reflect.Int64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(v.Int(), 10)}, nil
	default:
		return nil, fmt.Errorf("cannot encode a %s", v.Kind())
	}
}
