#!/bin/sh
# tests/integ/test_preload_node.sh — node-wide deployment through
# /etc/ld.so.preload (docs/cluster.md), inside a private mount namespace
# (tests/integ/with_preload.sh; the machine's own file is never touched),
# with an installed copy of the test build's library (SYSCONFDIR inside
# the build tree) and an admin file with GPUMEM_MAX_LIMIT=1G:
#   - every process loads the library, with or without an environment;
#   - a CUDA program whose environment has no GPUMEM_* variable at all is
#     held to the ceiling, GPUMEM_LIMIT=none too (with the line saying so),
#     and a tighter GPUMEM_LIMIT tightens;
#   - `gpumem run` inside does not add a second copy of the library, and
#     its --limit cannot lift the ceiling;
#   - the start-up cost of /bin/true with and without the preload is
#     printed (tests/bench/preload.sh; not asserted).
# Exit 0 pass, 1 fail, 77 skip (no private mount namespace, or the build
# tree's directories are not root's, so the admin file cannot be trusted).
set -u
B=${BUILD:-build}
ABS=$(cd "$B" && pwd)
W="$(pwd)/tests/integ/with_preload.sh"
fail() { echo "FAIL: $*"; exit 1; }
POL=$ABS/admintest/etc/gpumem/policy
[ -x "$ABS/admintest/gpumem" ] || fail "$ABS/admintest/gpumem not built (make tests)"
t=$(mktemp -d "${TMPDIR:-/tmp}/gm-node.XXXXXX") || exit 1
trap 'rm -rf "$t" "$POL"' EXIT INT TERM
chmod 0755 "$t"
mkdir "$t/lib" && cp "$ABS/admintest/libgpumem.so" "$t/lib/libgpumem.so" &&
    chmod 0755 "$t/lib" "$t/lib/libgpumem.so" || fail "cannot install a copy"
LIB=$t/lib/libgpumem.so
printf '# test node\nGPUMEM_MAX_LIMIT=1G\nGPUMEM_SHM_PREFIX=%s\n' \
    "${GPUMEM_SHM_PREFIX:-gmtest$$}" > "$POL" && chmod 0644 "$POL" || fail "cannot write $POL"
state=$("$ABS/admintest/gpumem" policy 2>&1 | sed -n 's/^admin file .*(\([a-z]*\)).*/\1/p')
if [ "$state" != read ]; then
    "$ABS/admintest/gpumem" policy 2>&1 | grep -q 'not trusted' ||
        fail "the test admin file was not read: $("$ABS/admintest/gpumem" policy 2>&1 | grep 'admin file')"
    echo "skip: the test admin file is not trusted here ($("$ABS/admintest/gpumem" policy 2>&1 | grep 'not trusted'))"
    exit 77
fi

cat > "$t/inner.sh" <<INNER
set -u
fail() { echo "FAIL: \$*"; exit 1; }
LIB='$LIB'; ABS='$ABS'
loaded() { grep -qF "\$LIB" "/proc/\$1/maps"; }
# Every process: this shell, a child with an empty environment.
loaded \$\$ || fail "the shell did not load \$LIB"
env -i /bin/sh -c 'grep -qF "\$0" /proc/\$\$/maps' "\$LIB" || fail "env -i sh did not load it"
n=\$(env -i /bin/cat /proc/self/maps | grep -cF "\$LIB")
[ "\$n" -ge 1 ] || fail "env -i cat did not load it"

# The ceiling, with every GPUMEM_* variable unset.
run() { env -i PATH="\$PATH" LD_LIBRARY_PATH="\$ABS/sim" "\$@" "\$ABS/tests/progs/allocloop" --via dlsym 1 "\$SZ"; }
M=1048576
SZ=\$((800 * M)) run > "$t/out" 2>&1 && fail "800 MiB (+300 MiB context) passed a 1G ceiling: \$(cat "$t/out")"
grep -q 'of 1.0 GiB limit' "$t/out" || fail "no refusal at 1.0 GiB: \$(cat "$t/out")"
SZ=\$((600 * M)) run > "$t/out" 2>&1 || fail "600 MiB refused under 1G: \$(cat "$t/out")"
SZ=\$((800 * M)) run GPUMEM_LIMIT=none > "$t/out" 2>&1 && fail "GPUMEM_LIMIT=none lifted the ceiling"
grep -q "GPUMEM_LIMIT='none' is above the admin ceiling GPUMEM_MAX_LIMIT" "$t/out" ||
    fail "no line about the ceiling: \$(cat "$t/out")"
[ "\$(grep -c 'above the admin ceiling' "$t/out")" = 1 ] || fail "the ceiling line is not printed once"
SZ=\$((400 * M)) run GPUMEM_LIMIT=512M > "$t/out" 2>&1 && fail "GPUMEM_LIMIT=512M did not tighten"
grep -q 'of 512.0 MiB limit' "$t/out" || fail "no refusal at 512 MiB: \$(cat "$t/out")"

# gpumem run: one copy of the library, and no way around the ceiling.
objs=\$("\$ABS/gpumem" run --limit 2G -- /bin/sh -c 'awk "/libgpumem/ {print \\\$6}" /proc/\$\$/maps | sort -u')
[ "\$objs" = "\$LIB" ] || fail "gpumem run: libraries loaded: \$objs"
LD_LIBRARY_PATH="\$ABS/sim" "\$ABS/gpumem" run --limit 2G -- "\$ABS/tests/progs/allocloop" --via dlsym 1 \$((800 * M)) \
    > "$t/out" 2>&1 && fail "gpumem run --limit 2G lifted the ceiling"
grep -q 'of 1.0 GiB limit' "$t/out" || fail "gpumem run: no refusal at 1.0 GiB: \$(cat "$t/out")"
exit 0
INNER
sh "$W" "$LIB" sh "$t/inner.sh"
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || exit 1
# What a process that never uses CUDA pays (printed, not asserted).
BUILD="$B" N=40 sh tests/bench/preload.sh "$LIB" || fail "tests/bench/preload.sh exited $?"
echo "ok: every process loads the library; the ceiling holds without any GPUMEM_* variable; gpumem run loads it once"
