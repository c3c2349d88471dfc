#!/bin/sh
# tests/integ/test_kube_vars.sh — the Kubernetes manifests and pages use
# only documented variables: every GPUMEM_* and CUDA_DEVICE_* /
# CUDA_DISABLE_* name in docs/kubernetes/*.yaml, docs/kubernetes.md and
# docs/cluster.md is documented in docs/env.md (as a heading or in
# backquotes), except names that belong to work documented elsewhere,
# listed below, which are checked once docs/env.md has them.
# Exit 0 pass, 1 fail.
set -u
fail() { echo "FAIL: $*"; exit 1; }
ENV=docs/env.md
# Documented by the exporter and job-identity work; checked when present.
LATER="GPUMEM_SHM_DIR"
names=$(cat docs/kubernetes/*.yaml docs/kubernetes.md docs/cluster.md |
        grep -oE '(GPUMEM|CUDA_DEVICE|CUDA_DISABLE)_[A-Z0-9_]*[A-Z0-9]' |
        sed 's/_[0-9][0-9]*$/_<N>/' | sort -u)
[ -n "$names" ] || fail "no variable names found"
n=0
for v in $names; do
    case " $LATER " in
        *" $v "*) grep -qF "$v" "$ENV" || { echo "note: $v is not in $ENV yet"; continue; } ;;
    esac
    grep -qE "^## $v\$|\`$v[=\`]" "$ENV" || fail "$v is used but not documented in $ENV"
    n=$((n + 1))
done
# The check can fail: an undocumented name is caught.
grep -qE "^## GPUMEM_NO_SUCH_VAR\$|\`GPUMEM_NO_SUCH_VAR[=\`]" "$ENV" && fail "self-check"
echo "ok: $n variable names, each documented in $ENV"
