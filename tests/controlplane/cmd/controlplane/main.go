// Command controlplane is a Kubernetes control plane for jobgate's tests, built from upstream's
// own Go modules (k8s.io/kubernetes and go.etcd.io/etcd, pinned per minor in ../../versions).
// One binary holds the three components, so the packages they share are compiled once:
//
//	controlplane etcd [etcd flags]
//	controlplane kube-apiserver [kube-apiserver flags]
//	controlplane kube-controller-manager [kube-controller-manager flags]
//	controlplane up --dir DIR [...]   starts all three on loopback (see internal/up)
//	controlplane kueue --dir DIR --kueue FROM   Kueue's manager beside a running `up --dir DIR`
//
// Each component's main is upstream's own (cmd/kube-apiserver/apiserver.go,
// cmd/kube-controller-manager/controller-manager.go, etcdmain.Main).
package main

import (
	"fmt"
	"os"
	_ "time/tzdata" // CronJob time zones, as cmd/kube-apiserver and cmd/kube-controller-manager

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"

	"jobgate.dev/controlplane/internal/up"
)

const usage = "usage: controlplane up|kueue|etcd|kube-apiserver|kube-controller-manager [flags]"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	component := os.Args[1]
	args := append([]string{component}, os.Args[2:]...)
	switch component {
	case "up":
		os.Exit(up.Main(args[1:]))
	case "kueue":
		os.Exit(up.KueueMain(args[1:]))
	case "etcd":
		etcdmain.Main(args)
	case "kube-apiserver":
		os.Args = args
		os.Exit(cli.Run(apiserver.NewAPIServerCommand()))
	case "kube-controller-manager":
		os.Args = args
		os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
	default:
		fmt.Fprintf(os.Stderr, "controlplane: unknown component %q\n%s\n", component, usage)
		os.Exit(2)
	}
}
