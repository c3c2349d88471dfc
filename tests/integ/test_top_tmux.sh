#!/bin/sh
# tests/integ/test_top_tmux.sh — the interactive gpumem-top in a real
# terminal: a detached tmux session runs gpumem-top on a private segment
# prefix while two gpumem-trainsim processes (differing only in their
# later arguments, both members of one group) run under the shim with that
# prefix; keys are sent with send-keys and the screen read with
# capture-pane. Checks:
#   - the rows appear, `s` moves the sort indicator, Enter opens the detail
#     view, `q` quits;
#   - at 120 columns the two rows' COMMAND cells differ and show the
#     first argument that tells them apart (the program's directory
#     dropped);
#   - the FRAG column (fragmentation at peak, FRAG@PK) of a steady
#     workload keeps one value from refresh to refresh;
#   - units: `us` under LC_ALL=C, `µs` in a UTF-8 locale (when one is
#     installed), in the table and in the detail view's histogram;
#   - the help screen's text matches the keys: any key but q returns, q
#     quits;
#   - at 80x24 the key line ends with "q quit" and the group line shows
#     both members (wrapped), and the detail view's figures include OOMs.
# The checks after the first rows are independent: every failure is
# listed, then the test exits 1. The tmux server (its own socket) and the
# trainsim processes are killed and the segments removed on every exit.
# Exit 0 pass, 1 fail, 77 skip (no tmux).
command -v tmux >/dev/null 2>&1 || { echo "tmux not installed"; exit 77; }

BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
PREFIX=gmtop$$
SOCK=${TMPDIR:-/tmp}/gmtop$$.tmux
SESSION=top
GROUP=gt$$
tm() { tmux -S "$SOCK" "$@"; }
failures=0

screen() { tm capture-pane -p -t "$SESSION" 2>/dev/null; }

fail() {
    echo "FAIL: $*"
    echo "---- screen ----"
    screen
    exit 1
}

# A failed check that does not stop the test.
bad() {
    echo "FAIL: $*"
    echo "---- screen ----"
    screen
    failures=$((failures + 1))
}

cleanup() {
    tm kill-server 2>/dev/null
    rm -f "$SOCK"
    for p in $T1 $T2; do
        kill -9 "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    rm -f /dev/shm/"$PREFIX".*
}
trap cleanup EXIT
trap 'exit 1' INT TERM

start_trainsim() { # limit args...
    lim=$1; shift
    LD_PRELOAD="$B/libgpumem.so" LD_LIBRARY_PATH="$B/sim" \
        GPUMEM_SHM_PREFIX=$PREFIX GPUMEM_LIMIT=$lim SIMCUDA_LATENCY=20us \
        GPUMEM_GROUP=$GROUP GPUMEM_GROUP_LIMIT=6G \
        "$B/gpumem-trainsim" --steps 1000000 "$@" --quiet >/dev/null 2>&1 &
}
start_trainsim 3G
T1=$!
start_trainsim 2G --hidden 512
T2=$!

i=0
until [ -e /dev/shm/"$PREFIX.$T1" ] && [ -e /dev/shm/"$PREFIX.$T2" ]; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "trainsim made no segment"
    sleep 0.02
done

# Succeeds once the screen matches (grep -E), fails after ~5 s.
saw() {
    n=0
    while ! screen | grep -Eq -- "$1"; do
        n=$((n + 1)); [ $n -gt 100 ] && return 1
        sleep 0.05
    done
    return 0
}
wait_for() { saw "$1" || fail "screen never showed: $1"; }
expect() { saw "$1" || bad "screen never showed: $1"; }

start_top() { # columns lines [environment...]
    x=$1; y=$2; shift 2
    tm kill-server 2>/dev/null
    tm new-session -d -s "$SESSION" -x "$x" -y "$y" \
        "env TERM=xterm-256color $* $B/gpumem-top -d 0.2 --prefix $PREFIX" ||
        fail "tmux could not start"
}

quit_top() { # what
    tm send-keys -t "$SESSION" q
    n=0
    while tm has-session -t "$SESSION" 2>/dev/null; do
        n=$((n + 1)); [ $n -gt 100 ] && { bad "q did not quit $1"; return; }
        sleep 0.05
    done
}

row() { screen | grep -E "^ *$1 "; }

# The cell of column $2 (a header name) in the row of pid $1: the header's
# position (right-aligned columns end where their name ends).
cell() { # pid header
    screen | awk -v pid="$1" -v col="$2" '
        /^ *PID / {
            h = $0; e = index(h, col)
            while (e < length(h) && substr(h, e + 1, 1) != " ") e++ }
        h != "" && $1 == pid {
            s = substr($0, 1, e); sub(/.* /, "", s); print s; exit }'
}

# The COMMAND cell of the row of pid $1 (from where its header starts).
cmdcell() { # pid
    screen | awk -v pid="$1" '
        /^ *PID / { c = index($0, "COMMAND") }
        c > 0 && $1 == pid { print substr($0, c); exit }'
}

UTF8=$(locale -a 2>/dev/null | grep -Eix 'c\.utf-?8|en_US\.utf-?8' | head -n 1)

# ---- 120x30, C locale -----------------------------------------------------
start_top 120 30 LC_ALL=C LANG=C
wait_for "^ *$T1 +"
wait_for "^ *$T2 +"
wait_for "sort: USED desc"

# COMMAND: the rows differ, and show what differs.
r1=$(cmdcell "$T1")
r2=$(cmdcell "$T2")
row "$T1" | grep -q "$B/" && bad "the program's directory is shown"
[ "$r1" != "$r2" ] || bad "the two rows' COMMAND cells are the same: '$r1'"
echo "$r2" | grep -q -- "--hidden" ||
    bad "row $T2 does not show its --hidden: '$r2'"
echo "$r1" | grep -q -- "--quiet" || bad "row $T1 does not show --quiet: '$r1'"

# Units in the C locale: P99 has one ("131.1 us"), the histogram below.
p99=$(row "$T1" | grep -Eo '[0-9.]+ (ns|us|ms|s) ' | tail -n 1)
[ -n "$p99" ] || bad "P99 under LC_ALL=C has no unit: row '$(row "$T1")'"

# FRAG: a steady workload shows one figure, refresh after refresh. Wait
# for the first evaluation spikes (the peak), then sample.
n=0
until "$B/gpumem" ps --prefix "$PREFIX" |
          awk -v p="$T1" '$1 == p && $9 > 8000 { ok = 1 } END { exit !ok }'; do
    n=$((n + 1)); [ $n -gt 300 ] && fail "trainsim $T1 made no progress"
    sleep 0.05
done
screen | grep -q "FRAG@PK" || bad "the FRAG column does not say it is at peak"
frags=""
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
    frags="$frags $(cell "$T1" FRAG)"
    sleep 0.25
done
nf=$(echo "$frags" | tr ' ' '\n' | grep . | sort -u | wc -l)
[ "$nf" -eq 1 ] || bad "FRAG of a steady workload changes:$frags"

tm send-keys -t "$SESSION" s
wait_for "sort: PEAK desc"
screen | grep -q "PEAKv" || bad "no sort mark on PEAK"
tm send-keys -t "$SESSION" S
wait_for "sort: PEAK asc"
# Select T1 (the rows are sorted by PEAK ascending; T1's is the larger).
tm send-keys -t "$SESSION" Down
tm send-keys -t "$SESSION" Enter
wait_for "DETAIL +pid $T1"
expect "allocation latency"
expect "last events"
expect "policy: limit=3.0GiB"
expect ">=[0-9.]+ us +\["
screen | grep -q 'µ' && bad "a µ under LC_ALL=C"
tm send-keys -t "$SESSION" Escape
wait_for "sort: PEAK asc"
tm send-keys -t "$SESSION" h
wait_for "gpumem-top keys"
screen | grep -q "any key returns" && bad "help says any key returns, but q quits"
expect "q .*quit.*any other key"
tm send-keys -t "$SESSION" x
wait_for "sort: PEAK asc"
tm send-keys -t "$SESSION" h
wait_for "gpumem-top keys"
quit_top "from the help screen"

# ---- a UTF-8 locale ----------------------------------------------------------
if [ -n "$UTF8" ]; then
    start_top 120 30 LC_ALL="$UTF8"
    wait_for "^ *$T1 +"
    saw "^ *$T1 .*[0-9] (ns|µs|ms|s) " || bad "P99 in $UTF8 has no unit"
    tm send-keys -t "$SESSION" Enter
    wait_for "DETAIL +pid"
    expect ">=[0-9.]+ µs +\["
    quit_top "in $UTF8"
else
    echo "note: no UTF-8 locale installed; µs not checked"
fi

# ---- small terminal: 80x24 ---------------------------------------------------
start_top 80 24 LC_ALL=C
wait_for "^ *$T1 +"
wait_for "COMMAND"
expect "^group $GROUP"
saw "q quit *$" || bad "the key line is cut at 80 columns"
screen | grep -Eq "(^| )$T1 [0-9.]+[BKMG]/" || bad "group member $T1 not shown"
screen | grep -Eq "(^| )$T2 [0-9.]+[BKMG]/" || bad "group member $T2 not shown"
tm send-keys -t "$SESSION" Enter
wait_for "DETAIL +pid"
expect "OOMs 0"
expect "frag .*at peak"
quit_top "at 80x24"

[ "$failures" -eq 0 ] || { echo "$failures checks failed"; exit 1; }
echo "ok: gpumem-top rows, commands, FRAG, units, sort, detail, help, 80x24"
exit 0
