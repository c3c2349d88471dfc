#!/bin/sh
# tests/integ/test_record_replay.sh — gpumem record, replay and fit:
#   - each reference trace (../shared/reference/traces, or $GM_TRACES)
#     replayed with no limit: peak minus context and the allocation count
#     equal what the trace itself says (computed here with awk);
#   - replayed at 60% of its peak (plus context): the refusals, in count
#     and position, are those of the same calls issued directly under the
#     shim (tests/progs/direct_trace, its own parser and pointer table),
#     and those of the grow-mode rule applied here (a call is refused when
#     used + size passes the limit; a refused allocation's free is skipped);
#   - under on_oom=wait each refusal is a wait of its timeout, timed;
#   - a trainsim recording replays to the figures of the run's own exit
#     report (peak, allocs, frees, refused, live) in grow, static and
#     staged modes;
#   - FILE '-' (standard input, redirected or piped) replays and sweeps as
#     the file does, leaves nothing in TMPDIR, and a bad text line read
#     from it is named;
#   - a sweep's smallest limit with no refusal (grow: the peak; static:
#     searched) has none, and a byte (grow) or a MiB (static) below has;
#     under on_oom=spill (warn) it is the smallest with no refusal and no
#     spill (no call let past it): neither at the answer, one or the
#     other a MiB below, the table's spills column and the line say so;
#     a recording with stream-ordered pools (trainsim --api async), whose
#     pools a refusal's reclaim trims, is searched below its peak in grow
#     mode too: none at the answer, some a MiB below, and the program run
#     under the shim agrees at both;
#   - memory the driver freed with its context (apicheck ctx-frees) is
#     recorded as frees the program did not call: the replay, in one
#     context, ends with nothing live and as many frees as allocations;
#   - a recording on two devices replays each call on its device under a
#     limit per device (peak and sweep answer one device's, not the sum);
#   - a VMM handle released while mapped, or retained, keeps its memory
#     until its last unmap or release: the replay refuses where the run did;
#   - a 3-thread trainsim record holds every allocation and free trainsim
#     counted; a forking program's record holds both processes whole;
#   - --together replays a parent and its forked child at once, so in one
#     group the child meets the memory the parent holds (refused), which
#     one after the other it does not; --pace and --together count from
#     the first event (a text trace of absolute times takes microseconds);
#   - a process that executes another image records two sections of one
#     pid (the first not closed), and each is replayed as itself;
#   - SIGTERM to gpumem record ends CMD, and its records are still joined;
#   - a recorded process CMD left running is waited for (said once) and
#     recorded whole; --wait-timeout, SIGTERM and SIGINT end the wait,
#     the records so far kept and the process named as still running
#     (not as crashed); a --wait-timeout without a unit is refused;
#   - a process killed before it closed its recording keeps its records,
#     and record says so;
#   - a file size limit makes records lost: the file says how many;
#   - a full disk (a tmpfs of its own, root only): with no block left the
#     process is said lost whole, with two its lost records are counted
#     in the file and replay says the recording is incomplete;
#   - fit on trainsim --batch returns the largest batch of trainsim's own
#     memory model (--print-peak + context) within ceil(log2(HI-LO))+4
#     runs, answer+1 is refused, and an impossible limit says no value fits;
#   - fit on a command of two processes answers what the first alone
#     does, by its peak (headroom) and by its refusal (exit 0 from the
#     second); gpumem run of two processes keeps both reports;
#   - where memory is not affine in the batch (--api async, mixed, vmm:
#     peaks in steps) fit still proves its answer within the budget (it
#     runs, answer+1 is refused), and a --max-runs that ends the search
#     first says the answer is not proved.
# Exit 0 pass, 1 fail.
BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || exit 1
SRC=$(cd "$(dirname "$0")/../.." && pwd)
TR=${GM_TRACES:-$SRC/../shared/reference/traces}
export LD_LIBRARY_PATH="$B/sim"
export GPUMEM_SHM_PREFIX=${GPUMEM_SHM_PREFIX:-gmrr$$}
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-rr.XXXXXX") || exit 1
trap 'rm -rf "$T"; rm -f /dev/shm/"$GPUMEM_SHM_PREFIX".*' EXIT INT TERM
G="$B/gpumem"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# The first "KEY":N of the input (the process's or device's own figure;
# an OOM snapshot later in the line has keys of the same names).
num() { grep -o "\"$1\": *[0-9]*" | head -n 1 | sed 's/.*: *//'; }

# ---- reference traces --------------------------------------------------
# Without the reference traces (a clone alone), a trace made here in
# their format (README of the traces: pid t_ns op size ptr rc dt_ns)
# takes their place: cuMemAlloc_v2 calls of 2..64 MiB freed in another
# order (the calls of torch_default.trace), so the checks below always run.
REF=yes
if ! ls "$TR"/*.trace >/dev/null 2>&1; then
    REF=
    TR=$T/traces
    mkdir -p "$TR"
    awk 'BEGIN { x = 7; t = 0
        for (i = 0; i < 400; i++) {
            x = (x * 1103515245 + 12345) % 2147483648; t += 1000 + x % 50000
            k = x % 10
            if (n > 0 && k < 4) {               # free a live one
                j = int(x / 16) % n
                printf "1 %d free 0 0x%x 0 0\n", t, addr[j]
                addr[j] = addr[n - 1]; n--
                continue
            }
            size = (2 + x % 63) * 1048576
            a = 65536 + i * 4096               # an identifier, not a span
            printf "1 %d alloc %d 0x%x 0 0\n", t, size, a
            addr[n] = a; n++
        } }' >"$TR/synthetic.trace"
fi
for f in "$TR"/*.trace; do
    n=$(basename "$f")
    # true peak and successful allocations, from the trace
    set -- $(awk '$3=="alloc"||$3=="create"||$3=="managed"||$3=="aalloc" {
                 if ($6 == 0) { sz[$5] = $4; live += $4; n++; if (live > pk) pk = live } next }
             ($3=="free"||$3=="release"||$3=="afree") && $6 == 0 && ($5 in sz) {
                 live -= sz[$5]; delete sz[$5] }
             END { printf "%.0f %d\n", pk, n }' "$f")
    tpeak=$1; tallocs=$2
    out=$("$G" replay "$f" --json) || { bad "$n: replay failed"; continue; }
    peak=$(echo "$out" | num peak_bytes); ctx=$(echo "$out" | num context_bytes)
    allocs=$(echo "$out" | num allocs)
    # no limit: null, as in gpumem ps, never 0 (the process and each device)
    [ "$(echo "$out" | grep -o '"limit_bytes":[^,}]*' | sort -u)" = '"limit_bytes":null' ] ||
        bad "$n: limit_bytes of a replay without a limit is not null: $(echo "$out" | grep -o '"limit_bytes":[^,}]*' | sort -u | tr '\n' ' ')"
    [ "$((peak - ctx))" = "$tpeak" ] || bad "$n: replayed peak $peak - context $ctx != trace peak $tpeak"
    [ "$allocs" = "$tallocs" ] || bad "$n: $allocs allocations replayed, trace has $tallocs"
    # at 60% of the peak: the grow rule applied to the same calls
    lim=$(awk -v p="$tpeak" -v c="$ctx" 'BEGIN { printf "%.0f", c + p * 0.6 }')
    want=$(awk -v L="$lim" -v c="$ctx" '
        { i++ }
        $6 != 0 && $6 != 2 { next }
        $3=="alloc"||$3=="create"||$3=="managed"||$3=="aalloc" {
            if (c + live + $4 > L) { s = s (s == "" ? "" : ",") i; next }
            sz[$5] = $4; live += $4; next }
        ($3=="free"||$3=="release"||$3=="afree") && ($5 in sz) { live -= sz[$5]; delete sz[$5] }
        END { print s }' "$f")
    got=$("$G" replay "$f" --limit "$lim" --json | sed -n 's/.*"refusal_steps":\[\([0-9,]*\)\].*/\1/p')
    [ -n "$want" ] || bad "$n: 60% of the peak refuses nothing (test too weak)"
    [ "$got" = "$want" ] || bad "$n at $lim: refusals at steps [$got], the rule says [$want]"
    # the same calls issued directly (tests/progs/direct_trace) under the shim
    dev=$(echo "$out" | num device_bytes)
    direct=$(SIMCUDA_MEMORY=$dev GPUMEM_LIMIT=$lim GPUMEM_LOG_LEVEL=quiet \
             LD_PRELOAD="$B/libgpumem.so" "$B/tests/progs/direct_trace" "$f" | paste -sd, -)
    [ "$got" = "$direct" ] || bad "$n at $lim: replay refused at [$got], the calls run directly at [$direct]"
done
if [ -n "$REF" ]; then
# waits: under on_oom=wait:10ms each refusal waited its 10 ms first
out=$("$G" replay "$TR/torch_default.trace" --limit 1800M --on-oom wait:10ms --json)
w=$(echo "$out" | num waits); r=$(echo "$out" | num refusals); wn=$(echo "$out" | num wait_ns)
[ "${r:-0}" -gt 0 ] && [ "$w" = "$r" ] && [ "$wn" -ge $((w * 10000000)) ] ||
    bad "wait: $w waits, $r refusals, $wn ns waited"
else
    echo "note: no reference traces at ${GM_TRACES:-$SRC/../shared/reference/traces}: a trace made here replayed instead"
fi

# the simulated device is sized by what the recording held at once, not
# by all it ever allocated: 60 pairs of 1 GiB keep the default 80 GiB
awk 'BEGIN { for (i = 0; i < 60; i++) {
    printf "1 %d alloc 1073741824 0x%x 0 0\n", 2 * i, 65536 + i
    printf "1 %d free 0 0x%x 0 0\n", 2 * i + 1, 65536 + i } }' >"$T/pairs.trace"
d=$("$G" replay "$T/pairs.trace" --json | num device_bytes)
[ "$d" = 85899345920 ] || bad "60 pairs of 1 GiB: device of $d bytes (want 80 GiB)"

# ---- trainsim: recording replays to the run's own figures --------------
TS="$B/gpumem-trainsim --steps 6 --eval-every 3 --quiet"
for m in "grow" "static" "staged --warmup 1ms"; do
    set -- $m; mode=$1; shift
    rm -f "$T/rep.json" # each process appends its report
    GPUMEM_REPORT=json:$T/rep.json "$G" record -o "$T/ts.gmr" --limit 1G --mode $mode "$@" \
        -- $TS >/dev/null 2>&1
    for k in peak_bytes allocs frees refused live_bytes; do
        a=$(num $k < "$T/rep.json")
        b=$("$G" replay "$T/ts.gmr" --limit 1G --mode $mode "$@" --json | num $k)
        [ -n "$a" ] && [ "$a" = "$b" ] || bad "trainsim $mode: $k: run $a, replay $b"
    done
done
# the replayer's own figures are read where its segment is: GPUMEM_SHM_DIR
mkdir -m 700 "$T/shm"
a=$(GPUMEM_SHM_DIR=$T/shm "$G" replay "$T/ts.gmr" --limit 1G --json | num peak_bytes)
b=$("$G" replay "$T/ts.gmr" --limit 1G --json | num peak_bytes)
[ -n "$a" ] && [ "$a" = "$b" ] || bad "replay under GPUMEM_SHM_DIR: peak '$a', in /dev/shm '$b'"
# a refused run replays to the same refusal
rm -f "$T/rep.json"
GPUMEM_REPORT=json:$T/rep.json "$G" record -o "$T/ts.gmr" --limit 420M -- $TS 2>/dev/null
a=$(num refused < "$T/rep.json")
b=$("$G" replay "$T/ts.gmr" --limit 420M --json | num refusals)
[ "$a" = 1 ] && [ "$b" = 1 ] || bad "trainsim refused at 420M: run $a refusals, replay $b"

# FILE '-': the standard input, redirected or piped, replays as the file
# does (each replay of a sweep too), and its copy is left nowhere
mkdir -m 700 "$T/tmpd"
for k in peak_bytes refusals allocs live_bytes; do
    a=$("$G" replay "$T/ts.gmr" --limit 420M --json | num $k)
    b=$(TMPDIR=$T/tmpd "$G" replay - --limit 420M --json <"$T/ts.gmr" | num $k)
    c=$(cat "$T/ts.gmr" | TMPDIR=$T/tmpd "$G" replay - --limit 420M --json | num $k)
    [ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" = "$c" ] ||
        bad "replay -: $k: file '$a', redirected '$b', piped '$c'"
done
# A pid past 32 bits is refused (it wrapped onto pid 1's process)
printf '1 0 alloc 4096 0x1000 0 0\n1 5 free 0 0x1000 0 0\n' >"$T/pid1.txt"
"$G" replay "$T/pid1.txt" --pid 4294967297 >"$T/pidw.txt" 2>&1
[ $? = 2 ] && grep -q -- "--pid takes a process id (1 to 2147483647), not 4294967297" "$T/pidw.txt" ||
    bad "replay --pid 4294967297: $(cat "$T/pidw.txt")"
"$G" replay "$T/pid1.txt" --pid 1 >"$T/pid1.out" 2>&1 && grep -q "^pid 1: 2 events" "$T/pid1.out" ||
    bad "replay --pid 1: $(cat "$T/pid1.out")"
# A sweep from 0 is refused: a limit of 0 is none.
"$G" replay "$T/ts.gmr" --sweep 0:1G --points 2 >"$T/sw0.txt" 2>&1
[ $? = 2 ] && grep -q "LO above 0" "$T/sw0.txt" ||
    bad "replay --sweep 0:1G was not refused: $(cat "$T/sw0.txt")"
a=$("$G" replay "$T/ts.gmr" --sweep 300M:1G --points 2 --json | num smallest_without_refusal_bytes)
b=$(cat "$T/ts.gmr" | TMPDIR=$T/tmpd "$G" replay - --sweep 300M:1G --points 2 --json |
    num smallest_without_refusal_bytes)
[ -n "$a" ] && [ "$a" = "$b" ] || bad "replay - --sweep: file '$a', piped '$b'"
[ -z "$(ls -A "$T/tmpd")" ] || bad "replay -: left in TMPDIR: $(ls -A "$T/tmpd")"
printf '1 0 alloc -5 0x1000 0 0\n' | "$G" replay - >/dev/null 2>"$T/neg.err" &&
    bad "replay -: a text trace with a size of -5 is accepted"
grep -q "standard input: line 1: size '-5'" "$T/neg.err" ||
    bad "replay -: a size of -5: $(cat "$T/neg.err")"

# memory freed with its context: recorded frees, replayed
SIMCUDA_CONTEXT=200M "$G" record -o "$T/cx.gmr" --limit 1G -- \
    "$B/tests/progs/apicheck" --via gpa ctx-frees >"$T/cx.out" 2>&1 ||
    bad "apicheck ctx-frees under record: $(cat "$T/cx.out")"
"$G" replay "$T/cx.gmr" --limit 4G --json >"$T/cx.json"
a=$(num allocs <"$T/cx.json"); f=$(num frees <"$T/cx.json")
l=$(num live_allocs <"$T/cx.json")
[ "$a" = 4 ] && [ "$f" = 4 ] && [ "$l" = 0 ] ||
    bad "context-end frees replayed: allocs '$a' frees '$f' live '$l' (want 4 4 0)"

# sweeps: the smallest limit with no refusal has none, and below it there are
for mode in grow static; do
    best=$("$G" replay "$T/ts.gmr" --mode $mode --sweep 300M:1G --points 3 --json |
           num smallest_without_refusal_bytes)
    [ -n "$best" ] || { bad "sweep $mode: no smallest limit"; continue; }
    r0=$("$G" replay "$T/ts.gmr" --mode $mode --limit "$best" --json | num refusals)
    [ "$mode" = grow ] && below=$((best - 1)) || below=$((best - 1048576))
    r1=$("$G" replay "$T/ts.gmr" --mode $mode --limit "$below" --json | num refusals)
    [ "$r0" = 0 ] && [ "${r1:-0}" -gt 0 ] ||
        bad "sweep $mode: $r0 refusals at its answer $best, $r1 at $below"
done

# under on_oom=spill a spill is no refusal, yet a limit that spills is
# not the answer: the smallest limit serves every call within it (static:
# searched), a MiB below does not, the table shows each limit's spills and
# the line says what was searched
"$G" replay "$T/ts.gmr" --mode static --on-oom spill --sweep 300M:1G --points 2 \
    --json >"$T/sp.json"
best=$(num smallest_without_refusal_bytes <"$T/sp.json")
if [ -z "$best" ]; then
    bad "sweep static spill: no smallest limit ($(cat "$T/sp.json"))"
else
    "$G" replay "$T/ts.gmr" --mode static --on-oom spill --limit "$best" --json >"$T/sp0.json"
    "$G" replay "$T/ts.gmr" --mode static --on-oom spill --limit $((best - 1048576)) \
        --json >"$T/sp1.json"
    s0=$(num spills <"$T/sp0.json"); r0=$(num refusals <"$T/sp0.json")
    s1=$(num spills <"$T/sp1.json"); r1=$(num refusals <"$T/sp1.json")
    [ "$s0" = 0 ] && [ "$r0" = 0 ] && [ "$((${s1:-0} + ${r1:-0}))" -gt 0 ] ||
        bad "sweep static spill: $s0 spills and $r0 refusals at its answer $best, $s1 and $r1 a MiB below"
fi
grep -q '"criterion":"no refusal and no spill"' "$T/sp.json" ||
    bad "sweep spill: the JSON does not say what was searched: $(cat "$T/sp.json")"
"$G" replay "$T/ts.gmr" --on-oom spill --sweep 300M:1G --points 2 >"$T/sp.txt"
awk '$1 == "limit" { ok = $3 == "spills" } $1 == "300.0M" { ok = ok && $3 > 0 && $4 == 0 }
     END { exit !ok }' "$T/sp.txt" &&
    grep -q '^  smallest limit with no refusal and no spill: ' "$T/sp.txt" ||
    bad "sweep spill: the table or the answer does not show the spills: $(cat "$T/sp.txt")"

# grow mode with pools: a refusal's reclaim trims them, so the smallest
# limit lies below the unlimited peak and is searched
AS="$B/gpumem-trainsim --quiet --steps 8 --eval-every 3 --api async"
"$G" record -o "$T/as.gmr" -- $AS >/dev/null 2>&1
"$G" replay "$T/as.gmr" --sweep 400M:2G --points 3 --json >"$T/as.json"
best=$(num smallest_without_refusal_bytes <"$T/as.json")
peak=$("$G" replay "$T/as.gmr" --json | num peak_bytes)
if [ -z "$best" ]; then
    bad "sweep grow async: no smallest limit"
else
    below=$((best - 1048576))
    r0=$("$G" replay "$T/as.gmr" --limit "$best" --json | num refusals)
    r1=$("$G" replay "$T/as.gmr" --limit "$below" --json | num refusals)
    [ "$r0" = 0 ] && [ "${r1:-0}" -gt 0 ] && [ "$best" -lt "$peak" ] ||
        bad "sweep grow async: $r0 refusals at its answer $best, $r1 at $below (peak $peak)"
    "$G" run --limit "$best" -- $AS >/dev/null 2>&1 ||
        bad "sweep grow async: the program is refused at the answer $best"
    "$G" run --limit "$below" -- $AS >/dev/null 2>&1 &&
        bad "sweep grow async: the program runs a MiB below the answer $best"
fi
# ... and under on_oom=warn, which lets past the limit what would be
# refused, the search is for no call let past it either
"$G" replay "$T/as.gmr" --on-oom warn --sweep 400M:2G --points 2 --json >"$T/wn.json"
best=$(num smallest_without_refusal_bytes <"$T/wn.json")
o=$(num over_limit <"$T/wn.json")
grep -q '"criterion":"no refusal and no call let past it"' "$T/wn.json" && [ "${o:-0}" -gt 0 ] ||
    bad "sweep warn: $o calls let past 400M, $(cat "$T/wn.json")"
if [ -n "$best" ]; then
    "$G" replay "$T/as.gmr" --on-oom warn --limit "$best" --json >"$T/wn0.json"
    "$G" replay "$T/as.gmr" --on-oom warn --limit $((best - 1048576)) --json >"$T/wn1.json"
    o0=$(num over_limit <"$T/wn0.json"); r0=$(num refusals <"$T/wn0.json")
    o1=$(num over_limit <"$T/wn1.json"); r1=$(num refusals <"$T/wn1.json")
    [ "$o0" = 0 ] && [ "$r0" = 0 ] && [ "$((${o1:-0} + ${r1:-0}))" -gt 0 ] ||
        bad "sweep grow async warn: $o0 past the limit and $r0 refused at its answer $best, $o1 and $r1 a MiB below"
fi
# without pools the peak is the answer, in 2 replays
n=$("$G" replay "$T/ts.gmr" --sweep 300M:1G --points 3 --json | num search_replays)
[ "$n" = 2 ] || bad "sweep grow without pools: $n search replays (want 2)"

# ---- VMM: create, map, unmap, release, by every lookup path -----------
for via in link dlsym gpa; do
    prog=$B/tests/progs/apicheck
    [ "$via" = link ] && prog=$B/tests/progs/direct_apicheck
    "$G" record -o "$T/vmm.gmr" --limit 2G -- "$prog" --via "$via" apis >/dev/null 2>&1
    "$G" log --from "$T/vmm.gmr" --format csv >"$T/vmm.csv"
    for op in create map unmap release; do
        grep -q ",$op," "$T/vmm.csv" || bad "vmm via $via: no $op record"
    done
    m=$(grep -c ',map,' "$T/vmm.csv"); u=$(grep -c ',unmap,' "$T/vmm.csv")
    [ "$m" = "$u" ] || bad "vmm via $via: $m maps, $u unmaps"
done

# a handle released while mapped keeps its charge until the unmap: the
# replay holds the release back as the shim did: at 1G the allocation
# between the release and the unmap (call 5) is the one refused
"$G" record -o "$T/vh.gmr" --limit 1G -- "$B/tests/progs/apicheck" --via gpa vmm-held \
    >"$T/vh.out" 2>&1 || bad "vmm-held under record: $(cat "$T/vh.out")"
vh=$("$G" replay "$T/vh.gmr" --limit 1G --json | grep -o '"refusal_steps":\[[0-9,]*\]')
[ "$vh" = '"refusal_steps":[5]' ] || bad "vmm-held replayed at 1G: $vh (want the refusal at call 5)"
# a retained handle outlives its first release: at 1200M the run refused
# the 500 MiB after it (call 7), and so does the replay, which releases
# the handle at its second release
"$G" record -o "$T/vr.gmr" --limit 1200M -- "$B/tests/progs/apicheck" --via gpa vmm-retain \
    >"$T/vr.out" 2>&1 || bad "vmm-retain under record: $(cat "$T/vr.out")"
vr=$("$G" replay "$T/vr.gmr" --limit 1200M --json)
st=$(echo "$vr" | grep -o '"refusal_steps":\[[0-9,]*\]')
[ "$st" = '"refusal_steps":[7]' ] && [ "$(echo "$vr" | num orphan_frees)" = 0 ] &&
    [ "$(echo "$vr" | num live_allocs)" = 0 ] ||
    bad "vmm-retain replayed at 1200M: $st, $(echo "$vr" | num orphan_frees) orphan frees, $(echo "$vr" | num live_allocs) live (want the refusal at call 7, 0, 0)"

# ---- devices: each call on its own, the limit per device ---------------
# primary contexts of devices 0 and 1, 600 MiB on each: the run fits a
# 1G limit (per device), and so does the replay, whose peak and sweep
# answer are one device's (context + 600 MiB), not the sum; a limit of
# device 1 alone refuses its allocation (call 4) there
TWO="$B/tests/progs/apicheck --via gpa two-alloc 629145600"
SIMCUDA_DEVICES=2 "$G" record -o "$T/two.gmr" --limit 1G -- $TWO >"$T/two.out" 2>&1 ||
    bad "two-alloc under record: $(cat "$T/two.out")"
two=$("$G" replay "$T/two.gmr" --limit 1G --json)
r=$(echo "$two" | num refusals); pk=$(echo "$two" | num peak_bytes)
cx=$(echo "$two" | num context_bytes)
nd=$(echo "$two" | grep -o '"device":[0-9]*,"peak_bytes":[0-9]*' | wc -l)
[ "$r" = 0 ] && [ "$pk" = $((cx + 629145600)) ] && [ "$nd" = 2 ] ||
    bad "two devices at 1G: $r refusals, peak $pk, $nd devices (want 0, $((cx + 629145600)), 2)"
best=$("$G" replay "$T/two.gmr" --sweep 500M:2G --points 2 --json | num smallest_without_refusal_bytes)
[ "$best" = $((cx + 629145600)) ] || bad "two devices: sweep answers $best (want $((cx + 629145600)))"
SIMCUDA_DEVICES=2 GPUMEM_LIMIT_1=800M "$G" run --limit 1G -- $TWO >/dev/null 2>&1 &&
    bad "two-alloc runs with device 1 limited to 800M"
st=$(GPUMEM_LIMIT_1=800M "$G" replay "$T/two.gmr" --limit 1G --json |
     grep -o '"refusal_steps":\[[0-9,]*\]\|"first_refusal":{[^}]*}' | tr '\n' ' ')
case "$st" in *'"device":1}'*'"refusal_steps":[4]'*) ;;
    *) bad "two devices, device 1 at 800M: $st (want call 4 refused on device 1)" ;; esac
r=$(CUDA_VISIBLE_DEVICES=1 "$G" replay "$T/two.gmr" --limit 1G --json | num refusals)
[ "$r" = 0 ] || bad "two devices under CUDA_VISIBLE_DEVICES=1: $r refusals (want 0: ordinals as recorded)"

# ---- complete records: threads, fork ----------------------------------
"$G" record -o "$T/th.gmr" -- "$B/gpumem-trainsim" --steps 20 --threads 3 --layers 6 \
    --quiet >"$T/th.out" 2>/dev/null
set -- $(sed -n 's/.*steps, \([0-9]*\) allocs, \([0-9]*\) frees.*/\1 \2/p' "$T/th.out")
na=$("$G" log --from "$T/th.gmr" --format csv | grep -c ',alloc,')
nf=$("$G" log --from "$T/th.gmr" --format csv | grep -c ',free,')
[ "$na" = "$1" ] && [ "$nf" = "$2" ] || bad "3 threads: recorded $na allocs, $nf frees; trainsim made $1, $2"
"$G" record -o "$T/fk.gmr" -- "$B/tests/progs/forkrec" 5 100 2>/dev/null || bad "forkrec failed"
"$G" log --from "$T/fk.gmr" --format csv | awk -F, 'NR > 1 && $4 == "alloc" { a[$1]++ }
    END { for (p in a) print a[p] }' | sort -n | tr '\n' ' ' > "$T/fk.cnt"
[ "$(cat "$T/fk.cnt")" = "5 100 " ] || bad "fork: allocations per process: $(cat "$T/fk.cnt")(want 5 100)"
"$G" log --from "$T/fk.gmr" --format jsonl | grep -c '"closed":true' | grep -qx 2 ||
    bad "fork: both sections closed"

# --together: the child's calls meet the parent's held memory in one group
"$G" record -o "$T/sl.gmr" -- "$B/tests/progs/forkrec" 5 100 slow 2>/dev/null || bad "forkrec slow failed"
GL=$((2 * $(echo "$out" | num context_bytes) + 10 * 1048576 + 524288))
seq=$("$G" replay "$T/sl.gmr" --limit 1G --group rr$$ --group-limit $GL --json | grep -o '"refusals":[0-9]*' | tr '\n' ' ')
tog=$("$G" replay "$T/sl.gmr" --limit 1G --group rr$$ --group-limit $GL --together --json | grep -o '"refusals":[0-9]*' | tr '\n' ' ')
[ "$seq" = '"refusals":0 "refusals":0 ' ] || bad "one after the other in a group: $seq"
[ "$tog" = '"refusals":0 "refusals":100 ' ] || bad "together in a group: $tog (want the child's 100 refused)"
# --pace counts from the process's first event: a text trace with
# absolute times (ns since 1970) replays in microseconds, not decades
printf '7 1796196764182579453 alloc 1048576 0x1000 0 0\n7 1796196764182600000 free 0 0x1000 0 0\n' \
    >"$T/abs.trace"
for how in --pace --together; do
    ns=$(timeout 10 "$G" replay "$T/abs.trace" $how --json | num replay_ns)
    [ -n "$ns" ] && [ "$ns" -lt 1000000000 ] ||
        bad "$how on absolute times: replay_ns '$ns' (want under 1 s; empty: killed after 10 s)"
done

# a process killed before it could close its recording: kept, and said
"$G" record -o "$T/kl.gmr" -- "$B/tests/progs/forkrec" 7 0 kill 2>"$T/kl.err"; st=$?
[ $st = 137 ] || bad "killed: record exited $st, not 128+9"
grep -q 'did not close' "$T/kl.err" || bad "killed: not said: $(cat "$T/kl.err")"
na=$("$G" log --from "$T/kl.gmr" --format csv | grep -c ',alloc,')
[ "$na" = 7 ] || bad "killed: $na allocations kept of 7"
"$G" replay "$T/kl.gmr" --json | grep -q '"live_allocs":7' || bad "killed: the replay does not end with 7 live"

# a process that executes another image: two sections of one pid, each replayed
"$G" record -o "$T/ex.gmr" -- "$B/tests/progs/forkrec" 4 0 exec 2>/dev/null || bad "forkrec exec failed"
secs=$("$G" log --from "$T/ex.gmr" --format jsonl | grep -c '"kind":"process"')
[ "$secs" = 3 ] || bad "exec: $secs sections, want 3 (image 1, image 2, its child)"
live=$("$G" replay "$T/ex.gmr" --json | grep -o '"allocs":[0-9]*,"frees":[0-9]*' | tr '\n' ' ')
[ "$live" = '"allocs":4,"frees":0 "allocs":3,"frees":3 "allocs":0,"frees":0 ' ] ||
    bad "exec: replays $live"

# SIGTERM to gpumem record: passed to CMD, and what it recorded is joined
"$G" record -o "$T/tm.gmr" -- "$B/gpumem-trainsim" --steps 100000000 --quiet \
    >/dev/null 2>"$T/tm.err" &
rp=$!; sleep 0.3; kill -TERM $rp; wait $rp; st=$?
[ $st = 143 ] || bad "SIGTERM: record exited $st, not 128+15"
n=$("$G" log --from "$T/tm.gmr" --format csv | grep -c ',alloc,')
[ "${n:-0}" -gt 0 ] || bad "SIGTERM: nothing joined ($(cat "$T/tm.err"))"

# a recorded process CMD left running: record waits for it to close its
# section (said once, naming it), and the file holds it whole; the
# status stays CMD's
BG="$B/gpumem-trainsim --steps 300 --step-time 2ms --quiet"
"$G" record -o "$T/bg.gmr" -- sh -c "$BG >'$T/bg.out' & sleep 0.2; exit 3" 2>"$T/bg.err"; st=$?
[ $st = 3 ] || bad "left running: record exited $st, not CMD's 3"
set -- $(sed -n 's/.*steps, \([0-9]*\) allocs.*/\1/p' "$T/bg.out")
na=$("$G" log --from "$T/bg.gmr" --format csv | grep -c ',alloc,')
[ -n "$1" ] && [ "$na" = "$1" ] || bad "left running: $na allocations recorded, trainsim made ${1:-?} ($(cat "$T/bg.err"))"
[ "$(grep -c 'waiting for pid [0-9]*, still recording' "$T/bg.err")" = 1 ] &&
    ! grep -q 'did not close\|still running' "$T/bg.err" ||
    bad "left running: not said once, or said cut: $(cat "$T/bg.err")"
"$G" log --from "$T/bg.gmr" --format jsonl | grep '"kind":"process"' | grep -q '"closed":true' ||
    bad "left running: its section is not closed"
# ... the wait ends at --wait-timeout, on SIGTERM and on SIGINT (unless
# it came ignored), keeping what is there, said; the process goes on
# (stopped here by its pid: at most ~5 s of steps anyway)
LONG="$B/gpumem-trainsim --steps 2500 --step-time 2ms --quiet"
# the command record runs: LONG in the background, and an end once LONG
# has its file in the recording (its first CUDA call: on a loaded machine
# that can take longer than any fixed sleep) and 0.2 s of steps
BG="$LONG >/dev/null & for i in \$(seq 400); do ls \"\$GPUMEM_RECORD\"/*.gmr >/dev/null 2>&1 && break; sleep 0.05; done; sleep 0.2"
stop_bg() { # the pid record named as still running, killed
    p=$(sed -n 's/.*pid \([0-9]*\) is still running.*/\1/p' "$1" | head -n 1)
    [ -n "$p" ] && kill "$p" 2>/dev/null
}
stopped_ok() { # $1 err file, $2 what ended the wait, $3 the recording
    grep -q "$2" "$1" && grep -q 'pid [0-9]* is still running: .* holds its [0-9]* records so far' "$1" &&
        [ "$("$G" log --from "$3" --format csv | grep -c ',alloc,')" -gt 0 ] &&
        ! grep -q 'did not close' "$1"
}
"$G" record -o "$T/wt.gmr" --wait-timeout 300ms -- sh -c "$BG" 2>"$T/wt.err"; st=$?
[ $st = 0 ] && stopped_ok "$T/wt.err" 'stopped waiting after 300ms (--wait-timeout) for pid' "$T/wt.gmr" ||
    bad "--wait-timeout 300ms: status $st, $(cat "$T/wt.err")"
stop_bg "$T/wt.err"
"$G" record -o "$T/w0.gmr" --wait-timeout 0 -- sh -c "$BG" 2>"$T/w0.err"
stopped_ok "$T/w0.err" 'still running' "$T/w0.gmr" && ! grep -q waiting "$T/w0.err" ||
    bad "--wait-timeout 0: $(cat "$T/w0.err")"
stop_bg "$T/w0.err"
"$G" record -o "$T/wx.gmr" --wait-timeout 5 -- true 2>"$T/wx.err"; st=$?
[ $st = 2 ] && grep -q -- "--wait-timeout takes a duration (30s, 5m, 1h, 500ms) or 0 (do not wait), not 5" "$T/wx.err" ||
    bad "--wait-timeout 5: status $st, $(cat "$T/wx.err")"
# a signal: record is started in the foreground (SIGINT as the test got
# it) by a shell that says its pid, then exec's it
for sig in TERM INT; do
    rm -f "$T/sg.pid" "$T/sg.err"
    if [ $sig = INT ] && [ $(( 0x$(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/$$/status) & 2 )) != 0 ]; then
        echo "note: SIGINT is ignored here (a background run): the SIGINT wait test is left out"
        continue
    fi
    ( for i in $(seq 100); do
          grep -q 'waiting for pid' "$T/sg.err" 2>/dev/null && break; sleep 0.05
      done
      p=$(cat "$T/sg.pid")   # still record (not a pid given again)?
      grep -q record "/proc/$p/cmdline" 2>/dev/null && kill -$sig "$p" ) &
    kp=$!
    sh -c 'echo $$ >"$1"; shift; exec "$@"' sh "$T/sg.pid" "$G" record -o "$T/sg.gmr" -- \
        sh -c "$BG" 2>"$T/sg.err"; st=$?
    wait $kp
    [ $st = 0 ] && stopped_ok "$T/sg.err" "stopped waiting (SIG$sig) for pid" "$T/sg.gmr" ||
        bad "SIG$sig while waiting: status $st, $(cat "$T/sg.err")"
    stop_bg "$T/sg.err"
done

# exit() from a SIGALRM handler that interrupted a recorded call
# (tests/progs/sigexit): the process ends, its section readable
hung=0
for i in 1 2 3 4 5 6 7 8; do
    rm -rf "$T/se"; mkdir -m 700 "$T/se"
    GPUMEM_RECORD="$T/se" LD_PRELOAD="$B/libgpumem.so" \
        timeout -s KILL 10 "$B/tests/progs/sigexit" 30 2>/dev/null
    st=$?
    [ $st = 0 ] || { hung=$((hung + 1)); continue; }
    cat "$T/se"/*.gmr > "$T/se.gmr"
    "$G" log --from "$T/se.gmr" --format csv >/dev/null 2>&1 ||
        bad "sigexit: its recording does not read"
done
[ $hung = 0 ] || bad "sigexit recorded: $hung of 8 runs did not end (137: hung)"

# a program that closes every descriptor and opens its own files, which
# get the recording's number (tests/progs/fdclose): the file is left
# as the program wrote it, and the recording goes on in its own file,
# opened again by its name (it stopped at the close: 1 allocation of
# 20,001), closed at exit with its count
rm -rf "$T/fc"; mkdir -m 700 "$T/fc"
GPUMEM_RECORD="$T/fc" LD_PRELOAD="$B/libgpumem.so" \
    "$B/tests/progs/fdclose" "$T/fc.mine" 20000 2>/dev/null || bad "fdclose failed"
for f in "$T"/fc.mine.*; do
    [ "$(od -An -c "$f" | tr -d ' \n')" = 'mine\n' ] ||
        bad "fdclose: the recording wrote into the program's ${f##*/} ($(wc -c < "$f") bytes)"
done
cat "$T/fc"/*.gmr > "$T/fc.gmr"
n=$("$G" log --from "$T/fc.gmr" --format csv 2>/dev/null | grep -c ',alloc,')
[ "$n" = 20001 ] || bad "fdclose: $n of 20001 allocations recorded"
recs=$(( $("$G" log --from "$T/fc.gmr" --format csv | wc -l) - 1 ))
[ "$(od -An -t u8 -j 40 -N 8 "$T/fc.gmr" | tr -d ' ')" = "$recs" ] ||
    bad "fdclose: the section is not closed with its $recs records"

# ---- lost records are said --------------------------------------------

( trap '' XFSZ; ulimit -f 1024
  "$G" record -o "$T/big.gmr" -- "$B/gpumem-trainsim" --steps 2000 --eval-every 0 \
      --quiet ) >/dev/null 2>"$T/big.err"
grep -q 'LOST' "$T/big.err" || bad "a file size limit: no loss reported ($(cat "$T/big.err"))"
# the same limit with SIGXFSZ at its default action: not a kill, a loss
rm -rf "$T/fz"; mkdir -m 700 "$T/fz"
( ulimit -f 97
  GPUMEM_RECORD="$T/fz" LD_PRELOAD="$B/libgpumem.so" "$B/gpumem-trainsim" \
      --steps 200 --eval-every 0 --quiet ) >/dev/null 2>&1; st=$?
[ $st = 0 ] || bad "a file size limit of 99328 bytes: trainsim exited $st (153: SIGXFSZ)"
cat "$T/fz"/*.gmr > "$T/fz.gmr" 2>/dev/null
"$G" log --from "$T/fz.gmr" --format jsonl 2>/dev/null | grep -q '"lost":[1-9]' ||
    bad "a file size limit of 99328 bytes: no loss in the file"
# ... and killed before it closed its section: the file still says them
rm -rf "$T/fk"; mkdir -m 700 "$T/fk"
( ulimit -f 97
  GPUMEM_RECORD="$T/fk" LD_PRELOAD="$B/libgpumem.so" exec "$B/gpumem-trainsim" \
      --steps 100000000 --eval-every 0 --quiet ) >/dev/null 2>&1 &
kp=$!; sleep 0.5; kill -KILL $kp; { wait $kp; } 2>/dev/null
cat "$T/fk"/*.gmr > "$T/fk.gmr" 2>/dev/null
"$G" log --from "$T/fk.gmr" --format jsonl 2>/dev/null |
    grep '"kind":"process"' | grep '"closed":false' | grep -q '"lost":[1-9]' ||
    bad "a file size limit, then kill -9: the section does not say its losses"

# A full disk, in a private mount namespace (root): with no block left the
# header cannot be written, and record names the process as lost whole
# (it said "0 processes" and left a file of 64 zero bytes); with a few
# blocks left the records past them are counted lost, in the file too,
# and replay says the recording is incomplete.
cat > "$T/full.sh" <<'FULL'
D=$1 B=$2 FREE=$3
mount --make-rprivate / && mount -t tmpfs -o size=64k,mode=0700 tmpfs "$D" || exit 77
dd if=/dev/zero of="$D/fill" bs=4k count=$(( 16 - FREE )) 2>/dev/null
"$B/gpumem" record -o "$D/t.gmr" -- "$B/gpumem-trainsim" --steps 3 \
    --eval-every 0 --quiet >/dev/null 2>"$D/../full.err"
echo "rc $?" >>"$D/../full.err"; cp "$D/t.gmr" "$D/../full.gmr" 2>/dev/null
umount "$D"
FULL
mkdir -p "$T/fullfs/mnt"
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
    unshare -m sh "$T/full.sh" "$T/fullfs/mnt" "$B" 0
    grep -q "rc 0" "$T/fullfs/full.err" &&
    grep -q "cannot write the header of .*No space left on device; this process is not recorded" "$T/fullfs/full.err" &&
    grep -q "pid [0-9]* made a CUDA memory call but could not write its recording.*LOST" "$T/fullfs/full.err" &&
    grep -q "0 processes, 0 records, 1 process LOST whole" "$T/fullfs/full.err" ||
        bad "a full disk: the process lost whole is not said: $(cat "$T/fullfs/full.err")"
    rm -f "$T/fullfs/full.err" "$T/fullfs/full.gmr"
    unshare -m sh "$T/full.sh" "$T/fullfs/mnt" "$B" 2
    grep -q "1 process, [0-9]* records, [1-9][0-9]* LOST" "$T/fullfs/full.err" ||
        bad "a nearly full disk: no loss said: $(cat "$T/fullfs/full.err")"
    "$G" log --from "$T/fullfs/full.gmr" --format jsonl 2>/dev/null |
        grep '"kind":"process"' | grep -q '"lost":[1-9]' ||
        bad "a nearly full disk: the file does not say its losses"
    "$G" replay "$T/fullfs/full.gmr" >/dev/null 2>"$T/fullfs/rep.err"
    grep -q "pid [0-9]* lost [1-9][0-9]* records when it was recorded" "$T/fullfs/rep.err" ||
        bad "replay of a lossy recording does not say so: $(cat "$T/fullfs/rep.err")"
else
    echo "full-disk case not run: needs root and a mount namespace"
fi

# ---- fit ----------------------------------------------------------------
# A range it cannot take is refused, never narrowed.
for p in "b=1:99999999999999999999" "b=1:9223372036854775808" "b=+1:5" \
         "b= 1:5" "b=1:5x" "b=5:1" "b=1.5:4"; do
    "$G" fit --limit 1G --param "$p" -- true >"$T/fitbad.txt" 2>&1
    [ $? = 2 ] && grep -q "^gpumem: fit: --param takes NAME=LO:HI" "$T/fitbad.txt" ||
        bad "fit --param $p was not refused: $(cat "$T/fitbad.txt")"
done
ctx=$(GPUMEM_REPORT=json:$T/c.json "$G" run --limit none -- "$B/gpumem-trainsim" --steps 1 \
      --eval-every 0 --quiet >/dev/null 2>&1; num context_peak_bytes < "$T/c.json")
LIM=$((1024 * 1048576))
# trainsim's own model: the largest batch whose planned peak + context fits
lo=1; hi=400
while [ $((hi - lo)) -gt 1 ]; do
    mid=$(((lo + hi) / 2))
    p=$("$B/gpumem-trainsim" --steps 3 --eval-every 0 --batch $mid --print-peak)
    if [ $((p + ctx)) -le $LIM ]; then lo=$mid; else hi=$mid; fi
done
"$G" fit --limit $LIM --param batch=1:400 --json -- "$B/gpumem-trainsim" --steps 3 \
    --eval-every 0 --quiet --batch '{batch}' > "$T/fit.json"
ans=$(num answer < "$T/fit.json")
runs=$(grep -o '"value":' "$T/fit.json" | wc -l)
[ "$ans" = "$lo" ] || bad "fit: answer $ans, trainsim's model says $lo"
[ "$runs" -le 13 ] || bad "fit: $runs runs, more than ceil(log2(399))+4 = 13"
"$G" run --limit $LIM -- "$B/gpumem-trainsim" --steps 3 --eval-every 0 --quiet \
    --batch "$ans" >/dev/null 2>&1 || bad "fit: the answer $ans does not run"
"$G" run --limit $LIM -- "$B/gpumem-trainsim" --steps 3 --eval-every 0 --quiet \
    --batch $((ans + 1)) >/dev/null 2>&1 && bad "fit: answer + 1 runs too"
# with 10% headroom: the largest batch whose planned peak + context leaves 10%
room=$((LIM / 10 * 9))
lo=1; hi=400
while [ $((hi - lo)) -gt 1 ]; do
    mid=$(((lo + hi) / 2))
    p=$("$B/gpumem-trainsim" --steps 3 --eval-every 0 --batch $mid --print-peak)
    if [ $((p + ctx)) -le $room ]; then lo=$mid; else hi=$mid; fi
done
"$G" fit --limit $LIM --param batch=1:400 --headroom 10% --json -- "$B/gpumem-trainsim" \
    --steps 3 --eval-every 0 --quiet --batch '{batch}' > "$T/fit.json"
ans=$(num answer < "$T/fit.json")
[ "$ans" = "$lo" ] || bad "fit --headroom 10%: answer $ans, trainsim's model says $lo"
# a command of two processes is judged by both: the first's peak (the
# second, batch 1, peaks far lower) and the first's refusal (sh exits with
# the second's 0) decide, as they would alone
TSB="$B/gpumem-trainsim --steps 3 --eval-every 0 --quiet --batch"
for c in "&& --limit 2G --headroom 30%" "; --limit 1G"; do
    set -- $c; sep=$1; shift
    "$G" fit "$@" --param batch=1:512 --json -- $TSB '{batch}' > "$T/fit1.json"
    "$G" fit "$@" --param batch=1:512 --json -- sh -c \
        "$TSB {batch} $sep $TSB 1" > "$T/fit2.json"
    a=$(num answer < "$T/fit1.json"); b=$(num answer < "$T/fit2.json")
    [ -n "$a" ] && [ "$a" = "$b" ] ||
        bad "fit $c: two processes answer '$b', the first alone '$a'"
    grep -q '"processes":2,' "$T/fit2.json" ||
        bad "fit $c: not every run counted two processes: $(cat "$T/fit2.json")"
done
# --headroom 0%, the default, is accepted as given (it was refused:
# "takes NN% below 100%") and answers as without it
f0=$("$G" fit --limit 1G --headroom 0% --param batch=1:512 --json -- \
    $TSB '{batch}' | num answer)
[ -n "$f0" ] && [ "$f0" = "$a" ] ||
    bad "fit --headroom 0%: answer '$f0', without it '$a'"
# every process's report is kept: the first's refusal, then the second's
rm -f "$T/two.json"
GPUMEM_REPORT=json:$T/two.json "$G" run --limit 1G -- sh -c \
    "$TSB 512; $TSB 1 --steps 1" >/dev/null 2>&1
n=$(grep -c '^{"pid":' "$T/two.json")
a=$(sed -n 1p "$T/two.json" | num refused); b=$(sed -n 2p "$T/two.json" | num refused)
[ "$n" = 2 ] && [ "$a" = 1 ] && [ "$b" = 0 ] ||
    bad "gpumem run of two processes: $n reports, refusals '$a' then '$b'"
# a section of another recording format in the directory (a program of
# CMD run with another gpumem inherits GPUMEM_RECORD) and a file that is
# not a recording: both left out of FILE, named, and kept with the
# directory (copied in, the first made the whole FILE unreadable)
mkdir -m 700 "$T/fo"
printf 'MGRECORD\002\000\000\000\100\000\000\000\100\000\000\000\316\126\000\000' >"$T/v2.hdr"
head -c 40 /dev/zero >>"$T/v2.hdr"
"$G" record -o "$T/fo/f.gmr" -- sh -c "cp '$T/v2.hdr' \"\$GPUMEM_RECORD/22222.0.gmr\"; echo notes >\"\$GPUMEM_RECORD/notes.gmr\"; $B/gpumem-trainsim --steps 2 --quiet >/dev/null" 2>"$T/fo.err"; st=$?
[ $st = 0 ] || bad "foreign section: status $st, $(cat "$T/fo.err")"
grep -q "/22222.0.gmr (pid 22222) is a section of another recording format (version 2, 64-byte header, 64-byte records; this gpumem reads version 1, 64 and 64): left out of $T/fo/f.gmr and kept where it is" "$T/fo.err" ||
    bad "foreign section: not said: $(cat "$T/fo.err")"
grep -q "/notes.gmr is not a recording section (not named <pid>.<n>.gmr, or no gpumem recording header): left out" "$T/fo.err" ||
    bad "a file that is not a recording: not said: $(cat "$T/fo.err")"
grep -q "record: 1 process, [0-9]* records, 2 sections of another format left out -> " "$T/fo.err" ||
    bad "foreign section: the summary: $(cat "$T/fo.err")"
grep -q "is left in place: it holds files that are not this run's recording" "$T/fo.err" ||
    bad "foreign section: the directory kept is not said: $(cat "$T/fo.err")"
ls "$T"/fo/.gpumem-record.*/22222.0.gmr >/dev/null 2>&1 || bad "foreign section: not kept"
[ "$("$G" log --from "$T/fo/f.gmr" --format csv | grep -c ',alloc,')" -gt 0 ] ||
    bad "foreign section: FILE does not read: $("$G" log --from "$T/fo/f.gmr" 2>&1 | head -n 3)"
# a command that records nothing: an empty recording, no directory left
"$G" record -o "$T/fo/none.gmr" -- true 2>"$T/none.err" && [ -f "$T/fo/none.gmr" ] ||
    bad "record of nothing: $(cat "$T/none.err")"
[ "$(ls -d "$T"/fo/.gpumem-record.* | wc -l)" = 1 ] || bad "record of nothing left its directory"
# memory in steps: the answer is proved (it runs, answer + 1 does not)
# within ceil(log2(511))+4 = 13 runs
for c in "1G async" "700M async" "700M mixed" "1G vmm"; do
    set -- $c
    "$G" fit --limit $1 --param batch=1:512 --json -- "$B/gpumem-trainsim" --steps 3 \
        --quiet --api $2 --batch '{batch}' > "$T/fit.json"
    ans=$(num answer < "$T/fit.json")
    runs=$(grep -o '"value":' "$T/fit.json" | wc -l)
    grep -q '"complete":true' "$T/fit.json" || bad "fit $c: answer $ans not proved in $runs runs"
    [ "$runs" -le 13 ] || bad "fit $c: $runs runs, more than 13"
    "$G" run --limit $1 -- "$B/gpumem-trainsim" --steps 3 --quiet --api $2 \
        --batch "$ans" >/dev/null 2>&1 || bad "fit $c: the answer $ans does not run"
    "$G" run --limit $1 -- "$B/gpumem-trainsim" --steps 3 --quiet --api $2 \
        --batch $((ans + 1)) >/dev/null 2>&1 && bad "fit $c: answer $ans + 1 runs too"
done
# every {NAME} of an argument is replaced whole, however long the result
# (a fixed room cut six 19-digit values short, and the cut runs "fitted")
"$G" fit --limit 2G --param b=9223372036854775806:9223372036854775807 -- sh -c \
    "[ \"\$1\" = \"\$2,\$2,\$2,\$2,\$2,\$2\" ] || exit 3; exec $B/gpumem-trainsim --steps 1 --quiet" \
    sh '{b},{b},{b},{b},{b},{b}' '{b}' >"$T/fitlong.txt" 2>&1
grep -q "^answer: b=9223372036854775807 " "$T/fitlong.txt" ||
    bad "fit with long substitutions: $(cat "$T/fitlong.txt")"
# a budget that ends the search first: the answer is said to be unproved
"$G" fit --limit 1G --param batch=1:512 --max-runs 4 -- "$B/gpumem-trainsim" --steps 3 \
    --quiet --api async --batch '{batch}' > "$T/fit.txt"
tail -n 1 "$T/fit.txt" | grep -q '; not proved: the run budget ended with [0-9]*\.\.[0-9]* not run' ||
    bad "fit --max-runs 4: $(tail -n 1 "$T/fit.txt")"
"$G" fit --limit 100M --param batch=1:400 -- "$B/gpumem-trainsim" --steps 3 --quiet \
    --batch '{batch}' > "$T/nofit.txt"; st=$?
[ $st = 1 ] && grep -q '^no value of batch' "$T/nofit.txt" || bad "fit: no value fits: status $st, $(tail -n 1 "$T/nofit.txt")"
exit $fail
