#!/bin/sh
# tests/integ/test_nvml_crowd.sh — a context measured on a device that
# more processes share than NVML's first answer holds (64 entries): 70
# processes hold 1 MiB each (the simulated driver's NVML lists them all),
# then one more process under the shim makes its context; the shim reads
# the whole list and measures the context by its own entry (its debug
# line says which measure it took), exactly the simulated context.
# Exit 0 pass, 1 fail.
BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || exit 1
export LD_LIBRARY_PATH="$B/sim"
export SIMCUDA_SHM=${SIMCUDA_SHM:-gmcs$$}
export GPUMEM_SHM_PREFIX=gmcr$$
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-crowd.XXXXXX") || exit 1
pids=
stop() {
    exec 3>&- 2>/dev/null   # end of input: each holder frees and exits
    i=0
    while [ $i -lt 50 ] && [ -n "$pids" ] && kill -0 $pids 2>/dev/null; do
        sleep 0.1; i=$((i + 1))
    done
    [ -n "$pids" ] && kill $pids 2>/dev/null
    [ -n "$pids" ] && wait $pids 2>/dev/null
    rm -rf "$T"
    rm -f /dev/shm/"$GPUMEM_SHM_PREFIX".* /dev/shm/"$SIMCUDA_SHM".* 2>/dev/null
}
trap stop EXIT INT TERM
fail=0
bad() { echo "FAIL: $*"; fail=1; }
mkfifo "$T/in" || exit 1
exec 3<>"$T/in"   # the holders read it until the test ends
i=0
while [ $i -lt 70 ]; do
    "$B/tests/progs/nvmlview" --via dlsym hold 1048576 <"$T/in" >"$T/h$i" 2>&1 &
    pids="$pids $!"
    i=$((i + 1))
done
# every holder has allocated (or the test waits at most 60 s)
n=0; tries=0
while [ $tries -lt 600 ]; do
    n=$(cat "$T"/h* 2>/dev/null | grep -c holding)
    [ "$n" -ge 70 ] && break
    sleep 0.1; tries=$((tries + 1))
done
[ "$n" -ge 70 ] || bad "only $n of 70 holders holding"
out=$(GPUMEM_LIMIT=4G GPUMEM_LOG_LEVEL=debug LD_PRELOAD="$B/libgpumem.so" \
      "$B/tests/progs/apicheck" --via dlsym info 2>&1)
echo "$out" | grep -q "context measured by this process's NVML entry" ||
    bad "not measured by its own entry: $(echo "$out" | grep 'measured by')"
echo "$out" | grep -q "^free $((4294967296 - 314572800)) " ||
    bad "free is not the limit less the 300 MiB context: $(echo "$out" | grep '^free')"
exit $fail
