#!/bin/sh
# tests/integ/test_exporter_trend.sh — growth seen from the history: a
# live trainsim that leaks a known amount per step gets
# gpumem_growth_bytes_per_second near its rate and gpumem_seconds_to_limit
# equal to what is left of its limit over that rate, and its exit report
# the verdict line; a steady one beside it gets none of them. The verdict
# needs 12 one-second buckets of history, so the runs last about 16 s
# (docs/metrics.md, "The fit and the verdict").
B=${BUILD:-build}
B=$(cd "$B" && pwd)
PREFIX=${GPUMEM_SHM_PREFIX:-gmtest$$}ext
SHM=${GPUMEM_SHM_DIR:-/dev/shm}
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-exptrend.XXXXXX") || exit 1
PIDS=""
cleanup() {
    for p in $PIDS; do kill -9 "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    rm -f "$SHM/$PREFIX".* "$SHM/$PREFIX"_*
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
export GPUMEM_SHM_PREFIX=$PREFIX LD_LIBRARY_PATH=$B/sim
failures=0
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }

# 8 MiB per 50 ms step: 160 MiB/s nominal (sleeps make it a little less).
env LD_PRELOAD="$B/libgpumem.so" GPUMEM_LIMIT=16G GPUMEM_REPORT=1 \
    "$B/gpumem-trainsim" --quiet --steps 320 --step-time 50ms --leak 8M \
    >/dev/null 2>"$T/leak.err" &
L=$!
env LD_PRELOAD="$B/libgpumem.so" GPUMEM_LIMIT=16G GPUMEM_REPORT=1 \
    "$B/gpumem-trainsim" --quiet --steps 320 --step-time 50ms \
    >/dev/null 2>"$T/steady.err" &
S=$!
PIDS="$L $S"
sleep 14
"$B/gpumem" exporter --once >"$T/m.txt" 2>"$T/err" || bad "exporter: $(cat "$T/err")"
val() { # metric pid
    sed -n "s/^$1{.*pid=\"$2\".*} \([0-9.e+-]*\)$/\1/p" "$T/m.txt" | head -n 1
}
g=$(val gpumem_growth_bytes_per_second "$L")
s=$(val gpumem_seconds_to_limit "$L")
u=$(val gpumem_used_bytes "$L")
[ -n "$g" ] || bad "no growth for the leaking process: $(grep -c gpumem_growth "$T/m.txt") series"
[ -z "$(val gpumem_growth_bytes_per_second "$S")" ] || bad "growth exported for the steady process"
[ -z "$(val gpumem_seconds_to_limit "$S")" ] || bad "a forecast for the steady process"
if [ -n "$g" ]; then
    # 160 MiB/s at most; at least half of it on a loaded machine.
    awk -v g="$g" 'BEGIN { exit !(g > 80 * 1048576 && g < 168 * 1048576) }' ||
        bad "growth $g B/s, not near 160 MiB/s"
    # seconds to limit ~ (limit - used) / growth (the fitted floor and the
    # step's excursion differ from used by a few steps of growth)
    awk -v s="$s" -v u="$u" -v g="$g" 'BEGIN {
        w = (16 * 1073741824 - u) / g; exit !(s > 0.8 * w && s < 1.05 * w) }' ||
        bad "seconds to limit $s, want about (16G - $u) / $g"
fi
wait "$L" "$S"
PIDS=""
grep -q "^gpumem: device 0: grows " "$T/leak.err" ||
    bad "no verdict line in the leaking run's exit report: $(cat "$T/leak.err")"
grep -q "grows" "$T/steady.err" && bad "a verdict in the steady run's report: $(cat "$T/steady.err")"
if command -v promtool >/dev/null 2>&1; then
    promtool check metrics <"$T/m.txt" >"$T/p" 2>&1 || bad "promtool: $(cat "$T/p")"
fi
[ "$failures" -eq 0 ] && echo "ok: growth $g B/s, $s s to the limit" 
exit $((failures > 0))
