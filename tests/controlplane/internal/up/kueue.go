package up

import (
	"bytes"
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// KueueFeatureGates are the gates Kueue's manager runs with in the tests: its failure-recovery
// controller (pkg/controller/failurerecovery, alpha since Kueue 0.15), and no visibility server,
// which would read its certificate from the fixed path /visibility.
const KueueFeatureGates = "FailureRecoveryPolicy=true,VisibilityOnDemand=false"

// KueueNamespace is the namespace Kueue's manager says it runs in (its configuration's
// `namespace`): Kueue's default managedJobsNamespaceSelector leaves it and kube-system alone.
const KueueNamespace = "kueue-system"

// kueueIntegrations are the frameworks Kueue manages in the tests. Only their webhooks, and those
// of Kueue's own kinds, are registered: a registered webhook whose integration is off answers
// 404, which a `Fail` policy turns into a refusal of every object it matches.
var kueueIntegrations = []string{"batch/job"}

// kueueWebhookPaths keeps the webhooks whose path serves a kept integration or a Kueue kind.
func kueueWebhookPath(path string) bool {
	return strings.HasSuffix(path, "-batch-v1-job") || strings.Contains(path, "-kueue-x-k8s-io-")
}

// kueueConverted are the CRDs Kueue's install gives a conversion webhook
// (config/components/crd/kustomization.yaml: patches/webhook_in_*.yaml).
var kueueConverted = map[string]bool{
	"localqueues.kueue.x-k8s.io":        true,
	"clusterqueues.kueue.x-k8s.io":      true,
	"cohorts.kueue.x-k8s.io":            true,
	"workloads.kueue.x-k8s.io":          true,
	"multikueueclusters.kueue.x-k8s.io": true,
}

// startKueue installs Kueue beside a ready kube-apiserver and starts its manager, as Kueue's
// config/default does in a cluster, with three differences a control plane on loopback needs:
// its webhooks are registered by `url` on 127.0.0.1 with this control plane's CA, not by Service;
// internal certificate management is off (it would write the certificate into a Secret for a
// Service); leader election is off (one replica). from is tests/controlplane/build-kueue's output:
// the `kueue` binary and the `config/` it copied from the same module.
func (cp *controlPlane) startKueue(from, apiserverURL, kubeconfig string) error {
	dir := filepath.Join(cp.opts.dir, "kueue")
	certs := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		return err
	}
	if err := cp.pki.issue("kueue", pkix.Name{CommonName: "kueue-webhook-service"}, []string{"127.0.0.1", "localhost"}, x509.ExtKeyUsageServerAuth); err != nil {
		return err
	}
	// controller-runtime's webhook server and Kueue's metrics server both read tls.crt and tls.key.
	for _, f := range []string{"crt", "key"} {
		b, err := os.ReadFile(cp.pki.path("kueue." + f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(certs, "tls."+f), b, 0o600); err != nil {
			return err
		}
	}
	admin, err := cp.adminClient()
	if err != nil {
		return err
	}
	api := &apiClient{base: apiserverURL, http: admin}
	ctx, cancel := context.WithTimeout(context.Background(), cp.opts.timeout)
	defer cancel()
	if err := api.apply(ctx, "/api/v1/namespaces/"+KueueNamespace, map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": KueueNamespace},
	}); err != nil {
		return err
	}
	caBundle := base64.StdEncoding.EncodeToString(pemOf(cp.pki.ca))
	// freePorts closes its listeners before Kueue binds the ports, and the control planes of
	// tests running side by side pick ports at the same time: a port taken in between is
	// picked again, with the CRDs' conversion webhook pointed at the new one.
	var webhookURL, readyz string
	for attempt := 1; ; attempt++ {
		webhookURL, readyz, err = cp.launchKueue(ctx, api, from, dir, certs, kubeconfig, caBundle)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			break
		}
		cp.running = cp.running[:len(cp.running)-1]
	}
	if err != nil {
		return err
	}
	// Registered once the manager serves them, so no request meets a webhook that is not there.
	if err := installKueueWebhooks(ctx, api, filepath.Join(from, "config/webhook/manifests.yaml"), webhookURL, caBundle); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "ready"), []byte(readyz+"\n"), 0o600)
}

// launchKueue installs Kueue's CRDs and starts its manager on free ports, and returns its webhook
// URL and readiness URL.
func (cp *controlPlane) launchKueue(ctx context.Context, api *apiClient, from, dir, certs, kubeconfig, caBundle string) (string, string, error) {
	ports, err := freePorts(3)
	if err != nil {
		return "", "", err
	}
	webhookURL := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	if err := installKueueCRDs(ctx, api, filepath.Join(from, "config/crd"), webhookURL, caBundle); err != nil {
		return "", "", err
	}
	config := fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: 127.0.0.1:%d
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
integrations:
  frameworks: [%s]
`, KueueNamespace, ports[1], ports[2], ports[0], certs, strings.Join(kueueIntegrations, ", "))
	configPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		return "", "", err
	}
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1])
	err = cp.launchBinary("kueue", filepath.Join(from, "kueue"), []string{
		"--config=" + configPath,
		"--kubeconfig=" + kubeconfig,
		"--feature-gates=" + KueueFeatureGates,
	}, []string{"KUEUE_METRICS_CERT_DIR=" + certs}, func(ctx context.Context) error {
		return get(ctx, http.DefaultClient, readyz, "ok")
	})
	return webhookURL, readyz, err
}

func installKueueCRDs(ctx context.Context, api *apiClient, dir, webhookURL, caBundle string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no Kueue CRDs in %s (tests/controlplane/build kueue copies them): %v", dir, err)
	}
	var names []string
	for _, f := range files {
		crd, err := readYAML(f)
		if err != nil {
			return err
		}
		name := nameOf(crd)
		if kueueConverted[name] {
			spec := crd["spec"].(map[string]any)
			spec["conversion"] = map[string]any{
				"strategy": "Webhook",
				"webhook": map[string]any{
					"clientConfig":             map[string]any{"url": webhookURL + "/convert", "caBundle": caBundle},
					"conversionReviewVersions": []any{"v1"},
				},
			}
		}
		if err := api.apply(ctx, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+name, crd); err != nil {
			return err
		}
		names = append(names, name)
	}
	for _, name := range names {
		if err := api.waitEstablished(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// installKueueWebhooks registers Kueue's webhook configurations under the names its install gives
// them (kustomize's `kueue-` prefix), each webhook by url on this control plane.
func installKueueWebhooks(ctx context.Context, api *apiClient, file, webhookURL, caBundle string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if obj == nil {
			continue
		}
		var kept []any
		for _, w := range obj["webhooks"].([]any) {
			webhook := w.(map[string]any)
			config := webhook["clientConfig"].(map[string]any)
			path := config["service"].(map[string]any)["path"].(string)
			if !kueueWebhookPath(path) {
				continue
			}
			webhook["clientConfig"] = map[string]any{"url": webhookURL + path, "caBundle": caBundle}
			kept = append(kept, webhook)
		}
		obj["webhooks"] = kept
		name := "kueue-" + nameOf(obj)
		obj["metadata"] = map[string]any{"name": name}
		resource := map[string]string{
			"MutatingWebhookConfiguration":   "mutatingwebhookconfigurations",
			"ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
		}[obj["kind"].(string)]
		if err := api.apply(ctx, "/apis/admissionregistration.k8s.io/v1/"+resource+"/"+name, obj); err != nil {
			return err
		}
	}
	return nil
}

func readYAML(file string) (map[string]any, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := yaml.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return obj, nil
}

func nameOf(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	return name
}

// apiClient is the administrator's plain HTTPS client to kube-apiserver: server-side apply and
// a read, all Kueue's install needs.
type apiClient struct {
	base string
	http *http.Client
}

// apply server-side applies obj at path (as `kubectl apply --server-side --force-conflicts`).
func (a *apiClient) apply(ctx context.Context, path string, obj map[string]any) error {
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, a.base+path+"?fieldManager=jobgate-test&force=true", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/apply-patch+yaml")
	resp, err := a.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("apply %s: %d %s", path, resp.StatusCode, strings.TrimSpace(string(text)))
	}
	return nil
}

// waitEstablished waits until kube-apiserver serves the CRD (its Established condition).
func (a *apiClient) waitEstablished(ctx context.Context, name string) error {
	url := a.base + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name
	for {
		var crd struct {
			Status struct {
				Conditions []struct{ Type, Status string } `json:"conditions"`
			} `json:"status"`
		}
		if err := a.read(ctx, url, &crd); err != nil {
			return err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == "Established" && c.Status == "True" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the CRD %s was not Established: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// read GETs url and decodes its JSON into into.
func (a *apiClient) read(ctx context.Context, url string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		text, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(text)))
	}
	return json.NewDecoder(resp.Body).Decode(into)
}

// KueueMain runs `controlplane kueue --dir DIR --kueue FROM`: Kueue's manager beside the control
// plane an `up --dir DIR` runs (tests/controlplane/kueue), until a signal, the end of standard
// input (--stdin) or the manager's exit.
func KueueMain(args []string) int {
	var o options
	fs := flag.NewFlagSet("kueue", flag.ContinueOnError)
	fs.StringVar(&o.dir, "dir", "", "the running control plane's directory (`up --dir`; required)")
	fs.StringVar(&o.kueue, "kueue", "", "tests/controlplane/build kueue's output, target/controlplane/kueue (required)")
	fs.BoolVar(&o.stdin, "stdin", false, "stop when standard input closes")
	fs.DurationVar(&o.timeout, "timeout", 3*time.Minute, "how long Kueue may take to become ready")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.dir == "" || o.kueue == "" {
		fmt.Fprintln(os.Stderr, "controlplane kueue: --dir and --kueue are required")
		return 2
	}
	kubeconfig := filepath.Join(o.dir, "kubeconfig")
	server, err := kubeconfigServer(kubeconfig)
	if err == nil {
		var p *pki
		if p, err = loadPKI(filepath.Join(o.dir, "pki")); err == nil {
			cp := &controlPlane{opts: o, beside: true, pki: p}
			defer cp.stop()
			if err = cp.startKueue(o.kueue, server, kubeconfig); err == nil {
				fmt.Printf("kueue: %s\n", filepath.Join(o.dir, "logs", "kueue.log"))
				os.Stdout.Sync()
				return cp.wait()
			}
		}
	}
	fmt.Fprintf(os.Stderr, "controlplane kueue: %v\n", err)
	return 1
}

// kubeconfigServer is the server URL of a kubeconfig `up` wrote.
func kubeconfigServer(path string) (string, error) {
	var config struct {
		Clusters []struct {
			Cluster struct {
				Server string `json:"server"`
			} `json:"cluster"`
		} `json:"clusters"`
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("no control plane here: %w", err)
	}
	if err := yaml.Unmarshal(b, &config); err != nil || len(config.Clusters) == 0 {
		return "", fmt.Errorf("%s: names no server (%v)", path, err)
	}
	return config.Clusters[0].Cluster.Server, nil
}
