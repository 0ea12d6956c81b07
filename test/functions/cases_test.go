package functions_test

// pkgFiles is a package as people write them: a Kptfile, a file of two
// documents with comments, a local-config object, and a subpackage.
var pkgFiles = map[string]string{
	"Kptfile": `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
  annotations:
    config.kubernetes.io/local-config: "true"
`,
	"app.yaml": `# The application.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web # kpt-set: ${name}
  namespace: example
  labels:
    app: web
spec:
  replicas: 2 # kpt-set: ${replicas}
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.25 # kpt-set: ${image}
        args: # kpt-set: ${args}
        - --port
        - "8080"
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: example
spec:
  selector:
    app: web
  ports:
  - port: 80 # the port
`,
	"ns.yaml": `apiVersion: v1
kind: Namespace
metadata:
  name: example
`,
	"rbac.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: web
  namespace: example
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: web
subjects:
- kind: ServiceAccount
  name: web
  namespace: example
`,
	"values.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: values
  annotations:
    config.kubernetes.io/local-config: "true"
data:
  tier: frontend
`,
	"db/Kptfile": `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: db
  annotations:
    config.kubernetes.io/local-config: "true"
`,
	"db/statefulset.yaml": `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
  namespace: example
spec:
  serviceName: db
  selector:
    matchLabels:
      app: db
  template:
    metadata:
      labels:
        app: db
    spec:
      containers:
      - name: db
        image: postgres:16
`,
}

// configMap is a ConfigMap functionConfig with data.
func configMap(data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fn-config\ndata:\n" + data
}

// ourCases are, per function, the cases of ours: the package above with
// a config as a ConfigMap, as the function's typed object, and bad.
var ourCases = map[string][]diffCase{
	"set-namespace": {
		{Name: "configmap", Files: pkgFiles, Config: configMap("  namespace: prod\n")},
		{Name: "typed", Files: pkgFiles, Config: "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetNamespace\nmetadata:\n  name: fn-config\nnamespace: prod\n"},
		{Name: "a number as the namespace", Files: pkgFiles, Config: configMap("  namespace: \"123\"\n")},
		{Name: "no namespace given", Files: pkgFiles, Config: configMap("  other: x\n")},
	},
	"apply-setters": {
		{Name: "configmap", Files: pkgFiles, Config: configMap("  name: shop\n  replicas: \"3\"\n  image: nginx:1.27\n  args: \"[--port, '9090']\"\n")},
		{Name: "typed", Files: pkgFiles, Config: "apiVersion: fn.kpt.dev/v1alpha1\nkind: ApplySetters\nmetadata:\n  name: fn-config\nsetters:\n  name: shop\n  replicas: \"3\"\n"},
		{Name: "some setters missing", Files: pkgFiles, Config: configMap("  replicas: \"5\"\n")},
		{Name: "no setters", Files: pkgFiles, Config: configMap("")},
	},
	"search-replace": {
		{Name: "by path, put value", Files: pkgFiles, Config: configMap("  by-path: spec.replicas\n  put-value: \"4\"\n")},
		{Name: "by value regex with groups", Files: pkgFiles, Config: configMap("  by-value-regex: nginx:(.*)\n  put-value: registry.example.com/nginx:${1}\n")},
		{Name: "wildcard path", Files: pkgFiles, Config: configMap("  by-path: metadata.**.app\n  put-value: shop\n")},
		{Name: "search only", Files: pkgFiles, Config: configMap("  by-value: web\n")},
		{Name: "no criteria", Files: pkgFiles, Config: configMap("  put-value: x\n")},
	},
	"ensure-name-substring": {
		{Name: "prepend", Files: pkgFiles, Config: configMap("  prepend: prod-\n")},
		{Name: "append", Files: pkgFiles, Config: configMap("  append: -prod\n")},
		{Name: "typed", Files: pkgFiles, Config: "apiVersion: fn.kpt.dev/v1alpha1\nkind: EnsureNameSubstring\nmetadata:\n  name: fn-config\nsubstring: prod-\neditMode: prepend\n"},
		{Name: "nothing to do", Files: pkgFiles, Config: configMap("  other: x\n")},
	},
	"upsert-resource": {
		{Name: "replace", Files: pkgFiles, Config: "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: example\nspec:\n  selector:\n    app: web\n  ports:\n  - port: 8080\n"},
		{Name: "add", Files: pkgFiles, Config: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: example\ndata:\n  a: b\n"},
		{Name: "not a resource", Files: pkgFiles, Config: configMap("  a: b\n")},
	},
	"apply-replacements": {
		{Name: "from a ConfigMap into a Deployment", Files: pkgFiles, Config: `apiVersion: fn.kpt.dev/v1alpha1
kind: ApplyReplacements
metadata:
  name: fn-config
replacements:
- source:
    kind: ConfigMap
    name: values
    fieldPath: data.tier
  targets:
  - select:
      kind: Deployment
    fieldPaths:
    - spec.template.metadata.labels.tier
    options:
      create: true
`},
		{Name: "no such source", Files: pkgFiles, Config: `apiVersion: fn.kpt.dev/v1alpha1
kind: ApplyReplacements
metadata:
  name: fn-config
replacements:
- source:
    kind: ConfigMap
    name: missing
    fieldPath: data.tier
  targets:
  - select:
      kind: Deployment
    fieldPaths:
    - metadata.labels.tier
`},
	},
	"starlark": {
		{Name: "label every resource", Files: pkgFiles, Config: `apiVersion: fn.kpt.dev/v1alpha1
kind: StarlarkRun
metadata:
  name: fn-config
source: |
  for r in ctx.resource_list["items"]:
    r["metadata"].setdefault("labels", {})["team"] = ctx.resource_list["functionConfig"]["params"]["team"]
params:
  team: shop
`},
		{Name: "a syntax error", Files: pkgFiles, Config: "apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: fn-config\nsource: |\n  for r in\n"},
	},
}

// Why the builtins differ from the catalog's images, each said once; the
// table below points cases at them. docs/functions.md has the same table.
const (
	whySubjects      = "set-namespace moves ServiceAccount subjects of role bindings that were in the package's old namespace along with it; v0.4.5 leaves them in the old one"
	whyListQuoting   = "apply-setters writes a list item it sets double-quoted where the catalog single-quotes it (the same value)"
	whyTypedSetters  = "apply-setters reads a typed ApplySetters' setters, which the catalog's v0.2.2 ignores"
	whyDerive        = "apply-setters leaves a field whose setters are not all given alone; the catalog derives the missing values from the field's current value"
	whyUnresolved    = "apply-setters leaves a field alone when its setters cannot all be resolved (or a list setter is interpolated); the catalog fails the render"
	whyEmpty         = "apply-setters treats an empty setter value as not given and writes values without the quotes the catalog keeps"
	whyComment       = "search-replace keeps the line comment of a field it replaces (kpt-set markers survive); the catalog drops it"
	whyPutComment    = "search-replace has no put-comment"
	whyIndexPath     = "search-replace's by-path has no list index or selector elements (foo[1], containers[name=x]); use * or **"
	whyLayout        = "the catalog's ensure-name-substring v0.2.4 (kustomize's resource map) moves each resource into a file named after its kind and new name, drops comments, renames local-config objects and rewrites depends-on annotations; the builtin keeps files, comments and local configuration, and leaves depends-on alone"
	whyCatalogCrash  = "the catalog's ensure-name-substring v0.2.4 crashes (goroutine stack exceeded) on a typed EnsureNameSubstring"
	whyAnnotationQuo = "upsert-resource writes an annotation value unquoted where the catalog single-quotes it (the same value)"
)

// knownDifferences are the cases where a builtin and the catalog's image
// differ on purpose (or the catalog's is wrong), by "function/case".
var knownDifferences = map[string]string{
	"set-namespace/configmap":                 whySubjects,
	"set-namespace/typed":                     whySubjects,
	"set-namespace/a number as the namespace": whySubjects,

	"apply-setters/configmap": whyListQuoting,
	"apply-setters/typed":     whyTypedSetters,
	"apply-setters/catalog apply_setters_test.go:4 derive missing values from pattern":                                        whyDerive,
	"apply-setters/catalog apply_setters_test.go:5 derive missing values from pattern - special characters in name and value": whyDerive,
	"apply-setters/catalog apply_setters_test.go:11 scalar partial setter using dots":                                         whyDerive,
	"apply-setters/catalog apply_setters_test.go:7 error if values not provided and can't be derived":                         whyUnresolved,
	"apply-setters/catalog apply_setters_test.go:10 apply array setter interpolation error":                                   whyUnresolved,
	"apply-setters/catalog apply_setters_test.go:13 set empty values":                                                         whyEmpty,
	"apply-setters/catalog apply_setters_test.go:14 set non-empty values from empty values":                                   whyEmpty,

	"search-replace/by path, put value":                                                                    whyComment,
	"search-replace/catalog putcommentcases_test.go:1 put comment single setter":                           whyPutComment,
	"search-replace/catalog putcommentcases_test.go:2 put comment group of setters":                        whyPutComment,
	"search-replace/catalog putcommentcases_test.go:3 put comment array setter":                            whyPutComment,
	"search-replace/catalog putcommentcases_test.go:4 put comment array setter flow style":                 whyPutComment,
	"search-replace/catalog putcommentcases_test.go:5 put comment by value":                                whyPutComment,
	"search-replace/catalog putcommentcases_test.go:6 put comment by capture groups simple case":           whyPutComment,
	"search-replace/catalog putcommentcases_test.go:7 put value and comment by regex capture groups":       whyPutComment,
	"search-replace/catalog putcommentcases_test.go:8 put value and comment by regex capture groups error": whyPutComment,
	"search-replace/catalog searchreplacecases_test.go:21 search replace by array path regex":              whyIndexPath,
	"search-replace/catalog searchreplacecases_test.go:23 search replace by array objects path":            whyIndexPath,

	"ensure-name-substring/prepend":                                  whyLayout,
	"ensure-name-substring/append":                                   whyLayout,
	"ensure-name-substring/catalog ensure_name_substring_test.go:1 ": whyLayout,
	"ensure-name-substring/catalog ensure_name_substring_test.go:2 ": whyLayout,
	"ensure-name-substring/catalog ensure_name_substring_test.go:3 ": whyLayout,
	"ensure-name-substring/typed":                                    whyCatalogCrash,

	"upsert-resource/catalog upsert_resource_test.go:5 add resource at specific path": whyAnnotationQuo,
}
