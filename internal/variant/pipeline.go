package variant

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/pkg"
)

// FunctionsAnnotation, on the Kptfile, records the pipeline functions each
// PackageVariant added, by PackageVariant name. Names alone cannot say
// whose a function is: PackageVariant.a.b.0 may be variant "a"'s function
// "b" or variant "a.b"'s first unnamed function.
const FunctionsAnnotation = "config.porch.kpt.dev/packagevariant-functions"

// FunctionName is the Kptfile name of a variant's function: the
// dot-joined PackageVariant, variant name, function name (when set) and
// position.
func FunctionName(pvName, fnName string, index int) string {
	if fnName == "" {
		return "PackageVariant." + pvName + "." + strconv.Itoa(index)
	}
	return "PackageVariant." + pvName + "." + fnName + "." + strconv.Itoa(index)
}

// ApplyPipeline makes the variant's functions the first of the Kptfile's
// mutators and validators: the functions this variant added before are
// removed, its current ones prepended, functions of others (upstream,
// people, other variants) kept in order. It reports whether the Kptfile
// changed.
func ApplyPipeline(p *pkg.Package, pvName string, pipeline *kptfilev1.Pipeline) (bool, error) {
	before, _ := p.File(kptfilev1.KptFileName)
	err := p.EditKptfile(func(kf *kptfilev1.KptFile) error {
		owned := map[string][]string{}
		if raw := kf.Metadata.Annotations[FunctionsAnnotation]; raw != "" {
			if err := json.Unmarshal([]byte(raw), &owned); err != nil {
				return fmt.Errorf("Kptfile annotation %s: %w", FunctionsAnnotation, err)
			}
		}
		mine := map[string]bool{}
		for _, n := range owned[pvName] {
			mine[n] = true
		}
		var add kptfilev1.Pipeline
		var names []string
		if pipeline != nil {
			for i, f := range pipeline.Mutators {
				f.Name = FunctionName(pvName, f.Name, i)
				add.Mutators = append(add.Mutators, f)
				names = append(names, f.Name)
			}
			for i, f := range pipeline.Validators {
				f.Name = FunctionName(pvName, f.Name, i)
				add.Validators = append(add.Validators, f)
				names = append(names, f.Name)
			}
		}
		if kf.Pipeline == nil {
			kf.Pipeline = &kptfilev1.Pipeline{}
		}
		kf.Pipeline.Mutators = append(add.Mutators, without(kf.Pipeline.Mutators, mine)...)
		kf.Pipeline.Validators = append(add.Validators, without(kf.Pipeline.Validators, mine)...)
		if len(kf.Pipeline.Mutators) == 0 && len(kf.Pipeline.Validators) == 0 {
			kf.Pipeline = nil
		}
		if len(names) == 0 {
			delete(owned, pvName)
		} else {
			sort.Strings(names)
			owned[pvName] = names
		}
		if kf.Metadata.Annotations == nil {
			kf.Metadata.Annotations = map[string]string{}
		}
		if len(owned) == 0 {
			delete(kf.Metadata.Annotations, FunctionsAnnotation)
		} else {
			raw, err := json.Marshal(owned)
			if err != nil {
				return err
			}
			kf.Metadata.Annotations[FunctionsAnnotation] = string(raw)
		}
		if len(kf.Metadata.Annotations) == 0 {
			kf.Metadata.Annotations = nil
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	after, _ := p.File(kptfilev1.KptFileName)
	return string(before) != string(after), nil
}

func without(fns []kptfilev1.Function, drop map[string]bool) []kptfilev1.Function {
	var out []kptfilev1.Function
	for _, f := range fns {
		if f.Name == "" || !drop[f.Name] {
			out = append(out, f)
		}
	}
	return out
}
