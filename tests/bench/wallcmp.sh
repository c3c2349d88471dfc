#!/bin/sh
# tests/bench/wallcmp.sh — wall time of two or more builds of the shim,
# side by side: R interleaved rounds (default 21) of `allocloop --via gpa
# N 1048576` (N = PAIRS, default 50000), one thread pinned to the last CPU
# when taskset is there; per round the driver alone, then each library
# with all telemetry and with GPUMEM_TELEMETRY=0. Prints the minimum and
# the median of each, and telemetry minus limits-only (minimums). Asserts
# nothing. For a before/after figure: build the old commit in another
# tree and pass both libraries.
#
#   sh tests/bench/wallcmp.sh LIB [LIB ...]     (BUILD=build: allocloop, sim)
set -u
[ $# -ge 1 ] || { echo "usage: wallcmp.sh LIB [LIB ...]" >&2; exit 2; }
B=$(cd "${BUILD:-build}" && pwd)
export LD_LIBRARY_PATH="$B/sim" GPUMEM_SHM_PREFIX="gmwall$$"
P=$B/tests/progs/allocloop
R=${R:-21}
PAIRS=${PAIRS:-50000}
PIN=
command -v taskset >/dev/null 2>&1 &&
    PIN="taskset -c $(($(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1) - 1))"
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"; rm -f /dev/shm/gmwall$$.*' EXIT
one() { $PIN "$P" --via gpa "$PAIRS" 1048576 | sed 's/ ns.*//'; }
r=0
while [ $r -lt "$R" ]; do
    r=$((r + 1))
    one >>"$T/driver"
    n=0
    for lib in "$@"; do
        n=$((n + 1))
        GPUMEM_LIMIT=64G LD_PRELOAD="$lib" one >>"$T/tel$n"
        GPUMEM_LIMIT=64G GPUMEM_TELEMETRY=0 LD_PRELOAD="$lib" one >>"$T/lim$n"
    done
done
m=$(( (R + 1) / 2 ))
mn() { sort -n "$1" | head -n 1; }
md() { sort -n "$1" | sed -n "${m}p"; }
echo "ns per alloc+free pair of 1 MiB, $R interleaved rounds of $PAIRS pairs${PIN:+ ($PIN)}"
echo "driver alone: min $(mn "$T/driver") median $(md "$T/driver")"
printf '%-48s %22s %22s %10s\n' library "telemetry min/median" "limits min/median" "tel-lim"
n=0
for lib in "$@"; do
    n=$((n + 1))
    printf '%-48s %22s %22s %10s\n' "$lib" "$(mn "$T/tel$n") / $(md "$T/tel$n")" \
        "$(mn "$T/lim$n") / $(md "$T/lim$n")" \
        "$(echo "$(mn "$T/tel$n") - $(mn "$T/lim$n")" | bc 2>/dev/null || echo "?")"
done
