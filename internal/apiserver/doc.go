// Package apiserver is Scion's aggregated API server: it serves Porch's
// API group, porch.kpt.dev/v1alpha1, so that Porch's own clients
// (porchctl, Nephio's controllers, scripts written against Porch) work
// unchanged, with Kubernetes RBAC as the only gate for people.
//
//   - packagerevisions is a thin layer over Scion's storage of package
//     revisions, the CustomResourceDefinition
//     packagerevisions.internal.scion.dev: reads go straight through,
//     writes are made as the user who asked (impersonated, with the group
//     PorchAPIGroup added), so the lifecycle policy on the storage sees
//     that user. A revision created without a name gets Porch's name,
//     repository.package.workspace.
//   - packagerevisions/approval publishes (or rejects) a revision,
//     recording the authenticated user as its approver.
//   - packagerevisionresources are a revision's files, read from git
//     through the store (nothing is copied into etcd); its
//     resourceVersion is the commit, and an update of a Draft's files is
//     one commit made only when the draft is still at that commit.
package apiserver
