#!/bin/sh
# tests/integ/test_containers.sh — processes of other pid namespaces seen
# from outside through a shared GPUMEM_SHM_DIR. Two "containers" made with
# `unshare --pid --fork --mount-proc`, each running gpumem-trainsim on the
# simulated driver as its pid 1 (so both have the same pid inside), with a
# Slurm job id and a pod name of their own, write their segments into one
# directory. From outside (this pid namespace):
#   - both are listed (two segments, no collision: the names carry the pid
#     namespace), live, with their host pids (the children of the unshare
#     processes, found by pgrep -P, not by gpumem), their pid 1 inside,
#     their JOB labels and identity;
#   - gpumem gc removes neither, nor the group file of the second one (its
#     only member, pid 1 inside, is live by its lock); gpumem report
#     HOSTPID reads one;
#   - once the first is killed (SIGKILL: its segment stays), it is listed
#     dead with no host pid ("~1" in the text table, "pid":null in JSON)
#     while the second is still live with its host pid; gpumem gc removes
#     the dead one's segment and leaves the live one's;
#   - once the second is killed too, gc removes its segment and its group;
#   - --job selects one container's process; in the interactive
#     gpumem-top (tmux, when installed) the JOB column shows each with its
#     host pid, and j shows one job.
# The trainsims are stopped (SIGSTOP) while they are inspected: alive,
# and no CPU spent. Needs root and a kernel that allows new pid
# namespaces. Exit 0 pass, 1 fail, 77 skip.
BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
for c in unshare pgrep; do
    command -v $c >/dev/null 2>&1 || { echo "$c not installed"; exit 77; }
done
unshare --pid --fork --mount-proc true 2>/dev/null ||
    { echo "unshare --pid --fork --mount-proc is not permitted here"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-ctr.XXXXXX") || exit 1
chmod 700 "$T"
D=$T/shm
mkdir -m 700 "$D" || exit 1
PREFIX=gmctr$$
export GPUMEM_SHM_PREFIX=$PREFIX GPUMEM_SHM_DIR=$D
export LD_LIBRARY_PATH="$B/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
U1= U2= H1= H2=
cleanup() {
    for p in $H1 $H2; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
    for p in $U1 $U2; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    [ -S "$T/tmux.sock" ] && tmux -S "$T/tmux.sock" kill-server 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
failures=0
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }

# container JOB POD [gpumem run options]: a new pid namespace whose pid 1
# is trainsim
container() {
    j=$1 pod=$2
    shift 2
    SLURM_JOB_ID=$j SLURM_STEP_ID=0 GPUMEM_POD_NAMESPACE=team \
    GPUMEM_POD_NAME=$pod GPUMEM_CONTAINER_NAME=main \
        unshare --pid --fork --mount-proc \
        "$B/gpumem" run --limit 2G "$@" -- "$B/gpumem-trainsim" \
        --steps 1000000000 --quiet >/dev/null 2>&1 &
}
GROUP=cg$$
container 9101 train-a; U1=$!
# The second one also in a group (its only member): the group file is in
# the shared directory too, its member's pid is 1 in its namespace.
container 9102 train-b --group "$GROUP" --group-limit 4G; U2=$!

# Each unshare's child is the container's pid 1, as the host sees it.
i=0
while [ $i -lt 100 ]; do
    H1=$(pgrep -P "$U1" | head -n 1); H2=$(pgrep -P "$U2" | head -n 1)
    n=$(ls "$D" | grep -c "^$PREFIX\.1\.ns[0-9]*$")
    [ -n "$H1" ] && [ -n "$H2" ] && [ "$n" = 2 ] && [ -e "$D/$PREFIX.group@$GROUP" ] &&
        break
    sleep 0.05; i=$((i + 1))
done
[ "$n" = 2 ] || { echo "FAIL: expected two segments in $D, found: $(ls "$D")"; exit 1; }
kill -STOP "$H1" "$H2"
# pid 1 inside each: the same pid in two namespaces
for h in $H1 $H2; do
    inner=$(awk '/^NSpid:/ {print $NF}' /proc/"$h"/status)
    [ "$inner" = 1 ] || bad "host pid $h is pid '$inner' in its namespace, not 1"
done

# One JSON object per line: "pid":...,"ns_pid":..,"pidns":..,...,"state":..
procs() { "$B/gpumem" ps --all --json | sed 's/\],"groups":.*//; s/{"pid":/\n{"pid":/g' | grep '^{"pid":'; }
row() { procs | grep "\"job\":\"$1\""; }
field() { echo "$1" | sed -n "s/.*\"$2\":\\(\"[^\"]*\"\\|[^,}]*\\).*/\\1/p" | head -n 1; }

check_live() { # JOB HOSTPID POD
    r=$(row "$1.0")
    [ -n "$r" ] || { bad "job $1.0 not listed: $(procs)"; return; }
    [ "$(field "$r" pid)" = "$2" ] || bad "job $1: pid $(field "$r" pid), want the host pid $2"
    [ "$(field "$r" ns_pid)" = 1 ] || bad "job $1: ns_pid $(field "$r" ns_pid), want 1"
    [ "$(field "$r" state)" = '"live"' ] || bad "job $1: state $(field "$r" state), want live"
    [ "$(field "$r" pod_name)" = "\"$3\"" ] || bad "job $1: pod_name $(field "$r" pod_name)"
    [ "$(field "$r" container_name)" = '"main"' ] || bad "job $1: container_name $(field "$r" container_name)"
    ns=$(stat -L -c %i /proc/"$2"/ns/pid)
    [ "$(field "$r" pidns)" = "$ns" ] || bad "job $1: pidns $(field "$r" pidns), want $ns"
}
check_live 9101 "$H1" train-a
check_live 9102 "$H2" train-b

out=$("$B/gpumem" gc 2>&1)
[ -z "$out" ] || bad "gc with both running said: $out"
[ "$(ls "$D" | wc -l)" = 3 ] || bad "gc removed a live container's segment or group: $(ls "$D")"
# The group's member, seen from outside: live (by its lock; its pid 1
# means init here).
"$B/gpumem" ps --json | grep -q "\"group\":\"$GROUP\",.*\"live_members\":1,\"dead_members\":0" ||
    bad "group $GROUP: its member in a container is not live: $("$B/gpumem" ps --json | sed 's/.*"groups"/"groups"/')"
"$B/gpumem" ps --json | sed 's/.*"groups"//' |
    grep -q '"members":\[{"slot":0,"pid":1,"state":"live",.*"command":"[^"]*gpumem-trainsim --steps 1000000000' ||
    bad "group $GROUP: its member's command is not found from its namespaced segment: $("$B/gpumem" ps --json | sed 's/.*"groups"/"groups"/')"
"$B/gpumem" report "$H2" >"$T/report" 2>&1 || bad "gpumem report $H2 failed: $(cat "$T/report")"
grep -q "^gpumem: device 0: peak .* of 2.0 GiB limit .* now;" "$T/report" ||
    bad "report of $H2 is not the live report of its 2G limit: $(cat "$T/report")"
[ "$("$B/gpumem" ps --json --job train-b | grep -o '"ns_pid":' | wc -l)" = 1 ] ||
    bad "ps --job train-b does not list exactly one process"
"$B/gpumem-top" --once --job 9101 | grep -q "^ *$H1 .* 9101\.0 " ||
    bad "gpumem-top --once --job 9101 does not show host pid $H1: $("$B/gpumem-top" --once --job 9101)"

# The interactive view: the JOB column with host pids; j shows one job.
if command -v tmux >/dev/null 2>&1; then
    SOCK=$T/tmux.sock
    tmux -S "$SOCK" new-session -d -x 200 -y 20 \
        "env LC_ALL=C GPUMEM_SHM_PREFIX=$PREFIX GPUMEM_SHM_DIR=$D $B/gpumem-top -d 0.2" ||
        bad "tmux could not start gpumem-top"
    scr() { tmux -S "$SOCK" capture-pane -p 2>/dev/null; }
    until_screen() { # ERE, what it waits for
        k=0
        until scr | grep -Eq "$1"; do
            k=$((k + 1)); [ $k -gt 100 ] && { bad "$2: $(scr)"; return 1; }
            sleep 0.05
        done
    }
    until_screen "^ *$H1 +root +9101\.0 " "no row of host pid $H1 with JOB 9101.0" &&
    until_screen "^ *$H2 +root +9102\.0 " "no row of host pid $H2 with JOB 9102.0" &&
    tmux -S "$SOCK" send-keys j &&
    until_screen "job: 9101\.0" "j did not select job 9101.0" &&
    { scr | grep -Eq "^ *$H2 " && bad "job 9101.0 selected, but $H2 still shown: $(scr)"; }
    tmux -S "$SOCK" kill-server 2>/dev/null
else
    echo "note: tmux not installed; the interactive JOB column not checked"
fi

# Kill the first container's trainsim (its namespace goes with it).
kill -9 "$H1"
wait "$U1" 2>/dev/null
U1=
i=0
while [ $i -lt 100 ] && [ -d /proc/"$H1" ]; do sleep 0.05; i=$((i + 1)); done
r=$(row 9101.0)
[ "$(field "$r" state)" = '"dead"' ] || bad "killed job 9101: state $(field "$r" state), want dead"
[ "$(field "$r" pid)" = null ] || bad "killed job 9101: pid $(field "$r" pid), want null (not known)"
[ "$(field "$r" ns_pid)" = 1 ] || bad "killed job 9101: ns_pid $(field "$r" ns_pid), want 1"
"$B/gpumem" ps --all | grep -q "^ *~1 .* 9101\.0 .* dead " ||
    bad "gpumem ps --all does not show the killed one as ~1, dead: $("$B/gpumem" ps --all)"
check_live 9102 "$H2" train-b

ns1=$(ls "$D" | sed -n "s/^$PREFIX\.1\.ns//p" | while read -r ns; do
    [ "$ns" = "$(stat -L -c %i /proc/"$H2"/ns/pid)" ] || echo "$ns"; done)
out=$("$B/gpumem" gc 2>&1)
echo "$out" | grep -q "^removed $D/$PREFIX\.1\.ns$ns1 (pid 1 in pid namespace $ns1, died)$" ||
    bad "gc did not remove the dead container's segment: '$out'"
[ "$(echo "$out" | grep -c .)" = 1 ] || bad "gc removed more than the dead segment: $out"
ls "$D" | grep -q "^$PREFIX\.1\.ns$(stat -L -c %i /proc/"$H2"/ns/pid)$" ||
    bad "gc removed the live container's segment"
check_live 9102 "$H2" train-b
[ -e "$D/$PREFIX.group@$GROUP" ] || bad "gc removed the live container's group file"

# The second one killed too: gc removes its segment and its group.
kill -9 "$H2"
wait "$U2" 2>/dev/null
U2=
i=0
while [ $i -lt 100 ] && [ -d /proc/"$H2" ]; do sleep 0.05; i=$((i + 1)); done
out=$("$B/gpumem" gc 2>&1)
echo "$out" | grep -q "^removed $D/$PREFIX\.1\.ns[0-9]* (pid 1 in pid namespace [0-9]*, died)$" ||
    bad "gc did not remove the second container's segment: '$out'"
echo "$out" | grep -q "^removed $D/$PREFIX\.group@$GROUP (group $GROUP, no live member, 1 dead)$" ||
    bad "gc did not remove the dead container's group: '$out'"
[ -z "$(ls "$D")" ] || bad "left in $D: $(ls "$D")"

[ "$failures" = 0 ] || exit 1
echo "ok: two containers listed with host pids $H1 $H2, liveness before and after a kill, gc"
