#!/bin/sh
# tests/integ/test_grafana.sh — the Grafana board docs/grafana/gpumem.json
# is valid JSON and uses only metrics the exporter writes: every gpumem_*
# and hami_* name in a panel's query or a template variable must be a
# family of `gpumem exporter --once --compat hami` (a histogram's
# _bucket, _sum and _count included), every panel has a unique id, a
# Prometheus data source and at least one query, and every label a query
# selects or groups by is one the exporter (or Prometheus: instance) sets;
# a query over the node-level device series (gpumem_device_*, one per
# physical card: labelled uuid, or device where no UUID was recorded)
# that aggregates keeps uuid, and groups by no label those series lack,
# so no panel adds two cards up.
# Exit 0 pass, 1 fail, 77 skip (no python3).
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed"; exit 77; }
BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
BOARD=docs/grafana/gpumem.json
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-grafana.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
GPUMEM_SHM_PREFIX=gmgraf$$ "$B/gpumem" exporter --once --compat hami >"$T/m.txt" ||
    { echo "FAIL: exporter --once failed"; exit 1; }
python3 - "$BOARD" "$T/m.txt" <<'EOF'
import json, re, sys
board = json.load(open(sys.argv[1]))
families, types = set(), {}
for line in open(sys.argv[2]):
    m = re.match(r"# TYPE (\S+) (\S+)", line)
    if m:
        families.add(m.group(1)); types[m.group(1)] = m.group(2)
names = set(families)
for f, t in types.items():
    if t == "histogram":
        names |= {f + "_bucket", f + "_sum", f + "_count"}
# Labels the exporter writes (from its own definition) and Prometheus adds.
labels = {"instance", "le", "pid", "command", "mode", "group", "user", "job",
          "step", "namespace", "pod", "container", "device", "owner", "uid",
          "state", "on_oom", "policy", "reason", "group_device", "uuid",
          "vdevice_index", "device_uuid", "zone", "ns_pid", "pidns",
          "pod_uid", "container_id", "runtime"}
# The labels of the node-level device series (gpumem_device_*).
node_labels = {"instance", "uuid", "device"}
errors = []
queries = []
ids = set()
for p in board["panels"]:
    if p["id"] in ids:
        errors.append("panel id %r twice" % p["id"])
    ids.add(p["id"])
    if p.get("datasource", {}).get("type") != "prometheus":
        errors.append("panel %r: no Prometheus data source" % p["title"])
    if not p.get("targets"):
        errors.append("panel %r: no query" % p["title"])
    queries += [("panel %r" % p["title"], t["expr"]) for t in p.get("targets", [])]
for v in board["templating"]["list"]:
    q = v.get("query")
    if isinstance(q, dict):
        q = q.get("query")
    if v["type"] == "query":
        queries.append(("variable " + v["name"], q))
used = set()
for where, q in queries:
    for n in re.findall(r"\b((?:gpumem|hami)_[a-z0-9_]+)", q):
        used.add(n)
        if n not in names:
            errors.append("%s uses %s, which the exporter does not write" % (where, n))
    for group in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", q):
        for l in re.split(r"[,\s]+", group.strip()):
            if l and l not in labels:
                errors.append("%s groups by %r, not a label of the exporter" % (where, l))
    for l in re.findall(r"[{,]\s*([a-z_]+)\s*(?:=~|!=|!~|=)", q):
        if l not in labels:
            errors.append("%s selects on %r, not a label of the exporter" % (where, l))
    if re.search(r"\bgpumem_device_", q):
        for how, group in re.findall(r"\b(by|without)\s*\(([^)]*)\)", q):
            ls = {l for l in re.split(r"[,\s]+", group.strip()) if l}
            if (how == "by") != ("uuid" in ls):
                errors.append("%s: %s (%s) over gpumem_device_* sums cards "
                              "together (uuid is the card)" % (where, how, group))
            if how == "by" and ls - node_labels:
                errors.append("%s groups gpumem_device_* by %s, labels it "
                              "does not carry" % (where, sorted(ls - node_labels)))
if errors:
    print("\n".join(errors)); sys.exit(1)
print("grafana: %d panels, %d queries, %d metric names, all exported" %
      (len(board["panels"]), len(queries), len(used)))
EOF
