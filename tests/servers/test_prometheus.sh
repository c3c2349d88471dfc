#!/bin/sh
# tests/servers/test_prometheus.sh — a real Prometheus server scraping
# `gpumem exporter` every second while trainsim jobs run, asked through
# its HTTP API what an admin would ask:
#   - job 101 (Slurm's SLURM_JOB_ID), live under a 6 GiB limit, stopped
#     with SIGSTOP once it has allocated: gpumem_used_bytes{job="101"}
#     and its limit equal what `gpumem ps --json` says;
#   - job 102, refused at a 500 MiB limit and kept (GPUMEM_KEEP=1):
#     gpumem_refused_total{job="102"} is 1, its used bytes those of ps;
#   - job 103, live and running all along, never refused:
#     gpumem_refused_total{job="103"} is 0;
#   - a hostile file among the segments: the target stays up and
#     gpumem_scrape_errors_total{reason="invalid"} counts it;
#   - `up` is 1: Prometheus asks for OpenMetrics first, so a healthy
#     target means its own parser accepted the exporter's OpenMetrics.
# Both servers listen on 127.0.0.1 only, on ports the kernel picked free;
# Prometheus has a temporary config and data directory. Every server and
# job is stopped by pid on every exit path, and every file removed.
# Exit 0 pass, 1 fail, 77 skip (prometheus, python3 or gpumem-exporter
# missing).
command -v prometheus >/dev/null 2>&1 || { echo "prometheus not installed (Debian: apt-get install prometheus)"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed"; exit 77; }
BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
[ -x "$B/gpumem-exporter" ] || { echo "gpumem-exporter not built (Debian: apt-get install libmicrohttpd-dev)"; exit 77; }

PREFIX=gmprom$$
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-prom.XXXXXX") || exit 1
PIDS=""
failures=0
cleanup() {
    for p in $PIDS; do
        kill -CONT "$p" 2>/dev/null
        kill -TERM "$p" 2>/dev/null
    done
    for p in $PIDS; do
        n=0
        while kill -0 "$p" 2>/dev/null && [ $n -lt 50 ]; do n=$((n + 1)); sleep 0.1; done
        kill -9 "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    rm -rf /dev/shm/"$PREFIX".* /dev/shm/"$PREFIX"_*
    [ -n "${KEEP_T:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }
die() { echo "FAIL: $*"; [ -f "$T/prom.log" ] && tail -n 20 "$T/prom.log"; exit 1; }

export GPUMEM_SHM_PREFIX=$PREFIX LD_LIBRARY_PATH=$B/sim
G=$B/gpumem
# hold PID...: stop them outside an update (tests/integ/hold.sh).
. "$(dirname "$0")/../integ/hold.sh"

# The exporter, on a port the kernel picks.
: >"$T/exporter.log"
"$G" exporter --listen 127.0.0.1:0 2>"$T/exporter.log" &
PIDS="$PIDS $!"
n=0
until grep -q 'serving http://127.0.0.1:[0-9]*/metrics' "$T/exporter.log"; do
    n=$((n + 1)); [ $n -lt 100 ] || die "exporter did not start: $(cat "$T/exporter.log")"
    sleep 0.05
done
EPORT=$(sed -n 's|.*serving http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$T/exporter.log")

# Prometheus: a free port (bound and released), its own config and data.
PPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: gpumem
    honor_labels: true
    static_configs:
      - targets: ['127.0.0.1:$EPORT']
EOF
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/data" \
    --web.listen-address=127.0.0.1:"$PPORT" >"$T/prom.log" 2>&1 &
PIDS="$PIDS $!"

# The jobs.
job() { # JOBID "VAR=VALUE ..." trainsim-options...
    id=$1; vars=$2; shift 2
    # shellcheck disable=SC2086
    env LD_PRELOAD="$B/libgpumem.so" SLURM_JOB_ID="$id" SLURM_STEP_ID=0 $vars \
        "$B/gpumem-trainsim" --quiet "$@" >/dev/null 2>&1 &
    PIDS="$PIDS $!"
    eval "JOB$id=$!"
}
job 101 "GPUMEM_LIMIT=6G" --steps 100000000
job 102 "GPUMEM_LIMIT=500M GPUMEM_KEEP=1" --steps 5
# 103 steps of 1 ms, as training steps take: a writer that allocates
# without any pause may never let its device block read whole (design.md,
# Known limits), and then no scrape exports it.
job 103 "GPUMEM_LIMIT=4G" --steps 100000000 --layers 4 --step-time 1ms
n=0
until "$G" ps --json | grep -q "\"pid\":$JOB101,.*\"allocs\":[1-9]"; do
    n=$((n + 1)); [ $n -lt 200 ] || die "job 101 never allocated"
    sleep 0.05
done
hold "$JOB101"
wait "$JOB102" 2>/dev/null
[ $? -eq 3 ] || bad "job 102 was not refused (exit status of trainsim)"
head -c 4096 /dev/urandom >/dev/shm/"$PREFIX".999999   # a hostile file
"$G" ps --json >"$T/ps.json" || die "gpumem ps --json failed"

python3 - "$PPORT" "$T/ps.json" "$JOB101" "$JOB102" <<'EOF' || bad "Prometheus (above)"
import json, sys, time, urllib.parse, urllib.request
port, ps_path, pid101, pid102 = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
api = "http://127.0.0.1:%s/api/v1/" % port

def get(path):
    with urllib.request.urlopen(api + path, timeout=5) as r:
        return json.load(r)

def query(q):
    d = get("query?query=" + urllib.parse.quote(q))
    if d.get("status") != "success":
        raise SystemExit("query %s: %s" % (q, d))
    return d["data"]["result"]

deadline = time.time() + 60
def wait_for(what, fn):
    last = None
    while time.time() < deadline:
        try:
            last = fn()
            if last is True:
                return
        except OSError as e:      # not listening yet
            last = e
        time.sleep(0.25)
    raise SystemExit("timed out waiting for %s (last: %r)" % (what, last))

def target_up():
    t = get("targets")["data"]["activeTargets"]
    return bool(t) and t[0]["health"] == "up" or t
wait_for("the exporter target to be up", target_up)

ps = {p["pid"]: p for p in json.load(open(ps_path))["processes"]}
def one(q):
    r = query(q)
    return float(r[0]["value"][1]) if len(r) == 1 else r

checks = [
    ('gpumem_used_bytes{job="101"}', float(ps[pid101]["used_bytes"])),
    ('gpumem_limit_bytes{job="101"}', float(6 << 30)),
    ('gpumem_refused_total{job="101"}', 0.0),
    ('gpumem_refused_total{job="102"}', 1.0),
    ('gpumem_used_bytes{job="102"}', float(ps[pid102]["used_bytes"])),
    ('gpumem_refused_total{job="103"}', 0.0),
    ('count(gpumem_process_info)', 3.0),
    ('up{job="gpumem"}', 1.0),
]
for q, want in checks:
    wait_for("%s == %r" % (q, want), lambda: one(q) == want or one(q))
    print("ok  %s = %r" % (q, want))
wait_for("the hostile file counted",
         lambda: (one('gpumem_scrape_errors_total{reason="invalid"}') or 0) >= 1
         or query('gpumem_scrape_errors_total'))
print("ok  hostile file counted, target up")
EOF

[ $failures -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "prometheus: all checks passed"
exit 0
