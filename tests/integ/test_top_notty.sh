#!/bin/sh
# tests/integ/test_top_notty.sh — the interactive gpumem-top without a
# terminal: with standard input or standard output not a terminal (a
# file, a pipe, /dev/null) it exits 1 at once naming which and what to
# use instead; it drew into the file and, with standard input at its end,
# waited for keys in a loop at full CPU that never ended. --once still
# works there. Standard output is tested with standard input a pty
# (script(1)). Exit 0 pass, 1 fail.
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

# Standard input a terminal (a pty of script(1)), standard output not.
if command -v script >/dev/null 2>&1; then
    timeout 10 script -qec "'$B/gpumem-top' >/dev/null 2>'$T/err2'; echo rc=\$? >'$T/rc2'" /dev/null >/dev/null 2>&1
    grep -q "^rc=1$" "$T/rc2" 2>/dev/null || bad "stdout /dev/null: $(cat "$T/rc2" 2>/dev/null)"
    grep -q "^gpumem: top: standard output is not a terminal;" "$T/err2" ||
        bad "stdout /dev/null: $(cat "$T/err2")"
else
    echo "standard output case not run: no script(1)"
fi
timeout 10 "$B/gpumem-top" --once </dev/null >"$T/once" 2>&1 ||
    bad "--once without a terminal failed: $(cat "$T/once")"
[ $fail = 0 ] && echo ok
exit $fail
