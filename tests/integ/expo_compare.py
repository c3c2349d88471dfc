#!/usr/bin/env python3
# tests/integ/expo_compare.py — compares `gpumem exporter --once` with
# `gpumem ps --json --all`, figure by figure (used by test_exporter.sh):
#
#   python3 expo_compare.py PS_JSON METRICS_TEXT LIVE_PID...
#
# Parses the exposition text independently of the exporter (a line
# grammar of its own), then for every process that is not dead and every
# device `gpumem ps` lists checks each figure both show, the latency
# quantiles recomputed from the histogram's buckets by the rule of
# docs/metrics.md, the groups, and the node-level sums per card (by the
# UUID gpumem ps shows, the ordinal without one; over live processes: the
# LIVE_PIDs are the live ones). Prints every difference;
# exit 1 when there is one.
import json
import math
import re
import sys

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(path):
    series = {}
    for raw in open(path, encoding="utf-8"):
        line = raw.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        m = LINE.match(line)
        if not m:
            raise SystemExit("unparsable line: %r" % line)
        labels = dict(LABEL.findall(m.group(2) or ""))
        series.setdefault(m.group(1), []).append((labels, float(m.group(3))))
    return series


def find(series, name, **want):
    out = [v for labels, v in series.get(name, [])
           if all(labels.get(k) == str(x) for k, x in want.items())]
    return out


errors = []


def check(what, got, expect):
    if got != expect:
        errors.append("%s: exporter %r, gpumem ps %r" % (what, got, expect))


def one(series, name, what, **want):
    v = find(series, name, **want)
    if len(v) != 1:
        errors.append("%s: %d series of %s %r (1 expected)" %
                      (what, len(v), name, want))
        return None
    return v[0]


def quantile_ns(buckets, per_mille):
    """First bucket whose cumulative count reaches ceil(q*N): its upper bound."""
    total = buckets[-1][1]
    if total == 0:
        return 0
    need = math.ceil(total * per_mille / 1000)
    for le, cum in buckets:
        if cum >= need:
            return 1 << 40 if le == math.inf else round(le * 1e9)
    return 0


def main():
    ps = json.load(open(sys.argv[1]))
    m = parse(sys.argv[2])
    live = sorted(sys.argv[3:])
    procs = [p for p in ps["processes"] if p["state"] != "dead"]
    check("exported pids",
          sorted(l["pid"] for l, _ in m.get("gpumem_process_info", [])),
          sorted(str(p["pid"]) for p in procs))
    check("gpumem_scrape_segments", m["gpumem_scrape_segments"][0][1],
          float(len(procs)))
    sums = {}
    for p in procs:
        pid = p["pid"]
        w = "pid %d" % pid
        info = one(m, "gpumem_process_info", w + " info", pid=pid,
                   state=p["state"], mode=p["mode"], on_oom=p["on_oom"],
                   owner=p["user"], uid=p["uid"])
        check(w + " info value", info, 1.0)
        # The job identity, on every series of the process.
        ident = p["identity"]
        want = {"job": ident["slurm_job_id"], "step": ident["slurm_step_id"],
                "user": ident["slurm_job_user"] or p["user"],
                "namespace": ident["pod_namespace"],
                "pod": ident["pod_name"],
                "container": ident["container_name"]}
        for name in ("gpumem_process_info", "gpumem_used_bytes",
                     "gpumem_refused_total", "gpumem_events_lost_total"):
            for l, _ in m.get(name, []):
                if l["pid"] != str(pid):
                    continue
                got = {k: l.get(k) for k in want}
                check("%s %s identity labels" % (w, name), got, want)
        prog = p["command"].split(" ")[0].rsplit("/", 1)[-1]
        cmd = [l["command"] for l, _ in m["gpumem_process_info"]
               if l["pid"] == str(pid)]
        if not cmd or not cmd[0].startswith(prog):
            errors.append("%s command label %r, program %r" % (w, cmd, prog))
        for name, key in (("gpumem_events_total", "events"),
                          ("gpumem_events_lost_total", "events_lost"),
                          ("gpumem_host_pinned_bytes", "host_pinned_bytes")):
            check(w + " " + name, one(m, name, w, pid=pid), float(p[key]))
        start = one(m, "gpumem_process_start_time_seconds", w, pid=pid)
        if start is None or abs(start * 1e9 - p["start_realtime_ns"]) > 1e6:
            errors.append("%s start time %r s, gpumem ps %d ns" %
                          (w, start, p["start_realtime_ns"]))
        for d in p["devices"]:
            dv = d["device"]
            wd = "%s device %d" % (w, dv)
            lab = {"pid": pid, "device": dv}
            for name, key in (
                    ("gpumem_used_bytes", "used_bytes"),
                    ("gpumem_peak_bytes", "peak_bytes"),
                    ("gpumem_context_bytes", "context_bytes"),
                    ("gpumem_pool_reserve_bytes", "pool_reserve_bytes"),
                    ("gpumem_allocations_total", "allocs"),
                    ("gpumem_frees_total", "frees"),
                    ("gpumem_refused_total", "refused"),
                    ("gpumem_live_allocations", "live_allocs"),
                    ("gpumem_live_bytes", "live_bytes"),
                    ("gpumem_allocated_bytes_total",
                     "total_allocated_bytes"),
                    ("gpumem_context_freed_bytes_total",
                     "context_freed_bytes")):
                check(wd + " " + name, one(m, name, wd, **lab), float(d[key]))
            lim = find(m, "gpumem_limit_bytes", **lab)
            check(wd + " gpumem_limit_bytes", lim,
                  [float(d["limit_bytes"])] if d["limit_bytes"] else [])
            frag = one(m, "gpumem_fragmentation_ratio", wd, **lab)
            check(wd + " fragmentation (ppm)",
                  None if frag is None else round(frag * 1e6),
                  d["frag_ppm"])
            buckets = sorted(
                (math.inf if l["le"] == "+Inf" else float(l["le"]), v)
                for l, v in m.get("gpumem_alloc_latency_seconds_bucket", [])
                if l["pid"] == str(pid) and l["device"] == str(dv))
            check(wd + " latency buckets", len(buckets), 40)
            if buckets:
                check(wd + " latency count",
                      one(m, "gpumem_alloc_latency_seconds_count", wd, **lab),
                      buckets[-1][1])
                check(wd + " latency p50", quantile_ns(buckets, 500),
                      d["alloc_latency_p50_ns"])
                check(wd + " latency p99", quantile_ns(buckets, 990),
                      d["alloc_latency_p99_ns"])
            if p["state"] == "live":
                # Per card: its UUID, the ordinal when none was recorded.
                card = (("uuid", d["uuid"]) if d.get("uuid")
                        else ("device", str(dv)))
                s = sums.setdefault(card, [0, 0, 0])
                s[0] += d["used_bytes"]
                s[1] += 1
                s[2] = max(s[2], d["physical_bytes"])
    check("live process", sorted(str(p["pid"]) for p in procs
                                 if p["state"] == "live"), live)
    for card, (used, n, phys) in sums.items():
        wd = "card %s=%s" % card
        for name, want in (("gpumem_device_used_bytes", used),
                           ("gpumem_device_processes", n),
                           ("gpumem_device_physical_bytes", phys)):
            got = [v for l, v in m.get(name, []) if l == dict([card])]
            check(wd + " " + name, got, [float(want)])
    check("cards with sums",
          sorted(sorted(l.items()) for l, _ in
                 m.get("gpumem_device_used_bytes", [])),
          sorted([c] for c in sums))
    check("groups", len(ps["groups"]) > 0, True)
    for g in ps["groups"]:
        wg = "group " + g["group"]
        for d in g["devices"]:
            lab = {"group": g["group"], "uuid": d["uuid"]}
            for name, key in (("gpumem_group_used_bytes", "used_bytes"),
                              ("gpumem_group_peak_bytes", "peak_bytes")):
                check(wg + " " + name, one(m, name, wg, **lab),
                      float(d[key]))
            # No limit: null in gpumem ps, no series in the exporter.
            check(wg + " gpumem_group_limit_bytes",
                  find(m, "gpumem_group_limit_bytes", **lab),
                  [] if d["limit_bytes"] is None
                  else [float(d["limit_bytes"])])
        check(wg + " live members", one(m, "gpumem_group_members", wg,
                                        group=g["group"], state="live"),
              float(g["live_members"]))
        check(wg + " dead members", one(m, "gpumem_group_members", wg,
                                        group=g["group"], state="dead"),
              float(g["dead_members"]))
        for mem in g["members"]:
            got = [l.get("group") for l, _ in m["gpumem_process_info"]
                   if l["pid"] == str(mem["pid"])]
            check(wg + " member %d group label" % mem["pid"], got,
                  [g["group"]])
    if errors:
        print("\n".join(errors))
        return 1
    print("exporter = gpumem ps: %d processes, %d groups" %
          (len(procs), len(ps["groups"])))
    return 0


sys.exit(main())
