#!/bin/sh
# tests/integ/test_top_tmux.sh — the interactive gpumem-top in a real
# terminal: a detached tmux session (120x30, then 80x24) runs gpumem-top on
# a private segment prefix while gpumem-trainsim runs under the shim with
# that prefix; keys are sent with send-keys and the screen read with
# capture-pane. Checks: the process row (its pid) appears, `s` moves the
# sort indicator, Enter opens the detail view, `q` quits.
# Exit 0 pass, 1 fail, 77 skip (no tmux).
command -v tmux >/dev/null 2>&1 || { echo "tmux not installed"; exit 77; }

BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
PREFIX=gmtop$$
SOCK=gmtop$$
SESSION=top
tm() { tmux -L "$SOCK" "$@"; }

fail() {
    echo "FAIL: $*"
    echo "---- screen ----"
    tm capture-pane -p -t "$SESSION" 2>/dev/null
    exit 1
}

cleanup() {
    tm kill-server 2>/dev/null
    [ -n "$TPID" ] && kill -9 "$TPID" 2>/dev/null && wait "$TPID" 2>/dev/null
    rm -f /dev/shm/"$PREFIX".*
}
trap cleanup EXIT

LD_PRELOAD="$B/libgpumem.so" LD_LIBRARY_PATH="$B/sim" \
    GPUMEM_SHM_PREFIX=$PREFIX GPUMEM_LIMIT=3G SIMCUDA_LATENCY=2ms \
    "$B/gpumem-trainsim" --steps 100000 --quiet >/dev/null 2>&1 &
TPID=$!

i=0
until [ -e /dev/shm/"$PREFIX.$TPID" ]; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "trainsim made no segment"
    sleep 0.02
done

# Waits until the screen matches (grep -E) or fails after ~5 s.
wait_for() {
    n=0
    while ! tm capture-pane -p -t "$SESSION" | grep -Eq -- "$1"; do
        n=$((n + 1)); [ $n -gt 100 ] && fail "screen never showed: $1"
        sleep 0.05
    done
}

start_top() {
    tm kill-server 2>/dev/null
    tm new-session -d -s "$SESSION" -x "$1" -y "$2" \
        "TERM=xterm-256color $B/gpumem-top -d 0.2 --prefix $PREFIX" ||
        fail "tmux could not start"
}

start_top 120 30
wait_for "^ *$TPID +"
wait_for "sort: USED desc"
tm send-keys -t "$SESSION" s
wait_for "sort: PEAK desc"
tm capture-pane -p -t "$SESSION" | grep -q "PEAKv" || fail "no sort mark on PEAK"
tm send-keys -t "$SESSION" S
wait_for "sort: PEAK asc"
tm send-keys -t "$SESSION" Enter
wait_for "DETAIL +pid $TPID"
wait_for "allocation latency"
wait_for "last events"
wait_for "policy: limit=3.0GiB"
tm send-keys -t "$SESSION" Escape
wait_for "sort: PEAK asc"
tm send-keys -t "$SESSION" h
wait_for "gpumem-top keys"
tm send-keys -t "$SESSION" x
wait_for "sort: PEAK asc"
tm send-keys -t "$SESSION" q
n=0
while tm has-session -t "$SESSION" 2>/dev/null; do
    n=$((n + 1)); [ $n -gt 100 ] && fail "q did not quit"
    sleep 0.05
done

# Small terminal: the row and the key line still fit.
start_top 80 24
wait_for "^ *$TPID +"
wait_for "COMMAND"
tm send-keys -t "$SESSION" Enter
wait_for "DETAIL +pid $TPID"
tm send-keys -t "$SESSION" q
n=0
while tm has-session -t "$SESSION" 2>/dev/null; do
    n=$((n + 1)); [ $n -gt 100 ] && fail "q did not quit at 80x24"
    sleep 0.05
done
echo "ok: gpumem-top row, sort, detail view, help and quit"
exit 0
