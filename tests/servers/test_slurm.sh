#!/bin/sh
# tests/servers/test_slurm.sh — spank_gpumem.so in a real Slurm: one node on
# localhost (munged, slurmctld, slurmd started here, in a temporary folder,
# with their own munge key and socket and free ports, no cgroups:
# proctrack/linuxproc, task/none), the plugin registered in a test
# plugstack.conf, jobs over the simulated driver. Checks:
#   - srun, sbatch and salloc --help list --gpu-mem and --gpu-mem-policy;
#   - srun --gpu-mem=64M: gpumem-trainsim is refused at 64 MiB (exit 3);
#   - srun -n2 --gpu-mem=256M: both tasks are members of one group
#     slurm-<jobid> of limit 256 MiB, with a share of 128 MiB each
#     (gpumem ps), and together cannot pass it;
#   - sbatch --wait --gpu-mem=128M: the batch step is held to 128 MiB and
#     trainsim runs to the end within it;
#   - --gpu-mem=bogus and a forbidden --gpu-mem-policy are refused at
#     submission by srun and sbatch, naming the option and the forms, and
#     no job is created;
#   - a job cancelled while its tasks hold memory (as root and as nobody)
#     leaves no group file;
#   - a job asking above the plugstack ceiling (max=512M) is told and
#     clamped; share:F under it (other units) gets the ceiling as its
#     group limit; a job that asks nothing gets the site default; a job's
#     own GPUMEM_LIMIT=none, GPUMEM_LIMIT_0 and prefix do not lift the
#     limit;
#   - steps in sbatch and salloc inherit the allocation's --gpu-mem or
#     give their own;
#   - a node without the library does not start the task; a wrong
#     plugstack.conf argument stops srun;
#   - docs/slurm.md's help block is what srun --help prints.
# The daemons are stopped by pid on every exit path. Needs root (slurmd
# runs jobs as their user) and the packages slurm-wlm, munge and
# libslurm-dev (exit 77 otherwise). Setting up the node (munged to an idle
# node) takes about 1.2 s on the 2-core machine (printed as "setup: N ms";
# a cold install of the packages adds about 4 s); the whole test about 6 s.
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
case $BUILD in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac

for c in munged slurmctld slurmd srun sbatch salloc squeue scontrol scancel; do
    command -v $c >/dev/null 2>&1 || PATH=$PATH:/usr/sbin
    command -v $c >/dev/null 2>&1 || {
        echo "skip: $c not found (apt-get install slurm-wlm munge libslurm-dev)"; exit 77; }
done
if [ ! -f "$B/spank_gpumem.so" ]; then
    echo "skip: $B/spank_gpumem.so not built (make spank needs libslurm-dev)"; exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "skip: a Slurm node needs root (slurmd starts jobs as their user)"; exit 77
fi
id munge >/dev/null 2>&1 || { echo "skip: no user munge (apt-get install munge)"; exit 77; }
for f in libgpumem.so sim/libcuda.so.1 gpumem gpumem-trainsim tests/progs/cudahold; do
    [ -e "$B/$f" ] || { echo "FAIL: $B/$f missing (make all tests)"; exit 1; }
done

now_ms() { echo $(($(date +%s%N) / 1000000)); }
t0=$(now_ms)
T=$(mktemp -d /tmp/gm-slurm.XXXXXX) || exit 1
chmod 0755 "$T"
PIDS=""
fails=0

stop() {
    # Jobs first (their slurmstepd end with them), then the daemons by pid.
    [ -f "$T/slurm.conf" ] && SLURM_CONF=$T/slurm.conf scancel --quiet -u root >/dev/null 2>&1
    for p in $PIDS; do kill "$p" 2>/dev/null; done
    for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
        alive=""
        for p in $PIDS; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
        [ -z "$alive" ] && break
        sleep 0.25
    done
    for p in $alive; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap stop EXIT
trap 'exit 130' INT TERM

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
show() { sed 's/^/    | /' "$1"; }

# Two free TCP ports on loopback, from a range that depends on our pid.
port_free() { ! ss -Htan 2>/dev/null | awk '{print $4}' | grep -q ":$1\$"; }
p=$((20000 + ($$ * 7) % 30000))
while ! port_free $p || ! port_free $((p + 1)); do p=$((p + 2)); done
CTLD_PORT=$p; SLURMD_PORT=$((p + 1))

# ---- munge: own key, socket and pid file -----------------------------------
mkdir -p "$T/munge" "$T/state" "$T/spool" "$T/log"
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 2>/dev/null
chown -R munge:munge "$T/munge"
chmod 0755 "$T/munge"; chmod 0400 "$T/munge/munge.key"
SOCK=$T/munge/munge.socket
setpriv --reuid=munge --regid=munge --clear-groups munged --foreground \
    --socket="$SOCK" --key-file="$T/munge/munge.key" \
    --pid-file="$T/munge/munged.pid" --log-file="$T/munge/munged.log" \
    --seed-file="$T/munge/munged.seed" >"$T/log/munged.out" 2>&1 &
PIDS="$!"
i=0
until munge -n --socket="$SOCK" 2>/dev/null | unmunge --socket="$SOCK" >/dev/null 2>&1; do
    i=$((i + 1))
    if [ $i -gt 100 ] || ! kill -0 "$PIDS" 2>/dev/null; then
        echo "FAIL: munged did not start"; show "$T/log/munged.out"
        show "$T/munge/munged.log" 2>/dev/null; exit 1
    fi
    sleep 0.05
done

# ---- slurm.conf, plugstack.conf ----------------------------------------------
# The site: a 512 MiB ceiling, a 200 MiB default; the library from this
# build; the test's shm prefix, so run-tests.sh finds anything left behind.
PREFIX=${GPUMEM_SHM_PREFIX:-gmslurm$$}
cat >"$T/plugstack.conf" <<EOF
required $B/spank_gpumem.so lib=$B/libgpumem.so prefix=$PREFIX default=200M max=512M
EOF
cat >"$T/slurm.conf" <<EOF
ClusterName=gmtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCK
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
PlugStackConfig=$T/plugstack.conf
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=5 State=UP
EOF
SLURM_CONF=$T/slurm.conf
export SLURM_CONF
slurmctld -D -i -f "$SLURM_CONF" >"$T/log/slurmctld.out" 2>&1 &
PIDS="$PIDS $!"
slurmd -D -N localhost -f "$SLURM_CONF" >"$T/log/slurmd.out" 2>&1 &
PIDS="$PIDS $!"
i=0
until sinfo -h -N -o '%T' 2>/dev/null | grep -Eq '^(idle|mixed|allocated)'; do
    i=$((i + 1))
    if [ $i -gt 200 ]; then
        echo "FAIL: the node did not come up"; sinfo -N 2>&1
        show "$T/log/slurmctld.log"; show "$T/log/slurmd.log"; exit 1
    fi
    sleep 0.05
done
t1=$(now_ms)
echo "setup: $((t1 - t0)) ms (munged, slurmctld, slurmd on 127.0.0.1:$CTLD_PORT/$SLURMD_PORT)"
for p in $CTLD_PORT $SLURMD_PORT; do
    if ss -Htln 2>/dev/null | awk '{print $4}' | grep ":$p\$" | grep -vq '^127\.0\.0\.1:'; then
        fail "port $p listens beyond loopback: $(ss -Htln | grep ":$p ")"
    fi
done

# What the jobs run on: the simulated driver, no context charge.
export LD_LIBRARY_PATH="$B/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SIMCUDA_CONTEXT=0 SIMCUDA_MEMORY=4G
TS="$B/gpumem-trainsim"
HOLD="$B/tests/progs/cudahold"
MIB=1048576

# ---- --help --------------------------------------------------------------------
for c in srun sbatch salloc; do
    $c --help >"$T/help" 2>&1
    if grep -q -- '--gpu-mem=SIZE|NN%|share\[:F\]' "$T/help" &&
       grep -q -- '--gpu-mem-policy=mode=M,on-oom=P' "$T/help"; then
        ok "$c --help lists --gpu-mem and --gpu-mem-policy"
    else
        fail "$c --help does not list the options"; show "$T/help"
    fi
done

# ---- srun --gpu-mem=64M: trainsim refused at 64 MiB --------------------------
srun -N1 -n1 --gpu-mem=64M "$TS" --steps 5 --quiet >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -eq 3 ] && grep -q 'refused: .* of 64.0 MiB limit' "$T/err"; then
    ok "srun --gpu-mem=64M: trainsim refused at 64 MiB (exit 3)"
else
    fail "srun --gpu-mem=64M: exit $rc, expected 3 and a refusal at 64.0 MiB"
    show "$T/out"; show "$T/err"
fi

# The task's variables: the limit, the group of the job, the preload.
srun -N1 -n1 --gpu-mem=64M --gpu-mem-policy=mode=grow,on-oom=wait:2s \
    sh -c 'echo "job=$SLURM_JOB_ID"; env | grep -E "^(GPUMEM_|LD_PRELOAD=)" | sort' \
    >"$T/env" 2>"$T/err"
jid=$(sed -n 's/^job=//p' "$T/env")
if grep -qx "GPUMEM_LIMIT=$((64 * MIB))" "$T/env" &&
   grep -qx "GPUMEM_GROUP_LIMIT=$((64 * MIB))" "$T/env" &&
   grep -qx "GPUMEM_GROUP=slurm-$jid" "$T/env" &&
   grep -qx "GPUMEM_ON_OOM=wait:2s" "$T/env" &&
   grep -qx "GPUMEM_MODE=grow" "$T/env" &&
   grep -qx "GPUMEM_SHM_PREFIX=$PREFIX" "$T/env" &&
   grep -qx "LD_PRELOAD=$B/libgpumem.so" "$T/env"; then
    ok "a task gets GPUMEM_LIMIT, GPUMEM_GROUP=slurm-$jid, the policy and LD_PRELOAD"
else
    fail "the task's environment is not what the plugin sets"; show "$T/env"; show "$T/err"
fi

# The job's own environment cannot lift it: GPUMEM_LIMIT=none and a
# per-device GPUMEM_LIMIT_0 are replaced, a foreign LD_PRELOAD is kept
# after the library.
GPUMEM_LIMIT=none GPUMEM_LIMIT_0=none GPUMEM_SHM_PREFIX=elsewhere \
    LD_PRELOAD=/lib/x86_64-linux-gnu/libc.so.6 \
    srun -N1 -n1 --gpu-mem=64M sh -c 'env | grep -E "^(GPUMEM_LIMIT|GPUMEM_SHM_PREFIX|LD_PRELOAD)" | sort; exec "$0" 100M' "$HOLD" \
    >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -eq 3 ] && ! grep -q '^GPUMEM_LIMIT_0=' "$T/out" &&
   grep -qx "GPUMEM_LIMIT=$((64 * MIB))" "$T/out" &&
   grep -qx "GPUMEM_SHM_PREFIX=$PREFIX" "$T/out" &&
   grep -qx "LD_PRELOAD=$B/libgpumem.so:/lib/x86_64-linux-gnu/libc.so.6" "$T/out"; then
    ok "the job's own GPUMEM_LIMIT=none, GPUMEM_LIMIT_0=none and GPUMEM_SHM_PREFIX do not lift --gpu-mem=64M; its LD_PRELOAD follows the library"
else
    fail "a job's own GPUMEM_LIMIT=none / GPUMEM_LIMIT_0 / prefix survived (exit $rc)"
    show "$T/out"; show "$T/err"
fi

# ---- srun -n2 --gpu-mem=256M: one group for the job's tasks -----------------
rm -f "$T/go"
srun -N1 -n2 --gpu-mem=256M "$HOLD" 100M "$T/go" 20 >"$T/n2.out" 2>"$T/n2.err" &
srun_pid=$!
i=0; members=0
while [ $i -lt 150 ]; do
    "$B/gpumem" ps --prefix "$PREFIX" >"$T/ps" 2>&1
    members=$(awk '/^ *GROUP/ {g=1; next} g && /^slurm-[0-9]+ / {print $NF; exit}' "$T/ps")
    case $members in 2*) break ;; esac
    i=$((i + 1)); sleep 0.1
done
jid=$(squeue -h -o '%i %t' 2>/dev/null | awk '$2 == "R" {print $1; exit}')
line=$(grep -E "^slurm-$jid " "$T/ps")
nm=$(awk -v g="slurm-$jid" '$1 == g {f=1; next} f && /^ +[0-9]+ / {n++} f && !/^ / {f=0} END {print n+0}' "$T/ps")
if [ -n "$jid" ] && [ -n "$line" ] && echo "$line" | grep -q ' 256.0M ' &&
   [ "$nm" -eq 2 ] && [ "$(grep -c ' 128.0M ' "$T/ps")" -eq 2 ]; then
    ok "srun -n2 --gpu-mem=256M: gpumem ps lists group slurm-$jid (limit 256 MiB) with 2 members of share 128 MiB"
else
    fail "srun -n2: no group slurm-$jid with two members of share 128 MiB in gpumem ps (job '$jid', members '$members')"
    show "$T/ps"
fi
# A third process of the job (same group, same limit) cannot pass the
# group's budget: 2 x 100 MiB held, 100 MiB more is refused.
if [ -n "$jid" ]; then
    GPUMEM_GROUP=slurm-$jid GPUMEM_GROUP_LIMIT=256M GPUMEM_LIMIT=256M \
        GPUMEM_SHM_PREFIX=$PREFIX LD_PRELOAD=$B/libgpumem.so \
        "$HOLD" 100M >"$T/third" 2>&1
    rc=$?
    if [ $rc -eq 3 ] && grep -q "group 'slurm-$jid'" "$T/third"; then
        ok "the job's group holds its tasks together to 256 MiB (a third 100 MiB refused)"
    else
        fail "a third member of slurm-$jid got 100 MiB past the group's 256 MiB (exit $rc)"
        show "$T/third"
    fi
fi
touch "$T/go"
wait $srun_pid
rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c 'holding 104857600' "$T/n2.out")" -eq 2 ]; then
    ok "srun -n2: both tasks held 100 MiB and ended"
else
    fail "srun -n2 exit $rc"; show "$T/n2.out"; show "$T/n2.err"
fi

# Static mode: each task's arena is its half of the job's budget, so both
# start (the second would find no room for a whole-budget arena).
rm -f "$T/go"
srun -N1 -n2 --gpu-mem=256M --gpu-mem-policy=mode=static \
    sh -c 'echo "limit=$GPUMEM_LIMIT"; exec "$0" 100M "$1" 20' "$HOLD" "$T/go" \
    >"$T/st.out" 2>"$T/st.err" &
srun_pid=$!
i=0
until [ "$(cat "$T/st.out" 2>/dev/null | grep -c holding)" -eq 2 ] || [ $i -gt 150 ]; do
    i=$((i + 1)); sleep 0.1
done
touch "$T/go"; wait $srun_pid; rc=$?
if [ $rc -eq 0 ] && [ "$(grep -cx "limit=$((128 * MIB))" "$T/st.out")" -eq 2 ] &&
   ! grep -q 'no room for a static arena' "$T/st.err"; then
    ok "srun -n2 --gpu-mem=256M --gpu-mem-policy=mode=static: a 128 MiB arena each, both ran"
else
    fail "static mode with two tasks: exit $rc"; show "$T/st.out"; show "$T/st.err"
fi

# ---- a job cancelled while its tasks hold memory -------------------------------
# Killed tasks cannot leave their group; the step's end removes the file
# (as the job's user, who owns it: root here, then nobody).
cancel_check() { # user
    rm -f "$T/go" "$T/c.out" "$T/c.err"
    setpriv --reuid="$1" --regid="$(id -g "$1")" --clear-groups \
        srun -N1 -n2 --gpu-mem=256M "$HOLD" 100M "$T/go" 30 >"$T/c.out" 2>"$T/c.err" &
    srun_pid=$!
    i=0
    until [ "$(cat "$T/c.out" 2>/dev/null | grep -c holding)" -eq 2 ] || [ $i -gt 150 ]; do
        i=$((i + 1)); sleep 0.1
    done
    cj=$(squeue -h -o '%i %t' 2>/dev/null | awk '$2 == "R" {print $1; exit}')
    gfile=/dev/shm/$PREFIX.group@slurm-$cj
    if [ -n "$cj" ] && [ -f "$gfile" ] && [ "$(stat -c %U "$gfile")" = "$1" ]; then
        scancel "$cj"
        wait $srun_pid
        i=0
        while [ -f "$gfile" ] && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
        if [ ! -f "$gfile" ]; then
            ok "scancel of job $cj (user $1): its group file is removed at the step's end"
        else
            fail "scancel of job $cj (user $1) left $gfile"
            "$B/gpumem" ps --all --prefix "$PREFIX" | sed 's/^/    | /'
            rm -f "$gfile"
        fi
    else
        squeue -a -o "%i %t %u" >"$T/c.q" 2>&1; ls -l /dev/shm | grep "$PREFIX" >>"$T/c.q"
        touch "$T/go"; wait $srun_pid
        fail "the job of $1 to cancel did not start with its group file (job '$cj', srun exit $?)"
        show "$T/c.out"; show "$T/c.err"; show "$T/c.q"
    fi
    # The node completes the cancelled job before the next one starts.
    i=0
    until sinfo -h -N -o '%T' 2>/dev/null | grep -qx idle || [ $i -gt 300 ]; do
        i=$((i + 1)); sleep 0.1
    done
    # The killed tasks' own segments stay, as for any killed process
    # (gpumem gc removes them).
    for f in $(cd /dev/shm && ls -d "$PREFIX".[0-9]* 2>/dev/null); do
        pid=${f##*.}; kill -0 "$pid" 2>/dev/null || rm -f "/dev/shm/$f"
    done
}
cancel_check root
if id nobody >/dev/null 2>&1; then cancel_check nobody; else echo "(no user nobody: the non-root case is not run)"; fi

# ---- sbatch --wait --gpu-mem=128M -------------------------------------------
cat >"$T/job.sh" <<EOF
#!/bin/sh
echo "limit=\$GPUMEM_LIMIT group=\$GPUMEM_GROUP job=\$SLURM_JOB_ID"
"$HOLD" 200M; echo "hold200=\$?"
"$TS" --steps 10 --layers 2 --hidden 512 --batch 8 --seq 64 --quiet; echo "trainsim=\$?"
EOF
sbatch --wait --gpu-mem=128M -o "$T/batch.out" -e "$T/batch.err" "$T/job.sh" >"$T/sb" 2>&1
rc=$?
bj=$(sed -n 's/^Submitted batch job //p' "$T/sb")
if [ $rc -eq 0 ] && grep -qx "limit=$((128 * MIB)) group=slurm-$bj job=$bj" "$T/batch.out" &&
   grep -qx 'hold200=3' "$T/batch.out" && grep -qx 'trainsim=0' "$T/batch.out"; then
    ok "sbatch --wait --gpu-mem=128M: job $bj held to 128 MiB (200 MiB refused), trainsim ran"
else
    fail "sbatch --wait --gpu-mem=128M: exit $rc"; show "$T/sb"
    show "$T/batch.out" 2>/dev/null; show "$T/batch.err" 2>/dev/null
fi

# Steps inside an allocation keep the allocation's request: srun in an
# sbatch script and in salloc.
cat >"$T/steps.sh" <<EOF
#!/bin/sh
srun -n1 sh -c 'echo "step=\$GPUMEM_LIMIT"'
EOF
sbatch --wait --gpu-mem=96M -o "$T/steps.out" -e "$T/steps.err" "$T/steps.sh" >"$T/sb" 2>&1
if grep -qx "step=$((96 * MIB))" "$T/steps.out"; then
    ok "srun inside sbatch --gpu-mem=96M gets 96 MiB"
else
    fail "srun inside sbatch --gpu-mem=96M"; show "$T/sb"; show "$T/steps.out"; show "$T/steps.err"
fi
salloc -N1 -n1 --gpu-mem=80M sh -c 'srun -n1 sh -c "echo step=\$GPUMEM_LIMIT";
    srun -n1 --gpu-mem=70M sh -c "echo own=\$GPUMEM_LIMIT"' >"$T/out" 2>"$T/err"
if grep -qx "step=$((80 * MIB))" "$T/out" && grep -qx "own=$((70 * MIB))" "$T/out"; then
    ok "srun inside salloc --gpu-mem=80M gets 80 MiB, or its own --gpu-mem=70M"
else
    fail "srun inside salloc --gpu-mem=80M"; show "$T/out"; show "$T/err"
fi

# share:F under a ceiling in bytes: each of n tasks F/n of the GPU, the
# job's tasks together the ceiling (units differ: told at submission).
srun -N1 -n2 --gpu-mem=share:0.5 sh -c 'echo "share=$GPUMEM_LIMIT $GPUMEM_GROUP_LIMIT"' \
    >"$T/out" 2>"$T/err"
if [ "$(grep -cx "share=25% $((512 * MIB))" "$T/out")" -eq 2 ] &&
   grep -q 'are in different units; each task is held to 0.5 of the GPU divided by the job.s tasks on the node, and the job.s tasks on one GPU together to 512M' "$T/err"; then
    ok "srun -n2 --gpu-mem=share:0.5 under max=512M: 25% each, 512 MiB together"
else
    fail "srun -n2 --gpu-mem=share:0.5"; show "$T/out"; show "$T/err"
fi

# ---- bad values refused at submission -----------------------------------------
njobs() { squeue -h -o %i 2>/dev/null | wc -l; }
before=$(scontrol show config 2>/dev/null | sed -n 's/^NEXT_JOB_ID *= *//p')
srun -N1 -n1 --gpu-mem=bogus true >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -ne 0 ] && grep -q -- "--gpu-mem='bogus' is not a size; use SIZE" "$T/err" &&
   grep -q 'share\[:F\]' "$T/err"; then
    ok "srun --gpu-mem=bogus refused (exit $rc): $(grep -- --gpu-mem "$T/err" | head -n 1)"
else
    fail "srun --gpu-mem=bogus: exit $rc"; show "$T/err"
fi
sbatch --gpu-mem=bogus --wrap true >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -ne 0 ] && grep -q -- "--gpu-mem='bogus' is not a size" "$T/err" &&
   ! grep -q 'Submitted' "$T/out"; then
    ok "sbatch --gpu-mem=bogus refused before a job was made (exit $rc)"
else
    fail "sbatch --gpu-mem=bogus: exit $rc"; show "$T/out"; show "$T/err"
fi
srun -N1 -n1 --gpu-mem=64M --gpu-mem-policy=on-oom=warn true >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -ne 0 ] && grep -q 'on-oom=warn is not allowed on this cluster; use fail, wait' "$T/err"; then
    ok "--gpu-mem-policy=on-oom=warn refused (the site allows fail, wait)"
else
    fail "--gpu-mem-policy=on-oom=warn: exit $rc"; show "$T/err"
fi
after=$(scontrol show config 2>/dev/null | sed -n 's/^NEXT_JOB_ID *= *//p')
if [ -n "$before" ] && [ "$before" = "$after" ]; then
    ok "no job was created for the refused submissions"
else
    fail "refused submissions made jobs (next job id $before -> $after)"
fi

# ---- the plugstack ceiling and default -----------------------------------------
srun -N1 -n1 --gpu-mem=2G sh -c 'echo "limit=$GPUMEM_LIMIT"; exec "$0" 600M' "$HOLD" \
    >"$T/out" 2>"$T/err"
rc=$?
if grep -q "gpumem: --gpu-mem=2G is above this cluster's ceiling of 512M per GPU; the job gets 512.0 MiB" "$T/err" &&
   grep -qx "limit=$((512 * MIB))" "$T/out" && [ $rc -eq 3 ]; then
    ok "--gpu-mem=2G above max=512M: told at submission, clamped to 512 MiB (600 MiB refused)"
else
    fail "--gpu-mem=2G was not clamped to the ceiling (exit $rc)"; show "$T/out"; show "$T/err"
fi
srun -N1 -n1 sh -c 'echo "limit=$GPUMEM_LIMIT"' >"$T/out" 2>"$T/err"
if grep -qx "limit=$((200 * MIB))" "$T/out"; then
    ok "a job without --gpu-mem gets the site default (200 MiB)"
else
    fail "a job without --gpu-mem did not get default=200M"; show "$T/out"; show "$T/err"
fi

# ---- the site's configuration (re-read for every step) --------------------------
cp "$T/plugstack.conf" "$T/plugstack.good"
echo "required $B/spank_gpumem.so lib=$T/nowhere/libgpumem.so prefix=$PREFIX max=512M" \
    >"$T/plugstack.conf"
srun -N1 -n1 --gpu-mem=64M sh -c 'echo ran' >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -ne 0 ] && ! grep -q ran "$T/out" &&
   grep -q "gpumem: the library $T/nowhere/libgpumem.so is not readable on this node; the task is not started" "$T/err"; then
    ok "a node without the library does not start the task (exit $rc): $(grep 'not readable' "$T/err" | head -n 1)"
else
    fail "a missing library: exit $rc"; show "$T/out"; show "$T/err"
fi
echo "required $B/spank_gpumem.so max=share" >"$T/plugstack.conf"
srun -N1 -n1 sh -c 'echo ran' >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -ne 0 ] && ! grep -q ran "$T/out" &&
   grep -q "gpumem: plugstack.conf: max='share' is not a size or a percentage" "$T/err"; then
    ok "a wrong plugstack.conf argument stops srun (exit $rc): $(grep 'plugstack.conf:' "$T/err" | head -n 1)"
else
    fail "a wrong plugstack.conf argument: exit $rc"; show "$T/out"; show "$T/err"
fi
cp "$T/plugstack.good" "$T/plugstack.conf"

# ---- docs/slurm.md shows the options as srun --help prints them --------------
awk '/^<!-- srun-help -->$/ {w = 1; next} w && /^```/ {if (b) exit; b = 1; next} b' \
    "$ROOT/docs/slurm.md" >"$T/help.doc"
srun --help 2>&1 | awk '/^Options provided by plugins:/ {p = 1} p && /^[A-Z]/ && !/^Options provided/ {exit} p' |
    sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' >"$T/help.real"
if [ -s "$T/help.doc" ] && diff -u "$T/help.doc" "$T/help.real" >"$T/help.diff"; then
    ok "docs/slurm.md's help block is srun --help's"
else
    fail "docs/slurm.md's help block differs from srun --help"; show "$T/help.diff"
fi

if [ $fails -ne 0 ]; then
    echo "--- slurmd.log (tail)"; tail -n 30 "$T/log/slurmd.log" | sed 's/^/    | /'
    echo "$fails check(s) failed"
    exit 1
fi
echo "all Slurm checks passed in $(($(now_ms) - t0)) ms"
exit 0
