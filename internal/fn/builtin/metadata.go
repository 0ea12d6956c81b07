package builtin

import (
	"context"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// clusterScoped are the built-in kinds without a namespace.
var clusterScoped = map[string]bool{
	"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true,
	"PersistentVolume": true, "StorageClass": true, "PriorityClass": true, "IngressClass": true, "RuntimeClass": true,
	"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true, "ValidatingAdmissionPolicy": true,
	"ValidatingAdmissionPolicyBinding": true, "APIService": true, "Node": true, "CSIDriver": true, "CSINode": true,
	"VolumeAttachment": true, "PodSecurityPolicy": true, "ClusterIssuer": true, "Kptfile": true,
}

// setNamespace sets metadata.namespace of every namespaced resource,
// renames Namespace objects named after a namespace the resources used,
// and moves ServiceAccount subjects of role bindings along.
func setNamespace(_ context.Context, rl *framework.ResourceList) error {
	ns := configData(rl.FunctionConfig)["namespace"]
	if ns == "" {
		return fail(rl, "set-namespace: functionConfig data.namespace is required")
	}
	old := map[string]bool{}
	for _, n := range rl.Items {
		if !clusterScoped[n.GetKind()] && !isLocalConfig(n) && n.GetNamespace() != "" {
			old[n.GetNamespace()] = true
		}
	}
	count := 0
	for _, n := range rl.Items {
		if isLocalConfig(n) {
			continue
		}
		kind := n.GetKind()
		if kind == "Namespace" {
			if old[n.GetName()] || len(old) == 0 {
				if err := setMetadata(n, yaml.NameField, ns); err != nil {
					return err
				}
				count++
			}
			continue
		}
		if kind == "RoleBinding" || kind == "ClusterRoleBinding" {
			subjects, err := n.Pipe(yaml.Lookup("subjects"))
			if err != nil {
				return err
			}
			if subjects != nil {
				elems, _ := subjects.Elements()
				for _, s := range elems {
					if yaml.GetValue(s.Field("kind").Value) != "ServiceAccount" {
						continue
					}
					cur := ""
					if f := s.Field("namespace"); f != nil {
						cur = yaml.GetValue(f.Value)
					}
					if cur == "" || old[cur] {
						if err := s.PipeE(yaml.SetField("namespace", yaml.NewStringRNode(ns))); err != nil {
							return err
						}
					}
				}
			}
		}
		if clusterScoped[kind] {
			continue
		}
		if err := setMetadata(n, yaml.NamespaceField, ns); err != nil {
			return err
		}
		count++
	}
	info(rl, "set-namespace: %d resources now in namespace %s", count, ns)
	return nil
}

// workloads have a pod template at spec.template.
var workloads = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "ReplicaSet": true, "Job": true, "ReplicationController": true}

// selectorWorkloads select their pods with spec.selector.matchLabels.
var selectorWorkloads = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "ReplicaSet": true}

// setLabels sets labels on metadata, pod templates and selectors (as
// kustomize commonLabels does), so selectors keep matching.
func setLabels(_ context.Context, rl *framework.ResourceList) error {
	labels := configData(rl.FunctionConfig)
	if len(labels) == 0 {
		return fail(rl, "set-labels: functionConfig data lists no labels")
	}
	for _, n := range rl.Items {
		paths := [][]string{{"metadata", "labels"}}
		kind := n.GetKind()
		if workloads[kind] {
			paths = append(paths, []string{"spec", "template", "metadata", "labels"})
		}
		if selectorWorkloads[kind] {
			paths = append(paths, []string{"spec", "selector", "matchLabels"})
		}
		if kind == "CronJob" {
			paths = append(paths, []string{"spec", "jobTemplate", "spec", "template", "metadata", "labels"})
		}
		if kind == "Service" || kind == "ReplicationController" {
			paths = append(paths, []string{"spec", "selector"})
		}
		if err := setMapFields(n, paths, labels); err != nil {
			return err
		}
	}
	return nil
}

// setAnnotations sets annotations on metadata and pod templates.
func setAnnotations(_ context.Context, rl *framework.ResourceList) error {
	annotations := configData(rl.FunctionConfig)
	if len(annotations) == 0 {
		return fail(rl, "set-annotations: functionConfig data lists no annotations")
	}
	for _, n := range rl.Items {
		paths := [][]string{{"metadata", "annotations"}}
		if workloads[n.GetKind()] {
			paths = append(paths, []string{"spec", "template", "metadata", "annotations"})
		}
		if n.GetKind() == "CronJob" {
			paths = append(paths, []string{"spec", "jobTemplate", "spec", "template", "metadata", "annotations"})
		}
		if err := setMapFields(n, paths, annotations); err != nil {
			return err
		}
	}
	return nil
}

// setMapFields sets the entries of values in the string maps at paths,
// creating the first path (metadata) always and the others only where
// their parent exists.
func setMapFields(n *yaml.RNode, paths [][]string, values map[string]string) error {
	for i, p := range paths {
		if i > 0 {
			parent, err := n.Pipe(yaml.Lookup(p[:len(p)-1]...))
			if err != nil {
				return err
			}
			if parent == nil {
				continue
			}
		}
		m, err := n.Pipe(yaml.LookupCreate(yaml.MappingNode, p...))
		if err != nil {
			return err
		}
		for _, k := range sortedKeys(values) {
			if err := m.PipeE(yaml.SetField(k, yaml.NewStringRNode(values[k]))); err != nil {
				return err
			}
		}
	}
	return nil
}
