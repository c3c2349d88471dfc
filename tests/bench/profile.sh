#!/bin/sh
# tests/bench/profile.sh — where the instructions the shim adds to an
# alloc+free pair go: callgrind's per-function marginal count (loops of
# 2000 and 12000 pairs of 1 MiB, so start-up cancels), with the shim minus
# without it, largest first. The figures behind the breakdown in
# docs/benchmarks.md. Needs valgrind and a built tree (make all).
#
#   sh tests/bench/profile.sh [alloc|async] [link|dlsym|gpa] [env ...]
#   BUILD=build (default); extra arguments are set for the shim's run,
#   e.g. GPUMEM_TELEMETRY=0.
set -eu
api=${1:-alloc}
via=${2:-gpa}
[ $# -ge 2 ] && shift 2 || shift $#
B=$(cd "${BUILD:-build}" && pwd)
command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 77; }
prog=$B/tests/progs/allocloop
[ "$via" = link ] && prog=$B/tests/progs/direct_allocloop
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /dev/shm/gmprof$$.* 2>/dev/null' EXIT
export LD_LIBRARY_PATH="$B/sim" GPUMEM_SHM_PREFIX=gmprof$$

# Self cost per function of one run, "file:function count" sorted by name.
counts() { # out n [env...]
    out=$1; n=$2; shift 2
    env "$@" valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" \
        "$prog" --via "$via" --api "$api" "$n" 1048576 >/dev/null 2>&1
    callgrind_annotate --auto=no --threshold=100 "$tmp/cg" 2>/dev/null |
        grep -E '^ *[0-9,]+ \(' | sed 's/([^)]*%)//' |
        awk '{gsub(",", "", $1); print $2, $1}' | sed "s#$PWD/##" |
        sort > "$tmp/$out"
}
counts d1 2000 X=1
counts d2 12000 X=1
counts s1 2000 GPUMEM_LIMIT=64G LD_PRELOAD="$B/libgpumem.so" "$@"
counts s2 12000 GPUMEM_LIMIT=64G LD_PRELOAD="$B/libgpumem.so" "$@"
join "$tmp/d1" "$tmp/d2" | awk '{ printf "%s %.1f\n", $1, ($3 - $2) / 10000 }' > "$tmp/d"
join "$tmp/s1" "$tmp/s2" | awk '{ printf "%s %.1f\n", $1, ($3 - $2) / 10000 }' > "$tmp/s"
echo "instructions added per $api pair via $via (function: shim run minus driver run)"
join -a2 -e0 -o 0,1.2,2.2 "$tmp/d" "$tmp/s" |
    awk '{ x = $3 - $2; if (x >= 1 || x <= -1) printf "%8.1f  %s\n", x, $1 }' |
    sort -rn
