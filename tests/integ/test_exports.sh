#!/bin/sh
# tests/integ/test_exports.sh — libgpumem.so exports every driver entry
# point it wraps (the GM_HOOKS table of shim/driver/hooklist.h), so a
# program linked against libcuda, or one that finds the function with
# dlsym, reaches the wrapper as cuGetProcAddress's callers do; and it
# exports nothing of the driver's it does not wrap. A wrapper added to the
# table and left out of shim/intercept/exports.map fails here (the pool
# lookups were, and a default pool of a device without a context was
# charged to another device). Exit 0 pass, 1 fail.
BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
here=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-exports.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

command -v nm >/dev/null || { echo "nm not found"; exit 77; }
# the table's first column, from its X(...) lines up to GM_PLAIN
sed -n '/^#define GM_HOOKS(X)/,/^#define GM_PLAIN(X)/p' \
    "$here/shim/driver/hooklist.h" |
    sed -n 's/^[[:space:]]*X(\(cu[A-Za-z0-9_]*\),.*/\1/p' | sort -u >"$T/table"
[ "$(wc -l <"$T/table")" -ge 50 ] ||
    bad "read too few entries from hooklist.h: $(wc -l <"$T/table")"
nm -D --defined-only "$B/libgpumem.so" | awk '{print $3}' |
    grep '^cu' | sort -u >"$T/exported"
comm -23 "$T/table" "$T/exported" >"$T/missing"
comm -13 "$T/table" "$T/exported" >"$T/extra"
[ -s "$T/missing" ] && bad "wrapped but not exported: $(tr '\n' ' ' <"$T/missing")"
[ -s "$T/extra" ] && bad "exported but not in the table: $(tr '\n' ' ' <"$T/extra")"
exit $fail
