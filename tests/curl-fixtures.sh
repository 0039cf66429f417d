#!/usr/bin/env bash
# Sends every fixture in tests/fixtures/ to a running jobgate with curl and compares each answer
# with the expected response (the patch decoded from base64 and compared as JSON).
#
#   tests/curl-fixtures.sh [BASE_URL] [CA_FILE] [--http1.1|--http2]
#   defaults: https://localhost:8443 certs/dev/ca.crt --http2
#
# Needs curl, jq and base64. Exits 0 when every fixture matches, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."

base=${1:-https://localhost:8443}
ca=${2:-certs/dev/ca.crt}
http=${3:---http2}

for tool in curl jq base64; do
  command -v "$tool" >/dev/null || { echo "curl-fixtures: $tool is required" >&2; exit 2; }
done

decode='if .response.patch then .response.patch |= (@base64d | fromjson) else . end'
pass=0
fail=0
for request in tests/fixtures/*/*.request.json; do
  dir=$(basename "$(dirname "$request")")
  case "$dir" in
    mutate) path=/mutate ;;
    mutate-recovery) path=/mutate/recovery ;;
    validate) path=/validate ;;
    *) continue ;;
  esac
  expected=${request%.request.json}.response.json
  got=$(curl -sS "$http" --cacert "$ca" -H 'Content-Type: application/json' \
    --data-binary "@$request" "$base$path") || { echo "FAIL $request: curl failed"; fail=$((fail + 1)); continue; }
  if diff <(jq -S "$decode" <<<"$got") <(jq -S . "$expected") >/tmp/curl-fixtures.diff 2>&1; then
    pass=$((pass + 1))
  else
    echo "FAIL $request ($path)"
    sed 's/^/    /' /tmp/curl-fixtures.diff
    fail=$((fail + 1))
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
