#!/bin/sh
# tests/integ/test_python.sh — tools/python/gpumem.py over the simulated
# driver: under libgpumem.so, step() and mark() are recorded (the kept
# segment's report counts 3 steps and 4 marks, hostile labels included)
# and used() / peak() / limit() give the process's own figures (32 MiB of
# context plus a 64 MiB allocation under a 1 GiB limit; None before the
# first CUDA call and for an unused device; ValueError for a bad
# ordinal); without the library, step() and mark() return False, the
# figures are None and require() raises RuntimeError naming LD_PRELOAD.
# Its own GPUMEM_SHM_PREFIX; kept segments are removed on every exit.
# Exit 0 pass, 1 fail, 77 skip (no python3).
set -u
command -v python3 >/dev/null 2>&1 || { echo "skip: python3 is not installed"; exit 77; }
B=${BUILD:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
t=$(mktemp -d "${TMPDIR:-/tmp}/gm-python.XXXXXX") || exit 1
GPUMEM_SHM_PREFIX=gmpy$$
export GPUMEM_SHM_PREFIX
trap 'rm -rf "$t"; rm -f /dev/shm/"$GPUMEM_SHM_PREFIX".*' EXIT
fail() { echo "FAIL: $*"; exit 1; }
unset GPUMEM_REPORT GPUMEM_LIMIT

cat >"$t/use.py" <<'PY'
import ctypes, sys
sys.path.insert(0, sys.argv[1])
import gpumem
print("available", gpumem.available())
print("before", gpumem.used(), gpumem.peak(), gpumem.limit())
print("step", gpumem.step(), gpumem.step())
print("mark", gpumem.mark("epoch 1"), gpumem.mark(None),
      gpumem.mark("x" * 300), gpumem.mark(b"\xff\xfe bad"))
cu = ctypes.CDLL("libcuda.so.1")
dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
assert cu.cuInit(0) == 0
assert cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
assert cu.cuCtxSetCurrent(ctx) == 0
assert cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(64 << 20)) == 0
gpumem.step()
print("after", gpumem.used(), gpumem.peak(), gpumem.limit())
print("unused device", gpumem.used(5))
try:
    gpumem.used(64)
    print("bad ordinal accepted")
except ValueError as e:
    print("ValueError", "ordinal" in str(e))
try:
    gpumem.require()
    print("require ok")
except RuntimeError as e:
    print("RuntimeError", e)
PY

# Under the library, kept for the report.
env LD_LIBRARY_PATH="$B/sim" LD_PRELOAD="$B/libgpumem.so" SIMCUDA_CONTEXT=32M \
    GPUMEM_LIMIT=1G GPUMEM_KEEP=1 python3 "$t/use.py" "$ROOT/tools/python" \
    >"$t/on.out" 2>"$t/on.err" || fail "python3 under the shim exited $?: $(cat "$t/on.err")"
expect() { # file line
    grep -qxF "$2" "$1" || fail "no line '$2' in $1: $(cat "$1")"
}
expect "$t/on.out" "available True"
expect "$t/on.out" "before None None None"
expect "$t/on.out" "step True True"
expect "$t/on.out" "mark True True True True"
expect "$t/on.out" "after 100663296 100663296 1073741824"
expect "$t/on.out" "unused device None"
expect "$t/on.out" "ValueError True"
expect "$t/on.out" "require ok"
"$B/gpumem" report --json >"$t/report.json" 2>"$t/report.err" ||
    fail "gpumem report: $(cat "$t/report.err")"
grep -q '"steps":3,"marks":4,' "$t/report.json" ||
    fail "the report does not count 3 steps and 4 marks: $(cat "$t/report.json")"
"$B/gpumem" gc >/dev/null 2>&1

# Without it.
env LD_LIBRARY_PATH="$B/sim" python3 "$t/use.py" "$ROOT/tools/python" \
    >"$t/off.out" 2>"$t/off.err" || fail "python3 without the shim exited $?: $(cat "$t/off.err")"
expect "$t/off.out" "available False"
expect "$t/off.out" "step False False"
expect "$t/off.out" "mark False False False False"
expect "$t/off.out" "after None None None"
grep -q "^RuntimeError gpumem: libgpumem.so is not loaded in this process; run the program with LD_PRELOAD=" "$t/off.out" ||
    fail "require() without the library: $(cat "$t/off.out")"
echo "ok: gpumem.py with and without the library"
exit 0
