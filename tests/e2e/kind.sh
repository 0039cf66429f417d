#!/usr/bin/env bash
# End-to-end install of jobgate on a kind cluster. Not run by CI (it needs a Docker engine).
#
#   tests/e2e/kind.sh                      # self-signed certificates from `jobgate certs`
#   OVERLAY=cert-manager tests/e2e/kind.sh # certificates from cert-manager (installed here)
#
# Needs: docker, kind, kubectl, jq, cargo. Environment:
#   CLUSTER       kind cluster name (default jobgate-e2e; created if missing, kept afterwards)
#   IMAGE         image to build and load (default ghcr.io/jobgate/jobgate:e2e)
#   OVERLAY       self-signed | cert-manager (default self-signed)
#   CERT_MANAGER  cert-manager release for OVERLAY=cert-manager (default v1.16.2)
#   CHECK_OUTAGE  1 to also scale jobgate to 0 and check the failure policies (default 1)
#   KEEP          1 to leave the test namespaces behind (default 0)
#   NS            the namespace jobgate is installed into (default jobgate-system)
#
# What it does, in order:
#   1. builds the image (Dockerfile) and loads it into kind;
#   2. renders deploy/overlays/$OVERLAY with the e2e image and applies it; waits for the rollout;
#   3. for every CREATE of a batch/v1 Job or CronJob in tests/fixtures/{mutate,mutate-recovery,
#      validate}, creates the request's object with `kubectl create --dry-run=server` (the real
#      admission chain, nothing persisted) in a namespace selected like the fixture's endpoint, and
#      checks the fixture's expected answer: denied or allowed, each warning (kubectl prints
#      "Warning: ..."), and for mutation every value the expected patch sets;
#   4. checks that kube-system is never sent to jobgate (a denied fixture is admitted there);
#   5. self-signed: rotates the certificate with `jobgate certs --keep-previous-ca` and checks that
#      every pod reloads it (jobgate_tls_reloads_total) while admission keeps working, no restart;
#   6. scales jobgate to 0: Jobs are still created when only mutation would run (Ignore) and
#      refused with "failed calling webhook" by validation (Fail); then scales back.
set -euo pipefail
cd "$(dirname "$0")/../.."

CLUSTER=${CLUSTER:-jobgate-e2e}
IMAGE=${IMAGE:-ghcr.io/jobgate/jobgate:e2e}
OVERLAY=${OVERLAY:-self-signed}
CERT_MANAGER=${CERT_MANAGER:-v1.16.2}
CHECK_OUTAGE=${CHECK_OUTAGE:-1}
KEEP=${KEEP:-0}
# Any namespace: the e2e overlay sets it with `namespace:` and the deploy/namespace transformer,
# as docs/src/install.md tells a platform team to.
NS=${NS:-jobgate-system}
TEST_NS=jobgate-e2e
RECOVERY_NS=jobgate-e2e-recovery

for tool in docker kind kubectl jq cargo; do
  command -v "$tool" >/dev/null || { echo "kind.sh: $tool is required" >&2; exit 2; }
done
case "$OVERLAY" in self-signed | cert-manager) ;; *) echo "OVERLAY must be self-signed or cert-manager" >&2; exit 2 ;; esac

pass=0
fail=0
ok() { echo "  ok   $*"; pass=$((pass + 1)); }
bad() { echo "  FAIL $*"; fail=$((fail + 1)); }
step() { echo; echo "== $*"; }

work=$(mktemp -d)
cleanup() {
  rm -rf "$work"
  if [ "$KEEP" != 1 ]; then
    kubectl delete namespace "$TEST_NS" "$RECOVERY_NS" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

step "cluster $CLUSTER"
if ! kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  kind create cluster --name "$CLUSTER" --wait 120s
fi
kubectl config use-context "kind-$CLUSTER" >/dev/null

step "image $IMAGE"
docker build -t "$IMAGE" .
kind load docker-image "$IMAGE" --name "$CLUSTER"

step "install deploy/overlays/$OVERLAY"
# A copy of deploy/ so generated certificates and the e2e image never touch the work tree.
cp -R deploy "$work/deploy"
rm -rf "$work/deploy/overlays/self-signed/certs"
jobgate_certs() { cargo run --quiet --locked --bin jobgate -- certs --service jobgate --namespace "$NS" "$@"; }
if [ "$OVERLAY" = self-signed ]; then
  jobgate_certs --out "$work/deploy/overlays/self-signed/certs"
else
  kubectl apply -f "https://github.com/cert-manager/cert-manager/releases/download/$CERT_MANAGER/cert-manager.yaml"
  kubectl -n cert-manager wait --for=condition=Available deployment --all --timeout=180s
fi
mkdir -p "$work/e2e"
# The validating webhook judges as the cluster's own release does: tell it which one kind runs.
server_minor=$(kubectl version -o json | jq -r '.serverVersion.major + "." + (.serverVersion.minor | rtrimstr("+"))')
cat >"$work/e2e/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: $NS
resources:
  - ../deploy/overlays/$OVERLAY
transformers:
  - ../deploy/namespace
configMapGenerator:
  - name: jobgate-kubernetes
    behavior: replace
    literals:
      - JOBGATE_KUBERNETES_VERSION=$server_minor
images:
  - name: ghcr.io/jobgate/jobgate
    newName: ${IMAGE%:*}
    newTag: ${IMAGE##*:}
EOF
kubectl apply -k "$work/e2e"
if [ "$OVERLAY" = cert-manager ]; then
  kubectl -n "$NS" wait --for=condition=Ready certificate/jobgate-serving --timeout=120s
fi
kubectl -n "$NS" rollout status deployment/jobgate --timeout=180s

kubectl create namespace "$TEST_NS" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl create namespace "$RECOVERY_NS" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl label namespace "$RECOVERY_NS" jobgate.dev/failure-recovery=enabled --overwrite >/dev/null

# The object of a fixture's request, made creatable: server-set metadata and the Job selector and
# labels kube-apiserver generates (a client may not set them without manualSelector) removed.
creatable() {
  jq --arg ns "$2" '.request.object
    | del(.status, .metadata.uid, .metadata.resourceVersion, .metadata.generation,
          .metadata.creationTimestamp, .metadata.managedFields, .metadata.selfLink)
    | .metadata.namespace = $ns
    | if .kind == "Job" and (.spec.manualSelector // false) == false then
        del(.spec.selector)
        | .spec.template.metadata.labels |= (if . == null then null else
            del(.["controller-uid"], .["batch.kubernetes.io/controller-uid"],
                .["job-name"], .["batch.kubernetes.io/job-name"]) end)
      else . end' "$1"
}

# `kubectl create --dry-run=server` of a fixture's object in namespace $2; sets out, err, status.
dry_run_create() {
  local object
  object=$(creatable "$1" "$2")
  status=0
  out=$(kubectl create --dry-run=server -o json -f - <<<"$object" 2>"$work/stderr") || status=$?
  err=$(cat "$work/stderr")
}

# A JSON Pointer as a jq path array.
pointer_path='$p | ltrimstr("/") | split("/") | map(gsub("~1"; "/") | gsub("~0"; "~") | (tonumber? // .))'

# A validate fixture creating a Job that jobgate admits: the probe for "does the webhook answer".
probe_fixture() {
  local request
  for request in tests/fixtures/validate/*.request.json; do
    if jq -e '.request.operation == "CREATE" and .request.kind.kind == "Job"' "$request" >/dev/null &&
      jq -e '.response.allowed' "${request%.request.json}.response.json" >/dev/null; then
      echo "$request"
      return
    fi
  done
  echo "kind.sh: no validate fixture creates a Job that is allowed" >&2
  exit 1
}
probe=$(probe_fixture)

wait_for_webhook() {
  # The webhook answers once the Service has endpoints and kube-apiserver trusts the certificate.
  local deadline=$((SECONDS + 120))
  until dry_run_create "$probe" "$TEST_NS"; [ "$status" -eq 0 ] || ! grep -q 'failed calling webhook' <<<"$err"; do
    [ $SECONDS -lt $deadline ] || { echo "webhook not answering: $err" >&2; exit 1; }
    sleep 2
  done
}

step "fixtures through kube-apiserver"
wait_for_webhook
denied_fixture=
for request in tests/fixtures/mutate/*.request.json tests/fixtures/mutate-recovery/*.request.json tests/fixtures/validate/*.request.json; do
  [ -e "$request" ] || continue
  name=${request#tests/fixtures/}
  IFS='|' read -r group kind operation < <(jq -r '[.request.kind.group, .request.kind.kind, .request.operation] | join("|")' "$request")
  if [ "$group" != batch ] || [ "$operation" != CREATE ] || { [ "$kind" != Job ] && [ "$kind" != CronJob ]; }; then
    echo "  skip $name ($operation $group $kind: needs an existing object or is not a Job)"
    continue
  fi
  endpoint=$(basename "$(dirname "$request")")
  ns=$TEST_NS
  [ "$endpoint" = mutate-recovery ] && ns=$RECOVERY_NS
  response=${request%.request.json}.response.json
  allowed=$(jq -r '.response.allowed' "$response")
  dry_run_create "$request" "$ns"

  if [ "$allowed" = false ]; then
    if [ "$status" -ne 0 ] && grep -q 'admission webhook ".*jobgate.dev" denied the request' <<<"$err"; then
      ok "$name denied: $(head -1 <<<"$err" | cut -c1-160)"
      [ "$endpoint" = validate ] && [ -z "$denied_fixture" ] && denied_fixture=$request
    else
      bad "$name: expected a denial from jobgate, got exit $status: $err"
    fi
    continue
  fi
  if [ "$status" -ne 0 ]; then
    bad "$name: expected admission, got: $err"
    continue
  fi
  missing=0
  while IFS= read -r warning; do
    [ -n "$warning" ] || continue
    grep -qF "Warning: $warning" <<<"$err" || { bad "$name: warning not shown: $warning"; missing=1; }
  done < <(jq -r '.response.warnings // [] | .[]' "$response")
  # Every value the expected patch adds or replaces is in the admitted object.
  while IFS= read -r op; do
    [ -n "$op" ] || continue
    path=$(jq -r '.path' <<<"$op")
    want=$(jq -cS '.value' <<<"$op")
    got=$(jq -cS --arg p "$path" "getpath($pointer_path)" <<<"$out")
    [ "$got" = "$want" ] || { bad "$name: $path is $got, the fixture's patch sets $want"; missing=1; }
  done < <(jq -c '(.response.patch // []) | if type == "string" then @base64d | fromjson else . end | .[] | select(.op == "add" or .op == "replace")' "$response")
  [ "$missing" -eq 0 ] && ok "$name admitted as expected"
done

step "kube-system is never sent to jobgate"
if [ -n "$denied_fixture" ]; then
  dry_run_create "$denied_fixture" kube-system
  if [ "$status" -eq 0 ]; then ok "${denied_fixture#tests/fixtures/} admitted in kube-system"; else bad "kube-system: $err"; fi
else
  echo "  skip (no validate fixture expects a denial of a Job CREATE)"
fi

metric_on_pods() {
  # Sum of a metric line ($1, a prefix) over all jobgate pods, read through the API server proxy.
  local total=0 pod v
  for pod in $(kubectl -n "$NS" get pods -l app.kubernetes.io/name=jobgate -o name); do
    v=$(kubectl get --raw "/api/v1/namespaces/$NS/pods/${pod#pod/}:8080/proxy/metrics" | awk -v m="$1" 'index($0, m) == 1 { print $2 }')
    total=$((total + ${v:-0}))
  done
  echo "$total"
}

if [ "$OVERLAY" = self-signed ]; then
  step "certificate rotation without restart"
  restarts_before=$(kubectl -n "$NS" get pods -l app.kubernetes.io/name=jobgate -o jsonpath='{range .items[*]}{.status.containerStatuses[*].restartCount}{" "}{end}')
  pods=$(kubectl -n "$NS" get pods -l app.kubernetes.io/name=jobgate -o name | wc -l)
  jobgate_certs --keep-previous-ca --out "$work/deploy/overlays/self-signed/certs"
  kubectl apply -k "$work/e2e" >/dev/null
  deadline=$((SECONDS + 240))
  failures=0
  # kubelet refreshes mounted Secrets on its sync period (about a minute); admission must keep
  # working all along (the caBundle trusts the old and the new CA).
  while [ "$(metric_on_pods 'jobgate_tls_reloads_total{result="success"}')" -lt "$pods" ]; do
    [ $SECONDS -lt $deadline ] || { bad "not every pod reloaded its certificate in 240s"; break; }
    dry_run_create "$probe" "$TEST_NS"
    grep -q 'failed calling webhook' <<<"$err" && failures=$((failures + 1))
    sleep 3
  done
  [ "$failures" -eq 0 ] && ok "admission kept working during rotation" || bad "$failures webhook calls failed during rotation"
  [ "$(metric_on_pods 'jobgate_tls_reloads_total{result="failure"}')" -eq 0 ] && ok "no rejected certificate" || bad "a pod rejected the new certificate"
  restarts_after=$(kubectl -n "$NS" get pods -l app.kubernetes.io/name=jobgate -o jsonpath='{range .items[*]}{.status.containerStatuses[*].restartCount}{" "}{end}')
  [ "$restarts_before" = "$restarts_after" ] && ok "no container restarted" || bad "restarts: $restarts_before -> $restarts_after"
fi

if [ "$CHECK_OUTAGE" = 1 ]; then
  step "failure policies with jobgate down"
  kubectl -n "$NS" scale deployment/jobgate --replicas=0
  kubectl -n "$NS" wait --for=delete pod -l app.kubernetes.io/name=jobgate --timeout=120s || true
  dry_run_create "$probe" "$TEST_NS"
  if [ "$status" -ne 0 ] && grep -q 'failed calling webhook "validate.jobgate.dev"' <<<"$err"; then
    ok "validation (Fail) refuses Jobs while jobgate is down"
  else
    bad "expected validate.jobgate.dev to fail closed, got exit $status: $err"
  fi
  # Every Job request also goes to validation, so take the validating configuration out of the way
  # to see what mutation alone does, then put it back.
  kubectl get validatingwebhookconfiguration jobgate -o json >"$work/validating.json"
  kubectl delete validatingwebhookconfiguration jobgate >/dev/null
  dry_run_create "$probe" "$TEST_NS"
  if [ "$status" -eq 0 ]; then ok "mutation (Ignore) lets Jobs through while jobgate is down"; else bad "mutation blocked: $err"; fi
  jq 'del(.metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp, .metadata.generation, .metadata.managedFields)' "$work/validating.json" | kubectl create -f - >/dev/null
  kubectl -n "$NS" scale deployment/jobgate --replicas=3
  kubectl -n "$NS" rollout status deployment/jobgate --timeout=180s
  wait_for_webhook
  ok "jobgate back"
fi

echo
echo "kind.sh: $pass passed, $fail failed (cluster $CLUSTER kept; delete with: kind delete cluster --name $CLUSTER)"
[ "$fail" -eq 0 ]
