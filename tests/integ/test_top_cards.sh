#!/bin/sh
# tests/integ/test_top_cards.sh — gpumem-top sums device memory by
# physical card, told apart by the UUID each process records per device,
# not by CUDA ordinal. On a simulated machine of two 1 GiB cards, process
# A sees card 0 as its device 0 (CUDA_VISIBLE_DEVICES=0) and process B
# card 1 as its device 0 (CUDA_VISIBLE_DEVICES=1); each holds 600 MiB
# (664 MiB with its context), so a sum by ordinal (1328 MiB on "device
# 0") would exceed either card. Checks:
#   - gpumem ps --json: each process's device 0 carries its own card's
#     UUID, and the two differ;
#   - gpumem-top --json: two device objects, one per card (uuid, the
#     ordinals its processes see it as), each with its one process and
#     its used, never above its physical size;
#   - no limit is said as null, never 0: B runs without one, so its
#     limit_bytes (process and device) is null in gpumem ps --json and
#     gpumem-top --json, and its card's limits_bytes is null with
#     unlimited_processes 1; A's (900 MiB) are numbers;
#   - the interactive view (in tmux, when installed): two device lines,
#     each labelled `dev 0 GPU-xxxxxxxx` with its card's short UUID and
#     `1 proc`; `d` shows one card at a time (the key line names it, only
#     its process is listed), then all; the detail view of each process
#     names its card (card 0's UUID begins with two zero bytes).
# Checks are independent: every failure is listed, then the test exits 1.
# Its own segment prefix, simulated machine and tmux socket; the processes
# it started, the tmux server and the files under the prefix are removed
# on every exit. Exit 0 pass, 1 fail, 77 skip (no python3).
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed"; exit 77; }
BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
PREFIX=gmtc$$
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-topcards.XXXXXX") || exit 1
SOCK=$T/tmux.sock
SESSION=top
export GPUMEM_SHM_PREFIX=$PREFIX SIMCUDA_SHM=${PREFIX}sim
# Seed 66337 gives card 0 a UUID that begins with two zero bytes
# (GPU-0000ee8a-...): every tool names a card from all of its bytes.
export LD_LIBRARY_PATH=$B/sim SIMCUDA_DEVICES=2 SIMCUDA_MEMORY=1G,1G
export SIMCUDA_UUID_SEED=66337
export SIMCUDA_CONTEXT=64M SIMCUDA_LATENCY=0
failures=0
PIDS=""
tm() { tmux -S "$SOCK" "$@"; }
screen() { tm capture-pane -p -t "$SESSION" 2>/dev/null; }
cleanup() {
    tm kill-server 2>/dev/null
    touch "$T/stop"
    for p in $PIDS; do
        kill -9 "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    rm -f /dev/shm/"$PREFIX".* /dev/shm/"$SIMCUDA_SHM".*
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }

. "$(dirname "$0")/cardhold.sh"
hold_card A 0 900M
hold_card B 1 0

# ---- gpumem ps --json: each process's own card ---------------------------------
"$B/gpumem" ps --json >"$T/ps.json" || fail "gpumem ps --json failed"
uuids=$(python3 - "$T/ps.json" "$PID_A" "$PID_B" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
by = {str(p["ns_pid"]): p["devices"] for p in doc["processes"]}
for pid in sys.argv[2:]:
    d = by.get(pid, [])
    print(d[0]["uuid"] if len(d) == 1 and d[0]["device"] == 0 else "none")
EOF
)
UA=$(echo "$uuids" | sed -n 1p)
UB=$(echo "$uuids" | sed -n 2p)
case "$UA$UB" in
    *none*|"") fail "gpumem ps --json: no device 0 with a UUID for each process: '$UA' '$UB'" ;;
esac
[ "$UA" != "$UB" ] || bad "gpumem ps --json: both processes' device 0 is card $UA"
python3 - "$T/ps.json" "$PID_A" "$PID_B" <<'EOF' || bad "gpumem ps --json limits (above)"
import json, sys
doc = json.load(open(sys.argv[1]))
by = {str(p["ns_pid"]): p for p in doc["processes"]}
a, b = by[sys.argv[2]], by[sys.argv[3]]
errors = []
for what, o, want in (("A", a, 900 << 20), ("A's device", a["devices"][0], 900 << 20),
                      ("B", b, None), ("B's device", b["devices"][0], None)):
    if o["limit_bytes"] != want:
        errors.append("%s: limit_bytes %r, not %r" % (what, o["limit_bytes"], want))
if errors:
    print("\n".join(errors))
    sys.exit(1)
EOF
SA=$(echo "$UA" | cut -c1-12)
SB=$(echo "$UB" | cut -c1-12)

# ---- gpumem-top --json: one device object per card ------------------------------
"$B/gpumem-top" --json -n 1 >"$T/top.json" || bad "gpumem-top --json failed"
python3 - "$T/top.json" "$UA" "$UB" "$PID_A" "$PID_B" <<'EOF' || bad "gpumem-top --json devices (above)"
import json, sys
doc = json.loads(open(sys.argv[1]).readline())
devs = doc["devices"]
ua, ub, pa, pb = sys.argv[2:6]
errors = []
procs = {str(p["ns_pid"]): p for p in doc["processes"]}
for pid, want in ((pa, 900 << 20), (pb, None)):
    p = procs.get(pid, {})
    got = (p.get("limit_bytes", "missing"),
           [d.get("limit_bytes", "missing") for d in p.get("devices", [])])
    if got != (want, [want]):
        errors.append("process %s: limit_bytes %r, not %r" % (pid, got, want))
for d in devs:
    want = ((900 << 20, 0) if d.get("uuid") == ua else (None, 1))
    got = (d.get("limits_bytes", "missing"), d.get("unlimited_processes"))
    if got != want:
        errors.append("device %s: limits_bytes, unlimited_processes %r, not %r"
                      % (d.get("uuid"), got, want))
if sorted(d.get("uuid") or "" for d in devs) != sorted([ua, ub]):
    errors.append("devices %s are not one per card %s" %
                  ([(d["device"], d.get("uuid")) for d in devs], [ua, ub]))
for d in devs:
    if d["used_bytes"] > d["physical_bytes"]:
        errors.append("device %s %s: used %d above physical %d" %
                      (d["device"], d.get("uuid"), d["used_bytes"],
                       d["physical_bytes"]))
    if d["processes"] != 1:
        errors.append("device %s %s: %d processes, not 1" %
                      (d["device"], d.get("uuid"), d["processes"]))
    if d["device"] != 0 or d.get("ordinals") != [0]:
        errors.append("device %s %s: not seen as ordinal 0 alone (%s)" %
                      (d["device"], d.get("uuid"), d.get("ordinals")))
if errors:
    print("\n".join(errors))
    print(open(sys.argv[1]).read()[:3000])
    sys.exit(1)
EOF

# ---- the interactive view: one line per card, d cycles through them ------------
if ! command -v tmux >/dev/null 2>&1; then
    echo "note: tmux not installed; the interactive view not checked"
else
    saw() { # regex: succeeds once the screen matches, fails after ~5 s
        n=0
        while ! screen | grep -Eq -- "$1"; do
            n=$((n + 1)); [ $n -gt 100 ] && return 1
            sleep 0.05
        done
    }
    expect() { saw "$1" || { bad "screen never showed: $1"; screen; }; }
    rows() { screen | awk '/^ *PID / { on = 1; next } on && $1 ~ /^[0-9]+$/ { print $1 }' | sort | tr '\n' ' '; }
    tm new-session -d -s "$SESSION" -x 120 -y 30 \
        "env TERM=xterm-256color LC_ALL=C $B/gpumem-top -d 0.2" ||
        fail "tmux could not start"
    expect "^ *$PID_A "
    expect "^ *$PID_B "
    expect "^dev 0 +$SA .*used 664.0M .* 1 proc *$"
    expect "^dev 0 +$SB .*used 664.0M .* 1 proc *$"
    screen | grep -E "^dev " | grep -qv "GPU-" && bad "a device line without its card"
    # The cards in UUID order: the first d shows the smaller one.
    first=$(printf '%s\n%s\n' "$SA" "$SB" | sort | head -n 1)
    [ "$first" = "$SA" ] && { P1=$PID_A; P2=$PID_B; S2=$SB; } || { P1=$PID_B; P2=$PID_A; S2=$SA; }
    tm send-keys -t "$SESSION" d
    expect "dev: 0 $first "
    saw "dev: 0 $first " && { r=$(rows); [ "$r" = "$P1 " ] || bad "d on $first lists '$r', not $P1"; }
    tm send-keys -t "$SESSION" d
    expect "dev: 0 $S2 "
    saw "dev: 0 $S2 " && { r=$(rows); [ "$r" = "$P2 " ] || bad "d on $S2 lists '$r', not $P2"; }
    tm send-keys -t "$SESSION" d
    expect "dev: all "
    # The detail view names the card of its process, for each process
    # (one card's UUID begins with 0000).
    details=
    for row in 1 2; do
        tm send-keys -t "$SESSION" Enter
        expect "^DETAIL +pid [0-9]+ +device 0 GPU-[0-9a-f]{8} "
        details="$details $(screen | grep -oE '^DETAIL +pid [0-9]+ +device 0 GPU-[0-9a-f]{8}' | awk '{ print $3 "=" $6 }')"
        tm send-keys -t "$SESSION" Escape
        saw "^ *PID " || bad "the detail view did not close"
        tm send-keys -t "$SESSION" Down
    done
    case "$details" in
        *"$PID_A=$SA"*"$PID_B=$SB"*|*"$PID_B=$SB"*"$PID_A=$SA"*) ;;
        *) bad "the detail views named '$details', not $PID_A=$SA and $PID_B=$SB" ;;
    esac
    tm send-keys -t "$SESSION" q
fi

[ "$failures" -eq 0 ] || { echo "$failures checks failed"; exit 1; }
echo "ok: gpumem-top sums $SA and $SB apart"
exit 0
