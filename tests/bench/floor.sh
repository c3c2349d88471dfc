#!/bin/sh
# tests/bench/floor.sh — what each part of a telemetry event costs, found by
# building the shim without it: instructions added per alloc+free pair of
# 1 MiB (callgrind, marginal between N1 and N2 pairs, via
# cuGetProcAddress; cuMemAlloc and cuMemAllocAsync pairs), for
#   limits only            the built shim, GPUMEM_TELEMETRY=0
#   lock and clocks        GM_TW_FIGURES=0 GM_TW_RECORD=0: the events take
#                          the writer lock, read the clocks, write nothing
#   + the record           GM_TW_FIGURES=0: and write their ring record
#   + the figures          the built shim (device block, fragmentation log)
# The two measurement builds (shim/telemetry/telwrite.h) go to
# BUILD/floor-lock and BUILD/floor-record; they keep no figures and are
# never installed. Needs valgrind and a built tree (make all). Prints a
# table; asserts nothing.
#
#   sh tests/bench/floor.sh          (BUILD=build)
set -u
B=${BUILD:-build}
command -v valgrind >/dev/null || { echo "floor.sh: valgrind not found" >&2; exit 77; }
ABS=$(cd "$B" && pwd)
MAKE=${MAKE:-make}
for v in lock record; do
    case $v in
        lock) flags="-DGM_TW_FIGURES=0 -DGM_TW_RECORD=0" ;;
        record) flags="-DGM_TW_FIGURES=0" ;;
    esac
    $MAKE -s BUILD="$B/floor-$v" EXTRA_CFLAGS="$flags" \
        "$B/floor-$v/libgpumem.so" >/dev/null ||
        { echo "floor.sh: building $B/floor-$v failed" >&2; exit 1; }
done
export LD_LIBRARY_PATH="$ABS/sim" GPUMEM_SHM_PREFIX="gmfloor$$"
trap 'rm -f /dev/shm/gmfloor$$.*' EXIT
P=$ABS/tests/progs/allocloop
N1=2000
N2=12000
count() { # api n [env...]
    api=$1; n=$2; shift 2
    env "$@" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        "$P" --via gpa --api "$api" "$n" 1048576 2>&1 >/dev/null |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p' | tail -n 1
}
marginal() { # api [env...]
    api=$1; shift
    a=$(count "$api" $N1 "$@"); b=$(count "$api" $N2 "$@")
    echo $(( (b - a) / (N2 - N1) ))
}
drv=$(marginal alloc X=1)
adrv=$(marginal async X=1)
row() { # label lib [env...]
    label=$1; lib=$2; shift 2
    m=$(marginal alloc GPUMEM_LIMIT=64G LD_PRELOAD="$lib" "$@")
    a=$(marginal async GPUMEM_LIMIT=64G LD_PRELOAD="$lib" "$@")
    printf '| %s | %d | %d |\n' "$label" $((m - drv)) $((a - adrv))
}
echo "instructions added per pair of 1 MiB via cuGetProcAddress (driver alone: $drv alloc, $adrv async)"
echo
echo "| shim | alloc pair | async pair |"
echo "|---|---|---|"
row "limits only (GPUMEM_TELEMETRY=0)" "$ABS/libgpumem.so" GPUMEM_TELEMETRY=0
row "lock and clocks (GM_TW_FIGURES=0 GM_TW_RECORD=0)" "$ABS/floor-lock/libgpumem.so"
row "+ the ring record (GM_TW_FIGURES=0)" "$ABS/floor-record/libgpumem.so"
row "+ the figures (all telemetry, as built)" "$ABS/libgpumem.so"
