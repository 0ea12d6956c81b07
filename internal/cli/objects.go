package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"

	"github.com/scion-dev/scion/internal/lenient"
	"github.com/scion-dev/scion/internal/variant"
)

// readObjects reads the objects of a YAML or JSON file, or of standard
// input for "-": several documents, and List objects (as `kubectl get -o
// yaml` prints) for their items.
func (s Streams) readObjects(path string) ([]*unstructured.Unstructured, error) {
	var (
		data []byte
		err  error
	)
	if path == "-" {
		if s.In == nil {
			return nil, fmt.Errorf("-: no standard input")
		}
		data, err = io.ReadAll(s.In)
		path = "standard input"
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	objs, err := variant.ReadObjects(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objs, nil
}

// decodeStrict decodes an object into its type as the API server would
// accept it: a value of the wrong type and an unknown field are errors
// naming the field.
func decodeStrict(u *unstructured.Unstructured, into any) error {
	raw, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(raw, into)
	if err != nil {
		// A value the type cannot decode (a duration "10 minutes"):
		// name the field, as the API server would.
		if path, ferr := lenient.FirstUndecodable(raw, reflect.TypeOf(into)); path != "" {
			return fmt.Errorf("%s: %w", path, ferr)
		}
		return err
	}
	return errors.Join(strict...)
}

// stdinOnce refuses a command line that names standard input ("-") more
// than once: it can be read once.
func stdinOnce(paths ...string) error {
	n := 0
	for _, p := range paths {
		if p == "-" {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("standard input (-) is given %d times; it can be read once", n)
	}
	return nil
}

// readTyped reads the objects of kind gvk from a file (or standard input
// for "-"), strictly: an unknown field is an error naming the object. Other
// objects in the file are listed in a warning and left out; a file with
// none of the kind is an error that says what it holds.
func readTyped[T runtime.Object](s Streams, path string, gvk schema.GroupVersionKind, newT func() T) ([]T, error) {
	objs, err := s.readObjects(path)
	if err != nil {
		return nil, err
	}
	var (
		out     []T
		ignored []string
	)
	for _, u := range objs {
		if u.GroupVersionKind() != gvk {
			ignored = append(ignored, u.GetKind()+"/"+u.GetName())
			continue
		}
		t := newT()
		if err := decodeStrict(u, t); err != nil {
			return nil, fmt.Errorf("%s: %s %s: %w", path, gvk.Kind, u.GetName(), err)
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		held := "nothing"
		if len(ignored) > 0 {
			held = strings.Join(ignored, ", ")
		}
		return nil, fmt.Errorf("%s has no %s (%s); it holds %s", path, gvk.Kind, gvk.GroupVersion(), held)
	}
	if len(ignored) > 0 {
		_, _ = fmt.Fprintf(s.ErrOut, "warning: %s: ignored %d object(s) that are not %ss: %s\n", path, len(ignored), gvk.Kind, strings.Join(ignored, ", "))
	}
	return out, nil
}
