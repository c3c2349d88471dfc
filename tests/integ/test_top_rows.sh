#!/bin/sh
# tests/integ/test_top_rows.sh — what gpumem-top (interactive, in a
# detached tmux session, and --once) and gpumem ps say of processes that
# are not simply running, against the figures the processes left:
#   - a kept process (GPUMEM_KEEP=1) refused at its limit: listed by the
#     interactive view as by --once, with its refusal (OOMS 1), its peak,
#     and the refused request in its detail view;
#   - a process watched while it runs, then refused and gone (segment
#     unlinked) between two refreshes (it is stopped with SIGSTOP while the
#     view shows it, then continued): its row and its detail view end
#     with its final figures (OOMS 1, the peak of its exit report) and the
#     refusal, also when the detail view is opened after it exited;
#   - a zombie (killed, not reaped: its parent is a `sleep`): `dead` in
#     gpumem ps --all and in its group's member table, absent from
#     gpumem ps and --once;
#   - GPUMEM_MODE=static: the %LIMIT cell shows how full the arena is, not
#     the 100% the whole arena is charged.
# Checks are independent: every failure is listed, then the test exits 1.
# Its own segment prefix and tmux socket; every process it started, the
# tmux server and every file under the prefix are removed on every exit.
# Exit 0 pass, 1 fail, 77 skip (no tmux).
command -v tmux >/dev/null 2>&1 || { echo "tmux not installed"; exit 77; }

BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
PREFIX=gmtr$$
# Its own simulated machine: the boards of the processes it kills go with it.
SIMCUDA_SHM=${PREFIX}sim
export SIMCUDA_SHM
SESSION=top
GROUP=zg$$
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-toprows.XXXXXX") || exit 1
SOCK=$T/tmux.sock
tm() { tmux -S "$SOCK" "$@"; }
failures=0
PIDS=""

screen() { tm capture-pane -p -t "$SESSION" 2>/dev/null; }
fail() { echo "FAIL: $*"; echo "---- screen ----"; screen; exit 1; }
bad() {
    echo "FAIL: $*"; echo "---- screen ----"; screen
    failures=$((failures + 1))
}

cleanup() {
    tm kill-server 2>/dev/null
    for p in $PIDS; do
        kill -CONT "$p" 2>/dev/null
        kill -9 "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    [ -f "$T/zpid" ] && kill -9 "$(cat "$T/zpid")" 2>/dev/null
    rm -f /dev/shm/"$PREFIX".* /dev/shm/"$SIMCUDA_SHM".*
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

export GPUMEM_SHM_PREFIX=$PREFIX
SHIM="LD_PRELOAD=$B/libgpumem.so LD_LIBRARY_PATH=$B/sim"

saw() { # regex: succeeds once the screen matches, fails after ~5 s
    n=0
    while ! screen | grep -Eq -- "$1"; do
        n=$((n + 1)); [ $n -gt 100 ] && return 1
        sleep 0.05
    done
}
wait_for() { saw "$1" || fail "screen never showed: $1"; }
expect() { saw "$1" || bad "screen never showed: $1"; }
wait_file() { # path
    n=0
    until [ -e "$1" ]; do
        n=$((n + 1)); [ $n -gt 500 ] && fail "$1 never appeared"
        sleep 0.01
    done
}

start_top() { # [refresh interval]
    tm kill-server 2>/dev/null
    # A server still shutting down (its last session just quit) refuses
    # the new session ("server exited unexpectedly"): try again a while.
    n=0
    until tm new-session -d -s "$SESSION" -x 120 -y 40 \
        "env TERM=xterm-256color LC_ALL=C $B/gpumem-top -d ${1:-0.2} --prefix $PREFIX" 2>/dev/null; do
        n=$((n + 1)); [ $n -gt 40 ] && fail "tmux could not start"
        sleep 0.05
    done
}

# The cell of column $2 in the row of pid $1 (right-aligned columns end
# where their header name ends).
cell() { # pid header
    screen | awk -v pid="$1" -v col="$2" '
        /^ *PID / {
            h = $0; e = index(h, col)
            while (e < length(h) && substr(h, e + 1, 1) != " ") e++ }
        h != "" && $1 == pid {
            s = substr($0, 1, e); sub(/.* /, "", s); print s; exit }'
}
expect_cell() { # pid header value
    n=0
    while [ "$(cell "$1" "$2")" != "$3" ]; do
        n=$((n + 1))
        [ $n -gt 100 ] && { bad "pid $1: $2 is '$(cell "$1" "$2")', not '$3'"; return; }
        sleep 0.05
    done
}

# gm_size_short of a byte count ("1020.0M").
short() {
    awk -v b="$1" 'BEGIN { u = 0; w = b; r = 0
        while (w >= 1024 && u < 6) { r = w % 1024; w = int(w / 1024); u++ }
        if (u == 0) printf "%dB\n", b
        else printf "%d.%d%s\n", w, int(r * 10 / 1024), substr("BKMGTPE", u + 1, 1) }'
}

# ---- a kept process refused at its limit --------------------------------------
GPUMEM_KEEP=1 env LD_LIBRARY_PATH="$B/sim" "$B/gpumem" run --limit 500M -- \
    "$B/gpumem-trainsim" --quiet >/dev/null 2>&1
[ $? -eq 3 ] || fail "trainsim at 500M did not exit 3"
K=$(ls /dev/shm | sed -n "s/^$PREFIX\.\([0-9][0-9]*\)$/\1/p" | head -n 1)
[ -n "$K" ] || fail "no kept segment"
"$B/gpumem" ps | awk -v p="$K" '$1 == p && $11 == 1 && $6 == "500.0M" && / kept / { ok = 1 } END { exit !ok }' ||
    fail "gpumem ps does not show the kept refusal: $("$B/gpumem" ps)"
"$B/gpumem-top" --once | grep -Eq "^ *$K .* kept " || bad "--once does not list kept $K"

start_top
saw "^ *$K " || bad "the interactive view does not list kept $K (--once does)"
screen | grep -q "no process is using" && bad "interactive view says no process while --once lists $K"
expect_cell "$K" OOMS 1
expect_cell "$K" PEAK 500.0M
expect "^ *$K .*\(kept\)"
tm send-keys -t "$SESSION" Enter
expect "DETAIL +pid $K"
expect "OOMs 1"
expect "oom +cuMemAlloc +8.0M"
tm send-keys -t "$SESSION" Escape

# ---- watched, then refused and gone between two refreshes -------------------------
# Refreshes 1 s apart; once continued, trainsim is refused and exits within
# milliseconds, so no refresh reads its segment in between: its final
# figures can only come from its last read after it went.
tm send-keys -t "$SESSION" q
start_top 1
env $SHIM GPUMEM_LIMIT=1G SIMCUDA_LATENCY=100us GPUMEM_REPORT="json:$T/r.json" \
    "$B/gpumem-trainsim" --steps 60 --leak 16M --quiet >/dev/null 2>&1 &
X=$!
PIDS="$PIDS $X"
wait_file /dev/shm/"$PREFIX.$X"
kill -STOP "$X"
# The segment exists before the process has used a device (and is
# listed); on a loaded machine let it run in short slices until it is.
n=0
while ! "$B/gpumem" ps | awk -v p="$X" '$1 == p { f = 1 } END { exit !f }'; do
    n=$((n + 1))
    [ $n -gt 500 ] && fail "trainsim $X never listed by gpumem ps"
    kill -CONT "$X"; sleep 0.005; kill -STOP "$X"
done
ooms=$("$B/gpumem" ps | awk -v p="$X" '$1 == p { print $11 }')
[ "$ooms" = 0 ] || fail "trainsim $X was refused before it was stopped (OOMS '$ooms')"
tm send-keys -t "$SESSION" / l e a k Enter
wait_for "^ *$X "
tm send-keys -t "$SESSION" Enter
wait_for "DETAIL +pid $X"
expect "OOMs 0"
kill -CONT "$X"
wait "$X"
rc=$?
PIDS=""
[ $rc -eq 3 ] || fail "trainsim $X exited $rc, not 3 (refused)"
[ -e /dev/shm/"$PREFIX.$X" ] && fail "the segment of $X was not removed at exit"
peak=$(short "$(sed -n 's/.*"peak_bytes":\([0-9]*\).*/\1/p' "$T/r.json")")
[ -n "$peak" ] || fail "no exit report"
expect "DETAIL +pid $X .*exited"
expect "OOMs 1"
expect "peak $peak "
expect "oom +cuMemAlloc +8.0M"
tm send-keys -t "$SESSION" Escape
expect "^ *$X .*exited"
expect_cell "$X" OOMS 1
expect_cell "$X" PEAK "$peak"
tm send-keys -t "$SESSION" Enter
expect "DETAIL +pid $X"
expect "oom +cuMemAlloc +8.0M"
tm send-keys -t "$SESSION" q

# ---- a zombie ----------------------------------------------------------------------
# The sleep that replaces the shell is trainsim's parent and never reaps it.
env $SHIM GPUMEM_LIMIT=2G GPUMEM_GROUP=$GROUP GPUMEM_GROUP_LIMIT=4G sh -c \
    "$B/gpumem-trainsim --steps 1000000000 --quiet >/dev/null 2>&1 &
     echo \$! > $T/zpid.new && mv $T/zpid.new $T/zpid; exec sleep 120" &
S=$!
PIDS="$PIDS $S"
wait_file "$T/zpid"
Z=$(cat "$T/zpid")
wait_file /dev/shm/"$PREFIX.$Z"
n=0
until "$B/gpumem" ps | grep -Eq "^ *$Z .* live "; do
    n=$((n + 1)); [ $n -gt 300 ] && fail "trainsim $Z never showed live"
    sleep 0.02
done
kill -9 "$Z"
n=0
# A zombie whose last thread is gone (state Z, one thread: field 20; the
# leader shows Z a moment before its other threads are gone).
until sed 's/.*) //' /proc/"$Z"/stat 2>/dev/null | awk '$1 == "Z" && $18 == 1 { ok = 1 } END { exit !ok }'; do
    n=$((n + 1)); [ $n -gt 300 ] && fail "$Z did not become a zombie"
    sleep 0.02
done
all=$("$B/gpumem" ps --all)
pstate=$(echo "$all" | awk -v p="$Z" '$1 == p && $4 ~ /^[0-9-]+$/ &&
                                 match($0, / (live|kept|exited|dead) /) {
                                     print substr($0, RSTART + 1, RLENGTH - 2); exit }')
mstate=$(echo "$all" | awk -v p="$Z" '$1 == p && $3 ~ /^GPU-/ { print $6; exit }')
[ "$mstate" = dead ] || bad "group member $Z (a zombie) is '$mstate', not dead"
[ "$pstate" = dead ] || bad "zombie $Z is '$pstate' in gpumem ps --all, '$mstate' in its group"
"$B/gpumem" ps | awk -v p="$Z" '$1 == p && $4 ~ /^[0-9-]+$/ { f = 1 } END { exit !f }' &&
    bad "gpumem ps lists zombie $Z"
"$B/gpumem-top" --once | grep -Eq "^ *$Z .* live " && bad "--once shows zombie $Z live"
kill -9 "$S" 2>/dev/null; wait "$S" 2>/dev/null
PIDS=""
rm -f /dev/shm/"$PREFIX".*

# ---- static mode: how full the arena is ----------------------------------------
env $SHIM GPUMEM_LIMIT=2G GPUMEM_MODE=static SIMCUDA_LATENCY=20us \
    "$B/gpumem-trainsim" --steps 1000000000 --quiet >/dev/null 2>&1 &
A=$!
PIDS="$PIDS $A"
wait_file /dev/shm/"$PREFIX.$A"
start_top
wait_for "^ *$A "
"$B/gpumem" ps | grep -Eq "^ *$A .* 100% .* static " ||
    bad "gpumem ps no longer shows the static arena charged whole"
saw "^ *$A .*arena +[0-9]+%" || bad "the static row does not show the arena's fill"
screen | grep -Eq "^ *$A .*(100%|arena +100%)" && bad "the static row shows 100%"
tm send-keys -t "$SESSION" Enter
wait_for "DETAIL +pid $A"
expect "arena [0-9.]+[KMG]: [0-9.]+[BKMG] allocated"

[ "$failures" -eq 0 ] || { echo "$failures checks failed"; exit 1; }
echo "ok: kept, exited after a refusal, zombie and static rows"
exit 0
