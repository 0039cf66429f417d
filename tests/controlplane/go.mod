module jobgate.dev/controlplane

go 1.26.0
