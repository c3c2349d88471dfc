#!/bin/sh
# tests/integ/test_top_notty.sh — the interactive gpumem-top without a
# terminal: with standard input or standard output not a terminal (a
# file, a pipe, /dev/null) it exits 1 at once naming which and what to
# use instead; it drew into the file and, with standard input at its end,
# waited for keys in a loop at full CPU that never ended. --once still
# works there. Exit 0 pass, 1 fail.
BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-topnt.XXXXXX") || exit 1
PREFIX=gmtn$$
export GPUMEM_SHM_PREFIX=$PREFIX
trap 'rm -rf "$T"; rm -f /dev/shm/"$PREFIX".*' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

timeout 10 "$B/gpumem-top" </dev/null >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 1 ] || bad "stdin /dev/null: exit $rc (124: it never ended)"
grep -q "^gpumem: top: standard input is not a terminal; the interactive view needs one (use --once or --json for a file or a pipe)$" "$T/err" ||
    bad "stdin /dev/null: $(cat "$T/err")"
[ -s "$T/out" ] && bad "stdin /dev/null: it wrote to standard output"

# Standard input a terminal is not needed for the test: a pipe on stdout
# is named when stdin is one; otherwise stdin is named first, as above.
if [ -t 0 ]; then
    timeout 10 "$B/gpumem-top" 2>"$T/err2" | cat >/dev/null
    grep -q "standard output is not a terminal" "$T/err2" ||
        bad "stdout a pipe: $(cat "$T/err2")"
fi
timeout 10 "$B/gpumem-top" --once </dev/null >"$T/once" 2>&1 ||
    bad "--once without a terminal failed: $(cat "$T/once")"
[ $fail = 0 ] && echo ok
exit $fail
