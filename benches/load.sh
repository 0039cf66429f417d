#!/usr/bin/env bash
# Load test: jobgate and a JSON-reading ceiling server on the same stack (examples/ceiling.rs),
# loaded in one run with oha. Two phases, each in alternated rounds (jobgate first, then the
# ceiling first, ...) so that drift on a shared machine hits both:
# - at a steady RATE (5,000 req/s) over HTTP/1.1, the protocol kube-apiserver uses for webhooks:
#   p50, p99 and p99.9 latency, and jobgate's p99 over the ceiling's (the target: at most 1.5);
# - as fast as it goes, over HTTP/1.1 keep-alive and HTTP/2: requests/s, p50/p99 latency and the
#   throughput ratio jobgate/ceiling (for the record: a synthetic ceiling, not a target).
# Then jobgate's peak RSS.
#
#   benches/load.sh                 # 3 rounds of 10s per server and phase, 16 connections,
#                                   # HTTP/2: 16 connections x 8 streams, body: the ~4 KB ML Job
#                                   # review of benches/review.rs (ml-4k), at /validate
#   ROUNDS=5 DURATION=30s RATE=2000 CONNECTIONS=32 STREAMS=16 BODY=path/to/review.json ENDPOINT=/mutate benches/load.sh
#   BIN_DIR=/tmp/old benches/load.sh  # jobgate and ceiling binaries built elsewhere (an older tree)
#
# Only loopback addresses are used. Each run is bounded by DURATION.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-16}
STREAMS=${STREAMS:-8}
ROUNDS=${ROUNDS:-3}
RATE=${RATE:-5000}
BODY=${BODY:-}
ENDPOINT=${ENDPOINT:-/validate}
JOBGATE_PORT=${JOBGATE_PORT:-18443}
CEILING_PORT=${CEILING_PORT:-18444}
ADMIN_PORT=${ADMIN_PORT:-18080}

command -v jq >/dev/null || { echo "load.sh: jq is required" >&2; exit 2; }
command -v oha >/dev/null || { echo "load.sh: installing oha (cargo install oha --locked)"; cargo install oha --locked; }
if [ -n "${BIN_DIR:-}" ]; then
  jobgate_bin=$BIN_DIR/jobgate ceiling_bin=$BIN_DIR/ceiling
else
  cargo build --profile dist --locked --bin jobgate --example ceiling
  target=${CARGO_TARGET_DIR:-target}
  jobgate_bin=$target/dist/jobgate ceiling_bin=$target/dist/examples/ceiling
fi

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

"$jobgate_bin" serve --addr "127.0.0.1:$JOBGATE_PORT" --admin-addr "127.0.0.1:$ADMIN_PORT" \
  --dev-certs-dir "$work/certs" --log-level warn >"$work/jobgate.out" 2>&1 &
jobgate_pid=$!
pids+=("$jobgate_pid")
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$ADMIN_PORT/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
"$ceiling_bin" "127.0.0.1:$CEILING_PORT" "$work/certs/tls.crt" "$work/certs/tls.key" >"$work/ceiling.out" 2>&1 &
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

# One oha run; prints "rps p50_ms p99_ms p99.9_ms success_rate".
run() {
  local url=$1
  shift
  oha --no-tui --output-format json -z "$DURATION" -c "$CONNECTIONS" "$@" \
    --cacert "$work/certs/ca.crt" -m POST -T application/json -D "$BODY" "$url" |
    jq -r '[.summary.requestsPerSec] + ([.latencyPercentiles.p50, .latencyPercentiles.p99, .latencyPercentiles["p99.9"]] | map(. * 1000)) + [.summary.successRate] | @tsv'
}

port_of() { if [ "$1" = jobgate ]; then echo "$JOBGATE_PORT"; else echo "$CEILING_PORT"; fi; }
order_of() { if [ $(($1 % 2)) = 1 ]; then echo jobgate ceiling; else echo ceiling jobgate; fi; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
failed_runs=0

# Phase 1: a steady rate over HTTP/1.1. Latencies are oha's, per request sent (no latency
# correction): on a machine this small a stall of the load generator itself would otherwise be
# charged to whichever server it was loading.
printf '%-10s %-5s %-9s %10s %10s %10s %10s %8s\n' rate round server "requests/s" "p50 ms" "p99 ms" "p99.9 ms" success
p99_ratios=""
for round in $(seq "$ROUNDS"); do
  declare -A p=()
  for server in $(order_of "$round"); do
    read -r rps p50 p99 p999 ok < <(run "https://localhost:$(port_of "$server")$ENDPOINT" \
      --http-version 1.1 -q "$RATE")
    p[$server]=$p99
    printf '%-10s %-5s %-9s %10.0f %10.3f %10.3f %10.3f %8s\n' "$RATE/s" "$round" "$server" "$rps" "$p50" "$p99" "$p999" "$ok"
    awk -v ok="$ok" 'BEGIN { exit !(ok < 1) }' && failed_runs=$((failed_runs + 1))
  done
  p99_ratios+="$(awk -v j="${p[jobgate]}" -v c="${p[ceiling]}" 'BEGIN { printf "%.2f", j / c }') "
done
# shellcheck disable=SC2086
echo "at $RATE req/s over HTTP/1.1: jobgate p99 / ceiling p99 = $(printf '%s\n' $p99_ratios | median) (median of rounds: ${p99_ratios% }; target <= 1.5)"

# Phase 2: as fast as it goes, per protocol; the ratio is the median of the rounds' ratios.
printf '%-8s %-5s %-9s %12s %10s %10s %8s\n' protocol round server "requests/s" "p50 ms" "p99 ms" success
declare -A ratios
for proto in http1.1 http2; do
  if [ "$proto" = http2 ]; then args=(--http2 -p "$STREAMS"); else args=(--http-version 1.1); fi
  ratios[$proto]=""
  for round in $(seq "$ROUNDS"); do
    declare -A r=()
    for server in $(order_of "$round"); do
      read -r rps p50 p99 _ ok < <(run "https://localhost:$(port_of "$server")$ENDPOINT" "${args[@]}")
      r[$server]=$rps
      printf '%-8s %-5s %-9s %12.0f %10.3f %10.3f %8s\n' "$proto" "$round" "$server" "$rps" "$p50" "$p99" "$ok"
      awk -v ok="$ok" 'BEGIN { exit !(ok < 1) }' && failed_runs=$((failed_runs + 1))
    done
    ratios[$proto]+="$(awk -v j="${r[jobgate]}" -v c="${r[ceiling]}" 'BEGIN { printf "%.3f", j / c }') "
  done
done
for proto in http1.1 http2; do
  # shellcheck disable=SC2086
  median=$(printf '%s\n' ${ratios[$proto]} | median)
  echo "$proto: jobgate/ceiling = $median (median of rounds: ${ratios[$proto]% })"
done
if [ "$failed_runs" -gt 0 ]; then
  echo "load.sh: WARNING: $failed_runs run(s) had failed requests (success < 1): their requests/s is not comparable" >&2
fi
peak=$(awk '/VmHWM/ { print $2 }' "/proc/$jobgate_pid/status")
awk -v kb="$peak" 'BEGIN { printf "jobgate peak RSS (VmHWM): %.1f MiB\n", kb / 1024 }'
echo "body: $BODY ($(wc -c <"$BODY") bytes) at $ENDPOINT; $ROUNDS rounds of $DURATION per server and phase; $CONNECTIONS connections; HTTP/2 $STREAMS streams each"
