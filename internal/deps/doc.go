// Package deps resolves package dependencies for one deployment
// repository: it reads what a package declares (a PackageDependencies
// local-config object and its CustomResourceDefinitions), and solves a
// request against what the repository holds and what the upstream
// repositories publish, over the whole graph at once. A solution keeps
// what is installed where it can, otherwise takes the highest version
// allowed, never installs two versions of a package that allows one copy
// and never lets two packages provide one kind. A failure is explained as
// the chain of requirements that collide.
//
// The package is pure: it reads no cluster and no git. LoadCatalog and
// LoadInstalled read the offline layout `scion deps resolve` documents.
package deps
