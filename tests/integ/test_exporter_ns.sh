#!/bin/sh
# tests/integ/test_exporter_ns.sh — `gpumem exporter` over processes of
# other pid namespaces sharing a GPUMEM_SHM_DIR. Two "containers" made
# with `unshare --pid --fork --mount-proc`, each running gpumem-trainsim
# as its pid 1 with a pod name of its own:
#   - while they run (stopped with SIGSTOP), the exporter labels each
#     one's series with its host pid (the unshare's child, found with
#     pgrep -P), its namespace, pod and container, and puts ns_pid 1 and
#     its pid namespace on the info row;
#   - the first is in a shared budget: its series carry the group, the
#     other's (pid 1 as well, in another namespace) do not;
#   - once both are killed (SIGKILL: the segments stay), they are left
#     out; with --dead both are exported as pid "~1", told apart by their
#     pidns label: two distinct series, never one duplicated.
# Needs root and a kernel that allows new pid namespaces. Exit 0 pass, 1
# fail, 77 skip.
BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
unshare --pid --fork --mount-proc true 2>/dev/null ||
    { echo "unshare --pid --fork --mount-proc is not permitted here"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-exns.XXXXXX") || exit 1
chmod 700 "$T"
D=$T/shm
mkdir -m 700 "$D" || exit 1
PREFIX=gmexns$$
export GPUMEM_SHM_PREFIX=$PREFIX GPUMEM_SHM_DIR=$D
export LD_LIBRARY_PATH="$B/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
U1= U2= H1= H2=
cleanup() {
    for p in $H1 $H2; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
    for p in $U1 $U2; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
failures=0
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }
G=$B/gpumem
# hold PID...: stop them outside an update (tests/integ/hold.sh).
. "$(dirname "$0")/hold.sh"

container() { # POD [GROUP]
    env ${2:+GPUMEM_GROUP=$2 GPUMEM_GROUP_LIMIT=4G} \
        GPUMEM_POD_NAMESPACE=team GPUMEM_POD_NAME=$1 GPUMEM_CONTAINER_NAME=main \
        unshare --pid --fork --mount-proc \
        "$B/gpumem" run --limit 2G -- "$B/gpumem-trainsim" --steps 1000000000 \
        --quiet >/dev/null 2>&1 &
}
container train-a gxns$$; U1=$!
container train-b; U2=$!
i=0
while [ $i -lt 100 ]; do
    H1=$(pgrep -P "$U1" | head -n 1); H2=$(pgrep -P "$U2" | head -n 1)
    n=$(ls "$D" | grep -c "^$PREFIX\.1\.ns[0-9]*$")
    [ -n "$H1" ] && [ -n "$H2" ] && [ "$n" = 2 ] && break
    sleep 0.05; i=$((i + 1))
done
[ "$n" = 2 ] || { echo "FAIL: expected two segments in $D, found: $(ls "$D")"; exit 1; }
# Wait until both have allocated, then hold them still.
i=0
until [ "$("$B/gpumem" exporter --once | grep -c '^gpumem_used_bytes{')" = 2 ]; do
    i=$((i + 1)); [ $i -lt 100 ] || { bad "the two containers' devices never appeared"; break; }
    sleep 0.05
done
hold "$H1" "$H2"

"$B/gpumem" exporter --once >"$T/live.txt" || bad "exporter --once failed"
for pair in "$H1 train-a" "$H2 train-b"; do
    set -- $pair
    grep -q "^gpumem_used_bytes{pid=\"$1\",command=\"gpumem-trainsim [^\"]*\",mode=\"grow\",\(group=\"[^\"]*\",\)\{0,1\}user=\"[^\"]*\",namespace=\"team\",pod=\"$2\",container=\"main\",device=\"0\",uuid=\"GPU-[0-9a-f-]*\"} [1-9]" "$T/live.txt" ||
        bad "$2: no used bytes under host pid $1 with its pod labels: $(grep '^gpumem_used_bytes' "$T/live.txt")"
    grep -q "^gpumem_process_info{pid=\"$1\",.*,ns_pid=\"1\",pidns=\"[0-9]*\"" "$T/live.txt" ||
        bad "$2: info row without ns_pid 1 and its pidns"
done
grep -q 'pid="~' "$T/live.txt" && bad "a live container's process without its host pid"
# The group of train-a's container: its pid 1 is a member, train-b's
# pid 1 (same pid, another namespace) is not.
grep -q "^gpumem_used_bytes{pid=\"$H1\",.*,group=\"gxns$$\"," "$T/live.txt" ||
    bad "train-a: no group label"
grep -q "^gpumem_used_bytes{pid=\"$H2\",.*group=" "$T/live.txt" &&
    bad "train-b has the group label of another namespace's pid 1"
grep -q "^gpumem_group_members{group=\"gxns$$\",state=\"live\"} 1$" "$T/live.txt" ||
    bad "group gxns$$: not one live member: $(grep '^gpumem_group_members' "$T/live.txt")"

kill -9 "$H1" "$H2"
for u in $U1 $U2; do wait "$u" 2>/dev/null; done
H1= H2= U1= U2=
"$B/gpumem" exporter --once >"$T/gone.txt" || bad "exporter --once failed"
grep -q '^gpumem_used_bytes{' "$T/gone.txt" && bad "dead containers' processes exported without --dead"
"$B/gpumem" exporter --once --dead >"$T/dead.txt" || bad "exporter --once --dead failed"
n=$(grep '^gpumem_used_bytes{pid="~1",pidns="[0-9]*",' "$T/dead.txt" | sed 's/} .*//' | sort -u | wc -l)
[ "$n" = 2 ] || bad "--dead: $n distinct series of pid ~1, want 2: $(grep '^gpumem_used_bytes' "$T/dead.txt")"
if command -v promtool >/dev/null 2>&1; then
    promtool check metrics <"$T/dead.txt" >"$T/pt" 2>&1 || bad "promtool: $(cat "$T/pt")"
fi
[ $failures -eq 0 ] || exit 1
echo "exporter across pid namespaces: host pids, pod labels, dead ones apart"
exit 0
