#!/bin/sh
# tests/integ/test_exporter_cards.sh — the exporter's node-level device
# series (gpumem_device_used_bytes, _physical_bytes, _processes) are per
# physical card, told apart by the UUID each process records per device,
# not by CUDA ordinal. On a simulated machine of two 1 GiB cards, process
# A sees card 0 as its device 0 (CUDA_VISIBLE_DEVICES=0) and process B
# card 1 as its device 0 (CUDA_VISIBLE_DEVICES=1); each holds 600 MiB
# (664 MiB with its context), so a sum by ordinal (1328 MiB on "device
# 0") would exceed either card. Checks:
#   - one series of each family per card, labelled uuid="GPU-..." (that
#     process's own device 0's UUID, as gpumem ps --json shows it) and
#     nothing else: its one process, its used, never above its physical;
#   - each card's used equals the sum by uuid of the per-process
#     gpumem_used_bytes, so the two join on uuid;
#   - the text passes `promtool check metrics` (when installed).
# Checks are independent: every failure is listed, then the test exits 1.
# Its own segment prefix and simulated machine; the processes it started
# and the files under the prefix are removed on every exit. Exit 0 pass,
# 1 fail, 77 skip (no python3).
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed"; exit 77; }
BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
PREFIX=gmxc$$
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-expocards.XXXXXX") || exit 1
export GPUMEM_SHM_PREFIX=$PREFIX SIMCUDA_SHM=${PREFIX}sim
export LD_LIBRARY_PATH=$B/sim SIMCUDA_DEVICES=2 SIMCUDA_MEMORY=1G,1G
export SIMCUDA_CONTEXT=64M SIMCUDA_LATENCY=0
failures=0
PIDS=""
cleanup() {
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
hold_card A 0
hold_card B 1

"$B/gpumem" ps --json >"$T/ps.json" || fail "gpumem ps --json failed"
"$B/gpumem" exporter --once >"$T/m.txt" 2>"$T/m.err" ||
    fail "exporter --once failed: $(cat "$T/m.err")"

python3 - "$T/ps.json" "$T/m.txt" "$PID_A" "$PID_B" <<'PY' || bad "the node-level device series (above)"
import json, re, sys
LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
series = {}
for raw in open(sys.argv[2]):
    line = raw.rstrip("\n")
    if not line or line.startswith("#"):
        continue
    m = LINE.match(line)
    if not m:
        sys.exit("unparsable line: %r" % line)
    series.setdefault(m.group(1), []).append(
        (dict(LABEL.findall(m.group(2) or "")), float(m.group(3))))
ps = json.load(open(sys.argv[1]))
by = {str(p["ns_pid"]): p["devices"] for p in ps["processes"]}
errors = []
cards = {}
for pid in sys.argv[3:]:
    d = by.get(pid, [])
    if len(d) != 1 or d[0]["device"] != 0 or not d[0].get("uuid"):
        sys.exit("gpumem ps --json: pid %s has no device 0 with a UUID: %r" % (pid, d))
    cards[d[0]["uuid"]] = d[0]
if len(cards) != 2:
    sys.exit("gpumem ps --json: both processes' device 0 is one card %r" % list(cards))
for fam in ("gpumem_device_used_bytes", "gpumem_device_physical_bytes",
            "gpumem_device_processes"):
    got = sorted(sorted(l.items()) for l, _ in series.get(fam, []))
    want = sorted([("uuid", u)] for u in cards)
    if got != want:
        errors.append("%s: label sets %s, not one uuid per card %s" % (fam, got, want))
def value(fam, u):
    v = [x for l, x in series.get(fam, []) if l == {"uuid": u}]
    return v[0] if len(v) == 1 else None
for u, d in cards.items():
    used = value("gpumem_device_used_bytes", u)
    phys = value("gpumem_device_physical_bytes", u)
    procs = value("gpumem_device_processes", u)
    if used != float(d["used_bytes"]):
        errors.append("card %s: used %r, its process uses %d" % (u, used, d["used_bytes"]))
    if used is None or phys is None or used > phys:
        errors.append("card %s: used %r above physical %r" % (u, used, phys))
    if phys != float(d["physical_bytes"]):
        errors.append("card %s: physical %r, not %d" % (u, phys, d["physical_bytes"]))
    if procs != 1.0:
        errors.append("card %s: %r processes, not 1" % (u, procs))
    # The per-process series join on uuid: their sum is the card's.
    per = sum(x for l, x in series.get("gpumem_used_bytes", []) if l.get("uuid") == u)
    if per != used:
        errors.append("card %s: sum by uuid of gpumem_used_bytes %r, card %r" % (u, per, used))
if errors:
    print("\n".join(errors))
    print("".join(l for l in open(sys.argv[2]) if l.startswith("gpumem_device_")))
    sys.exit(1)
PY

if command -v promtool >/dev/null 2>&1; then
    promtool check metrics <"$T/m.txt" >"$T/pt.out" 2>&1 ||
        bad "promtool check metrics (exit $?): $(cat "$T/pt.out")"
else
    echo "note: promtool not installed; check metrics skipped"
fi

[ "$failures" -eq 0 ] || { echo "$failures checks failed"; exit 1; }
echo "ok: the exporter sums the two cards apart"
exit 0
