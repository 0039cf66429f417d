#!/usr/bin/env bash
# Regenerates src/schema/known_fields.rs: which fields of a Job's and CronJob's types each
# Kubernetes release has, read from the real k8s.io/api Go types of that release (main.go), one
# build per release from the Go module proxy. Needs Go; a pre-release that asks for a newer Go
# than the one installed gets its toolchain from the proxy (below).
#
#   tests/apifields/generate.sh            # then review and commit the diff
#
# When a release is added: add it below (the newest served tag of its k8s.io/api) and to
# `KubernetesVersion` in src/job/version.rs.
set -euo pipefail
# A release that asks for a newer Go than the machine's gets this toolchain from the module proxy
# (the machine's go.env says GOTOOLCHAIN=local).
toolchain=${GOTOOLCHAIN_FOR_NEWER:-go1.27.3}
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/../../src/schema/known_fields.rs"
releases=(
  "1.33=v0.33.13"
  "1.34=v0.34.4"
  "1.35=v0.35.4"
  "1.36=v0.36.3"
  "1.37=v0.37.2"
  "1.38=v0.38.0-beta.0"
)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dumps=()
for r in "${releases[@]}"; do
  minor=${r%%=*} version=${r#*=}
  mod="$work/$minor"
  mkdir -p "$mod"
  cp "$here/main.go" "$here/roots.go" "$mod/"
  (cd "$mod" &&
    printf 'module apifields\n\ngo 1.24\n' >go.mod &&
    # v7.0.1 (what k8s.io/apimachinery v0.38.0-beta.0 asks for) is not served; v7.0.0 stands in
    # (this program reads struct fields, not managed fields). Ignored where v7 is not needed.
    printf 'replace sigs.k8s.io/structured-merge-diff/v7 => sigs.k8s.io/structured-merge-diff/v7 v7.0.0\n' >>go.mod &&
    GOFLAGS=-mod=mod GOTOOLCHAIN=$toolchain go get "k8s.io/api@$version" >/dev/null 2>&1 &&
    GOFLAGS=-mod=mod GOTOOLCHAIN=$toolchain go run . >"$work/$minor.txt")
  echo "apifields: $minor from k8s.io/api $version: $(wc -l <"$work/$minor.txt") fields" >&2
  dumps+=("$minor=$version=$work/$minor.txt")
done
(cd "$work/${releases[0]%%=*}" && GOFLAGS=-mod=mod go run . combine "${dumps[@]}") >"$out.tmp"
mv "$out.tmp" "$out"
echo "apifields: wrote $out" >&2
