#!/bin/sh
# tests/integ/test_admin_policy.sh — the admin policy file as the shim and
# `gpumem policy` see it, with the test build (SYSCONFDIR inside the build
# tree, build/admintest): a ceiling holds over the simulated driver; the
# file's defaults show source "admin" and clamped values their request;
# a bad line, a group-writable file and a symlinked file each stop a CUDA
# program with exit 2 even under GPUMEM_ON_BAD_CONFIG=warn, naming the
# file (and line); a program that never calls CUDA is not affected; a
# per-device default of the file yields to the job's GPUMEM_LIMIT; NVML
# shows the ceiling in a process that never initialises CUDA as in one
# that does.
# Exit 0 pass, 1 fail, 77 skip (the build tree's directories are not
# root's, so no file in it can be trusted).
set -u
B=${BUILD:-build}
ABS=$(cd "$B" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
G=$ABS/admintest/gpumem
LIB=$ABS/admintest/libgpumem.so
POL=$ABS/admintest/etc/gpumem/policy
t=$(mktemp -d "${TMPDIR:-/tmp}/gm-admin.XXXXXX") || exit 1
trap 'rm -rf "$t" "$POL"' EXIT INT TERM
M=1048576
alloc() { # SIZE ENV...
    sz=$1; shift
    env -u GPUMEM_LIMIT "$@" LD_LIBRARY_PATH="$ABS/sim" LD_PRELOAD="$LIB" \
        "$ABS/tests/progs/allocloop" --via dlsym 1 "$sz" > "$t/out" 2>&1
}
put() { printf "$1" > "$POL" && chmod 0644 "$POL"; }

put 'GPUMEM_MAX_LIMIT=1G\nGPUMEM_MODE=grow   # default\n'
"$G" policy > "$t/pol" 2>&1
if ! grep -q '^admin file .*(read)' "$t/pol"; then
    # Only a tree that is not root's may skip; a file not found is a fault.
    grep -q 'not trusted' "$t/pol" || fail "the test admin file was not read: $(cat "$t/pol")"
    echo "skip: the test admin file is not trusted here: $(grep 'not trusted' "$t/pol")"
    exit 77
fi
grep -q '^GPUMEM_MODE  *grow  *admin$' "$t/pol" || fail "no admin default: $(cat "$t/pol")"
grep -q '^GPUMEM_MAX_LIMIT  *1.0 GiB (1073741824 B)  *admin$' "$t/pol" || fail "no ceiling row: $(cat "$t/pol")"
GPUMEM_LIMIT=none "$G" policy > "$t/pol" 2>&1 || fail "gpumem policy exited $?"
grep -q '^GPUMEM_LIMIT  *1.0 GiB (1073741824 B) (asked none)' "$t/pol" || fail "no clamp shown: $(cat "$t/pol")"
grep -q "GPUMEM_LIMIT='none' is above the admin ceiling GPUMEM_MAX_LIMIT ($POL:1); the limit is 1.0 GiB" "$t/pol" ||
    fail "no clamp line: $(cat "$t/pol")"
GPUMEM_LIMIT=none "$G" policy --json > "$t/pol" 2>/dev/null
grep -q '"clamped": true, "asked": "none", "source": "admin"' "$t/pol" || fail "json: $(cat "$t/pol")"
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert d["admin_file"]["state"] == "read" and d["GPUMEM_MAX_LIMIT"]["bytes"] == 1 << 30, d' "$t/pol" ||
        fail "gpumem policy --json is not the JSON expected: $(cat "$t/pol")"
fi

# The ceiling in the shim.
alloc $((800 * M)) GPUMEM_LIMIT=none && fail "800 MiB passed a 1G ceiling"
grep -q 'of 1.0 GiB limit' "$t/out" || fail "$(cat "$t/out")"
alloc $((600 * M)) || fail "600 MiB refused under the ceiling: $(cat "$t/out")"
# gpumem run: the same, and the line about the ceiling once (the library
# prints it; gpumem run prints the load's messages only when it refuses).
GPUMEM_LIMIT=none LD_LIBRARY_PATH="$ABS/sim" "$G" run --limit none -- \
    "$ABS/tests/progs/allocloop" --via dlsym 1 $((800 * M)) > "$t/out" 2>&1 &&
    fail "gpumem run --limit none passed the ceiling"
[ "$(grep -c 'is above the admin ceiling' "$t/out")" = 1 ] ||
    fail "gpumem run: the ceiling line is not printed once: $(cat "$t/out")"
# 50% of the simulated 80 GiB device against 1G: applied per device.
alloc $((800 * M)) GPUMEM_LIMIT=50% && fail "50% lifted the ceiling"
grep -q 'the limit asked is above the admin ceiling GPUMEM_MAX_LIMIT; the limit is 1.0 GiB' "$t/out" ||
    fail "no per-device line: $(cat "$t/out")"

# NVML shows the same ceiling without CUDA (nvidia-smi in the job, a call
# before cuInit) as with it: no limit of the job's, a limit above it, and
# a refused one under GPUMEM_ON_BAD_CONFIG=warn (the CUDA path runs with
# the ceiling then).
nv() { # CMD ENV...
    c=$1; shift
    env -u GPUMEM_LIMIT "$@" LD_LIBRARY_PATH="$ABS/sim" LD_PRELOAD="$LIB" \
        "$ABS/tests/progs/nvmlview" --via dlsym "$c" > "$t/out" 2>&1
}
for e in GPUMEM_KEEP=0 GPUMEM_LIMIT=4G "GPUMEM_ON_BAD_CONFIG=warn GPUMEM_LIMIT=lots"; do
    # shellcheck disable=SC2086 # $e is one or two NAME=VALUE words
    nv info $e || fail "NVML-only under $e: exit $?: $(cat "$t/out")"
    grep -q '^nvml 0 [^ ]* total=1073741824 free=1073741824 used=0 ' "$t/out" ||
        fail "NVML-only under $e does not show the 1G ceiling: $(cat "$t/out")"
    # shellcheck disable=SC2086
    nv map $e || fail "NVML with CUDA under $e: exit $?: $(cat "$t/out")"
    grep -q '^cuda 0 [^ ]* total=1073741824$' "$t/out" &&
        grep -q '^nvml 0 [^ ]* total=1073741824$' "$t/out" ||
        fail "CUDA and NVML under $e: $(cat "$t/out")"
done

# An arena larger than the ceiling is held to it, never refused.
alloc $((8 * M)) GPUMEM_MODE=static GPUMEM_STATIC_SIZE=5G ||
    fail "GPUMEM_STATIC_SIZE=5G under a 1G ceiling refused: $(cat "$t/out")"
grep -q "GPUMEM_STATIC_SIZE='5G' (5.0 GiB) is above the admin ceiling GPUMEM_MAX_LIMIT (1.0 GiB, $POL:1); the arena takes the room that limit leaves" "$t/out" ||
    fail "static size under the ceiling: $(cat "$t/out")"

# A per-device default of the file is a default: the job's GPUMEM_LIMIT
# is its limit on every device.
put 'GPUMEM_LIMIT_0=8G\n'
alloc $((800 * M)) GPUMEM_LIMIT=1G && fail "GPUMEM_LIMIT_0=8G of the file lifted the job's GPUMEM_LIMIT=1G"
grep -q 'of 1.0 GiB limit' "$t/out" || fail "admin GPUMEM_LIMIT_0 under GPUMEM_LIMIT: $(cat "$t/out")"
GPUMEM_LIMIT=1G "$G" policy > "$t/pol" 2>&1
grep -q '^GPUMEM_LIMIT_0 ' "$t/pol" && fail "the file's GPUMEM_LIMIT_0 is shown over GPUMEM_LIMIT: $(cat "$t/pol")"

# The forced group: a job's process joins slurm-<job id> with the file's
# group limit, whatever its own GPUMEM_GROUP says.
put 'GPUMEM_FORCE_GROUP=slurm-{SLURM_JOB_ID}\nGPUMEM_GROUP_LIMIT=2G\n'
alloc $((8 * M)) SLURM_JOB_ID=4242 GPUMEM_GROUP=mine GPUMEM_GROUP_LIMIT=1T GPUMEM_KEEP=1 ||
    fail "forced group: $(cat "$t/out")"
grep -q "GPUMEM_GROUP='mine' is replaced by the admin's group for this job, 'slurm-4242'" "$t/out" ||
    fail "forced group: no line: $(cat "$t/out")"
"$G" ps --all --json > "$t/ps" 2>&1 || fail "gpumem ps: $(cat "$t/ps")"
grep -q 'group=slurm-4242 group_limit=2.0GiB' "$t/ps" || fail "forced group not in the segment: $(cat "$t/ps")"
"$G" gc > /dev/null 2>&1

# Fail closed: bad line, loose mode, symlink; warn does not help.
put 'GPUMEM_MAX_LIMIT=1G\nGPUMEM_MAX_LIMIT=lots\n'
alloc $((8 * M)) GPUMEM_ON_BAD_CONFIG=warn
rc=$?
[ $rc -eq 2 ] || fail "bad line: exit $rc: $(cat "$t/out")"
grep -q "$POL:2: GPUMEM_MAX_LIMIT is set twice (first at line 1)" "$t/out" || fail "bad line: $(cat "$t/out")"
grep -q 'GPUMEM_ON_BAD_CONFIG does not apply to it' "$t/out" || fail "bad line: $(cat "$t/out")"
GPUMEM_ON_BAD_CONFIG=warn "$G" policy > /dev/null 2> "$t/pol"
[ $? -eq 2 ] || fail "gpumem policy accepted a bad admin file"
grep -q 'the admin policy file is at fault' "$t/pol" || fail "gpumem policy: $(cat "$t/pol")"
GPUMEM_ON_BAD_CONFIG=warn "$G" run -- /bin/true 2> "$t/pol" && fail "gpumem run ran under a bad admin file"
put 'GPUMEM_MAX_LIMIT=1G\n'
chmod 0664 "$POL"
alloc $((8 * M)) GPUMEM_ON_BAD_CONFIG=warn
rc=$?
[ $rc -eq 2 ] || fail "mode 0664: exit $rc: $(cat "$t/out")"
grep -q "is writable by group or others (mode 0664)" "$t/out" || fail "mode 0664: $(cat "$t/out")"
# ... and a program that never calls CUDA runs.
env LD_PRELOAD="$LIB" /bin/sh -c 'exit 0' || fail "a non-CUDA program was affected"
rm -f "$POL"
printf 'GPUMEM_MAX_LIMIT=1T\n' > "$t/real" && chmod 0644 "$t/real"
ln -s "$t/real" "$POL"
alloc $((8 * M))
rc=$?
[ $rc -eq 2 ] || fail "symlink: exit $rc: $(cat "$t/out")"
grep -q "is a symbolic link" "$t/out" || fail "symlink: $(cat "$t/out")"
rm -f "$POL"
# No file: nothing imposed.
alloc $((800 * M)) || fail "no admin file, no limit: $(cat "$t/out")"
echo "ok: admin policy file"
