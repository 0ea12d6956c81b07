// Package kptfile reads and edits Kptfiles. Edits keep the comments, field
// order and unknown fields of every part of the file they do not change.
package kptfile

import (
	"fmt"
	"reflect"
	"slices"
	"sync"

	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/merge3"
)

// parsed caches decoded Kptfiles by content: a reconcile reads and edits
// the same Kptfile several times, and decoding YAML is what costs.
var parsed = struct {
	sync.Mutex
	m map[string]*kptfilev1.KptFile
}{m: map[string]*kptfilev1.KptFile{}}

// maxParsed bounds the cache; it starts over when full.
const maxParsed = 1024

// Parse decodes a Kptfile. Unknown fields are ignored (they survive Edit).
// The result is the caller's to change.
func Parse(data []byte) (*kptfilev1.KptFile, error) {
	parsed.Lock()
	kf, ok := parsed.m[string(data)]
	parsed.Unlock()
	if ok {
		return kf.DeepCopy(), nil
	}
	kf, err := decode(data)
	if err != nil {
		return nil, err
	}
	parsed.Lock()
	if len(parsed.m) >= maxParsed {
		parsed.m = map[string]*kptfilev1.KptFile{}
	}
	parsed.m[string(data)] = kf
	parsed.Unlock()
	return kf.DeepCopy(), nil
}

func decode(data []byte) (*kptfilev1.KptFile, error) {
	kf := &kptfilev1.KptFile{}
	if err := sigsyaml.Unmarshal(data, kf); err != nil {
		return nil, fmt.Errorf("parsing Kptfile: %w", err)
	}
	if kf.APIVersion != kptfilev1.KptFileAPIVersion || kf.Kind != kptfilev1.KptFileKind {
		return nil, fmt.Errorf("parsing Kptfile: apiVersion/kind is %q/%q, want %s/%s",
			kf.APIVersion, kf.Kind, kptfilev1.KptFileAPIVersion, kptfilev1.KptFileKind)
	}
	return kf, nil
}

// New returns a minimal Kptfile for a package named name.
func New(name string) *kptfilev1.KptFile {
	return &kptfilev1.KptFile{
		APIVersion: kptfilev1.KptFileAPIVersion,
		Kind:       kptfilev1.KptFileKind,
		Metadata:   kptfilev1.ObjectMeta{Name: name},
	}
}

// Marshal encodes a Kptfile from scratch, fields in schema order.
func Marshal(kf *kptfilev1.KptFile) ([]byte, error) {
	n, err := encode(reflect.ValueOf(kf))
	if err != nil {
		return nil, fmt.Errorf("encoding Kptfile: %w", err)
	}
	out, err := yaml.NewRNode(n).String()
	if err != nil {
		return nil, fmt.Errorf("encoding Kptfile: %w", err)
	}
	return []byte(out), nil
}

// Edit applies mutate to the Kptfile in data and returns the new content.
// The typed change (before and after mutate) is merged into the text field
// by field, so comments, field order and unknown fields of everything
// mutate left alone are kept. When nothing changed, data is returned as it
// is.
func Edit(data []byte, mutate func(*kptfilev1.KptFile) error) ([]byte, error) {
	before, err := Parse(data)
	if err != nil {
		return nil, err
	}
	after := before.DeepCopy()
	if err := mutate(after); err != nil {
		return nil, err
	}
	if reflect.DeepEqual(before, after) {
		return data, nil
	}
	orig, err := encode(reflect.ValueOf(before))
	if err != nil {
		return nil, fmt.Errorf("encoding Kptfile: %w", err)
	}
	upd, err := encode(reflect.ValueOf(after))
	if err != nil {
		return nil, fmt.Errorf("encoding Kptfile: %w", err)
	}
	node, err := yaml.Parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("parsing Kptfile: %w", err)
	}
	merged, err := merge3.Merge(node, yaml.NewRNode(orig), yaml.NewRNode(upd), merge3.Options{ListKeys: ListKeys})
	if err != nil {
		return nil, fmt.Errorf("editing Kptfile: %w", err)
	}
	out, err := merged.String()
	if err != nil {
		return nil, fmt.Errorf("encoding Kptfile: %w", err)
	}
	return []byte(out), nil
}

// ListKeys are the keys by which the Kptfile's lists merge: functions by
// name (then image or exec), readiness gates by condition type, conditions
// by type. Lists of plain values have no key.
var ListKeys = map[string][]string{
	"pipeline.mutators":   {"name", "image", "exec"},
	"pipeline.validators": {"name", "image", "exec"},
	"info.readinessGates": {"conditionType"},
	"status.conditions":   {"type"},
	"info.emails":         nil,
	"info.keywords":       nil,
}

// SetCondition adds or replaces (by type) a condition in the Kptfile's
// status.
func SetCondition(kf *kptfilev1.KptFile, c kptfilev1.Condition) {
	if kf.Status == nil {
		kf.Status = &kptfilev1.Status{}
	}
	for i := range kf.Status.Conditions {
		if kf.Status.Conditions[i].Type == c.Type {
			kf.Status.Conditions[i] = c
			return
		}
	}
	kf.Status.Conditions = append(kf.Status.Conditions, c)
}

// AddReadinessGate adds a readiness gate for the condition type to the
// Kptfile's info, unless it has one.
func AddReadinessGate(kf *kptfilev1.KptFile, conditionType string) {
	if kf.Info == nil {
		kf.Info = &kptfilev1.PackageInfo{}
	}
	for _, g := range kf.Info.ReadinessGates {
		if g.ConditionType == conditionType {
			return
		}
	}
	kf.Info.ReadinessGates = append(kf.Info.ReadinessGates, kptfilev1.ReadinessGate{ConditionType: conditionType})
}

// RemoveReadinessGate removes the readiness gate and the condition of a
// type, when the Kptfile has them.
func RemoveReadinessGate(kf *kptfilev1.KptFile, conditionType string) {
	if kf.Info != nil {
		kf.Info.ReadinessGates = slices.DeleteFunc(kf.Info.ReadinessGates, func(g kptfilev1.ReadinessGate) bool { return g.ConditionType == conditionType })
	}
	if kf.Status != nil {
		kf.Status.Conditions = slices.DeleteFunc(kf.Status.Conditions, func(c kptfilev1.Condition) bool { return c.Type == conditionType })
	}
}
