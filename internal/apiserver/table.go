package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// A list kubectl get shows (a table of rows with the objects' metadata)
// is the storage's own table: the cluster's API server computes the same
// printer columns (revisionTable reads them from the storage's
// definition) from its cache, without sending every object whole to be
// decoded, converted and tabulated here. At 10,000 revisions that is the
// difference between seconds and a fraction of one.

// tableKey marks, in a request's context, a list wanted as such a table.
type tableKey struct{}

// tableJSON is the table the server asks the storage for.
const tableJSON = "application/json;as=Table;v=v1;g=meta.k8s.io"

// withTables marks the GET requests whose first choice of answer is a
// JSON table with at most the objects' metadata in its rows.
func withTables(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && wantsMetadataTable(r) {
			r = r.WithContext(context.WithValue(r.Context(), tableKey{}, true))
		}
		h.ServeHTTP(w, r)
	})
}

func wantsMetadataTable(r *http.Request) bool {
	first, _, _ := strings.Cut(r.Header.Get("Accept"), ",")
	media, params, err := mime.ParseMediaType(first)
	if err != nil || media != "application/json" || params["as"] != "Table" || params["g"] != "meta.k8s.io" || (params["v"] != "v1" && params["v"] != "v1beta1") {
		return false
	}
	switch r.URL.Query().Get("includeObject") {
	case "", string(metav1.IncludeMetadata), string(metav1.IncludeNone):
		return true
	}
	return false
}

// metadataTable says whether the request of ctx wants its list as a table
// of metadata rows (withTables).
func metadataTable(ctx context.Context) bool {
	v, _ := ctx.Value(tableKey{}).(bool)
	return v
}

// listTable lists revisions as the storage's table, each row's object the
// revision's metadata as porch.kpt.dev shows it.
func (s *storage) listTable(ctx context.Context, ns string, opts *metav1.ListOptions) (*metav1.Table, error) {
	body, err := s.rc.Get().Namespace(ns).Resource(revisionsResource).
		VersionedParams(opts, metav1.ParameterCodec).Param("includeObject", string(metav1.IncludeMetadata)).
		SetHeader("Accept", tableJSON).Do(ctx).Raw()
	if err != nil {
		return nil, porchError(err)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(body, table); err != nil {
		return nil, fmt.Errorf("reading the storage's table: %w", err)
	}
	for i := range table.Rows {
		row := &table.Rows[i]
		m := &metav1.PartialObjectMetadata{}
		if err := json.Unmarshal(row.Object.Raw, m); err != nil {
			return nil, fmt.Errorf("reading the storage's table, row %d: %w", i, err)
		}
		for j := range m.ManagedFields {
			if m.ManagedFields[j].APIVersion == porchv1alpha1.StorageGroupVersion.String() {
				m.ManagedFields[j].APIVersion = porchv1alpha1.GroupVersion.String()
			}
		}
		row.Object = runtime.RawExtension{Object: m}
	}
	return table, nil
}
