// Package compact makes the objects kept in the controllers' caches
// smaller, without changing what they read: their strings share their
// bytes with equal strings of other objects, and their slices lose the
// spare room decoding left them.
//
// Ten thousand PackageVariants and their PackageRevisions repeat the same
// namespace, labels, owner, condition types, reasons and messages in
// every object, and decoding gives each object copies of its own.
package compact

import (
	"reflect"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Object changes, in place, every string reachable from obj (a pointer
// to a struct) through struct fields, pointers, slices, arrays and maps
// into its canonical copy (unique.Make), but an object's own name, UID
// and resource version (metav1.ObjectMeta's), which no two objects share
// and would only fill the canonical map; map keys are interned with
// their values. Slices with spare room are copied into slices of their
// length. The object reads the same afterwards.
func Object(obj any) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	walk(v.Elem())
}

var objectMeta = reflect.TypeFor[metav1.ObjectMeta]()

// ownFields are the ObjectMeta fields left alone.
var ownFields = map[string]bool{"Name": true, "GenerateName": true, "UID": true, "ResourceVersion": true}

func walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() && v.Len() > 0 {
			v.SetString(unique.Make(v.String()).Value())
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walk(v.Elem())
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			if f := t.Field(i); f.IsExported() && (t != objectMeta || !ownFields[f.Name]) {
				walk(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes, not text
		}
		if v.Kind() == reflect.Slice && v.Cap() > v.Len() && v.CanSet() {
			// Decoding grows slices by doubling: up to half of a
			// slice's room can be spare, held as long as the object is.
			exact := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			reflect.Copy(exact, v)
			v.Set(exact)
		}
		for i := 0; i < v.Len(); i++ {
			walk(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() || v.Len() == 0 {
			return
		}
		kt, vt := v.Type().Key(), v.Type().Elem()
		if kt.Kind() != reflect.String {
			return
		}
		type entry struct{ k, v reflect.Value }
		entries := make([]entry, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			k := reflect.New(kt).Elem()
			k.SetString(unique.Make(it.Key().String()).Value())
			e := reflect.New(vt).Elem()
			e.Set(it.Value())
			walk(e)
			entries = append(entries, entry{k, e})
		}
		for _, e := range entries {
			v.SetMapIndex(e.k, e.v)
		}
	}
}
