#!/bin/sh
# tools/demo.sh — what `make demo` runs: gpumem-trainsim under the gpumem
# shim, with a limit its peak fits under, ending with the shim's report.
#
# Uses the system driver when `nvidia-smi -L` lists a GPU, else the
# simulated driver in $BUILD/sim, and says which. Builds nothing.
# Environment: BUILD (default build), MODE (grow|static|staged, passed as
# GPUMEM_MODE), GROUP=1 (two trainsim processes at once sharing the group
# "demo" with a group limit of twice the per-process limit).
# Arguments are passed on to gpumem-trainsim (after the demo's own options;
# the limit is computed from both). Exit status: 0 when every trainsim run
# succeeded, else the first failing run's status (2 for options trainsim
# rejects, 1 when nothing could run).
set -u

BUILD=${BUILD:-build}
MODE=${MODE:-}
GROUP=${GROUP:-}
TRAINSIM=$BUILD/gpumem-trainsim
SHIM=$BUILD/libgpumem.so
SIM_DIR=$BUILD/sim
GIB=1073741824
MIB=1048576
WORKLOAD="--steps 200 --layers 12 --hidden 1024 --batch 32 --report-every 50"

say() { echo "demo: $*"; }
warn() { echo "demo: $*" >&2; }
die() { echo "demo: $*" >&2; exit 1; }

for f in "$TRAINSIM" "$SHIM"; do
    [ -e "$f" ] || die "$f is missing; run 'make BUILD=$BUILD' first"
done

# Real GPU or the simulated driver; sets CTX_BYTES, the context allowance.
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    say "GPU found ($(nvidia-smi -L 2>/dev/null | head -n 1)); using the system driver"
    CTX_BYTES=$((640 * MIB)) # measured 520-560 MiB on an H200 with CUDA 13
else
    [ -e "$SIM_DIR/libcuda.so.1" ] || die "no GPU found and $SIM_DIR/libcuda.so.1 is missing"
    say "no GPU found (nvidia-smi -L lists none); using the simulated driver" \
        "$SIM_DIR/libcuda.so.1 (${SIMCUDA_MEMORY:-80 GiB})"
    LD_LIBRARY_PATH=$SIM_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    SIMCUDA_LATENCY=${SIMCUDA_LATENCY:-20us}
    export LD_LIBRARY_PATH SIMCUDA_LATENCY
    CTX_BYTES=$((300 * MIB))
fi

# Limit: 1.5 x (planned peak + context), rounded up to whole GiB.
# shellcheck disable=SC2086 # WORKLOAD is a list of words
PEAK=$("$TRAINSIM" $WORKLOAD "$@" --print-peak)
rc=$?
if [ "$rc" -ne 0 ]; then
    echo "demo: gpumem-trainsim rejected its options" >&2
    exit "$rc"
fi
NEED=$(( (PEAK + CTX_BYTES) * 3 / 2 ))
LIMIT_GIB=$(( (NEED + GIB - 1) / GIB ))
LIMIT=${LIMIT_GIB}G
say "workload peak $((PEAK / MIB)) MiB + context $((CTX_BYTES / MIB)) MiB;" \
    "limit ${LIMIT} (1.5x, rounded up to GiB)"

if [ -n "$MODE" ]; then
    GPUMEM_MODE=$MODE
    export GPUMEM_MODE
    say "mode $MODE"
    if [ "$MODE" = staged ] && [ -z "${GPUMEM_WARMUP:-}" ]; then
        # Short enough that the limit freezes while the workload runs.
        GPUMEM_WARMUP=100ms
        export GPUMEM_WARMUP
        say "warm-up $GPUMEM_WARMUP, then the limit freezes at peak + 10%"
    fi
fi
if [ "$GROUP" = 1 ]; then
    GPUMEM_GROUP=demo
    GPUMEM_GROUP_LIMIT=$((LIMIT_GIB * 2))G
    export GPUMEM_GROUP GPUMEM_GROUP_LIMIT
    say "group demo, group limit $GPUMEM_GROUP_LIMIT, two processes"
fi

# One trainsim run under the shim, through `gpumem run` when it exists.
if [ -x "$BUILD/gpumem" ] && "$BUILD/gpumem" help run >/dev/null 2>&1; then
    VIA_RUN=1
    HOW="$BUILD/gpumem run --limit $LIMIT --report --"
else
    VIA_RUN=0
    HOW="LD_PRELOAD=$SHIM GPUMEM_LIMIT=$LIMIT GPUMEM_REPORT=1"
fi
run_one() {
    if [ "$VIA_RUN" = 1 ]; then
        # shellcheck disable=SC2086
        "$BUILD/gpumem" run --limit "$LIMIT" --report -- "$TRAINSIM" $WORKLOAD "$@"
    else
        # shellcheck disable=SC2086
        LD_PRELOAD=$SHIM GPUMEM_LIMIT=$LIMIT GPUMEM_REPORT=1 "$TRAINSIM" $WORKLOAD "$@"
    fi
}

# The second act: the same workload under a limit below its peak. The
# shim refuses the allocation that would pass it, the program gets a
# normal out-of-memory error (trainsim exits 3), and `gpumem ps` shows the
# refusal in the kept segment, which `gpumem gc` then removes. The demo's
# own segment prefix keeps the user's `gpumem ps` clean.
refusal_act() {
    small=$(( (CTX_BYTES + PEAK * 3 / 4) / MIB ))M
    prefix=gmdemo$$
    say "--- a limit below the peak: $small ---"
    say "running: GPUMEM_KEEP=1 $BUILD/gpumem run --limit $small --report -- $TRAINSIM $WORKLOAD --quiet"
    # shellcheck disable=SC2086
    GPUMEM_SHM_PREFIX=$prefix GPUMEM_KEEP=1 \
        "$BUILD/gpumem" run --limit "$small" --report -- "$TRAINSIM" $WORKLOAD "$@" --quiet
    rc2=$?
    if [ "$rc2" -ne 3 ]; then
        warn "expected the refused workload to exit 3 (an allocation failed), got $rc2"
        return 1
    fi
    say "refused as expected (trainsim exit 3); the process as gpumem ps --all sees it:"
    "$BUILD/gpumem" ps --all --prefix "$prefix" || return 1
    "$BUILD/gpumem" gc --prefix "$prefix" >/dev/null || return 1
    return 0
}

if [ "$GROUP" != 1 ]; then
    say "running: $HOW $TRAINSIM $WORKLOAD${*:+ $*}"
    run_one "$@"
    rc=$?
    [ "$rc" -eq 0 ] || { warn "gpumem-trainsim failed (exit $rc)"; exit "$rc"; }
    if [ "$VIA_RUN" = 1 ] && [ -z "$MODE" ]; then
        refusal_act "$@" || exit 1
    fi
    exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-demo.XXXXXX") || die "cannot create a temporary directory"
trap 'rm -rf "$tmp"' EXIT
say "running twice at once: $HOW $TRAINSIM $WORKLOAD${*:+ $*}"
run_one "$@" >"$tmp/a.log" 2>&1 &
pid_a=$!
run_one "$@" >"$tmp/b.log" 2>&1 &
pid_b=$!
wait "$pid_a"
rc_a=$?
wait "$pid_b"
rc_b=$?
for p in a b; do
    say "--- process $p ---"
    cat "$tmp/$p.log"
done
rc=0
[ "$rc_a" -eq 0 ] || { warn "process a failed (exit $rc_a)"; rc=$rc_a; }
[ "$rc_b" -eq 0 ] || { warn "process b failed (exit $rc_b)"; [ "$rc" -ne 0 ] || rc=$rc_b; }
exit "$rc"
