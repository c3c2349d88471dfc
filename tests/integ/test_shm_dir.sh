#!/bin/sh
# tests/integ/test_shm_dir.sh — GPUMEM_SHM_DIR end to end, on the simulated
# driver:
#   - a safe directory (0700, ours): the segment and the group file are
#     created there (mode 0600), nothing in /dev/shm; ps, report and gc
#     read and clean it there; a hostile identity planted in the segment
#     leaves ps's JSON valid and its text free of escapes;
#   - an unsafe one (0777 without the sticky bit, a symbolic link): the
#     process limit is still enforced (a refusal at the limit, exit 3),
#     telemetry stays private with a warning naming the directory and
#     the rule, nothing is created in it; with a group, the process exits
#     with status 2 (GPUMEM_ON_BAD_CONFIG=exit, the default) or runs with
#     the process limit only (warn); gpumem run refuses that group (nothing
#     runs) and gpumem policy exits 2 for it, warns without a group; the
#     tools refuse the directory with exit 2;
#   - a malformed value: the policy is invalid, gpumem run refuses it;
#   - the group's file removed while a member holds memory: the member
#     moves to the file a newcomer makes (said), and the newcomer is
#     refused what the limit has no room for;
#   - a full directory (root, a private tmpfs): joining the group fails
#     with a message naming the file, the error and the remedy.
# Exit 0 pass, 1 fail.
BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-shmdir.XXXXXX") || exit 1
chmod 700 "$T"
PREFIX=gmsd$$
export GPUMEM_SHM_PREFIX=$PREFIX
export LD_LIBRARY_PATH="$B/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
trap 'rm -rf "$T"; rm -f /dev/shm/"$PREFIX".*' EXIT
failures=0
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }
ts() { "$B/gpumem-trainsim" --steps 3 --quiet "$@"; }

# ---- a safe directory
S=$T/safe
mkdir -m 700 "$S"
GPUMEM_SHM_DIR=$S GPUMEM_KEEP=1 "$B/gpumem" run --limit 2G --group g1 \
    --group-limit 4G -- "$B/gpumem-trainsim" --steps 3 --quiet >"$T/out" 2>&1 ||
    bad "a run in a safe directory failed: $(cat "$T/out")"
seg=$(ls "$S" | grep "^$PREFIX\.[0-9]*$")
[ -n "$seg" ] || bad "no segment in $S: $(ls -a "$S")"
[ -z "$(ls /dev/shm | grep "^$PREFIX\.")" ] || bad "files in /dev/shm: $(ls /dev/shm | grep "^$PREFIX\.")"
[ "$(stat -c %a "$S/$seg" 2>/dev/null)" = 600 ] || bad "segment mode $(stat -c %a "$S/$seg")"
# A group member killed while it runs: its group file stays in $S.
GPUMEM_SHM_DIR=$S "$B/gpumem" run --limit 2G --group g1 --group-limit 4G -- \
    "$B/gpumem-trainsim" --steps 1000000000 --quiet >/dev/null 2>&1 &
k=$!
i=0
while [ $i -lt 100 ] && [ ! -e "$S/$PREFIX.group@g1" ]; do sleep 0.05; i=$((i + 1)); done
kill -9 $k; wait $k 2>/dev/null
[ "$(stat -c %a "$S/$PREFIX.group@g1" 2>/dev/null)" = 600 ] ||
    bad "no group file of mode 0600 in $S: $(ls -l "$S")"
GPUMEM_SHM_DIR=$S "$B/gpumem" ps | grep -q "kept .*gpumem-trainsim" ||
    bad "ps does not list the kept process: $(GPUMEM_SHM_DIR=$S "$B/gpumem" ps)"
"$B/gpumem" ps | grep -q "gpumem-trainsim" && bad "ps without GPUMEM_SHM_DIR lists it"
GPUMEM_SHM_DIR=$S "$B/gpumem" report >/dev/null 2>&1 || bad "report in $S failed"
# A hostile identity planted in the kept segment (job id at header offset
# 1296, pod name at 1472: quotes, a newline, escapes, bytes that are not
# UTF-8, no NUL up to the next field): the tools' output stays clean.
awk 'BEGIN { for (i = 0; i < 32; i++) printf "\"\\\n\033[31m\377x"; }' > "$T/junk"
dd if="$T/junk" of="$S/$seg" bs=1 seek=1296 count=32 conv=notrunc 2>/dev/null
dd if="$T/junk" of="$S/$seg" bs=1 seek=1472 count=256 conv=notrunc 2>/dev/null
GPUMEM_SHM_DIR=$S "$B/gpumem" ps --json >"$T/json" || bad "ps --json failed on a hostile identity"
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/json" ||
        bad "ps --json is not valid JSON with a hostile identity: $(cat "$T/json")"
fi
grep -q '"slurm_job_id":"_____31m_x_____31m_x.*"altered":true' "$T/json" ||
    bad "the hostile job id is not shown cleaned: $(cat "$T/json")"
GPUMEM_SHM_DIR=$S "$B/gpumem" ps >"$T/text" || bad "ps failed on a hostile identity"
grep -q "^ *$(echo "$seg" | sed 's/.*\.//') root *___.* kept .*gpumem-trainsim --steps 3" "$T/text" ||
    bad "ps with a hostile identity: $(cat -v "$T/text")"
LC_ALL=C grep -q "$(printf '\033')" "$T/text" && bad "an escape byte reached the terminal: $(cat -v "$T/text")"
out=$(GPUMEM_SHM_DIR=$S "$B/gpumem" gc)
echo "$out" | grep -q "^removed $S/$seg " || bad "gc did not remove $S/$seg: $out"
echo "$out" | grep -q "^removed $S/$PREFIX.group@g1 " || bad "gc did not remove the group file: $out"
[ -z "$(ls "$S")" ] || bad "left in $S after gc: $(ls "$S")"

# ---- unsafe directories: 0777 without the sticky bit, a symbolic link
O=$T/open
mkdir "$O" && chmod 777 "$O"
ln -s "$S" "$T/link"
for d in "$O" "$T/link"; do
    GPUMEM_SHM_DIR=$d "$B/gpumem" run --limit 500M -- "$B/gpumem-trainsim" \
        --quiet >"$T/out" 2>&1
    rc=$?
    [ $rc = 3 ] || bad "$d: the 500M limit was not enforced (exit $rc): $(cat "$T/out")"
    grep -q "telemetry segment not shared (segment directory $d .*unless sticky" "$T/out" ||
        bad "$d: no warning naming the directory and the rule: $(cat "$T/out")"
    [ -z "$(ls "$d")" ] || bad "$d: files created: $(ls "$d")"
    # The library itself (preloaded directly), then gpumem run's check.
    GPUMEM_SHM_DIR=$d LD_PRELOAD="$B/libgpumem.so" GPUMEM_LIMIT=2G \
        GPUMEM_GROUP=g2 GPUMEM_GROUP_LIMIT=4G "$B/gpumem-trainsim" --steps 3 \
        --quiet >"$T/out" 2>&1
    rc=$?
    [ $rc = 2 ] || bad "$d: a group in an unsafe directory ran (exit $rc)"
    grep -q "^gpumem: cannot join group 'g2' (segment directory $d .*exiting with status 2 (fix GPUMEM_SHM_DIR, or set GPUMEM_ON_BAD_CONFIG=warn" "$T/out" ||
        bad "$d: no group message: $(cat "$T/out")"
    GPUMEM_SHM_DIR=$d "$B/gpumem" run --limit 2G --group g2 --group-limit 4G \
        -- "$B/gpumem-trainsim" --steps 3 --quiet >"$T/out" 2>&1
    rc=$?
    [ $rc = 2 ] || bad "$d: gpumem run ran a group in an unsafe directory (exit $rc)"
    grep -q "^gpumem: run: group 'g2': segment directory $d .*would exit with status 2" "$T/out" &&
        grep -q "^gpumem: run: nothing was run" "$T/out" ||
        bad "$d: gpumem run's messages: $(cat "$T/out")"
    GPUMEM_SHM_DIR=$d GPUMEM_GROUP=g2 GPUMEM_GROUP_LIMIT=4G "$B/gpumem" policy \
        >/dev/null 2>"$T/out"
    [ $? = 2 ] || bad "$d: gpumem policy accepted a group there"
    GPUMEM_SHM_DIR=$d "$B/gpumem" policy >/dev/null 2>"$T/out" ||
        bad "$d: gpumem policy refused it without a group"
    grep -q "^gpumem: policy: segment directory $d .*telemetry private (its limit is still enforced)" "$T/out" ||
        bad "$d: gpumem policy does not warn: $(cat "$T/out")"
    GPUMEM_ON_BAD_CONFIG=warn GPUMEM_SHM_DIR=$d "$B/gpumem" run --limit 2G \
        --group g2 --group-limit 4G -- "$B/gpumem-trainsim" --steps 3 --quiet \
        >"$T/out" 2>&1 || bad "$d: warn did not run: $(cat "$T/out")"
    grep -q "cannot join group 'g2' (segment directory $d .*process limit only" "$T/out" ||
        bad "$d: no warning for the group under warn: $(cat "$T/out")"
    for tool in "ps" "gc" "log" "report"; do
        GPUMEM_SHM_DIR=$d "$B/gpumem" $tool >"$T/out" 2>&1
        rc=$?
        [ $rc = 2 ] || bad "gpumem $tool accepted $d (exit $rc)"
        grep -q "^gpumem: $tool: segment directory $d " "$T/out" ||
            bad "gpumem $tool: no message naming $d: $(cat "$T/out")"
    done
    GPUMEM_SHM_DIR=$d "$B/gpumem-top" --once >"$T/out" 2>&1
    [ $? = 2 ] || bad "gpumem-top accepted $d"
    # The same with the default prefix (GPUMEM_SHM_PREFIX unset).
    for tool in "ps" "gc"; do
        env -u GPUMEM_SHM_PREFIX GPUMEM_SHM_DIR=$d "$B/gpumem" $tool >"$T/out" 2>&1
        rc=$?
        [ $rc = 2 ] || bad "gpumem $tool with the default prefix accepted $d (exit $rc)"
    done
done
# Sticky and world-writable, as /dev/shm: accepted.
chmod 1777 "$O"
GPUMEM_SHM_DIR=$O "$B/gpumem" ps >/dev/null 2>&1 || bad "ps refused a sticky 1777 directory"

# ---- a malformed value: refused by the tools too (an empty one is no
# default), with the prefix set or not
for v in relative ""; do
    for unset in "" "-u GPUMEM_SHM_PREFIX"; do
        env $unset GPUMEM_SHM_DIR="$v" "$B/gpumem" ps >"$T/out" 2>&1
        rc=$?
        [ $rc = 2 ] || bad "ps accepted GPUMEM_SHM_DIR='$v' ($unset; exit $rc)"
        grep -q "^gpumem: ps: GPUMEM_SHM_DIR='$v' is " "$T/out" ||
            bad "ps: no message for GPUMEM_SHM_DIR='$v': $(cat "$T/out")"
    done
done
GPUMEM_SHM_DIR=relative "$B/gpumem" run --limit 2G -- true >"$T/out" 2>&1
[ $? = 2 ] || bad "gpumem run accepted GPUMEM_SHM_DIR=relative"
grep -q "GPUMEM_SHM_DIR='relative' is not an absolute path" "$T/out" ||
    bad "no message for GPUMEM_SHM_DIR=relative: $(cat "$T/out")"

# ---- the group's file removed while a member holds memory (rm, or
# systemd-logind's RemoveIPC at logout): a process joining afterwards
# made a new file and, alone there, was admitted past the limit. The
# member moves to the new file within a reaper pass, with what it holds,
# and says so; the newcomer is refused.
R=$T/removed
mkdir -m 700 "$R"
GPUMEM_SHM_DIR=$R GPUMEM_GROUP=g6 GPUMEM_GROUP_LIMIT=1G LD_PRELOAD="$B/libgpumem.so" \
    "$B/tests/progs/cudahold" 600M "$T/go6" 30 >"$T/h6.out" 2>&1 &
h6=$!
i=0; until grep -q holding "$T/h6.out" || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
rm -f "$R/$PREFIX.group@g6"
i=0; until grep -q "moved to" "$T/h6.out" || [ $i -ge 50 ]; do sleep 0.1; i=$((i + 1)); done
GPUMEM_SHM_DIR=$R GPUMEM_GROUP=g6 GPUMEM_GROUP_LIMIT=1G LD_PRELOAD="$B/libgpumem.so" \
    "$B/tests/progs/cudahold" 600M "$T/go6" 1 >"$T/h6b.out" 2>&1
[ $? = 3 ] || bad "a newcomer after the group file was removed was not refused: $(cat "$T/h6b.out")"
grep -q "refused: group 'g6' has .* used of 1.0 GiB limit" "$T/h6b.out" ||
    bad "the newcomer's refusal does not name the group: $(cat "$T/h6b.out")"
touch "$T/go6"; wait $h6 || bad "the member whose group file was removed exited $?"
grep -q "gpumem: group 'g6': its file was removed or replaced while in use; this process moved to $R/$PREFIX.group@g6, the file there now, with the [0-9.]* MiB it holds" "$T/h6.out" ||
    bad "the member did not say it moved: $(cat "$T/h6.out")"
[ -z "$(ls "$R")" ] || bad "files left after the group's members ended: $(ls "$R")"

# ---- a full directory (a tmpfs of its own in a private mount namespace,
# root only): the group's message names the directory and what to do (it
# said "full /dev/shm?" whatever the directory)
cat >"$T/full.sh" <<'FULL'
D=$1
mount --make-rprivate / && mount -t tmpfs -o size=64k,mode=0700 tmpfs "$D" || exit 77
dd if=/dev/zero of="$D/fill" bs=4k 2>/dev/null
shift
GPUMEM_SHM_DIR=$D GPUMEM_GROUP=g1 GPUMEM_GROUP_LIMIT=2G GPUMEM_LIMIT=1G "$@"
echo "rc $?"
GPUMEM_ON_BAD_CONFIG=warn GPUMEM_SHM_DIR=$D GPUMEM_GROUP=g1 \
    GPUMEM_GROUP_LIMIT=2G GPUMEM_LIMIT=1G "$@"
echo "warn rc $?"
umount "$D"
FULL
mkdir -m 700 "$T/fullmnt"
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
    unshare -m sh "$T/full.sh" "$T/fullmnt" env LD_PRELOAD="$B/libgpumem.so" \
        "$B/gpumem-trainsim" --steps 3 --quiet >"$T/out" 2>&1
    # a group that cannot be joined is a group limit that cannot hold:
    # exit 2 by default (GPUMEM_ON_BAD_CONFIG=exit), the process limit
    # only under warn
    grep -q "cannot join group 'g1' (cannot size $T/fullmnt/$PREFIX.group@g1 to [0-9]* bytes: No space left on device (its directory is full; free space there or set GPUMEM_SHM_DIR to another)); the group limit cannot be enforced in this process; exiting with status 2 (set GPUMEM_ON_BAD_CONFIG=warn" "$T/out" ||
        bad "a full GPUMEM_SHM_DIR: the group message does not say it: $(cat "$T/out")"
    grep -q "cannot join group 'g1' (cannot size .*); the group limit is not enforced in this process, running with the process limit only" "$T/out" ||
        bad "a full GPUMEM_SHM_DIR under warn: no warning: $(cat "$T/out")"
    grep -q "^rc 2" "$T/out" && grep -q "^warn rc 0" "$T/out" ||
        bad "a full GPUMEM_SHM_DIR: $(cat "$T/out")"
else
    echo "full-directory case not run: needs root and a mount namespace"
fi

[ "$failures" = 0 ] || exit 1
echo "ok"
