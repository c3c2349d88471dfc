#!/bin/sh
# tests/integ/test_sigexit.sh — exit() from a signal handler that
# interrupted the shim (tests/progs/sigexit.c), on the simulated driver:
# 100 runs, each ending at its 50th SIGALRM (one every 100 µs) while its
# thread allocates and frees in a loop, so that the signal lands inside a
# telemetry update in a good share of them. Every run must end with
# status 0 within 20 s (the shim's exit handlers run on the interrupted
# thread: they must not wait for the writer lock that thread holds, not
# even until they give up on it with a warning),
# print its exit report, and leave no segment behind. Exit 0 pass, 1
# fail.
BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
PREFIX=gmse$$
export GPUMEM_SHM_PREFIX=$PREFIX
export LD_LIBRARY_PATH="$B/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ERR=$(mktemp "${TMPDIR:-/tmp}/gm-sigexit.XXXXXX") || exit 1
trap 'rm -f "$ERR" /dev/shm/"$PREFIX".*' EXIT
command -v timeout >/dev/null 2>&1 || { echo "timeout(1) not found"; exit 77; }
failures=0
i=0
while [ $i -lt 100 ]; do
    i=$((i + 1))
    GPUMEM_LIMIT=64G GPUMEM_REPORT=1 LD_PRELOAD="$B/libgpumem.so" \
        timeout -s KILL 20 "$B/tests/progs/sigexit" 50 2>"$ERR"
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "FAIL: run $i ended with status $rc (137: hung, killed)"
        sed 's/^/    /' "$ERR"
        failures=$((failures + 1))
    elif grep -q "writer lock" "$ERR"; then
        echo "FAIL: run $i waited for its own writer lock:"
        sed 's/^/    /' "$ERR"
        failures=$((failures + 1))
    elif ! grep -q "^gpumem: device 0: " "$ERR"; then
        echo "FAIL: run $i printed no exit report:"
        sed 's/^/    /' "$ERR"
        failures=$((failures + 1))
    fi
done
left=$(ls /dev/shm 2>/dev/null | grep -c "^$PREFIX\." || true)
[ "$left" -eq 0 ] || { echo "FAIL: $left segment(s) left in /dev/shm"; failures=$((failures + 1)); }
[ $failures -eq 0 ] && echo "100 runs ended by exit() from a signal handler, none hung"
[ $failures -eq 0 ]
