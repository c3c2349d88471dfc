#!/bin/sh
# tests/integ/test_hami.sh — HAMi-core's variables over the simulated
# driver, as HAMi's device plugin sets them in a container: a program
# preloaded with libgpumem.so and only CUDA_DEVICE_MEMORY_LIMIT[_<N>] in
# its environment is refused at that limit (1024m = 1 GiB), a GPUMEM_LIMIT
# set too can tighten it but not lift it, a malformed value stops the program (exit 2) with a
# message naming it, CUDA_DEVICE_MEMORY_SHARED_CACHE changes nothing, and
# CUDA_DISABLE_CONTROL lifts nothing without the admin's permission (and
# lifts the limit with it: the test build's admin file).
# Exit 0 pass, 1 fail.
set -u
B=${BUILD:-build}
ABS=$(cd "$B" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
t=$(mktemp -d "${TMPDIR:-/tmp}/gm-hami.XXXXXX") || exit 1
POL=$ABS/admintest/etc/gpumem/policy
trap 'rm -rf "$t" "$POL"' EXIT INT TERM
M=1048576
# alloc LIB SIZE ENV...: one cuMemAlloc of SIZE bytes (the simulated
# context takes 300 MiB of the limit first).
alloc() {
    lib=$1; sz=$2; shift 2
    env -u GPUMEM_LIMIT "$@" LD_LIBRARY_PATH="$ABS/sim" LD_PRELOAD="$lib" \
        "$ABS/tests/progs/allocloop" --via dlsym 1 "$sz" > "$t/out" 2>&1
}
SHIM=$ABS/libgpumem.so

alloc "$SHIM" $((800 * M)) CUDA_DEVICE_MEMORY_LIMIT=1024m && fail "800 MiB passed a 1024m limit"
grep -q 'of 1.0 GiB limit' "$t/out" || fail "1024m: $(cat "$t/out")"
alloc "$SHIM" $((600 * M)) CUDA_DEVICE_MEMORY_LIMIT=1024m || fail "600 MiB refused under 1024m: $(cat "$t/out")"
# Per device, as the device plugin writes it; device 0 is the program's.
alloc "$SHIM" $((800 * M)) CUDA_DEVICE_MEMORY_LIMIT_0=1g CUDA_DEVICE_MEMORY_LIMIT=4g \
    && fail "CUDA_DEVICE_MEMORY_LIMIT_0 did not take precedence"
grep -q 'of 1.0 GiB limit' "$t/out" || fail "_0=1g: $(cat "$t/out")"
alloc "$SHIM" $((800 * M)) CUDA_DEVICE_MEMORY_LIMIT=1073741824 \
    CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/test.cache && fail "bytes form: not refused"
grep -q 'of 1.0 GiB limit' "$t/out" || fail "bytes form: $(cat "$t/out")"
[ "$(grep -c . "$t/out")" -le 2 ] || fail "SHARED_CACHE printed something: $(cat "$t/out")"
# With GPUMEM_LIMIT set too, HAMi's value is the scheduler's grant: the
# job's variable tightens it, never lifts it.
alloc "$SHIM" $((800 * M)) CUDA_DEVICE_MEMORY_LIMIT=1024m GPUMEM_LIMIT=2G &&
    fail "GPUMEM_LIMIT=2G lifted CUDA_DEVICE_MEMORY_LIMIT=1024m"
grep -q "GPUMEM_LIMIT='2G' is above CUDA_DEVICE_MEMORY_LIMIT='1024m', the scheduler's grant" "$t/out" ||
    fail "no line about the grant: $(cat "$t/out")"
[ "$(grep -c "scheduler's grant" "$t/out")" = 1 ] || fail "the grant is not said once: $(cat "$t/out")"
# A percentage of the job's under the grant is held on the device, with a
# line there; a GPUMEM_LIMIT the job did not set is never named.
alloc "$SHIM" $((800 * M)) CUDA_DEVICE_MEMORY_LIMIT=1024m GPUMEM_LIMIT_0=50% &&
    fail "GPUMEM_LIMIT_0=50% lifted CUDA_DEVICE_MEMORY_LIMIT=1024m"
grep -q "device 0: the limit asked is above the scheduler's grant (CUDA_DEVICE_MEMORY_LIMIT); the limit is 1.0 GiB" "$t/out" ||
    fail "no per-device line about the grant: $(cat "$t/out")"
grep -q "GPUMEM_LIMIT=" "$t/out" && fail "a GPUMEM_LIMIT nobody set is named: $(cat "$t/out")"
alloc "$SHIM" $((400 * M)) CUDA_DEVICE_MEMORY_LIMIT=1024m GPUMEM_LIMIT=512M &&
    fail "GPUMEM_LIMIT=512M did not tighten CUDA_DEVICE_MEMORY_LIMIT"
grep -q 'of 512.0 MiB limit' "$t/out" || fail "512M under 1024m: $(cat "$t/out")"
# Static mode with an arena larger than the grant: held to the grant (the
# arena takes its room), named, whether or not GPUMEM_LIMIT is set.
for lim in GPUMEM_MODE=static GPUMEM_LIMIT=none; do
    alloc "$SHIM" $((600 * M)) GPUMEM_MODE=static GPUMEM_STATIC_SIZE=5G \
        CUDA_DEVICE_MEMORY_LIMIT=1g $lim || fail "static 5G under a 1g grant ($lim): $(cat "$t/out")"
    grep -q "GPUMEM_STATIC_SIZE='5G' (5.0 GiB) is above CUDA_DEVICE_MEMORY_LIMIT='1g' (1.0 GiB), the scheduler's grant; the arena takes the room that limit leaves" "$t/out" ||
        fail "static 5G under a 1g grant ($lim): no line: $(cat "$t/out")"
done
alloc "$SHIM" $((800 * M)) GPUMEM_MODE=static GPUMEM_STATIC_SIZE=5G CUDA_DEVICE_MEMORY_LIMIT=1g &&
    fail "static mode lifted the grant"
# ... and above a limit known only on the device, said there.
alloc "$SHIM" $((8 * M)) GPUMEM_MODE=static GPUMEM_STATIC_SIZE=10G GPUMEM_LIMIT=10% ||
    fail "static 10G under 10%: $(cat "$t/out")"
grep -q "device 0: GPUMEM_STATIC_SIZE (10.0 GiB) is above the limit (8.0 GiB); the arena takes the room the limit leaves" "$t/out" ||
    fail "static 10G under 10%: no line: $(cat "$t/out")"
# A value HAMi-core would half-read: refused, nothing runs.
alloc "$SHIM" $((8 * M)) CUDA_DEVICE_MEMORY_LIMIT=1.5g
rc=$?
[ $rc -eq 2 ] || fail "1.5g: exit $rc, expected 2: $(cat "$t/out")"
grep -q "CUDA_DEVICE_MEMORY_LIMIT='1.5g' has unexpected text" "$t/out" || fail "1.5g: $(cat "$t/out")"
# ... and under warn it runs, saying what holds instead.
alloc "$SHIM" $((8 * M)) CUDA_DEVICE_MEMORY_LIMIT=1.5g GPUMEM_ON_BAD_CONFIG=warn ||
    fail "1.5g under warn: $(cat "$t/out")"
grep -q "this process runs without CUDA_DEVICE_MEMORY_LIMIT: no memory limit" "$t/out" ||
    fail "1.5g under warn: no consequence: $(cat "$t/out")"
# CUDA_DISABLE_CONTROL: not allowed (no admin file here).
alloc "$SHIM" $((800 * M)) CUDA_DEVICE_MEMORY_LIMIT=1024m CUDA_DISABLE_CONTROL=true \
    && fail "CUDA_DISABLE_CONTROL lifted the limit without the admin's permission"
grep -q "CUDA_DISABLE_CONTROL='true' is ignored" "$t/out" || fail "no line: $(cat "$t/out")"
# ... allowed by the test build's admin file (when the build tree is root's).
printf 'GPUMEM_ALLOW_DISABLE=1\n' > "$POL" && chmod 0644 "$POL"
if "$ABS/admintest/gpumem" policy 2>/dev/null | grep -q '^admin file .*(read)'; then
    alloc "$ABS/admintest/libgpumem.so" $((800 * M)) CUDA_DEVICE_MEMORY_LIMIT=1024m \
        CUDA_DISABLE_CONTROL=true || fail "allowed CUDA_DISABLE_CONTROL did not lift the limit: $(cat "$t/out")"
    grep -q "no limit is enforced in this process" "$t/out" || fail "no line: $(cat "$t/out")"
else
    echo "note: the test admin file is not trusted here; the allowed case is not run"
fi
echo "ok: HAMi-core's variables"
