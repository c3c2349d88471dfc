#!/bin/sh
# tests/integ/test_kube_vars.sh — the Kubernetes manifests and pages use
# only documented variables: every GPUMEM_* and CUDA_DEVICE_* /
# CUDA_DISABLE_* name in docs/kubernetes/*.yaml, docs/kubernetes.md and
# docs/cluster.md is documented in docs/env.md (as a heading or in
# backquotes).
# Exit 0 pass, 1 fail.
set -u
fail() { echo "FAIL: $*"; exit 1; }
ENV=docs/env.md
documented() { grep -qE "^## $1\$|\`$1[=\`]" "$ENV"; }
names=$(cat docs/kubernetes/*.yaml docs/kubernetes.md docs/cluster.md |
        grep -oE '(GPUMEM|CUDA_DEVICE|CUDA_DISABLE)_[A-Z0-9_]*[A-Z0-9]' |
        sed 's/_[0-9][0-9]*$/_<N>/' | sort -u)
[ -n "$names" ] || fail "no variable names found"
n=0
for v in $names; do
    documented "$v" || fail "$v is used but not documented in $ENV"
    n=$((n + 1))
done
# The check can fail: a name that is not documented is caught (and one
# that is, is found).
documented GPUMEM_NO_SUCH_VAR && fail "self-check: an unknown name passed"
documented GPUMEM_LIMIT || fail "self-check: GPUMEM_LIMIT not found"
echo "ok: $n variable names, each documented in $ENV"
