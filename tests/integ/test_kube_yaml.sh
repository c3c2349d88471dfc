#!/bin/sh
# tests/integ/test_kube_yaml.sh — the Kubernetes manifests of
# docs/kubernetes/ parse: yamllint (Debian's package) in strict mode,
# default rules with lines up to 100 characters; each file holds at least
# one document with apiVersion and kind.
# Exit 0 pass, 1 fail, 77 skip (no yamllint).
set -u
fail() { echo "FAIL: $*"; exit 1; }
command -v yamllint >/dev/null 2>&1 || { echo "skip: yamllint is not installed (apt-get install yamllint)"; exit 77; }
set -- docs/kubernetes/*.yaml
[ -f "$1" ] || fail "no manifests in docs/kubernetes/"
out=$(yamllint -s -f parsable -d '{extends: default, rules: {line-length: {max: 100}}}' "$@" 2>&1) ||
    fail "yamllint: $out"
for f in "$@"; do
    grep -q '^apiVersion: ' "$f" || fail "$f has no apiVersion"
    grep -q '^kind: ' "$f" || fail "$f has no kind"
done
# The check can fail: a broken document is refused.
t=$(mktemp "${TMPDIR:-/tmp}/gm-yaml.XXXXXX") || exit 1
trap 'rm -f "$t"' EXIT
printf -- '---\nkind: Pod\n  spec: [\n' > "$t"
yamllint -s -d default "$t" >/dev/null 2>&1 && fail "yamllint accepted a broken document"
echo "ok: $# manifests parse"
