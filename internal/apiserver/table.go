package apiserver

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/config/crd"
)

// revisionTable tabulates revisions (kubectl get) with the storage's
// printer columns, read from its CustomResourceDefinition, each cell
// valued from the typed object as the cluster's API server values it from
// the object's JSON (tableconvertor, which converts every object to
// unstructured and evaluates JSONPath: ten times slower).
type revisionTable struct {
	// headers are the column definitions, Name first.
	headers []metav1.TableColumnDefinition
	// cells value the columns after Name.
	cells []func(pr *porchv1alpha1.PackageRevision) any
}

// columnValues value the storage's printer columns by their JSONPath: a
// field the JSON leaves out (omitempty) is nil.
var columnValues = map[string]func(pr *porchv1alpha1.PackageRevision) any{
	".spec.packageName":   func(pr *porchv1alpha1.PackageRevision) any { return pr.Spec.PackageName },
	".spec.workspaceName": func(pr *porchv1alpha1.PackageRevision) any { return pr.Spec.WorkspaceName },
	".spec.repository":    func(pr *porchv1alpha1.PackageRevision) any { return pr.Spec.Repository },
	".spec.revision": func(pr *porchv1alpha1.PackageRevision) any {
		if pr.Spec.Revision == 0 {
			return nil
		}
		return int64(pr.Spec.Revision)
	},
	".spec.lifecycle":   func(pr *porchv1alpha1.PackageRevision) any { return nonEmpty(string(pr.Spec.Lifecycle)) },
	".status.lifecycle": func(pr *porchv1alpha1.PackageRevision) any { return nonEmpty(string(pr.Status.Lifecycle)) },
	`.status.conditions[?(@.type=="Ready")].status`: func(pr *porchv1alpha1.PackageRevision) any {
		for _, c := range pr.Status.Conditions {
			if c.Type == "Ready" {
				return nonEmpty(string(c.Status))
			}
		}
		return nil
	},
}

func nonEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// newRevisionTable reads the storage's printer columns; a column no
// columnValues values is an error (a column added to the storage's
// definition needs its value here).
func newRevisionTable() (*revisionTable, error) {
	def, err := crd.StorageDefinition()
	if err != nil {
		return nil, err
	}
	var columns []apiextensionsv1.CustomResourceColumnDefinition
	for _, v := range def.Spec.Versions {
		if v.Name == porchv1alpha1.GroupVersion.Version {
			columns = v.AdditionalPrinterColumns
		}
	}
	conv, err := tableconvertor.New(columns)
	if err != nil {
		return nil, err
	}
	empty, err := conv.ConvertToTable(context.Background(), &porchv1alpha1.PackageRevisionList{}, nil)
	if err != nil {
		return nil, err
	}
	t := &revisionTable{headers: empty.ColumnDefinitions}
	for _, c := range columns {
		value, ok := columnValues[c.JSONPath]
		if !ok {
			return nil, fmt.Errorf("the storage's printer column %s (%s) has no value in the API server", c.Name, c.JSONPath)
		}
		t.cells = append(t.cells, value)
	}
	return t, nil
}

// ConvertToTable tabulates a revision or a list of them.
func (t *revisionTable) ConvertToTable(_ context.Context, obj, opts runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	if o, ok := opts.(*metav1.TableOptions); !ok || o == nil || !o.NoHeaders {
		table.ColumnDefinitions = t.headers
	}
	if list, ok := obj.(*porchv1alpha1.PackageRevisionList); ok {
		table.ResourceVersion = list.ResourceVersion
		table.Continue = list.Continue
		table.RemainingItemCount = list.RemainingItemCount
	} else if m, ok := obj.(metav1.Object); ok {
		table.ResourceVersion = m.GetResourceVersion()
	}
	var err error
	table.Rows, err = metatable.MetaToTableRow(obj, func(obj runtime.Object, _ metav1.Object, name, _ string) ([]any, error) {
		pr, ok := obj.(*porchv1alpha1.PackageRevision)
		if !ok {
			return nil, fmt.Errorf("not a PackageRevision: %T", obj)
		}
		cells := make([]any, 0, 1+len(t.cells))
		cells = append(cells, name)
		for _, value := range t.cells {
			cells = append(cells, value(pr))
		}
		return cells, nil
	})
	return table, err
}
