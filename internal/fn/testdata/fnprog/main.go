// Command fnprog is a KRM function used by the exec runtime tests. Its
// functionConfig data.mode picks the behaviour.
package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func main() {
	rw := &kio.ByteReadWriter{Reader: os.Stdin, Writer: os.Stdout, KeepReaderAnnotations: true}
	p := framework.ResourceListProcessorFunc(func(rl *framework.ResourceList) error {
		mode := rl.FunctionConfig.GetDataMap()["mode"]
		switch mode {
		case "label":
			for _, n := range rl.Items {
				if err := n.PipeE(yaml.SetLabel("touched-by", "fnprog")); err != nil {
					return err
				}
			}
		case "crash":
			fmt.Fprintln(os.Stderr, "fnprog: something broke")
			os.Exit(3)
		case "result-error":
			rl.Results = append(rl.Results, &framework.Result{Message: "replicas must be at least 2", Severity: framework.Error,
				ResourceRef: &yaml.ResourceIdentifier{TypeMeta: yaml.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, NameMeta: yaml.NameMeta{Name: "app"}}})
		case "sleep":
			time.Sleep(30 * time.Second)
		case "hang":
			time.Sleep(time.Hour)
		case "flood":
			// 1Gi of comment lines, then nothing: a function gone wrong.
			line := []byte("# " + strings.Repeat("x", 1021) + "\n")
			for i := 0; i < 1<<20; i++ {
				if _, err := os.Stdout.Write(line); err != nil {
					os.Exit(4)
				}
			}
			os.Exit(0)
		case "garbage":
			fmt.Println("this is not YAML: [")
			os.Exit(0)
		}
		return nil
	})
	if err := framework.Execute(p, rw); err != nil {
		os.Exit(1)
	}
}
