#!/bin/sh
# tests/bench/preload.sh — what a process that never uses CUDA pays when
# libgpumem.so is preloaded node-wide (/etc/ld.so.preload, in a private
# mount namespace: tests/integ/with_preload.sh): /bin/true started N times
# with the library in /etc/ld.so.preload and N times with that file empty,
# wall time per start (best of 3 rounds), and, with valgrind, the
# instructions of one start (deterministic). Prints a table; asserts
# nothing. Exit 77 when the namespace cannot be made.
#
#   sh tests/bench/preload.sh [LIB]     (default: $BUILD/libgpumem.so)
#   N=2000 sh tests/bench/preload.sh    starts per round (default 500)
set -u
B=${BUILD:-build}
ABS=$(cd "$B" && pwd)
LIB=${1:-$ABS/libgpumem.so}
N=${N:-500}
W="$(cd "$(dirname "$0")/../integ" && pwd)/with_preload.sh"

# Nanoseconds per start of /bin/true, best of 3 rounds of N.
cat > "${TMPDIR:-/tmp}/gm-true.$$" <<'INNER'
n=$1; best=0
for r in 1 2 3; do
    a=$(date +%s%N); i=0
    while [ $i -lt "$n" ]; do /bin/true; i=$((i + 1)); done
    b=$(date +%s%N); d=$(( (b - a) / n ))
    if [ $best -eq 0 ] || [ $d -lt $best ]; then best=$d; fi
done
echo $best
INNER
trap 'rm -f "${TMPDIR:-/tmp}/gm-true.$$"' EXIT
with=$(sh "$W" "$LIB" sh "${TMPDIR:-/tmp}/gm-true.$$" "$N") || exit $?
without=$(sh "$W" - sh "${TMPDIR:-/tmp}/gm-true.$$" "$N") || exit $?
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }'; }
printf '%-34s %14s %14s %8s\n' "/bin/true start-up" "without" "with" "ratio"
printf '%-34s %11s ns %11s ns %8s\n' "wall time per start (best of 3)" "$without" "$with" "$(ratio "$with" "$without")"
if command -v valgrind >/dev/null 2>&1; then
    ir() { sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$1" | tail -n 1; }
    o=${TMPDIR:-/tmp}/gm-vg.$$
    sh "$W" "$LIB" valgrind --tool=callgrind --callgrind-out-file=/dev/null /bin/true 2> "$o.w"
    sh "$W" - valgrind --tool=callgrind --callgrind-out-file=/dev/null /bin/true 2> "$o.n"
    iw=$(ir "$o.w"); in=$(ir "$o.n"); rm -f "$o.w" "$o.n"
    printf '%-34s %14s %14s %8s\n' "instructions per start (callgrind)" "$in" "$iw" "$(ratio "$iw" "$in")"
fi
