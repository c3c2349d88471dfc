#!/bin/sh
# tests/integ/test_exporter.sh — `gpumem exporter` against what the
# processes left, figure by figure:
#   - trainsim runs kept (GPUMEM_KEEP=1): one refused at its limit, one
#     under a larger limit, and two live ones sharing a budget
#     (GPUMEM_GROUP), stopped with SIGSTOP: `gpumem exporter --once` equals
#     `gpumem ps --json --all` on every figure both show (used, peak,
#     limit, context, pool reserve, counts, live bytes, fragmentation,
#     latency quantiles from the histogram, events, groups), with the
#     per-device sums over the live processes alone;
#   - `promtool check metrics` accepts the text (when promtool is
#     installed: exit 1 is a parse error, 3 a lint problem, both fail);
#   - the job identity (Slurm's variables, the pod's downward-API ones)
#     is on every series of its process, as gpumem ps --json shows it;
#   - OpenMetrics (--format openmetrics) ends with "# EOF" and names
#     counters without _total; --compat hami adds HAMi's families, one
#     row per container and device;
#   - hostile files among the segments (garbage, a half-written segment
#     whose magic is 0, a truncated one, a symbolic link, a FIFO, a
#     directory, another version, a plain copy of a segment under another
#     pid's name) leave the scrape answering with every process, no series
#     twice, and are counted by reason in gpumem_scrape_errors_total;
#     a valid segment whose command line holds quotes, a newline, a
#     backslash, invalid UTF-8, controls and exposition syntax comes out
#     as one escaped label, and promtool still accepts the text;
#   - --textfile --once writes DIR/gpumem.prom through a temporary file
#     (none left), replacing a planted symbolic link, not its target;
#   - the HTTP server on a loopback port (when gpumem-exporter is built)
#     answers /metrics with the same processes, in OpenMetrics when the
#     Accept header asks, 404 elsewhere, and stops on SIGTERM.
# Its own prefix; every process and file it made is removed on every exit.
# Exit 0 pass, 1 fail, 77 skip (no python3).
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed"; exit 77; }

BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
HERE=$(cd "$(dirname "$0")" && pwd)
PREFIX=gmex$$
GROUP=gx$$
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-exporter.XXXXXX") || exit 1
PIDS=""
failures=0

cleanup() {
    for p in $PIDS; do
        kill -CONT "$p" 2>/dev/null
        kill -9 "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    rm -rf /dev/shm/"$PREFIX".* /dev/shm/"$PREFIX"_*
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }

export GPUMEM_SHM_PREFIX=$PREFIX LD_LIBRARY_PATH=$B/sim
G=$B/gpumem
# hold PID...: stop them outside an update (tests/integ/hold.sh).
. "$(dirname "$0")/hold.sh"
run() { # "VAR=VALUE ..." trainsim-options...
    vars=$1; shift
    # shellcheck disable=SC2086
    env LD_PRELOAD="$B/libgpumem.so" GPUMEM_KEEP=1 $vars \
        "$B/gpumem-trainsim" --quiet --steps 8 "$@" >/dev/null 2>&1; }

run GPUMEM_LIMIT=500M                                 # refused: exit 3
run "GPUMEM_LIMIT=2G SLURM_JOB_ID=4242 SLURM_STEP_ID=3 SLURM_JOB_USER=alice" --leak 1M
# Two live ones sharing a budget, stopped once they have allocated (their
# figures then hold still; a group file lasts as long as a live member).
LIVE=""
for layers in 4 6; do
    pod=""
    [ $layers = 4 ] && pod="GPUMEM_POD_NAMESPACE=ns1 GPUMEM_POD_NAME=pod-a GPUMEM_CONTAINER_NAME=ctr"
    # shellcheck disable=SC2086
    env LD_PRELOAD="$B/libgpumem.so" $pod GPUMEM_LIMIT=6G GPUMEM_GROUP=$GROUP \
        GPUMEM_GROUP_LIMIT=8G "$B/gpumem-trainsim" --quiet --steps 100000 \
        --layers $layers >/dev/null 2>&1 &
    LIVE="$LIVE $!"
    PIDS="$PIDS $!"
done
for p in $LIVE; do
    n=0
    until "$G" ps --json | grep -q "\"pid\":$p,.*\"allocs\":[1-9]"; do
        n=$((n + 1))
        [ $n -lt 100 ] || { bad "live trainsim $p never allocated"; exit 1; }
        sleep 0.05
    done
done
hold $LIVE

"$G" ps --json --all >"$T/ps.json" || bad "gpumem ps --json failed"
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["processes"]))' "$T/ps.json")
[ "$n" -eq 4 ] || bad "gpumem ps --json lists $n processes, 4 expected"
"$G" exporter --once >"$T/m.txt" 2>"$T/m.err" || bad "exporter --once failed: $(cat "$T/m.err")"
[ -s "$T/m.err" ] && bad "exporter --once wrote to stderr: $(cat "$T/m.err")"

python3 "$HERE/expo_compare.py" "$T/ps.json" "$T/m.txt" $LIVE ||
    bad "the exporter and gpumem ps --json differ (above)"

if command -v promtool >/dev/null 2>&1; then
    promtool check metrics <"$T/m.txt" >"$T/pt.out" 2>&1
    rc=$?
    case $rc in
        0) ;;
        3) bad "promtool: lint problems (style, not syntax): $(cat "$T/pt.out")" ;;
        *) bad "promtool: parse error (exit $rc): $(cat "$T/pt.out")" ;;
    esac
else
    echo "promtool not installed: check metrics skipped"
fi

# OpenMetrics and the HAMi names.
"$G" exporter --once --format openmetrics --compat hami >"$T/om.txt" ||
    bad "exporter --format openmetrics failed"
[ "$(tail -n 1 "$T/om.txt")" = "# EOF" ] || bad "OpenMetrics text does not end with # EOF"
grep -q '^# TYPE gpumem_allocations counter$' "$T/om.txt" ||
    bad "OpenMetrics: counter family not named without _total"
grep -q '^# UNIT gpumem_used_bytes bytes$' "$T/om.txt" || bad "OpenMetrics: no UNIT line"
grep -q '^# TYPE gpumem_process info$' "$T/om.txt" || bad "OpenMetrics: no info family"
grep -q "^hami_vgpu_memory_used_bytes{namespace=\"\",pod=\"\",container=\"\",vdevice_index=\"0\",device_uuid=\"GPU-[0-9a-f-]*\",zone=\"vGPU\"} " "$T/om.txt" ||
    bad "--compat hami: no hami_vgpu_memory_used_bytes row outside a pod"
grep -q "^hami_vgpu_memory_used_bytes{namespace=\"ns1\",pod=\"pod-a\",container=\"ctr\",vdevice_index=\"0\",device_uuid=\"GPU-[0-9a-f-]*\",zone=\"vGPU\"} " "$T/om.txt" ||
    bad "--compat hami: no hami_vgpu_memory_used_bytes row of pod-a"
[ "$(grep -c '^hami_vgpu_memory_limit_bytes{.*} 6442450944$' "$T/om.txt")" -eq 2 ] ||
    bad "--compat hami: limits of the live processes not exported"
if grep -q '^hami_' "$T/m.txt"; then bad "hami_ families without --compat hami"; fi

# Hostile files among the segments.
S=/dev/shm/$PREFIX
head -c 4096 /dev/urandom >"$S.900001"                 # garbage
python3 - "$S" <<'EOF'
import sys, struct
import glob
s = sys.argv[1]
# A real kept segment is the model of the broken ones.
real = sorted(p for p in glob.glob(s + ".*") if p.rsplit(".", 1)[1].isdigit()
              and int(p.rsplit(".", 1)[1]) < 900000)[0]
img = bytearray(open(real, "rb").read())
half = bytearray(img); half[0:8] = b"\0" * 8               # magic not stored yet
open(s + ".900002", "wb").write(half)
open(s + ".900003", "wb").write(img[:3000])                 # truncated
ver = bytearray(img); ver[8:12] = struct.pack("<I", 99)     # another version
open(s + ".900004", "wb").write(ver)
# A valid segment whose command line is hostile text (kept, so exported).
evil = bytearray(img)
evil[56:60] = struct.pack("<I", 900008)                     # header pid
cmd = b'ev"il\n\\x\xff\xc2\x85 {} # HELP gpumem_used_bytes 1\x1b[2J'
evil[128:128 + 512] = cmd + b"\0" * (512 - len(cmd))
open(s + ".900008", "wb").write(evil)
open(s + ".900009", "wb").write(img)                        # a plain cp
EOF
ln -s "$T/ps.json" "$S.900005"                          # a link
mkfifo "$S.900006"                                       # a FIFO (never opened for long)
mkdir "$S.900007"                                        # a directory
"$G" exporter --once >"$T/h.txt" 2>"$T/h.err" || bad "scrape with hostile files failed: $(cat "$T/h.err")"
python3 - "$T/m.txt" "$T/h.txt" <<'EOF' || bad "hostile files changed what is exported (above)"
import sys
def procs(p):
    return sorted(l.rsplit(" ", 1)[0] for l in open(p, encoding="utf-8")
                  if l.startswith("gpumem_used_bytes{"))
a, b = procs(sys.argv[1]), procs(sys.argv[2])
evil = [x for x in b if 'pid="900008"' in x]
if [x for x in b if x not in evil] != a or len(evil) != 1:
    print("before:", a); print("after:", b); sys.exit(1)
# The hostile command: quote, newline and backslash escaped, the rest
# (an invalid byte, a C1 and a C0 control) replaced, nothing else lost.
want = 'command="ev\\"il\\n\\\\x\ufffd\ufffd {} # HELP gpumem_used_bytes 1\ufffd[2J"'
if want not in evil[0]:
    print("hostile command label:", evil[0], "want", want); sys.exit(1)
errs = {}
for l in open(sys.argv[2]):
    if l.startswith("gpumem_scrape_errors_total{"):
        errs[l.split('"')[1]] = int(l.split()[-1])
# garbage, magic 0, truncated, version 99, link, FIFO, directory, and the
# copy under another pid's name: 8 invalid
if errs.get("invalid") != 8 or errs.get("duplicate") != 0:
    print("errors by reason:", errs, "(8 invalid, 0 duplicate expected)")
    sys.exit(1)
# No series twice (a scraper would reject the whole text).
seen = set()
for l in open(sys.argv[2], encoding="utf-8"):
    if not l.startswith("#"):
        k = l.rsplit(" ", 1)[0]
        if k in seen:
            print("series twice:", k); sys.exit(1)
        seen.add(k)
EOF
if command -v promtool >/dev/null 2>&1; then
    promtool check metrics <"$T/h.txt" >"$T/pt2.out" 2>&1 ||
        bad "promtool on the text with a hostile command line: $(cat "$T/pt2.out")"
fi
rm -rf "$S.9000"*

# The text file for node_exporter.
mkdir "$T/tf"
echo keep >"$T/target"
ln -s "$T/target" "$T/tf/gpumem.prom"
"$G" exporter --textfile "$T/tf" --once 2>"$T/tf.err" || bad "--textfile --once failed: $(cat "$T/tf.err")"
[ -L "$T/tf/gpumem.prom" ] && bad "--textfile wrote through a planted link"
[ "$(cat "$T/target")" = keep ] || bad "--textfile changed the link's target"
for p in $LIVE; do
    grep -q "^gpumem_used_bytes{pid=\"$p\"" "$T/tf/gpumem.prom" || bad "--textfile: live process $p is missing"
done
[ "$(ls -A "$T/tf" | wc -l)" -eq 1 ] || bad "--textfile left files: $(ls -A "$T/tf")"
# The loop: a first write at once, then every interval; SIGTERM ends it
# (exit 0) with no temporary file left.
mkdir "$T/tf2"
"$G" exporter --textfile "$T/tf2" --interval 1s 2>"$T/tf2.err" &
TF=$!
PIDS="$PIDS $TF"
n=0
until [ -s "$T/tf2/gpumem.prom" ]; do
    n=$((n + 1)); [ $n -lt 100 ] || { bad "--textfile loop wrote nothing"; break; }
    sleep 0.05
done
first=$(grep '^gpumem_scrape_duration_seconds' "$T/tf2/gpumem.prom")
n=0
while [ "$(grep '^gpumem_scrape_duration_seconds' "$T/tf2/gpumem.prom")" = "$first" ]; do
    n=$((n + 1)); [ $n -lt 60 ] || { bad "--textfile loop did not write again within 3 s"; break; }
    sleep 0.05
done
kill -TERM "$TF"
wait "$TF"
rc=$?
[ $rc -eq 0 ] || bad "--textfile loop exit status $rc after SIGTERM: $(cat "$T/tf2.err")"
[ "$(ls -A "$T/tf2")" = gpumem.prom ] || bad "--textfile loop left: $(ls -A "$T/tf2")"
if "$G" exporter --textfile "$T/nodir" --once 2>"$T/nd.err"; then
    bad "--textfile into a missing directory succeeded"
fi
grep -q "cannot open directory $T/nodir" "$T/nd.err" || bad "missing directory not named: $(cat "$T/nd.err")"

# Usage errors name the value and what is accepted.
"$G" exporter --listen 127.0.0.1:99999 2>"$T/u.err"; rc=$?
[ $rc -eq 2 ] && grep -q "'127.0.0.1:99999' is not valid; give ADDR:PORT" "$T/u.err" ||
    bad "bad --listen: exit $rc, $(cat "$T/u.err")"
"$G" exporter --compat dcgm 2>"$T/u.err"; rc=$?
[ $rc -eq 2 ] && grep -q "the one accepted is hami" "$T/u.err" || bad "bad --compat: exit $rc"

# The HTTP server.
if [ -x "$B/gpumem-exporter" ]; then
    : >"$T/srv.err"
    "$G" exporter --listen 127.0.0.1:0 2>"$T/srv.err" &
    SRV=$!
    PIDS="$PIDS $SRV"
    n=0
    until grep -q 'serving http://127.0.0.1:[0-9]*/metrics' "$T/srv.err"; do
        n=$((n + 1))
        [ $n -lt 100 ] || { bad "server did not start: $(cat "$T/srv.err")"; break; }
        sleep 0.05
    done
    port=$(sed -n 's|.*serving http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$T/srv.err")
    python3 - "$port" $LIVE <<'EOF' || bad "HTTP scrape (above)"
import sys, urllib.request, urllib.error
port, live = sys.argv[1], sys.argv[2:]
base = "http://127.0.0.1:%s" % port
r = urllib.request.urlopen(base + "/metrics", timeout=10)
body = r.read().decode()
ct = r.headers["Content-Type"]
assert ct.startswith("text/plain; version=0.0.4"), ct
for p in live:
    assert ('gpumem_used_bytes{pid="%s"' % p) in body, "live process %s missing" % p
req = urllib.request.Request(base + "/metrics", headers={"Accept":
    "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"})
r = urllib.request.urlopen(req, timeout=10)
assert r.headers["Content-Type"].startswith("application/openmetrics-text"), r.headers["Content-Type"]
assert r.read().decode().endswith("# EOF\n")
try:
    urllib.request.urlopen(base + "/nothing", timeout=10)
    raise SystemExit("/nothing answered 200")
except urllib.error.HTTPError as e:
    assert e.code == 404, e.code
EOF
    kill -TERM "$SRV"
    n=0
    while kill -0 "$SRV" 2>/dev/null; do
        n=$((n + 1))
        [ $n -lt 100 ] || { bad "server still running 5 s after SIGTERM"; break; }
        sleep 0.05
    done
    wait "$SRV" 2>/dev/null
    rc=$?
    [ $rc -eq 0 ] || bad "server exit status $rc after SIGTERM"
else
    echo "gpumem-exporter not built (no libmicrohttpd): HTTP checks skipped"
fi

[ $failures -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "exporter: all checks passed"
exit 0
