package crd

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/scheme"
)

// decodeRules says, for each Go type that decodes itself (a
// json.Unmarshaler) or is narrower than JSON, what its schema must carry
// so that the API server refuses every value the type cannot decode. A
// type that decodes itself and is not listed fails the test: add the
// schema rules it needs, then list it here.
var decodeRules = map[reflect.Type]func(*apiextensionsv1.JSONSchemaProps) string{
	reflect.TypeFor[metav1.Duration](): func(s *apiextensionsv1.JSONSchemaProps) string {
		if s.Pattern == "" || s.MaxLength == nil || len(s.XValidations) == 0 {
			return "a duration needs a pattern (Go's duration syntax), a maxLength and a CEL rule bounding it (a value that overflows matches the pattern)"
		}
		return ""
	},
	reflect.TypeFor[metav1.Time](): func(s *apiextensionsv1.JSONSchemaProps) string {
		if s.Format != "date-time" {
			return "a time needs format: date-time"
		}
		return ""
	},
	reflect.TypeFor[intstr.IntOrString]():            intOrString,
	reflect.TypeFor[configv1alpha1.RevisionNumber](): intOrString,
	reflect.TypeFor[resource.Quantity](): func(s *apiextensionsv1.JSONSchemaProps) string {
		if !s.XIntOrString || s.Pattern == "" {
			return "a quantity needs x-kubernetes-int-or-string and a pattern"
		}
		return ""
	},
}

func intOrString(s *apiextensionsv1.JSONSchemaProps) string {
	if !s.XIntOrString {
		return "needs x-kubernetes-int-or-string"
	}
	return ""
}

// Every field of every CRD refuses, at the API server, what its Go type
// cannot decode: one such value in one object would otherwise stop the
// controller's list of the whole kind.
func TestSchemasRefuseWhatGoCannotDecode(t *testing.T) {
	crds, err := Definitions()
	if err != nil {
		t.Fatal(err)
	}
	s := scheme.NewStorage()
	checked := 0
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			gvk := metav1.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			obj, err := s.New(runtimeGVK(gvk))
			if err != nil {
				t.Errorf("%s: no Go type: %v", crd.Name, err)
				continue
			}
			w := &schemaWalk{t: t, crd: crd.Name}
			for _, field := range []string{"spec", "status"} {
				f, ok := reflect.TypeOf(obj).Elem().FieldByName(strings.ToUpper(field[:1]) + field[1:])
				if !ok {
					continue
				}
				prop, ok := v.Schema.OpenAPIV3Schema.Properties[field]
				if !ok {
					t.Errorf("%s: %s has no schema", crd.Name, field)
					continue
				}
				w.walk(field, f.Type, &prop)
			}
			checked += w.leaves
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d fields: the walk is broken", checked)
	}
}

func runtimeGVK(g metav1.GroupVersionKind) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: g.Group, Version: g.Version, Kind: g.Kind}
}

type schemaWalk struct {
	t      *testing.T
	crd    string
	leaves int
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

func (w *schemaWalk) fail(path, format string, args ...any) {
	w.t.Helper()
	w.t.Errorf("%s: %s: "+format, append([]any{w.crd, path}, args...)...)
}

func (w *schemaWalk) walk(path string, t reflect.Type, s *apiextensionsv1.JSONSchemaProps) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if rule, ok := decodeRules[t]; ok {
		w.leaves++
		if msg := rule(s); msg != "" {
			w.fail(path, "%s (Go type %s)", msg, t)
		}
		return
	}
	if t == reflect.TypeFor[apiextensionsv1.JSON]() || t == reflect.TypeFor[runtime.RawExtension]() {
		w.leaves++
		return // any JSON decodes
	}
	if reflect.PointerTo(t).Implements(unmarshaler) || t.Implements(unmarshaler) {
		w.fail(path, "Go type %s decodes itself: give its schema the rules that refuse what it cannot decode, and list it in decodeRules", t)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if s.Type != "object" {
			w.fail(path, "Go struct %s, schema type %q", t, s.Type)
			return
		}
		w.walkStruct(path, t, s)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			w.leaves++
			if s.Type != "string" || s.Format != "byte" {
				w.fail(path, "Go []byte needs type string, format byte")
			}
			return
		}
		if s.Type != "array" || s.Items == nil || s.Items.Schema == nil {
			w.fail(path, "Go slice, schema type %q", s.Type)
			return
		}
		w.walk(path+"[]", t.Elem(), s.Items.Schema)
	case reflect.Map:
		if s.Type != "object" || s.AdditionalProperties == nil || s.AdditionalProperties.Schema == nil {
			w.fail(path, "Go map, schema without additionalProperties")
			return
		}
		w.walk(path+"[]", t.Elem(), s.AdditionalProperties.Schema)
	case reflect.String:
		w.leaves++
		if s.Type != "string" {
			w.fail(path, "Go string, schema type %q", s.Type)
		}
	case reflect.Bool:
		w.leaves++
		if s.Type != "boolean" {
			w.fail(path, "Go bool, schema type %q", s.Type)
		}
	case reflect.Int32, reflect.Int64, reflect.Int, reflect.Uint32, reflect.Uint64:
		w.leaves++
		w.checkInteger(path, t, s)
	case reflect.Float64, reflect.Float32:
		w.leaves++
		if s.Type != "number" {
			w.fail(path, "Go float, schema type %q", s.Type)
		}
	default:
		w.fail(path, "Go kind %s is not checked: teach this test what its schema needs", t.Kind())
	}
}

// checkInteger: the API server stores any 64-bit integer; a narrower Go
// type needs bounds that keep it in range (the API server enforces format
// int32: test/crd/testdata/invalid/ro-max-unavailable-overflow.yaml), and
// an unsigned one a minimum.
func (w *schemaWalk) checkInteger(path string, t reflect.Type, s *apiextensionsv1.JSONSchemaProps) {
	if s.Type != "integer" {
		w.fail(path, "Go %s, schema type %q", t, s.Type)
		return
	}
	lo, hi := float64(math.MinInt64), float64(math.MaxInt64)
	switch t.Kind() {
	case reflect.Int32:
		if s.Format == "int32" {
			return
		}
		lo, hi = math.MinInt32, math.MaxInt32
	case reflect.Uint32:
		lo, hi = 0, math.MaxUint32
	case reflect.Uint64:
		lo = 0
	}
	if lo > math.MinInt64 && (s.Minimum == nil || *s.Minimum < lo) {
		w.fail(path, "Go %s needs a minimum of at least %v", t, lo)
	}
	if hi < math.MaxInt64 && (s.Maximum == nil || *s.Maximum > hi) {
		w.fail(path, "Go %s needs a maximum of at most %v", t, hi)
	}
}

func (w *schemaWalk) walkStruct(path string, t reflect.Type, s *apiextensionsv1.JSONSchemaProps) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if name == "" && (f.Anonymous || strings.Contains(opts, "inline")) {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			w.walkStruct(path, ft, s)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		prop, ok := s.Properties[name]
		if !ok {
			if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
				continue
			}
			w.fail(path+"."+name, "Go field %s has no schema: the API server prunes it", f.Name)
			continue
		}
		w.walk(path+"."+name, f.Type, &prop)
	}
}
