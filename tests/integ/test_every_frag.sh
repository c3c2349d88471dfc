#!/bin/sh
# tests/integ/test_every_frag.sh — the fragmentation column of
# `gpumem report --every`: computed by the reader from the ring's own
# intervals, it ends where the shim's own figure ends (the last step of
# this trainsim run is its last change of the heap: --keep-context, so no
# context's end frees the leaks after it), and it is unknown
# ("-", null) when the ring lost events, since intervals older than the
# ring cannot be seen.
B=${BUILD:-build}
B=$(cd "$B" && pwd)
PREFIX=${GPUMEM_SHM_PREFIX:-gmtest$$}ef
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-everyfrag.XXXXXX") || exit 1
trap 'GPUMEM_SHM_PREFIX=$PREFIX "$B/gpumem" gc >/dev/null 2>&1; rm -rf "$T"' EXIT
export GPUMEM_SHM_PREFIX=$PREFIX LD_LIBRARY_PATH=$B/sim
G=$B/gpumem
fail=0
bad() { echo "FAIL: $*"; fail=1; }
run() { # ring-events
    env GPUMEM_RING_EVENTS=$1 "$G" run --limit 1G --keep -- "$B/gpumem-trainsim" \
        --steps 120 --leak 3M --mark-steps --eval-every 0 --keep-context \
        --quiet >/dev/null 2>&1
    P=$("$G" ps | awk '/mark-steps/ { print $1 }' | tail -n 1)
    "$G" report --json --every 40 "$P" >"$T/r.json"
    "$G" report --every 40 "$P" >"$T/r.txt"
    "$G" gc >/dev/null 2>&1
}
run 65536
want=$(grep -o '"frag_ppm":[0-9]*' "$T/r.json" | head -n 1 | cut -d: -f2)
last=$(grep -o '"every":\[[^]]*\]' "$T/r.json" | grep -o '"frag_ppm":[0-9a-z]*' | tail -n 1 | cut -d: -f2)
rows=$(grep -o '"every":\[[^]]*\]' "$T/r.json" | grep -o '"frag_ppm":[0-9]*' | wc -l)
[ "$rows" = 3 ] || bad "$rows rows with a fragmentation figure, want 3: $(cat "$T/r.json")"
[ -n "$want" ] && [ "$last" = "$want" ] || bad "last row's frag_ppm '$last', the shim's '$want'"
tail -n 1 "$T/r.txt" | grep -Eq ' [0-9]+\.[0-9]%$' || bad "text row: $(tail -n 1 "$T/r.txt")"
run 1024
grep -o '"every":\[[^]]*\]' "$T/r.json" | grep -q '"frag_ppm":null' ||
    bad "a lossy ring still gave a fragmentation figure: $(cat "$T/r.json")"
[ $fail -eq 0 ] && echo "ok: frag_ppm $last at the last step"
exit $fail
