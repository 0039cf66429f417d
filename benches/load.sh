#!/usr/bin/env bash
# Load test: jobgate and a JSON-reading ceiling server on the same stack (examples/ceiling.rs),
# loaded in one run with oha over HTTP/1.1 keep-alive and HTTP/2. Prints requests/s, p50/p99
# latency, the ratio jobgate/ceiling, and jobgate's peak RSS.
#
#   benches/load.sh                 # 3 alternated rounds of 10s per server and protocol, 16
#                                   # connections, HTTP/2: 16 connections x 8 streams, body: the
#                                   # ~4 KB ML Job review of benches/review.rs (ml-4k), at /validate
#   ROUNDS=5 DURATION=30s CONNECTIONS=32 STREAMS=16 BODY=path/to/review.json ENDPOINT=/mutate benches/load.sh
#
# Only loopback addresses are used. Each run is bounded by DURATION.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-16}
STREAMS=${STREAMS:-8}
ROUNDS=${ROUNDS:-3}
BODY=${BODY:-}
ENDPOINT=${ENDPOINT:-/validate}
JOBGATE_PORT=${JOBGATE_PORT:-18443}
CEILING_PORT=${CEILING_PORT:-18444}
ADMIN_PORT=${ADMIN_PORT:-18080}

command -v jq >/dev/null || { echo "load.sh: jq is required" >&2; exit 2; }
command -v oha >/dev/null || { echo "load.sh: installing oha (cargo install oha --locked)"; cargo install oha --locked; }
cargo build --profile dist --locked --bin jobgate --example ceiling

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

"$target/dist/jobgate" serve --addr "127.0.0.1:$JOBGATE_PORT" --admin-addr "127.0.0.1:$ADMIN_PORT" \
  --dev-certs-dir "$work/certs" --log-level warn >"$work/jobgate.out" 2>&1 &
jobgate_pid=$!
pids+=("$jobgate_pid")
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$ADMIN_PORT/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
"$target/dist/examples/ceiling" "127.0.0.1:$CEILING_PORT" "$work/certs/tls.crt" "$work/certs/tls.key" >"$work/ceiling.out" 2>&1 &
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

# ROUNDS alternated rounds per protocol (jobgate then the ceiling, then the ceiling then jobgate,
# ...), so that drift on a shared machine hits both; the ratio is the median of the rounds' ratios.
printf '%-8s %-5s %-9s %12s %10s %10s %8s\n' protocol round server "requests/s" "p50 ms" "p99 ms" success
declare -A ratios
failed_runs=0
for proto in http1.1 http2; do
  if [ "$proto" = http2 ]; then args=(--http2 -p "$STREAMS"); else args=(--http-version 1.1); fi
  ratios[$proto]=""
  for round in $(seq "$ROUNDS"); do
    if [ $((round % 2)) = 1 ]; then order=(jobgate ceiling); else order=(ceiling jobgate); fi
    declare -A r=()
    for server in "${order[@]}"; do
      if [ "$server" = jobgate ]; then port=$JOBGATE_PORT; else port=$CEILING_PORT; fi
      read -r rps p50 p99 ok < <(run "https://localhost:$port$ENDPOINT" "${args[@]}")
      r[$server]=$rps
      printf '%-8s %-5s %-9s %12.0f %10.3f %10.3f %8s\n' "$proto" "$round" "$server" "$rps" "$p50" "$p99" "$ok"
      awk -v ok="$ok" 'BEGIN { exit !(ok < 1) }' && failed_runs=$((failed_runs + 1))
    done
    ratios[$proto]+="$(awk -v j="${r[jobgate]}" -v c="${r[ceiling]}" 'BEGIN { printf "%.3f", j / c }') "
  done
done
for proto in http1.1 http2; do
  # shellcheck disable=SC2086
  median=$(printf '%s\n' ${ratios[$proto]} | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  echo "$proto: jobgate/ceiling = $median (median of rounds: ${ratios[$proto]% })"
done
if [ "$failed_runs" -gt 0 ]; then
  echo "load.sh: WARNING: $failed_runs run(s) had failed requests (success < 1): their requests/s is not comparable" >&2
fi
peak=$(awk '/VmHWM/ { print $2 }' "/proc/$jobgate_pid/status")
awk -v kb="$peak" 'BEGIN { printf "jobgate peak RSS (VmHWM): %.1f MiB\n", kb / 1024 }'
echo "body: $BODY ($(wc -c <"$BODY") bytes) at $ENDPOINT; $ROUNDS rounds of $DURATION per server; $CONNECTIONS connections; HTTP/2 $STREAMS streams each"
