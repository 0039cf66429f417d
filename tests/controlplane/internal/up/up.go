// Package up starts etcd, kube-apiserver and kube-controller-manager on loopback for jobgate's
// tests, with the flags envtest gives them (controller-runtime pkg/internal/testing/controlplane:
// apiserver.go, etcd.go), and stops them together.
package up

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// DefaultControllers are the kube-controller-manager controllers jobgate's tests need: the Job
// controller (replacements per podReplacementPolicy), the taint-eviction controller (deletes pods
// from nodes tainted NoExecute), the garbage collector (a Job's pods, foreground deletion), the
// namespace controller (a deleted namespace empties) and the node lifecycle controller, without
// which the taint-eviction controller finds no pods (the `spec.nodeName` pod index it reads is
// added by the node lifecycle controller: pkg/controller/nodelifecycle AddPodNodeNameIndexer).
const DefaultControllers = "job-controller,garbage-collector-controller,taint-eviction-controller,node-lifecycle-controller,namespace-controller"

// defaultKCMArgs keep the node lifecycle controller from judging the tests' nodes by heartbeats
// nobody sends: the tests play the kubelet and mark a node unreachable themselves, as the
// controller would (Ready=Unknown and the unreachable NoExecute taint).
var defaultKCMArgs = []string{"--node-monitor-grace-period=24h", "--node-startup-grace-period=24h"}

type options struct {
	dir           string
	controllers   string
	featureGates  string
	runtimeConfig string
	apiserverArgs multi
	kcmArgs       multi
	kueue         string
	stdin         bool
	timeout       time.Duration
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

// Main runs `controlplane up`: it returns when the control plane stops (a signal, standard input
// closed with --stdin, or a component exited), with the process exit code.
func Main(args []string) int {
	var o options
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	fs.StringVar(&o.dir, "dir", "", "directory for certificates, data, logs and the kubeconfig (required)")
	fs.StringVar(&o.controllers, "controllers", DefaultControllers, "kube-controller-manager --controllers; empty: no controller manager")
	fs.StringVar(&o.featureGates, "feature-gates", "", "--feature-gates for kube-apiserver and kube-controller-manager")
	fs.StringVar(&o.runtimeConfig, "runtime-config", "", "kube-apiserver --runtime-config")
	fs.Var(&o.apiserverArgs, "apiserver-arg", "an extra kube-apiserver flag (repeatable)")
	fs.Var(&o.kcmArgs, "kcm-arg", "an extra kube-controller-manager flag (repeatable)")
	fs.StringVar(&o.kueue, "kueue", "", "also install and start Kueue's manager from this directory (tests/controlplane/build kueue writes target/controlplane/kueue)")
	fs.BoolVar(&o.stdin, "stdin", false, "stop when standard input closes (a test holds the pipe)")
	fs.DurationVar(&o.timeout, "timeout", 3*time.Minute, "how long each component may take to become ready")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.dir == "" {
		fmt.Fprintln(os.Stderr, "controlplane up: --dir is required")
		return 2
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "controlplane up: %v\n", err)
		return 2
	}
	o.dir = dir
	cp := &controlPlane{opts: o}
	defer cp.stop()
	if err := cp.start(); err != nil {
		fmt.Fprintf(os.Stderr, "controlplane up: %v\n", err)
		return 1
	}
	fmt.Printf("kubeconfig: %s\n", cp.kubeconfig)
	os.Stdout.Sync()
	return cp.wait()
}

type component struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan error
}

type controlPlane struct {
	opts options
	// beside: only Kueue runs here, beside a control plane another `up` owns (KueueMain).
	beside     bool
	pki        *pki
	kubeconfig string
	running    []*component
}

func (cp *controlPlane) start() error {
	o := cp.opts
	for _, d := range []string{"logs", "etcd"} {
		if err := os.MkdirAll(filepath.Join(o.dir, d), 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(o.dir, "up.pid"), []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o600); err != nil {
		return err
	}
	p, err := newPKI(filepath.Join(o.dir, "pki"))
	if err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	cp.pki = p
	hosts := []string{"127.0.0.1", "localhost", "10.0.0.1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	if err := p.issue("apiserver", pkix.Name{CommonName: "kube-apiserver"}, hosts, x509.ExtKeyUsageServerAuth); err != nil {
		return err
	}
	// system:masters: the administrator the tests act as (kubectl, kube-rs, the controller manager).
	if err := p.issue("admin", pkix.Name{CommonName: "jobgate-test-admin", Organization: []string{"system:masters"}}, nil, x509.ExtKeyUsageClientAuth); err != nil {
		return err
	}
	if err := p.serviceAccountKey(); err != nil {
		return err
	}
	ports, err := freePorts(4)
	if err != nil {
		return err
	}
	etcdClient := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	etcdPeer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	apiserverURL := fmt.Sprintf("https://127.0.0.1:%d", ports[2])

	if err := cp.launch("etcd", []string{
		"--name=default",
		"--data-dir=" + filepath.Join(o.dir, "etcd"),
		"--listen-client-urls=" + etcdClient,
		"--advertise-client-urls=" + etcdClient,
		"--listen-peer-urls=" + etcdPeer,
		"--initial-advertise-peer-urls=" + etcdPeer,
		"--initial-cluster=default=" + etcdPeer,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}, func(ctx context.Context) error {
		return get(ctx, http.DefaultClient, etcdClient+"/health", `"health":"true"`)
	}); err != nil {
		return err
	}

	apiserverArgs := []string{
		"--advertise-address=127.0.0.1",
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", ports[2]),
		"--cert-dir=" + filepath.Join(o.dir, "apiserver"),
		"--tls-cert-file=" + p.path("apiserver.crt"),
		"--tls-private-key-file=" + p.path("apiserver.key"),
		"--client-ca-file=" + p.path("ca.crt"),
		"--etcd-servers=" + etcdClient,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.path("sa.pub"),
		"--service-account-signing-key-file=" + p.path("sa.key"),
		"--authorization-mode=RBAC",
		"--allow-privileged=true",
		// No service-account controller runs, so pods would wait for a `default` ServiceAccount
		// that never comes (envtest disables the plugin for the same reason).
		"--disable-admission-plugins=ServiceAccount",
		"--profiling=false",
		// The `kubernetes` Service's endpoints would name 127.0.0.1, which 1.37 refuses
		// ("may not be in the loopback range"); nothing in the tests calls the apiserver through it.
		"--endpoint-reconciler-type=none",
	}
	if o.featureGates != "" {
		apiserverArgs = append(apiserverArgs, "--feature-gates="+o.featureGates)
	}
	if o.runtimeConfig != "" {
		apiserverArgs = append(apiserverArgs, "--runtime-config="+o.runtimeConfig)
	}
	apiserverArgs = append(apiserverArgs, o.apiserverArgs...)
	admin, err := cp.adminClient()
	if err != nil {
		return err
	}
	if err := cp.launch("kube-apiserver", apiserverArgs, func(ctx context.Context) error {
		return get(ctx, admin, apiserverURL+"/readyz", "ok")
	}); err != nil {
		return err
	}
	kubeconfig := filepath.Join(o.dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, apiserverURL, p); err != nil {
		return err
	}

	if o.controllers != "" {
		kcmURL := fmt.Sprintf("https://127.0.0.1:%d", ports[3])
		kcmArgs := []string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			"--bind-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", ports[3]),
			"--cert-dir=" + filepath.Join(o.dir, "kube-controller-manager"),
			"--leader-elect=false",
			"--controllers=" + o.controllers,
			"--use-service-account-credentials=false",
			"--root-ca-file=" + p.path("ca.crt"),
		}
		if o.featureGates != "" {
			kcmArgs = append(kcmArgs, "--feature-gates="+o.featureGates)
		}
		kcmArgs = append(append(kcmArgs, defaultKCMArgs...), o.kcmArgs...)
		insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		if err := cp.launch("kube-controller-manager", kcmArgs, func(ctx context.Context) error {
			return get(ctx, insecure, kcmURL+"/healthz", "ok")
		}); err != nil {
			return err
		}
	}
	if o.kueue != "" {
		if err := cp.startKueue(o.kueue, apiserverURL, kubeconfig); err != nil {
			return fmt.Errorf("kueue: %w", err)
		}
	}
	// Written last: a reader that finds it may use the control plane.
	cp.kubeconfig = kubeconfig
	return os.WriteFile(filepath.Join(o.dir, "ready"), []byte(kubeconfig+"\n"), 0o600)
}

// launch starts `self NAME args...` with its output in logs/NAME.log and waits until ready
// answers, the component exits, or the timeout passes.
func (cp *controlPlane) launch(name string, args []string, ready func(context.Context) error) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return cp.launchBinary(name, self, append([]string{name}, args...), nil, ready)
}

// launchBinary starts the program at path as the component NAME, with env added to this
// process's environment, and waits as launch does.
func (cp *controlPlane) launchBinary(name, path string, args, env []string, ready func(context.Context) error) error {
	logPath := filepath.Join(cp.opts.dir, "logs", name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// A component never outlives this supervisor, even when the supervisor is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	c := &component{name: name, cmd: cmd, log: logPath, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait(); logFile.Close() }()
	cp.running = append(cp.running, c)

	ctx, cancel := context.WithTimeout(context.Background(), cp.opts.timeout)
	defer cancel()
	var last error
	for {
		select {
		case err := <-c.done:
			c.done <- err
			return fmt.Errorf("%s exited before it was ready (%v); the end of %s:\n%s", name, err, logPath, tail(logPath))
		case <-ctx.Done():
			return fmt.Errorf("%s was not ready after %s (%v); the end of %s:\n%s", name, cp.opts.timeout, last, logPath, tail(logPath))
		case <-time.After(200 * time.Millisecond):
		}
		probe, cancelProbe := context.WithTimeout(ctx, 2*time.Second)
		last = ready(probe)
		cancelProbe()
		if last == nil {
			return nil
		}
	}
}

// wait blocks until a signal, the end of standard input (--stdin) or a component's exit.
func (cp *controlPlane) wait() int {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	stdinClosed := make(chan struct{})
	if cp.opts.stdin {
		go func() { io.Copy(io.Discard, os.Stdin); close(stdinClosed) }()
	}
	exited := make(chan *component, len(cp.running))
	for _, c := range cp.running {
		go func(c *component) { err := <-c.done; c.done <- err; exited <- c }(c)
	}
	select {
	case <-signals:
		return 0
	case <-stdinClosed:
		return 0
	case c := <-exited:
		fmt.Fprintf(os.Stderr, "controlplane up: %s exited; the end of %s:\n%s\n", c.name, c.log, tail(c.log))
		return 1
	}
}

// stop stops the components newest first: SIGTERM, then SIGKILL after ten seconds.
func (cp *controlPlane) stop() {
	for i := len(cp.running) - 1; i >= 0; i-- {
		c := cp.running[i]
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-c.done:
			c.done <- err
		case <-time.After(10 * time.Second):
			_ = c.cmd.Process.Kill()
		}
	}
	if cp.beside {
		_ = os.Remove(filepath.Join(cp.opts.dir, "kueue", "ready"))
		return
	}
	// etcd's data is the bulk of a run directory and means nothing once etcd has stopped; the
	// certificates, kubeconfig and logs stay for whoever looks at a failure.
	_ = os.RemoveAll(filepath.Join(cp.opts.dir, "etcd"))
	_ = os.Remove(filepath.Join(cp.opts.dir, "ready"))
	_ = os.Remove(filepath.Join(cp.opts.dir, "up.pid"))
}

func (cp *controlPlane) adminClient() (*http.Client, error) {
	cert, err := tls.LoadX509KeyPair(cp.pki.path("admin.crt"), cp.pki.path("admin.key"))
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(cp.pki.ca)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      roots,
	}}}, nil
}

func get(ctx context.Context, client *http.Client, url, want string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}

func freePorts(n int) ([]int, error) {
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func writeKubeconfig(path, server string, p *pki) error {
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: jobgate-test
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: jobgate-test
  context:
    cluster: jobgate-test
    user: admin
    namespace: default
current-context: jobgate-test
`, server, p.path("ca.crt"), p.path("admin.crt"), p.path("admin.key"))
	return os.WriteFile(path, []byte(kubeconfig), 0o600)
}

// tail is the last 40 lines of a log, for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}
