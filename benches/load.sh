#!/usr/bin/env bash
# Load test: jobgate and a fixed-response ceiling server on the same stack (examples/ceiling.rs),
# loaded in one run with oha over HTTP/1.1 keep-alive and HTTP/2. Prints requests/s, p50/p99
# latency, the ratio jobgate/ceiling, and jobgate's peak RSS.
#
#   benches/load.sh                 # 10s per run, 16 connections, HTTP/2: 16 connections x 8 streams,
#                                   # body: the ~4 KB ML Job review of benches/review.rs (ml-4k)
#   DURATION=30s CONNECTIONS=32 STREAMS=16 BODY=path/to/review.json ENDPOINT=/mutate benches/load.sh
#
# Only loopback addresses are used. Each run is bounded by DURATION.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-16}
STREAMS=${STREAMS:-8}
BODY=${BODY:-}
ENDPOINT=${ENDPOINT:-/validate}
JOBGATE_PORT=${JOBGATE_PORT:-18443}
CEILING_PORT=${CEILING_PORT:-18444}
ADMIN_PORT=${ADMIN_PORT:-18080}

command -v jq >/dev/null || { echo "load.sh: jq is required" >&2; exit 2; }
command -v oha >/dev/null || { echo "load.sh: installing oha (cargo install oha --locked)"; cargo install oha --locked; }
cargo build --release --locked --bin jobgate --example ceiling

target=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Default body: the criterion bench's "ml-4k" review, compact as kube-apiserver sends it: the
# job-allowed fixture's Indexed training Job with managedFields and kubectl's
# last-applied-configuration (4,273 bytes).
if [ -z "$BODY" ]; then
  BODY="$work/ml-4k.request.json"
  jq -c '.request.object as $o
    | .request.object.metadata.annotations = {"kubectl.kubernetes.io/last-applied-configuration": ($o | del(.metadata.managedFields) | tojson)}' \
    tests/fixtures/validate/job-allowed.request.json | tr -d '\n' >"$BODY"
fi

"$target/release/jobgate" serve --addr "127.0.0.1:$JOBGATE_PORT" --admin-addr "127.0.0.1:$ADMIN_PORT" \
  --dev-certs-dir "$work/certs" --log-level warn >"$work/jobgate.out" 2>&1 &
jobgate_pid=$!
pids+=("$jobgate_pid")
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$ADMIN_PORT/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
"$target/release/examples/ceiling" "127.0.0.1:$CEILING_PORT" "$work/certs/tls.crt" "$work/certs/tls.key" >"$work/ceiling.out" 2>&1 &
pids+=("$!")
sleep 0.5

# Load only what really is a review: the body must get an AdmissionReview answer with its uid.
answer=$(curl -s --cacert "$work/certs/ca.crt" -H 'Content-Type: application/json' --data-binary @"$BODY" \
  "https://localhost:$JOBGATE_PORT$ENDPOINT")
want_uid=$(jq -r .request.uid "$BODY")
if [ "$(jq -r '.response.uid' <<<"$answer" 2>/dev/null)" != "$want_uid" ]; then
  echo "load.sh: $ENDPOINT did not answer the body with a review: $answer" >&2
  exit 1
fi
echo "jobgate answers: $(jq -c '.response | {allowed, patched: (.patch != null), warnings: ((.warnings // []) | length)}' <<<"$answer")"

# One oha run; prints "rps p50_ms p99_ms success_rate".
run() {
  local url=$1
  shift
  oha --no-tui --output-format json -z "$DURATION" -c "$CONNECTIONS" "$@" \
    --cacert "$work/certs/ca.crt" -m POST -T application/json -D "$BODY" "$url" |
    jq -r '[.summary.requestsPerSec, (.latencyPercentiles.p50 * 1000), (.latencyPercentiles.p99 * 1000), .summary.successRate] | @tsv'
}

printf '%-8s %-9s %12s %10s %10s %8s\n' protocol server "requests/s" "p50 ms" "p99 ms" success
declare -A rps
for proto in http1.1 http2; do
  if [ "$proto" = http2 ]; then args=(--http2 -p "$STREAMS"); else args=(--http-version 1.1); fi
  for server in jobgate ceiling; do
    if [ "$server" = jobgate ]; then port=$JOBGATE_PORT; else port=$CEILING_PORT; fi
    read -r r p50 p99 ok < <(run "https://localhost:$port$ENDPOINT" "${args[@]}")
    rps[$proto-$server]=$r
    printf '%-8s %-9s %12.0f %10.3f %10.3f %8s\n' "$proto" "$server" "$r" "$p50" "$p99" "$ok"
  done
done
for proto in http1.1 http2; do
  awk -v j="${rps[$proto-jobgate]}" -v c="${rps[$proto-ceiling]}" -v p="$proto" \
    'BEGIN { printf "%s: jobgate/ceiling = %.2f\n", p, j / c }'
done
peak=$(awk '/VmHWM/ { print $2 }' "/proc/$jobgate_pid/status")
awk -v kb="$peak" 'BEGIN { printf "jobgate peak RSS (VmHWM): %.1f MiB\n", kb / 1024 }'
echo "body: $BODY ($(wc -c <"$BODY") bytes) at $ENDPOINT; $DURATION per run; $CONNECTIONS connections; HTTP/2 $STREAMS streams each"
