#!/bin/sh
# tests/bench/run.sh — `make bench`: what the shim adds to a call, measured.
#
# 1. Instructions added per alloc+free pair of 1 MiB, for each lookup path
#    and API, by callgrind: the marginal count between a loop of N1 and one
#    of N2 pairs (start-up cancels), with the shim minus without it; with
#    all telemetry on (the default) and with GPUMEM_TELEMETRY=0.
#    Also with K other allocations live (0 / 1k / 10k / 100k), and for a
#    member of a group (GPUMEM_GROUP).
#    Then what the history adds to the telemetry writer: bench_hist minus
#    bench_histoff (the same event loop with the history's hot-path code
#    compiled out), callgrind marginal per alloc+free event pair. And
#    what each part of an event costs: tests/bench/floor.sh (the shim
#    built without the event's figures, and without its record too).
# 2. Nanoseconds per pair, native, same loops, median of 9 interleaved
#    rounds of driver, telemetry and limits-only runs (pinned to one CPU),
#    with the ratio of telemetry to limits-only; and by thread count
#    (1/2/4/8 threads at once, 5 rounds, not pinned).
# 3. The data-structure and telemetry benchmarks in build/tests/bench/.
# Prints tables; asserts nothing.
set -u
B=${BUILD:-build}
ABS=$(cd "$B" && pwd)
export LD_LIBRARY_PATH="$ABS/sim"
export GPUMEM_SHM_PREFIX="gmbench$$"
SHIM="$ABS/libgpumem.so"
N1=2000
N2=12000
SIZE=1048576
prog() { if [ "$1" = link ]; then echo "$ABS/tests/progs/direct_allocloop"; else echo "$ABS/tests/progs/allocloop"; fi; }

LIVE=0
instr() { # via api n preload(0|1) [extra env...]
    via=$1; api=$2; n=$3; pre=$4; shift 4
    out=$(mktemp)
    if [ "$pre" = 1 ]; then
        env "$@" LD_PRELOAD="$SHIM" valgrind --tool=callgrind \
            --callgrind-out-file=/dev/null \
            "$(prog "$via")" --via "$via" --api "$api" --live "$LIVE" "$n" "$SIZE" >/dev/null 2>"$out"
    else
        env "$@" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
            "$(prog "$via")" --via "$via" --api "$api" --live "$LIVE" "$n" "$SIZE" >/dev/null 2>"$out"
    fi
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out" | tail -n 1
    rm -f "$out"
}

marginal() { # via api preload [env...]
    via=$1; api=$2; pre=$3; shift 3
    a=$(instr "$via" "$api" $N1 "$pre" "$@"); b=$(instr "$via" "$api" $N2 "$pre" "$@")
    echo $(( (b - a) / (N2 - N1) ))
}

nsper() { # via api preload [env...]
    via=$1; api=$2; pre=$3; shift 3
    for _r in 1 2 3 4 5; do
        if [ "$pre" = 1 ]; then
            env "$@" LD_PRELOAD="$SHIM" "$(prog "$via")" --via "$via" --api "$api" 200000 "$SIZE"
        else
            env "$@" "$(prog "$via")" --via "$via" --api "$api" 200000 "$SIZE"
        fi
    done | sed 's/ ns.*//' | sort -n | sed -n 3p
}

# Driver alone, all telemetry, limits only, in R interleaved rounds (a
# round runs the three one after the other, so a slow spell of the
# machine touches all three): the median of each. One thread runs pinned
# to the last CPU when taskset is there (the scheduler's moves between
# cores are noise, not cost).
PIN=
command -v taskset >/dev/null 2>&1 &&
    PIN="taskset -c $(($(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1) - 1))"
ns3() { # rounds pin(0|1) program loop-args... -> "driver telemetry limits"
    rounds=$1; pin=; [ "$2" = 1 ] && pin=$PIN; exe=$3; shift 3
    : >"$ABS/.ns.d"; : >"$ABS/.ns.s"; : >"$ABS/.ns.o"
    _r=0
    while [ $_r -lt "$rounds" ]; do
        _r=$((_r + 1))
        $pin "$exe" "$@" | sed 's/ ns.*//' >>"$ABS/.ns.d"
        GPUMEM_LIMIT=64G LD_PRELOAD="$SHIM" $pin "$exe" "$@" | sed 's/ ns.*//' >>"$ABS/.ns.s"
        GPUMEM_LIMIT=64G GPUMEM_TELEMETRY=0 LD_PRELOAD="$SHIM" $pin "$exe" "$@" | sed 's/ ns.*//' >>"$ABS/.ns.o"
    done
    m=$(( (rounds + 1) / 2 ))
    echo "$(sort -n "$ABS/.ns.d" | sed -n ${m}p) $(sort -n "$ABS/.ns.s" | sed -n ${m}p) $(sort -n "$ABS/.ns.o" | sed -n ${m}p)"
    rm -f "$ABS/.ns.d" "$ABS/.ns.s" "$ABS/.ns.o"
}

if command -v valgrind >/dev/null 2>&1; then
    echo "Instructions per alloc+free pair of 1 MiB (callgrind, marginal over $N1..$N2 pairs)"
    echo "grow mode, 64 GiB limit; 'telemetry' = all of it (default), 'limits' = GPUMEM_TELEMETRY=0"
    printf '%-8s %-7s %10s %12s %8s %12s %8s\n' path api driver telemetry added limits added
    for via in link dlsym gpa; do
        for api in alloc async; do
            d=$(marginal "$via" "$api" 0)
            s=$(marginal "$via" "$api" 1 GPUMEM_LIMIT=64G)
            o=$(marginal "$via" "$api" 1 GPUMEM_LIMIT=64G GPUMEM_TELEMETRY=0)
            printf '%-8s %-7s %10s %12s %8s %12s %8s\n' "$via" "$api" "$d" "$s" $((s - d)) "$o" $((o - d))
        done
    done
    echo
    echo "With K other allocations live (cuGetProcAddress path, 1 MiB pairs, added instructions)"
    printf '%-8s %-7s %12s %12s\n' live api telemetry limits
    for LIVE in 0 1000 10000 100000; do
        for api in alloc async; do
            d=$(marginal gpa "$api" 0)
            s=$(marginal gpa "$api" 1 GPUMEM_LIMIT=64G)
            o=$(marginal gpa "$api" 1 GPUMEM_LIMIT=64G GPUMEM_TELEMETRY=0)
            printf '%-8s %-7s %12s %12s\n' "$LIVE" "$api" $((s - d)) $((o - d))
        done
    done
    LIVE=0
    echo
    echo "By size (cuGetProcAddress path): driver alone, shim (grow), shim (static arena)"
    printf '%-10s %12s %12s %12s\n' size driver grow static
    for SIZE in 256 65536 2097152 67108864; do
        d=$(marginal gpa alloc 0)
        g=$(marginal gpa alloc 1 GPUMEM_LIMIT=64G)
        s=$(marginal gpa alloc 1 GPUMEM_LIMIT=8G GPUMEM_MODE=static)
        printf '%-10s %12s %12s %12s\n' "$SIZE" "$d" "$g" "$s"
    done
    SIZE=1048576
    echo
    echo "A group member (cuGetProcAddress path, 1 MiB pairs, added instructions): GPUMEM_GROUP, a 60 GiB group limit, alone in its group"
    printf '%-7s %12s %12s\n' api telemetry limits
    for api in alloc async; do
        d=$(marginal gpa "$api" 0)
        s=$(marginal gpa "$api" 1 GPUMEM_LIMIT=64G GPUMEM_GROUP="gmbench$$" GPUMEM_GROUP_LIMIT=60G)
        o=$(marginal gpa "$api" 1 GPUMEM_LIMIT=64G GPUMEM_GROUP="gmbench$$" GPUMEM_GROUP_LIMIT=60G GPUMEM_TELEMETRY=0)
        printf '%-7s %12s %12s\n' "$api" $((s - d)) $((o - d))
    done
    echo
    hist_instr() { # bench pairs
        valgrind --tool=callgrind --callgrind-out-file=/dev/null \
            "$ABS/tests/bench/$1" --pairs "$2" 2>&1 >/dev/null |
            sed -n 's/.*Collected : \([0-9]*\).*/\1/p' | tail -n 1
    }
    H1=20000; H2=120000
    on=$(( ($(hist_instr bench_hist $H2) - $(hist_instr bench_hist $H1)) / (H2 - H1) ))
    off=$(( ($(hist_instr bench_histoff $H2) - $(hist_instr bench_histoff $H1)) / (H2 - H1) ))
    echo "History: instructions per alloc+free event pair in the telemetry writer (callgrind, marginal over $H1..$H2 pairs)"
    printf '%-16s %-16s %8s\n' "history on" "compiled out" added
    printf '%-16s %-16s %8s\n' "$on" "$off" $((on - off))
    echo
    echo "What an event's parts cost (tests/bench/floor.sh: the shim built without them)"
    BUILD="$B" sh "$(dirname "$0")/floor.sh"
    echo
else
    echo "valgrind not found: instruction counts skipped"
fi

echo "Nanoseconds per alloc+free pair of 1 MiB (native, median of 9 interleaved rounds of 200000 pairs${PIN:+, pinned: $PIN})"
printf '%-8s %-7s %10s %12s %8s %12s %8s %8s\n' path api driver telemetry added limits added tel/lim
for via in link dlsym gpa; do
    for api in alloc async; do
        set -- $(ns3 9 1 "$(prog "$via")" --via "$via" --api "$api" 200000 "$SIZE"); d=$1; s=$2; o=$3
        printf '%-8s %-7s %10s %12s %8s %12s %8s %8s\n' "$via" "$api" "$d" "$s" \
            "$(echo "$s - $d" | bc 2>/dev/null || echo "?")" "$o" \
            "$(echo "$o - $d" | bc 2>/dev/null || echo "?")" \
            "$(echo "scale=2; $s / $o" | bc 2>/dev/null || echo "?")"
    done
done
echo
echo "By threads, ns per pair of one thread (cuGetProcAddress path, 1 MiB, median of 5 interleaved rounds of 50000 pairs)"
printf '%-8s %10s %12s %12s %10s\n' threads driver telemetry limits tel/lim
for T in 1 2 4 8; do
    set -- $(ns3 5 0 "$(prog gpa)" --via gpa --threads "$T" 50000 "$SIZE"); d=$1; s=$2; o=$3
    printf '%-8s %10s %12s %12s %10s\n' "$T" "$d" "$s" "$o" \
        "$(echo "scale=2; $s / $o" | bc 2>/dev/null || echo "?")"
done
echo
echo "By size, ns per pair (cuGetProcAddress path)"
printf '%-10s %12s %12s %12s\n' size driver grow static
for SIZE in 256 65536 2097152 67108864; do
    d=$(nsper gpa alloc 0); g=$(nsper gpa alloc 1 GPUMEM_LIMIT=64G)
    s=$(nsper gpa alloc 1 GPUMEM_LIMIT=8G GPUMEM_MODE=static)
    printf '%-10s %12s %12s %12s\n' "$SIZE" "$d" "$g" "$s"
done
SIZE=1048576
echo
for b in "$ABS"/tests/bench/*; do
    [ -x "$b" ] || continue
    echo "== $(basename "$b")"
    "$b"
    echo
done
# Recording (GPUMEM_RECORD): instructions added per recorded alloc+free
# pair (two records), and the replay rate over the largest reference trace.
if command -v valgrind >/dev/null 2>&1; then
    RD=$(mktemp -d)
    g=$(marginal gpa alloc 1 GPUMEM_LIMIT=64G)
    r=$(marginal gpa alloc 1 GPUMEM_LIMIT=64G GPUMEM_RECORD="$RD")
    echo "Recording: instructions per alloc+free pair (callgrind, gpa path)"
    printf '%-12s %12s %12s %14s\n' "" shim recording "added/record"
    printf '%-12s %12s %12s %14s\n' 1MiB "$g" "$r" $(((r - g) / 2))
    rm -rf "$RD"
    echo
fi
TRD=${GM_TRACES:-$(cd "$(dirname "$0")/../.." && pwd)/../shared/reference/traces}
if [ -f "$TRD/jax_platform.trace" ]; then
    echo "Replay rate: gpumem replay of jax_platform.trace (1666 events), 5 runs"
    for i in 1 2 3 4 5; do
        "$ABS/gpumem" replay "$TRD/jax_platform.trace" --json |
            sed -n 's/.*"calls":\([0-9]*\).*"replay_ns":\([0-9]*\).*/\1 \2/p'
    done | awk '{ r = $1 / ($2 / 1e9); printf "  %d calls in %.2f ms: %.0f calls/s\n", $1, $2 / 1e6, r }'
    echo
fi
rm -f /dev/shm/"$GPUMEM_SHM_PREFIX".* 2>/dev/null
exit 0
