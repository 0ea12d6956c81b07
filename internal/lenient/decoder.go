package lenient

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/scion-dev/scion/internal/store"
)

// Undecodable stands, in a watch event, for an object that does not
// decode into its Go type: its metadata, and the first field that does
// not decode.
type Undecodable struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	// Path is the first field that does not decode, such as
	// spec.progressDeadline (empty when no single field is to blame).
	Path string `json:"-"`
	// Err is what the decoder said.
	Err string `json:"-"`
}

// DeepCopyObject implements runtime.Object.
func (u *Undecodable) DeepCopyObject() runtime.Object {
	out := *u
	u.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// Problem says what is wrong, naming the field, in at most a few hundred
// bytes (the decoder's message may quote a user's value at length).
func (u *Undecodable) Problem() string {
	msg := store.Shorten(u.Err, maxValueBytes)
	if u.Path == "" {
		return msg
	}
	return u.Path + ": " + msg
}

// maxValueBytes bounds what of a decoder's message (which may quote a
// user's value) goes into logs, events and conditions.
const maxValueBytes = 300

// decoder wraps the decoder of one kind's responses: a list with an
// item that does not decode is returned without that item, and a single
// object that does not decode comes back as an *Undecodable; each such
// object is handed to setAside.
type decoder struct {
	inner    runtime.Decoder
	gvk      schema.GroupVersionKind
	newObj   func() runtime.Object
	setAside func(*Undecodable)
}

// Decode implements runtime.Decoder.
func (d *decoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	out, gvk, err := d.inner.Decode(data, defaults, into)
	if err == nil {
		return out, gvk, nil
	}
	var head metav1.TypeMeta
	if json.Unmarshal(data, &head) != nil {
		return nil, nil, err
	}
	switch head.Kind {
	case d.gvk.Kind + "List":
		return d.decodeList(data, into, err)
	case d.gvk.Kind:
		u, ok := d.undecodable(data, err)
		if !ok {
			return nil, nil, err
		}
		d.setAside(u)
		return u, &d.gvk, nil
	}
	return nil, nil, err
}

// decodeList decodes a list item by item, leaving out (and setting
// aside) the items that do not decode.
func (d *decoder) decodeList(data []byte, into runtime.Object, listErr error) (runtime.Object, *schema.GroupVersionKind, error) {
	var raw struct {
		Metadata metav1.ListMeta   `json:"metadata"`
		Items    []json.RawMessage `json:"items"`
	}
	if into == nil || !meta.IsListType(into) || json.Unmarshal(data, &raw) != nil {
		return nil, nil, listErr
	}
	items := make([]runtime.Object, 0, len(raw.Items))
	for _, item := range raw.Items {
		obj, _, err := d.inner.Decode(item, &d.gvk, d.newObj())
		if err == nil {
			items = append(items, obj)
			continue
		}
		u, ok := d.undecodable(item, err)
		if !ok {
			return nil, nil, listErr
		}
		d.setAside(u)
	}
	if err := meta.SetList(into, items); err != nil {
		return nil, nil, fmt.Errorf("%w (and leaving out the items that do not decode: %v)", listErr, err)
	}
	l, err := meta.ListAccessor(into)
	if err != nil {
		return nil, nil, listErr
	}
	l.SetResourceVersion(raw.Metadata.ResourceVersion)
	l.SetContinue(raw.Metadata.Continue)
	l.SetRemainingItemCount(raw.Metadata.RemainingItemCount)
	return into, nil, nil
}

// undecodable builds the stand-in of an object that did not decode: its
// metadata must decode (the API server validates it), else it is not
// known which object is to blame.
func (d *decoder) undecodable(data []byte, err error) (*Undecodable, bool) {
	var m struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if json.Unmarshal(data, &m) != nil || m.Metadata.Name == "" {
		return nil, false
	}
	u := &Undecodable{ObjectMeta: m.Metadata, Err: err.Error()}
	u.SetGroupVersionKind(d.gvk)
	// The decoder's own error names the field only sometimes, and then
	// with Go's type names: find the field, and what decoding it says.
	if path, ferr := FirstUndecodable(data, reflect.TypeOf(d.newObj())); ferr != nil {
		u.Path, u.Err = path, ferr.Error()
	}
	return u, true
}

// FirstUndecodable returns the JSON path (spec.waves[0].name) of the
// first field of data, in the Go type's field order, that does not decode
// into its Go type, with the error decoding it gives; "" and nil when
// data decodes, or "" and the error when no one field is to blame.
func FirstUndecodable(data []byte, t reflect.Type) (string, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	err := utiljson.Unmarshal(data, reflect.New(t).Interface())
	if err == nil {
		return "", nil
	}
	switch t.Kind() {
	case reflect.Struct:
		var fields map[string]json.RawMessage
		if reflect.PointerTo(t).Implements(unmarshalerType) || json.Unmarshal(data, &fields) != nil {
			return "", err
		}
		if path, ferr := firstInStruct(fields, t); ferr != nil {
			return path, ferr
		}
	case reflect.Slice:
		var items []json.RawMessage
		if t.Elem().Kind() == reflect.Uint8 || json.Unmarshal(data, &items) != nil {
			return "", err
		}
		for i, item := range items {
			if path, ierr := FirstUndecodable(item, t.Elem()); ierr != nil {
				return join(fmt.Sprintf("[%d]", i), path), ierr
			}
		}
	case reflect.Map:
		var entries map[string]json.RawMessage
		if json.Unmarshal(data, &entries) != nil {
			return "", err
		}
		keys := make([]string, 0, len(entries))
		for k := range entries {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if path, kerr := FirstUndecodable(entries[k], t.Elem()); kerr != nil {
				return join(fmt.Sprintf("[%s]", k), path), kerr
			}
		}
	}
	return "", err
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// firstInStruct is FirstUndecodable for the fields of a struct.
func firstInStruct(fields map[string]json.RawMessage, t reflect.Type) (string, error) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, inline := jsonName(f)
		if name == "-" || !f.IsExported() && !inline {
			continue
		}
		if inline {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if path, err := firstInStruct(fields, ft); err != nil {
					return path, err
				}
			}
			continue
		}
		raw, ok := fields[name]
		if !ok {
			continue
		}
		if path, err := FirstUndecodable(raw, f.Type); err != nil {
			return join(name, path), err
		}
	}
	return "", nil
}

// jsonName is a struct field's JSON name, and whether it is inlined.
func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" && (f.Anonymous || strings.Contains(","+opts+",", ",inline,")) {
		return "", true
	}
	if name == "" {
		name = f.Name
	}
	return name, false
}

// join appends a path to a field or index: spec + waves = spec.waves,
// waves + [0] = waves[0].
func join(head, rest string) string {
	switch {
	case rest == "":
		return head
	case strings.HasPrefix(rest, "["):
		return head + rest
	}
	return head + "." + rest
}
