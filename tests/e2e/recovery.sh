#!/usr/bin/env bash
# End-to-end check of `jobgate reconcile` on a kind cluster (not run by CI: needs docker + kind).
#
# What it proves, with a real apiserver, node lifecycle controller and Job controller:
#   1. a Job pod annotated kueue.x-k8s.io/safe-to-forcefully-terminate=true, stuck terminating on a
#      node whose kubelet is gone, is set to Failed with the KueueFailureRecovery condition and a
#      Warning event after deletionTimestamp + --forceful-termination-grace-period (--no-delete run);
#   2. after a restart without --no-delete (restart safety), the pod is deleted with grace period 0
#      and the Job (podReplacementPolicy: Failed) creates a replacement;
#   3. a pod of the same shape WITHOUT the annotation is left alone (still terminating).
#
# Usage:   tests/e2e/recovery.sh            (creates kind cluster "jobgate-e2e" if missing)
# Env:     CLUSTER=name  KEEP=1 (keep the cluster)  JOBGATE=path/to/jobgate (default: cargo build)
# Needs:   docker, kind, kubectl, cargo; ~5 minutes (the node controller needs ~50s to taint).
set -euo pipefail

CLUSTER=${CLUSTER:-jobgate-e2e}
CTX="kind-${CLUSTER}"
NS=jobgate-e2e
WORKER="${CLUSTER}-worker"
ADMIN=127.0.0.1:18081
KEY=kueue.x-k8s.io/safe-to-forcefully-terminate
LOG=$(mktemp -t jobgate-reconcile.XXXX.log)
RECONCILER_PID=""

k() { kubectl --context "$CTX" "$@"; }
say() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; echo "--- reconciler log ($LOG):" >&2; tail -50 "$LOG" >&2; exit 1; }

# wait_for DESCRIPTION SECONDS COMMAND...: retry COMMAND every 2 s until it succeeds.
wait_for() {
  local what=$1 secs=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "timed out after ${secs}s waiting for: $what"
    sleep 2
  done
  echo "ok: $what"
}

cleanup() {
  [[ -n "$RECONCILER_PID" ]] && kill "$RECONCILER_PID" 2>/dev/null || true
  docker exec "$WORKER" systemctl start kubelet 2>/dev/null || true
  if [[ "${KEEP:-0}" != 1 ]]; then kind delete cluster --name "$CLUSTER" || true; fi
}
trap cleanup EXIT

start_reconciler() {
  "$JOBGATE" reconcile --context "$CTX" --lease-namespace "$NS" \
    --forceful-termination-grace-period 10s --admin-addr "$ADMIN" "$@" >>"$LOG" 2>&1 &
  RECONCILER_PID=$!
  wait_for "reconciler /readyz" 60 curl -fsS "http://$ADMIN/readyz"
}

stop_reconciler() {
  kill "$RECONCILER_PID"; wait "$RECONCILER_PID" 2>/dev/null || true; RECONCILER_PID=""
}

say "cluster $CLUSTER"
if ! kind get clusters | grep -qx "$CLUSTER"; then
  kind create cluster --name "$CLUSTER" --config - <<'EOF'
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
  - role: control-plane
  - role: worker
EOF
fi
k create namespace "$NS" --dry-run=client -o yaml | k apply -f -

if [[ -z "${JOBGATE:-}" ]]; then
  say "build jobgate"
  cargo build --locked --bin jobgate
  JOBGATE="${CARGO_TARGET_DIR:-target}/debug/jobgate"
fi

say "two Jobs pinned to $WORKER: one opted in, one not"
job() { # name annotation-value-or-empty
  local annotations="{}"
  [[ -n "$2" ]] && annotations="{\"$KEY\": \"$2\"}"
  k -n "$NS" apply -f - <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: $1}
spec:
  podReplacementPolicy: Failed
  backoffLimit: 3
  template:
    metadata: {annotations: $annotations}
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 5
      nodeSelector: {kubernetes.io/hostname: $WORKER}
      # Evict 5 s after the node turns unreachable instead of the default 300 s.
      tolerations:
        - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 5}
        - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 5}
      containers:
        - {name: main, image: busybox:1.36, command: [sleep, "3600"]}
EOF
}
job opted-in true
job not-opted-in ""
wait_for "pods running" 120 k -n "$NS" wait --for=condition=Ready pod -l 'batch.kubernetes.io/job-name in (opted-in,not-opted-in)' --timeout=5s
OPTED=$(k -n "$NS" get pod -l batch.kubernetes.io/job-name=opted-in -o jsonpath='{.items[0].metadata.name}')
OTHER=$(k -n "$NS" get pod -l batch.kubernetes.io/job-name=not-opted-in -o jsonpath='{.items[0].metadata.name}')

say "reconciler, --no-delete"
start_reconciler --no-delete

say "stop the kubelet on $WORKER: the node turns unreachable, the pods get evicted and hang"
docker exec "$WORKER" systemctl stop kubelet
has_unreachable_taint() { k get node "$WORKER" -o jsonpath='{.spec.taints[*].key}' | grep -q node.kubernetes.io/unreachable; }
wait_for "unreachable taint on $WORKER" 180 has_unreachable_taint
terminating() { [[ -n "$(k -n "$NS" get pod "$1" -o jsonpath='{.metadata.deletionTimestamp}')" ]]; }
wait_for "$OPTED terminating" 120 terminating "$OPTED"
wait_for "$OTHER terminating" 120 terminating "$OTHER"

say "after deletionTimestamp + 10s: Failed with the recovery condition and a Warning event"
recovered() {
  [[ "$(k -n "$NS" get pod "$OPTED" -o jsonpath='{.status.phase}')" == Failed ]] &&
  k -n "$NS" get pod "$OPTED" -o jsonpath='{.status.conditions[?(@.type=="KueueFailureRecovery")].reason}' | grep -qx KueueForcefullyTerminated
}
wait_for "$OPTED recovered" 90 recovered
k -n "$NS" get pod "$OPTED" -o jsonpath='{.status.conditions[?(@.type=="KueueFailureRecovery")].message}{"\n"}'
k -n "$NS" get pod "$OPTED" -o jsonpath='{.status.conditions[?(@.type=="KueueFailureRecovery")].message}' |
  grep -q "Pod forcefully terminated after 15s grace period due to unreachable node \`$WORKER\` (triggered by \`$KEY\` annotation)" ||
  fail "unexpected condition message"
# events.k8s.io/v1 events read back through core/v1 (reportingController -> reportingComponent).
event() { k -n "$NS" get events --field-selector "involvedObject.name=$OPTED,reason=KueueForcefullyTerminated,type=Warning" -o jsonpath='{.items[0].reportingComponent}' | grep -qx jobgate.dev/reconciler; }
wait_for "Warning event from jobgate.dev/reconciler" 30 event
k -n "$NS" get pod "$OPTED" >/dev/null || fail "--no-delete deleted the pod"
curl -fsS "http://$ADMIN/metrics" | grep -E '^jobgate_recovery_(pods_terminated_total|pending_pods|leader)'

say "restart without --no-delete: the recorded pod is deleted (restart safety), the Job replaces it"
stop_reconciler
start_reconciler
gone() { ! k -n "$NS" get pod "$OPTED"; }
wait_for "$OPTED deleted" 60 gone
replacement() { k -n "$NS" get pods -l batch.kubernetes.io/job-name=opted-in -o name | grep -v "pod/$OPTED$" | grep -q .; }
wait_for "replacement pod created by the Job controller" 60 replacement

say "safety: the pod without the annotation is untouched"
sleep 15
terminating "$OTHER" || fail "$OTHER is no longer terminating"
[[ "$(k -n "$NS" get pod "$OTHER" -o jsonpath='{.status.phase}')" != Failed ]] || fail "$OTHER was set to Failed"
[[ -z "$(k -n "$NS" get pod "$OTHER" -o jsonpath='{.status.conditions[?(@.type=="KueueFailureRecovery")].type}')" ]] ||
  fail "$OTHER got the recovery condition"
echo "ok: $OTHER still terminating, not Failed"

say "PASS"
