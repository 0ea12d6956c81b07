package builtin

import (
	"bytes"
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  namespace: example
spec:
  selector:
    matchLabels:
      app: app
  template:
    metadata:
      labels:
        app: app
    spec:
      containers:
      - name: app
        image: nginx:1.25 # kpt-set: ${image}:${tag}
      initContainers:
      - name: init
        image: busybox
`

const namespace = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: example\n"
const service = "apiVersion: v1\nkind: Service\nmetadata:\n  name: app\n  namespace: example\nspec:\n  selector:\n    app: app\n  ports:\n  - port: 80 # kpt-set: ${port}\n"
const binding = "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: rb\n  namespace: example\nsubjects:\n- kind: ServiceAccount\n  name: sa\n  namespace: example\n- kind: User\n  name: jane\n"
const localConfig = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  name: app\n"

func configMap(data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\ndata:\n" + data
}

func run(t *testing.T, name string, config string, inputs ...string) (string, *framework.ResourceList, error) {
	t.Helper()
	rl := &framework.ResourceList{}
	for _, in := range inputs {
		rl.Items = append(rl.Items, yaml.MustParse(in))
	}
	if config != "" {
		rl.FunctionConfig = yaml.MustParse(config)
	}
	err := Functions()[name].Run(context.Background(), rl)
	var buf bytes.Buffer
	if werr := (kio.ByteWriter{Writer: &buf}).Write(rl.Items); werr != nil {
		t.Fatal(werr)
	}
	return buf.String(), rl, err
}

func TestBuiltins(t *testing.T) {
	for _, tc := range []struct {
		name, function, config string
		inputs                 []string
		contains, absent       []string
		err                    string
	}{
		{name: "set-namespace moves resources, the Namespace and SA subjects", function: "set-namespace", config: configMap("  namespace: tenant-a\n"),
			inputs:   []string{namespace, deployment, binding, localConfig},
			contains: []string{"kind: Namespace\nmetadata:\n  name: tenant-a\n", "  name: app\n  namespace: tenant-a\n", "- kind: ServiceAccount\n  name: sa\n  namespace: tenant-a\n", "- kind: User\n  name: jane\n"},
			absent:   []string{"namespace: example"}},
		{name: "set-namespace leaves cluster-scoped kinds and local config alone", function: "set-namespace", config: configMap("  namespace: tenant-a\n"),
			inputs:   []string{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: reader\n", localConfig},
			contains: []string{"kind: ClusterRole\nmetadata:\n  name: reader\n---", "  name: kptfile.kpt.dev\n  annotations:"}, absent: []string{"namespace: tenant-a"}},
		{name: "set-namespace writes a numeric namespace as a string", function: "set-namespace", config: configMap("  namespace: \"123\"\n"),
			inputs:   []string{namespace, deployment},
			contains: []string{"kind: Namespace\nmetadata:\n  name: \"123\"\n", "  name: app\n  namespace: \"123\"\n"}},
		{name: "set-namespace keeps a namespace that is already right, with its comment", function: "set-namespace", config: configMap("  namespace: tenant-a\n"),
			inputs:   []string{strings.Replace(deployment, "namespace: example", "namespace: tenant-a # the tenant", 1)},
			contains: []string{"  namespace: tenant-a # the tenant\n"}},
		{name: "set-namespace keeps the comment of a namespace it changes", function: "set-namespace", config: configMap("  namespace: tenant-a\n"),
			inputs:   []string{strings.Replace(deployment, "namespace: example", "namespace: 'example' # the tenant", 1)},
			contains: []string{"  namespace: 'tenant-a' # the tenant\n"}},
		{name: "set-namespace requires a namespace", function: "set-namespace", config: configMap("  other: x\n"), inputs: []string{deployment},
			err: "set-namespace: functionConfig data.namespace is required"},

		{name: "set-labels sets metadata, template and selector labels", function: "set-labels", config: configMap("  team: a\n"),
			inputs:   []string{deployment, service},
			contains: []string{"metadata:\n  name: app\n  namespace: example\n  labels:\n    team: a\n", "    matchLabels:\n      app: app\n      team: a\n", "      labels:\n        app: app\n        team: a\n", "  selector:\n    app: app\n    team: a\n"}},
		{name: "set-labels needs labels", function: "set-labels", config: configMap("  {}\n"), inputs: []string{deployment}, err: "set-labels: functionConfig data lists no labels"},

		{name: "set-annotations on metadata and pod template", function: "set-annotations", config: configMap("  owner: platform\n"),
			inputs:   []string{deployment, namespace},
			contains: []string{"  namespace: example\n  annotations:\n    owner: platform\n", "    metadata:\n      labels:\n        app: app\n      annotations:\n        owner: platform\n", "kind: Namespace\nmetadata:\n  name: example\n  annotations:\n    owner: platform\n"}},
		{name: "set-annotations needs annotations", function: "set-annotations", config: "", inputs: []string{deployment}, err: "set-annotations: functionConfig data lists no annotations"},

		{name: "set-image changes name and tag of matching containers only", function: "set-image", config: configMap("  name: nginx\n  newName: registry.local/nginx\n  newTag: \"1.27\"\n"),
			inputs:   []string{deployment},
			contains: []string{"image: registry.local/nginx:1.27", "image: busybox"}},
		{name: "set-image pins a digest", function: "set-image", config: configMap("  name: busybox\n  digest: sha256:abc\n"),
			inputs:   []string{deployment},
			contains: []string{"image: busybox@sha256:abc", "image: nginx:1.25"}},
		{name: "set-image needs a change", function: "set-image", config: configMap("  name: nginx\n"), inputs: []string{deployment},
			err: "set-image: one of data.newName, data.newTag and data.digest is required"},

		{name: "apply-setters fills patterns and keeps types", function: "apply-setters", config: configMap("  image: nginx\n  tag: \"1.26\"\n  port: \"8080\"\n"),
			inputs:   []string{deployment, service},
			contains: []string{"image: nginx:1.26 # kpt-set: ${image}:${tag}", "- port: 8080 # kpt-set: ${port}"}},
		{name: "apply-setters leaves fields whose setters are missing", function: "apply-setters", config: configMap("  port: \"81\"\n"),
			inputs:   []string{deployment, service},
			contains: []string{"image: nginx:1.25 # kpt-set: ${image}:${tag}", "- port: 81 # kpt-set: ${port}"}},
		{name: "apply-setters sets lists", function: "apply-setters", config: configMap("  envs: \"[dev, prod]\"\n"),
			inputs:   []string{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\nenvironments: # kpt-set: ${envs}\n- old\n"},
			contains: []string{"environments: # kpt-set: ${envs}\n- dev\n- prod\n"}},

		{name: "search-replace by value", function: "search-replace", config: configMap("  by-value: example\n  put-value: tenant-b\n"),
			inputs: []string{deployment, service}, contains: []string{"namespace: tenant-b"}, absent: []string{"example"}},
		{name: "search-replace by path and regex with groups", function: "search-replace", config: configMap("  by-path: spec.**.image\n  by-value-regex: nginx:(.*)\n  put-value: mirror/nginx:${1}\n"),
			inputs: []string{deployment}, contains: []string{"image: mirror/nginx:1.25", "image: busybox"}},
		{name: "search-replace without a query does nothing", function: "search-replace", config: configMap("  put-value: x\n"), inputs: []string{deployment},
			contains: []string{"image: nginx:1.25"}, absent: []string{": x\n"}},
		{name: "search-replace takes one of by-value and by-value-regex", function: "search-replace", config: configMap("  by-value: a\n  by-value-regex: b\n"), inputs: []string{deployment},
			err: "search-replace: only one of data.by-value and data.by-value-regex may be given"},
		{name: "search-replace refuses a capture group the regex lacks", function: "search-replace", config: configMap("  by-value-regex: nginx:(.*)\n  put-value: ${2}\n"), inputs: []string{deployment},
			err: "search-replace: data.put-value refers to capture group ${2}, and data.by-value-regex has 1"},
		{name: "search-replace adds the field a path without wildcards names", function: "search-replace", config: configMap("  by-path: spec.strategy.type\n  put-value: Recreate\n"), inputs: []string{deployment},
			contains: []string{"strategy:\n    type: Recreate"}},

		{name: "apply-replacements copies a field between resources", function: "apply-replacements",
			config:   "apiVersion: fn.kpt.dev/v1alpha1\nkind: ApplyReplacements\nmetadata:\n  name: r\nreplacements:\n- source:\n    kind: ConfigMap\n    name: settings\n    fieldPath: data.image\n  targets:\n  - select:\n      kind: Deployment\n    fieldPaths:\n    - spec.template.spec.containers.[name=app].image\n",
			inputs:   []string{deployment, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  image: httpd:2\n"},
			contains: []string{"image: httpd:2"}},
		{name: "apply-replacements needs replacements", function: "apply-replacements", config: "apiVersion: fn.kpt.dev/v1alpha1\nkind: ApplyReplacements\nmetadata:\n  name: r\n",
			inputs: []string{deployment}, err: "apply-replacements: functionConfig lists no replacements"},

		{name: "starlark edits resources", function: "starlark",
			config:   "apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: s\nparams:\n  replicas: 4\nsource: |\n  for r in ctx.resource_list[\"items\"]:\n    if r[\"kind\"] == \"Deployment\":\n      r[\"spec\"][\"replicas\"] = ctx.resource_list[\"functionConfig\"][\"params\"][\"replicas\"]\n",
			inputs:   []string{deployment, namespace},
			contains: []string{"replicas: 4", "kind: Namespace"}},
		{name: "starlark removes resources and keeps untouched comments", function: "starlark",
			config:   "apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: s\nsource: |\n  ctx.resource_list[\"items\"] = [r for r in ctx.resource_list[\"items\"] if r[\"kind\"] != \"Namespace\"]\n",
			inputs:   []string{deployment, namespace},
			contains: []string{"# kpt-set: ${image}:${tag}"}, absent: []string{"kind: Namespace"}},
		{name: "starlark reports errors", function: "starlark",
			config: "apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: s\nsource: |\n  fail(\"bad input\")\n",
			inputs: []string{deployment}, err: "bad input"},
		{name: "starlark stops runaway programs", function: "starlark",
			config: "apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: s\nsource: |\n  while True:\n    pass\n",
			inputs: []string{deployment}, err: "too many steps"},

		{name: "ensure-name-substring prepends once", function: "ensure-name-substring", config: configMap("  prepend: tenant-a-\n"),
			inputs:   []string{deployment, strings.Replace(service, "name: app", "name: tenant-a-app", 1), localConfig},
			contains: []string{"  name: tenant-a-app\n  namespace: example\nspec:\n  selector:\n    matchLabels", "  name: kptfile.kpt.dev"}, absent: []string{"tenant-a-tenant-a"}},
		{name: "ensure-name-substring appends", function: "ensure-name-substring", config: configMap("  append: -prod\n"),
			inputs: []string{deployment}, contains: []string{"name: app-prod"}},

		{name: "upsert-resource replaces a resource with the same identity", function: "upsert-resource",
			config: strings.Replace(service, "port: 80", "port: 443", 1), inputs: []string{deployment, service},
			contains: []string{"port: 443"}, absent: []string{"port: 80"}},
		{name: "upsert-resource adds a new resource", function: "upsert-resource",
			config: namespace, inputs: []string{deployment}, contains: []string{"kind: Namespace", "kind: Deployment"}},

		{name: "remove-resources removes by kind", function: "remove-resources", config: configMap("  kind: Namespace\n"),
			inputs: []string{namespace, deployment}, contains: []string{"kind: Deployment"}, absent: []string{"kind: Namespace"}},
		{name: "remove-resources without data removes the selection", function: "remove-resources", config: "",
			inputs: []string{namespace}, absent: []string{"kind: Namespace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out, rl, err := run(t, tc.function, tc.config, tc.inputs...)
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				g.Expect(rl.Results).NotTo(BeEmpty(), "errors are also results")
				g.Expect(string(rl.Results[len(rl.Results)-1].Severity)).To(Equal("error"))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			for _, s := range tc.contains {
				g.Expect(out).To(ContainSubstring(s))
			}
			for _, s := range tc.absent {
				g.Expect(out).NotTo(ContainSubstring(s))
			}
		})
	}
}

func TestNames(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Names()).To(Equal([]string{"apply-replacements", "apply-setters", "ensure-name-substring", "remove-resources", "search-replace", "set-annotations", "set-image", "set-labels", "set-namespace", "starlark", "upsert-resource"}))
}
