// The test control plane's module. Its requirements are pinned per Kubernetes minor in
// versions/MINOR.mod and versions/MINOR.sum (written by ./pin), which ./build passes as
// -modfile; this file requires nothing, so it has no go.sum.
module jobgate.dev/controlplane

go 1.26.0
