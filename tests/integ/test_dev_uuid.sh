#!/bin/sh
# tests/integ/test_dev_uuid.sh — the device UUID a process records per
# CUDA ordinal follows CUDA_VISIBLE_DEVICES: on a two-device simulated
# machine, ordinal 0 of a process that sees "1,0" is the card that
# ordinal 0 is for a process that sees only "1", and not the one of a
# process that sees only "0"; gpumem ps --json and the exporter agree.
B=${BUILD:-build}
B=$(cd "$B" && pwd)
PREFIX=${GPUMEM_SHM_PREFIX:-gmtest$$}uu
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-uuid.XXXXXX") || exit 1
trap 'GPUMEM_SHM_PREFIX=$PREFIX "$B/gpumem" gc >/dev/null 2>&1; rm -rf "$T"' EXIT
export GPUMEM_SHM_PREFIX=$PREFIX LD_LIBRARY_PATH=$B/sim SIMCUDA_DEVICES=2
fail=0
uuid_of() { # CUDA_VISIBLE_DEVICES: the uuid of ordinal 0 of a kept run
    CUDA_VISIBLE_DEVICES=$1 GPUMEM_KEEP=1 LD_PRELOAD="$B/libgpumem.so" \
        GPUMEM_LIMIT=1G "$B/gpumem-trainsim" --steps 2 --quiet >/dev/null 2>&1
    "$B/gpumem" ps --all --json >"$T/ps.json"
    "$B/gpumem" exporter --once >"$T/m.txt"
    u=$(grep -o '"uuid":"GPU-[0-9a-f-]*"' "$T/ps.json" | head -n 1 | cut -d'"' -f4)
    m=$(sed -n 's/^gpumem_used_bytes{.*device="0",uuid="\(GPU-[0-9a-f-]*\)".*/\1/p' "$T/m.txt" | head -n 1)
    "$B/gpumem" gc >/dev/null 2>&1
    echo "$u"
    # In a command substitution: the status says what fail= cannot.
    [ -n "$u" ] && [ "$u" = "$m" ] || { echo "FAIL: ps says '$u', the exporter '$m'" >&2; return 1; }
}
a=$(uuid_of 0) || fail=1
b=$(uuid_of 1) || fail=1
c=$(uuid_of 1,0) || fail=1
[ -n "$a" ] && [ "$a" != "$b" ] || { echo "FAIL: devices 0 and 1 share '$a'"; fail=1; }
[ "$c" = "$b" ] || { echo "FAIL: ordinal 0 under 1,0 is '$c', card 1 is '$b'"; fail=1; }
[ $fail -eq 0 ] && echo "ok: $a / $b"
exit $fail
