// Package kptfile reads and edits Kptfiles. Edits keep the comments, field
// order and unknown fields of every part of the file they do not change.
package kptfile

import (
	"bytes"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
)

// Parse decodes a Kptfile. Unknown fields are ignored (they survive Edit).
func Parse(data []byte) (*kptfilev1.KptFile, error) {
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

// Marshal encodes a Kptfile from scratch.
func Marshal(kf *kptfilev1.KptFile) ([]byte, error) {
	out, err := sigsyaml.Marshal(kf)
	if err != nil {
		return nil, fmt.Errorf("encoding Kptfile: %w", err)
	}
	return out, nil
}

// Edit applies mutate to the Kptfile in data and returns the new content.
// Only the top-level sections that mutate changed are rewritten; everything
// else, comments included, is kept byte for byte where possible. When
// nothing changed, data is returned unchanged.
func Edit(data []byte, mutate func(*kptfilev1.KptFile) error) ([]byte, error) {
	before, err := Parse(data)
	if err != nil {
		return nil, err
	}
	after := before.DeepCopy()
	if err := mutate(after); err != nil {
		return nil, err
	}
	oldSections, err := sections(before)
	if err != nil {
		return nil, err
	}
	newSections, err := sections(after)
	if err != nil {
		return nil, err
	}
	node, err := yaml.Parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("parsing Kptfile: %w", err)
	}
	changed := false
	for _, name := range sectionOrder {
		o, n := oldSections[name], newSections[name]
		if bytes.Equal(o, n) {
			continue
		}
		changed = true
		if n == nil {
			if _, err := node.Pipe(yaml.Clear(name)); err != nil {
				return nil, fmt.Errorf("editing Kptfile %s: %w", name, err)
			}
			continue
		}
		value, err := yaml.ConvertJSONToYamlNode(string(n))
		if err != nil {
			return nil, fmt.Errorf("editing Kptfile %s: %w", name, err)
		}
		if name == "metadata" {
			// Keep comments on metadata fields that did not change.
			if err := editMetadata(node, before.Metadata, after.Metadata); err != nil {
				return nil, err
			}
			continue
		}
		if err := node.PipeE(yaml.SetField(name, value)); err != nil {
			return nil, fmt.Errorf("editing Kptfile %s: %w", name, err)
		}
	}
	if !changed {
		return data, nil
	}
	out, err := node.String()
	if err != nil {
		return nil, fmt.Errorf("encoding Kptfile: %w", err)
	}
	return []byte(out), nil
}

var sectionOrder = []string{"metadata", "upstream", "upstreamLock", "info", "pipeline", "inventory", "status"}

func sections(kf *kptfilev1.KptFile) (map[string][]byte, error) {
	out := map[string][]byte{}
	add := func(name string, isNil bool, v any) error {
		if isNil {
			return nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encoding Kptfile %s: %w", name, err)
		}
		out[name] = b
		return nil
	}
	for _, s := range []struct {
		name  string
		isNil bool
		v     any
	}{
		{"metadata", false, kf.Metadata},
		{"upstream", kf.Upstream == nil, kf.Upstream},
		{"upstreamLock", kf.UpstreamLock == nil, kf.UpstreamLock},
		{"info", kf.Info == nil, kf.Info},
		{"pipeline", kf.Pipeline == nil, kf.Pipeline},
		{"inventory", kf.Inventory == nil, kf.Inventory},
		{"status", kf.Status == nil, kf.Status},
	} {
		if err := add(s.name, s.isNil, s.v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func editMetadata(node *yaml.RNode, before, after kptfilev1.ObjectMeta) error {
	set := func(field, o, n string) error {
		if o == n {
			return nil
		}
		if n == "" {
			_, err := node.Pipe(yaml.Lookup("metadata"), yaml.Clear(field))
			return err
		}
		return node.PipeE(yaml.LookupCreate(yaml.MappingNode, "metadata"), yaml.SetField(field, yaml.NewStringRNode(n)))
	}
	if err := set("name", before.Name, after.Name); err != nil {
		return fmt.Errorf("editing Kptfile metadata.name: %w", err)
	}
	if err := set("namespace", before.Namespace, after.Namespace); err != nil {
		return fmt.Errorf("editing Kptfile metadata.namespace: %w", err)
	}
	setMap := func(field string, o, n map[string]string) error {
		ob, _ := json.Marshal(o)
		nb, _ := json.Marshal(n)
		if bytes.Equal(ob, nb) {
			return nil
		}
		if len(n) == 0 {
			_, err := node.Pipe(yaml.Lookup("metadata"), yaml.Clear(field))
			return err
		}
		v, err := yaml.ConvertJSONToYamlNode(string(nb))
		if err != nil {
			return err
		}
		return node.PipeE(yaml.LookupCreate(yaml.MappingNode, "metadata"), yaml.SetField(field, v))
	}
	if err := setMap("labels", before.Labels, after.Labels); err != nil {
		return fmt.Errorf("editing Kptfile metadata.labels: %w", err)
	}
	if err := setMap("annotations", before.Annotations, after.Annotations); err != nil {
		return fmt.Errorf("editing Kptfile metadata.annotations: %w", err)
	}
	return nil
}
