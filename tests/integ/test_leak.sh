#!/bin/sh
# tests/integ/test_leak.sh — the leak verdict and the forecast of `gpumem
# report` against gpumem-trainsim runs with known figures, under the shim
# on the simulated driver:
#   - leaks of 1.5, 3 and 5 MiB per step, steps found from the period of
#     the used curve and (when the shim exports gpumem_step) from
#     --mark-steps: verdict "grows", bytes_per_step within 5% of the leak;
#     the verdict line of the text report names the leak's size class;
#     the same leak under a 256 MiB evaluation buffer every 10 steps kept
#     over 3 step boundaries;
#   - the forecast: a run stopped half-way predicts (step now + steps
#     left) the step at which the full run is refused, within 10%;
#   - no verdict on a steady run, on a warm-up that grows for two thirds
#     of the run and then levels off, or on an evaluation buffer of
#     256 MiB kept over 3 of every 10 step boundaries.
# Every failure is listed, then the test exits 1. Own segment prefix;
# every segment under it is removed on every exit.
BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
PREFIX=gmlk$$
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-leak.XXXXXX") || exit 1
failures=0
cleanup() { rm -f /dev/shm/"$PREFIX".*; rm -rf "$T"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
export GPUMEM_SHM_PREFIX=$PREFIX
MiB=1048576

bad() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run NAME LIMIT TRAINSIM-ARGS...: a kept run; its pid in $T/NAME.pid, its
# stderr in $T/NAME.err.
run() {
    name=$1 limit=$2
    shift 2
    rm -f /dev/shm/"$PREFIX".*
    env LD_PRELOAD="$B/libgpumem.so" LD_LIBRARY_PATH="$B/sim" GPUMEM_KEEP=1 \
        GPUMEM_LIMIT="$limit" "$B/gpumem-trainsim" --quiet --step-time 200us "$@" \
        >/dev/null 2>"$T/$name.err"
    ls /dev/shm | sed -n "s/^$PREFIX\.\([0-9]*\)$/\1/p" | head -1 >"$T/$name.pid"
}

# field NAME KEY: KEY of the first device's "leak" object of NAME's report.
field() {
    "$B/gpumem" report --json "$(cat "$T/$1.pid")" >"$T/$1.json" 2>&1
    sed -n 's/.*"leak":{\([^}]*\)}.*/\1/p' "$T/$1.json" |
        sed -n "s/.*\"$2\":\(null\|\"[a-z]*\"\|[0-9.]*\).*/\1/p" | tr -d '"'
}

within() { # value want tolerance-fraction
    awk -v v="$1" -v w="$2" -v f="$3" 'BEGIN { d = v - w; if (d < 0) d = -d;
        exit !(v != "" && d <= f * w) }'
}

marks=0
nm -D "$B/libgpumem.so" 2>/dev/null | grep -q ' T gpumem_step$' && marks=1

# ---- leaks: the slope ------------------------------------------------------
for leak in 1572864 3145728 5242880; do
    for how in detected marked; do
        extra=""
        if [ $how = marked ]; then
            [ $marks = 1 ] || { echo "note: gpumem_step not exported; marked case skipped"; continue; }
            extra=--mark-steps
        fi
        name=leak$leak$how
        run $name 16G --steps 200 --leak $leak $extra
        v=$(field $name verdict); bps=$(field $name bytes_per_step)
        from=$(field $name steps_from)
        [ "$v" = grows ] || bad "$name: verdict '$v', expected grows ($(cat "$T/$name.json"))"
        [ "$from" = $how ] || bad "$name: steps_from '$from', expected $how"
        within "$bps" $leak 0.05 || bad "$name: bytes_per_step $bps, leak $leak"
        line=$("$B/gpumem" report "$(cat "$T/$name.pid")" | grep 'grows')
        cls=$(awk -v b=$leak 'BEGIN { if (b % 1048576 == 0) printf "%d MiB", b / 1048576;
                                      else printf "%d KiB", b / 1024 }')
        echo "$line" | grep -q "live allocations of $cls rose from" ||
            bad "$name: verdict line without the $cls evidence: $line"
    done
done

# A leak under periodic evaluation buffers kept over step boundaries: the
# step found is still one training step.
run leakspike 16G --steps 200 --leak 3M --eval-every 10 --eval-hold 3 --eval-size 256M
bps=$(field leakspike bytes_per_step)
within "$bps" 3145728 0.05 || bad "leakspike: bytes_per_step $bps, leak 3145728"

# ---- where it shows: ps --json, --every, the image --------------------------------
name=leak3145728detected
run $name 16G --steps 200 --leak 3M
"$B/gpumem" ps --json --all | grep -q '"leak":{"verdict":"grows","bytes_per_step":3145728,' ||
    bad "ps --json: no leak object with the verdict: $("$B/gpumem" ps --json --all)"
"$B/gpumem" report --every 50 "$(cat "$T/$name.pid")" >"$T/every" 2>&1
rows=$(awk '$1 ~ /^[0-9]+$/ && NF == 6 { printf "%s ", $1 }' "$T/every")
case "$rows" in
"50 100 150 200 ") ;;
*) bad "--every 50: rows at steps '$rows', expected 50 100 150 200: $(cat "$T/every")" ;;
esac
# The floors 50 steps apart differ by 50 leaks (within one activation).
awk -v want=$((50 * 3)) '$1 == 100 { a = $3 } $1 == 150 { b = $3 }
    END { sub(/M$/, "", a); sub(/M$/, "", b); d = b - a - want; if (d < 0) d = -d;
          exit !(a != "" && d <= 8) }' "$T/every" ||
    bad "--every 50: floors of steps 100 and 150 not 150 MiB apart: $(cat "$T/every")"
"$B/gpumem" report --json --every 50 "$(cat "$T/$name.pid")" | grep -q \
    '"every":\[{"step":50,"t_s":[0-9.]*,"floor_bytes":[0-9]*,"peak_bytes":[0-9]*,"live_allocs":[0-9]*,"frag_ppm":\([0-9]*\|null\)},{"step":100,' ||
    bad "--json --every 50: no every rows"
# A trace of the same run gives the same verdict.
"$B/gpumem" log --format jsonl "$(cat "$T/$name.pid")" >"$T/trace.jsonl"
a=$("$B/gpumem" report "$(cat "$T/$name.pid")" | sed -n 2p | sed 's/ (.*\/s)//; s/ (.*)$//')
b=$("$B/gpumem" report --from "$T/trace.jsonl" | sed -n 2p | sed 's/ (.*\/s)//; s/ (.*)$//')
[ -n "$a" ] && [ "$a" = "$b" ] || bad "trace verdict '$b', segment verdict '$a'"
for v in 0 x 1.5 ""; do
    "$B/gpumem" report --every "$v" "$(cat "$T/$name.pid")" >"$T/out" 2>&1
    rc=$?
    [ $rc = 2 ] && grep -q "every" "$T/out" ||
        bad "--every '$v': status $rc, $(cat "$T/out")"
done
if [ $marks = 1 ]; then
    # A ring of 1024 events over a 1.5 s run: the image starts from the
    # history, and shows the trend and the step ticks.
    rm -f /dev/shm/"$PREFIX".*
    env LD_PRELOAD="$B/libgpumem.so" LD_LIBRARY_PATH="$B/sim" GPUMEM_KEEP=1 \
        GPUMEM_RING_EVENTS=1024 GPUMEM_LIMIT=16G "$B/gpumem-trainsim" --quiet \
        --step-time 3ms --steps 450 --leak 3M --mark-steps >/dev/null 2>&1
    pid=$(ls /dev/shm | sed -n "s/^$PREFIX\.\([0-9]*\)$/\1/p" | head -1)
    "$B/gpumem" report --svg "$T/img.svg" "$pid" >/dev/null 2>&1 ||
        bad "--svg failed"
    grep -q 'class="hist-note"' "$T/img.svg" || bad "--svg: no history note"
    grep -q 'class="lost-note"' "$T/img.svg" && bad "--svg: history noted lost"
    grep -q 'class="trend"' "$T/img.svg" || bad "--svg: no trend line"
    grep -q 'class="step-tick"' "$T/img.svg" || bad "--svg: no step ticks"
fi

# ---- the forecast ------------------------------------------------------------
for leak in 3145728 5242880; do
    for how in detected marked; do
        extra=""
        if [ $how = marked ]; then
            [ $marks = 1 ] || continue
            extra=--mark-steps
        fi
        name=full$leak$how
        run $name 1G --steps 100000 --eval-every 0 --leak $leak $extra
        refused=$(sed -n 's/^trainsim: step \([0-9]*\): .*OUT_OF_MEMORY.*/\1/p' "$T/$name.err")
        [ -n "$refused" ] || { bad "$name: never refused: $(cat "$T/$name.err")"; continue; }
        half=$((refused / 2))
        name=half$leak$how
        run $name 1G --steps $half --eval-every 0 --leak $leak $extra
        now=$(field $name step_now); left=$(field $name steps)
        at=$(awk -v a="$now" -v b="$left" 'BEGIN { print a + b }')
        within "$at" "$refused" 0.10 ||
            bad "$name: forecast step $at ($now + $left), refused at step $refused"
    done
done

# ---- no verdict -------------------------------------------------------------
check_steady() { # name why
    v=$(field "$1" verdict)
    [ "$v" = steady ] || bad "$1 ($2): verdict '$v', expected steady ($(cat "$T/$1.json"))"
    "$B/gpumem" report "$(cat "$T/$1.pid")" | grep -q 'device 0: no growth over the last' ||
        bad "$1: no 'no growth' line in the text report"
}
run steady 16G --steps 200
check_steady steady "no leak"
run warmup 16G --steps 150 --warmup 4M --warmup-steps 100
check_steady warmup "warm-up over 100 of 150 steps"
run spike 16G --steps 200 --eval-every 10 --eval-hold 3 --eval-size 256M
check_steady spike "evaluation buffer over 3 of 10 boundaries"
# The same warm-up cut while it still grows is growth, as it should be.
run warming 16G --steps 90 --warmup 4M --warmup-steps 100
[ "$(field warming verdict)" = grows ] || bad "warming: a growing warm-up not seen as growth"

if [ $failures -gt 0 ]; then
    echo "$failures failure(s)"
    exit 1
fi
echo "leak verdicts and forecasts as expected"
exit 0
