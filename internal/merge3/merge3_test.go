package merge3

import (
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func parse(t *testing.T, s string) *yaml.RNode {
	t.Helper()
	if strings.TrimSpace(s) == "" {
		return nil
	}
	n, err := yaml.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMerge(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		local, original, updated string
		want                     string
	}{
		{
			name:     "upstream change, no local change",
			original: "a: 1\nb: 2\n", updated: "a: 1\nb: 3\n", local: "a: 1\nb: 2\n",
			want: "a: 1\nb: 3\n",
		},
		{
			name:     "local change, no upstream change",
			original: "a: 1\n", updated: "a: 1\n", local: "a: 5 # mine\n",
			want: "a: 5 # mine\n",
		},
		{
			name:     "both changed different fields",
			original: "a: 1\nb: 2\n", updated: "a: 1\nb: 3\n", local: "a: 9\nb: 2\n",
			want: "a: 9\nb: 3\n",
		},
		{
			name:     "both changed the same scalar: upstream wins, local comment kept",
			original: "a: 1\n", updated: "a: 2\n", local: "a: 3 # note\n",
			want: "a: 2 # note\n",
		},
		{
			name:     "field added upstream goes after its upstream predecessor",
			original: "a: 1\nc: 3\n", updated: "a: 1\nb: 2\nc: 3\n", local: "a: 1\nc: 4\n",
			want: "a: 1\nb: 2\nc: 4\n",
		},
		{
			name:     "field added locally is kept",
			original: "a: 1\n", updated: "a: 2\n", local: "a: 1\nz: local\n",
			want: "a: 2\nz: local\n",
		},
		{
			name:     "field removed upstream and unchanged locally",
			original: "a: 1\nb: 2\n", updated: "a: 1\n", local: "a: 1\nb: 2\n",
			want: "a: 1\n",
		},
		{
			name:     "explicit null upstream removes a locally changed field",
			original: "a: 1\nb: 2\n", updated: "a: 1\nb: null\n", local: "a: 1\nb: 7\n",
			want: "a: 1\n",
		},
		{
			name:     "field removed locally stays removed when upstream did not change it",
			original: "a: 1\nb: 2\n", updated: "a: 0\nb: 2\n", local: "a: 1\n",
			want: "a: 0\n",
		},
		{
			name:     "associative list merged by name",
			original: "containers:\n- name: app\n  image: app:1\n- name: sidecar\n  image: s:1\n",
			updated:  "containers:\n- name: app\n  image: app:2\n- name: sidecar\n  image: s:1\n- name: new\n  image: n:1\n",
			local:    "containers:\n- name: sidecar\n  image: s:1\n  args: [x]\n- name: app\n  image: app:1\n- name: mine\n  image: m:1\n",
			want:     "containers:\n- name: sidecar\n  image: s:1\n  args: [x]\n- name: app\n  image: app:2\n- name: mine\n  image: m:1\n- name: new\n  image: n:1\n",
		},
		{
			name:     "element removed upstream and unchanged locally is removed",
			original: "ports:\n- containerPort: 80\n- containerPort: 443\n",
			updated:  "ports:\n- containerPort: 443\n",
			local:    "ports:\n- containerPort: 80\n- containerPort: 443\n  name: https\n",
			want:     "ports:\n- containerPort: 443\n  name: https\n",
		},
		{
			name:     "element removed locally stays removed",
			original: "volumeMounts:\n- mountPath: /a\n- mountPath: /b\n",
			updated:  "volumeMounts:\n- mountPath: /a\n- mountPath: /b\n- mountPath: /c\n",
			local:    "volumeMounts:\n- mountPath: /a\n",
			want:     "volumeMounts:\n- mountPath: /a\n- mountPath: /c\n",
		},
		{
			name:     "scalar list changed on both sides: upstream wins",
			original: "args: [a, b]\n", updated: "args: [a, b, c]\n", local: "args: [a]\n",
			want: "args: [a, b, c]\n",
		},
		{
			name:     "document added upstream",
			original: "", updated: "a: 1\n", local: "",
			want: "a: 1\n",
		},
		{
			name:     "nothing changed upstream: local is returned as it is",
			original: "a: 1\n", updated: "a: 1\n", local: "# head\na: 1 # c\n",
			want: "# head\na: 1 # c\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Merge(parse(t, tc.local), parse(t, tc.original), parse(t, tc.updated), Options{})
			g.Expect(err).NotTo(HaveOccurred())
			s := ""
			if got != nil {
				s, err = got.String()
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(s).To(Equal(tc.want))
		})
	}
}

func TestMerge_listKeyOverride(t *testing.T) {
	g := NewWithT(t)
	orig := "pipeline:\n  mutators:\n  - image: a\n  - image: b\n"
	upd := "pipeline:\n  mutators:\n  - image: a\n    configMap: {x: y}\n  - image: b\n"
	local := "pipeline:\n  mutators:\n  - image: z\n  - image: a\n  - image: b\n"
	got, err := Merge(parse(t, local), parse(t, orig), parse(t, upd), Options{ListKeys: map[string][]string{"pipeline.mutators": {"name", "image"}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.MustString()).To(Equal("pipeline:\n  mutators:\n  - image: z\n  - image: a\n    configMap: {x: y}\n  - image: b\n"))
}

func TestEqual(t *testing.T) {
	g := NewWithT(t)
	g.Expect(SameData(parse(t, "a: 1\nb: 2\n").YNode(), parse(t, "b: 2 # c\na: 1\n").YNode())).To(BeTrue(), "key order and comments do not matter")
	g.Expect(SameData(parse(t, "a: '1'\n").YNode(), parse(t, "a: 1\n").YNode())).To(BeFalse(), "a quoted string is not a number")
	g.Expect(SameData(parse(t, "a: [1, 2]\n").YNode(), parse(t, "a: [2, 1]\n").YNode())).To(BeFalse(), "list order matters")
}

func TestMerge_concurrent(t *testing.T) {
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				got, err := Merge(parse(t, "spec:\n  replicas: 5\n"), parse(t, "spec:\n  replicas: 1\n"), parse(t, "spec:\n  replicas: 1\n  paused: true\n"), Options{})
				if err != nil || got.MustString() != "spec:\n  replicas: 5\n  paused: true\n" {
					t.Errorf("concurrent merge: %v %q", err, got.MustString())
					return
				}
			}
		}()
	}
	wg.Wait()
}
