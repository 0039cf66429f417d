// The test control plane's module. Its requirements are pinned per Kubernetes minor in
// versions/MINOR.mod and versions/MINOR.sum (written by ./pin), which ./build passes as
// -modfile; this file requires nothing, so its go.sum is empty (committed so that the module's
// checksum file is where tools look for it).
module jobgate.dev/controlplane

go 1.26.0
