#!/bin/sh
# tests/integ/test_top_small.sh — the interactive gpumem-top on terminals
# too small for its screens degrades cleanly: no two texts drawn on one
# line. One gpumem-top (in a detached tmux session) watches one process
# holding device memory while its window is resized (tmux resize-window,
# the SIGWINCH a terminal sends); at each size the screen is read with
# capture-pane:
#   - under 4 lines (80x3, 120x3, 80x2, 80x1, 12x3): line 1 says the
#     terminal is too small (cut at the width), every other line is empty;
#   - at 4 lines: the title, the column header, the process's row, the key
#     line, each on its own line;
#   - at 5 to 9 lines and at 80, 40 and 30 columns: the last line is the key line
#     and nothing else (it starts with "sort:" and ends with "quit" or
#     "quit]", cut only at the width), the header is one line and no other
#     line holds the key line's text;
#   - the detail view (Enter) at 80x5 to 80x14: the last line is its key
#     line alone, and it shows no text of the table's.
# Checks are independent: every failure is listed, then the test exits 1.
# Its own segment prefix, simulated machine and tmux socket; the process,
# the tmux server and the files under the prefix are removed on every
# exit. Exit 0 pass, 1 fail, 77 skip (no tmux).
command -v tmux >/dev/null 2>&1 || { echo "tmux not installed"; exit 77; }
BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
PREFIX=gmts$$
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-topsmall.XXXXXX") || exit 1
SOCK=$T/tmux.sock
SESSION=top
export GPUMEM_SHM_PREFIX=$PREFIX SIMCUDA_SHM=${PREFIX}sim
export LD_LIBRARY_PATH=$B/sim SIMCUDA_CONTEXT=64M SIMCUDA_LATENCY=0
failures=0
HOLD=""
tm() { tmux -S "$SOCK" "$@"; }
screen() { tm capture-pane -p -t "$SESSION" 2>/dev/null; }
cleanup() {
    tm kill-server 2>/dev/null
    touch "$T/stop"
    [ -n "$HOLD" ] && kill -9 "$HOLD" 2>/dev/null && wait "$HOLD" 2>/dev/null
    rm -f /dev/shm/"$PREFIX".* /dev/shm/"$SIMCUDA_SHM".*
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; echo "---- screen ----"; screen; exit 1; }
bad() { echo "FAIL: $*"; echo "---- screen ----"; screen | cat -A; failures=$((failures + 1)); }

GPUMEM_LIMIT=1G LD_PRELOAD="$B/libgpumem.so" \
    "$B/tests/progs/cudahold" 100M "$T/stop" 120 >"$T/hold.out" 2>&1 &
HOLD=$!
n=0
until grep -q holding "$T/hold.out" 2>/dev/null; do
    n=$((n + 1)); [ $n -gt 500 ] && fail "cudahold never held its memory: $(cat "$T/hold.out")"
    sleep 0.01
done

saw() { # regex: succeeds once the screen matches, fails after ~5 s
    n=0
    while ! screen | grep -Eq -- "$1"; do
        n=$((n + 1)); [ $n -gt 100 ] && return 1
        sleep 0.05
    done
}
size() { # columns lines: resize, then wait for a frame of that size
    tm resize-window -t "$SESSION" -x "$1" -y "$2" || fail "tmux cannot resize to $1x$2"
    sleep 0.5
    [ "$(screen | wc -l)" -eq "$2" ] || bad "the pane is not $2 lines high"
}
# Line N (1-based) of the screen, trailing blanks removed.
line() { screen | sed -n "${1}p" | sed 's/[[:space:]]*$//'; }

tm new-session -d -s "$SESSION" -x 120 -y 30 \
    "env TERM=xterm-256color LC_ALL=C $B/gpumem-top -d 0.2" ||
    fail "tmux could not start"
saw "^ *$HOLD " || fail "the process never showed"

# ---- under 4 lines: one line saying so ------------------------------------------
for wh in 80x3 120x3 80x2 80x1 12x3; do
    w=${wh%x*}; h=${wh#*x}
    size "$w" "$h"
    first=$(line 1)
    case "$first" in
        *"too small"*) ;;
        *) bad "$wh: line 1 is '$first', not that the terminal is too small" ;;
    esac
    k=2
    while [ $k -le "$h" ]; do
        [ -z "$(line $k)" ] || bad "$wh: line $k is not empty: '$(line $k)'"
        k=$((k + 1))
    done
done

# ---- 4 lines: title, header, the row, the key line ---------------------------
size 80 4
line 1 | grep -q "^gpumem-top " || bad "80x4: line 1 is not the title"
line 2 | grep -Eq "^ +PID +DEV " || bad "80x4: line 2 is not the header"
line 3 | grep -Eq "^ *$HOLD " || bad "80x4: line 3 is not the row of $HOLD"
line 4 | grep -Eq "^sort: .*quit\]?$" || bad "80x4: line 4 is not the key line"

# ---- the table, 5 to 9 lines -------------------------------------------------
for w in 80 40 30; do
    for h in 5 6 7 8 9; do
        size "$w" "$h"
        last=$(line "$h")
        # The key line, cut at the width at most.
        echo "$last" | grep -Eq "^sort: " || bad "${w}x$h: the last line is '$last'"
        [ ${#last} -eq "$w" ] || echo "$last" | grep -Eq "quit\]?$" ||
            bad "${w}x$h: the key line is '$last'"
        echo "$last" | grep -Eq "PID|COMMAND|USED +PEAK|no device" &&
            bad "${w}x$h: the key line holds other text: '$last'"
        [ "$(screen | grep -Ec '^ +PID +DEV ')" -eq 1 ] ||
            bad "${w}x$h: not one header line"
        [ "$(screen | grep -c 'sort: ')" -eq 1 ] ||
            bad "${w}x$h: the key line's text on more than one line"
    done
done

# ---- the detail view -----------------------------------------------------------
size 80 30
tm send-keys -t "$SESSION" Enter
saw "^DETAIL +pid $HOLD " || fail "the detail view never showed"
for h in 5 6 7 8 9 10 11 12 13 14; do
    size 80 "$h"
    last=$(line "$h")
    [ "$last" = "DETAIL  [Esc/Left/Backspace back  h help  q quit]" ] ||
        bad "80x$h detail: the last line is '$last'"
    screen | grep -q "sort: " && bad "80x$h detail: the table's key line shows"
done

[ "$failures" -eq 0 ] || { echo "$failures checks failed"; exit 1; }
echo "ok: gpumem-top at small sizes"
exit 0
