#!/bin/sh
# tests/integ/test_top_trend.sh — gpumem-top's TREND and ETA columns, in a
# detached tmux session 140 columns wide, for three kept trainsim runs:
#   - a leak of 3 MiB per step with marked steps under a 16 GiB limit:
#     TREND +3.0M/st and an ETA (a number of seconds, minutes, hours);
#   - the same leak under no limit: TREND +3.0M/st, ETA -;
#   - no leak: TREND flat, ETA -.
# The figures are those `gpumem report --json` gives the same segments.
# Own segment prefix and tmux socket; the tmux server and every file under
# the prefix are removed on every exit. Exit 0 pass, 1 fail, 77 skip (no
# tmux).
command -v tmux >/dev/null 2>&1 || { echo "tmux not installed"; exit 77; }

BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
PREFIX=gmtt$$
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-toptrend.XXXXXX") || exit 1
SOCK=$T/tmux.sock
tm() { tmux -S "$SOCK" "$@"; }
failures=0
cleanup() {
    tm kill-server 2>/dev/null
    rm -f /dev/shm/"$PREFIX".*
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
export GPUMEM_SHM_PREFIX=$PREFIX

screen() { tm capture-pane -p -t top 2>/dev/null; }
bad() { echo "FAIL: $*"; echo "---- screen ----"; screen; failures=$((failures + 1)); }

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
expect_cell() { # pid header extended-regex
    n=0
    while ! cell "$1" "$2" | grep -Eqx -- "$3"; do
        n=$((n + 1))
        [ $n -gt 100 ] && { bad "pid $1: $2 is '$(cell "$1" "$2")', not /$3/"; return; }
        sleep 0.05
    done
}

kept() { # limit trainsim-args...: runs one, prints its pid
    limit=$1
    shift
    before=$(ls /dev/shm | sed -n "s/^$PREFIX\.\([0-9][0-9]*\)$/\1/p" | sort)
    env LD_PRELOAD="$B/libgpumem.so" LD_LIBRARY_PATH="$B/sim" GPUMEM_KEEP=1 \
        GPUMEM_LIMIT="$limit" "$B/gpumem-trainsim" --quiet --step-time 200us "$@" \
        >/dev/null 2>&1
    ls /dev/shm | sed -n "s/^$PREFIX\.\([0-9][0-9]*\)$/\1/p" | sort |
        { [ -n "$before" ] && grep -vxF "$before" || cat; }
}

L=$(kept 16G --steps 200 --leak 3M --mark-steps)
N=$(kept none --steps 200 --leak 3M --mark-steps)
S=$(kept 16G --steps 200)
[ -n "$L" ] && [ -n "$N" ] && [ -n "$S" ] || { echo "FAIL: runs not kept"; exit 1; }

tm new-session -d -s top -x 140 -y 30 \
    "env TERM=xterm-256color LC_ALL=C $B/gpumem-top -d 0.2 --prefix $PREFIX" ||
    { echo "FAIL: tmux could not start"; exit 1; }

expect_cell "$L" TREND '\+3\.0M/st'
expect_cell "$L" ETA '[0-9]+(s|m|\.[0-9]h|d)'
expect_cell "$N" TREND '\+3\.0M/st'
expect_cell "$N" ETA '-'
expect_cell "$S" TREND 'flat'
expect_cell "$S" ETA '-'
# The ETA is the report's seconds to the limit (which it rounds to 0.1 s;
# the cell to 1 s).
eta=$("$B/gpumem" report --json "$L" | sed -n 's/.*"seconds_to_limit":\([0-9.]*\).*/\1/p')
got=$(cell "$L" ETA)
awk -v s="$eta" -v c="$got" 'BEGIN { if (c !~ /^[0-9]+s$/) exit 1; sub(/s$/, "", c);
    d = c - s; if (d < 0) d = -d; exit !(s < 120 && d <= 0.6) }' ||
    bad "pid $L: ETA '$got', the report's seconds to the limit $eta"

if [ $failures -gt 0 ]; then
    echo "$failures failure(s)"
    exit 1
fi
echo "ok: TREND and ETA of a leak with and without a limit and of a steady run"
exit 0
