#!/bin/sh
# tests/run-tests.sh — run test programs, sum their results, print one closing
# line "N passed, N failed, N skipped". Check suites report their own counts
# ("NN%: Checks: N, Failures: F, Errors: E"); a shell test counts as one case
# (exit 0 pass, 77 skip, anything else fail). Exit 1 when anything failed.
#
# Every program the suites start inherits GPUMEM_SHM_PREFIX=gmtest<pid>
# (a suite that needs another prefix sets its own), so no test writes
# under the user's default prefix; whatever is left under that prefix in
# /dev/shm at the end (a killed child's segment, a group file) is a
# failure of the run, listed, and removed, also when the run is
# interrupted. The suites write in GPUMEM_SHM_DIR, set here to
# GM_TEST_SHM_DIR (default /dev/shm): the directory the leftover check
# reads is the one the shim and the tools of the suites use (a suite that
# needs another directory sets its own and cleans it).
passed=0; failed=0; skipped=0
log=$(mktemp "${TMPDIR:-/tmp}/gm-test.XXXXXX") || exit 1
GPUMEM_SHM_PREFIX=gmtest$$
export GPUMEM_SHM_PREFIX
SHM=${GM_TEST_SHM_DIR:-/dev/shm}
GPUMEM_SHM_DIR=$SHM
export GPUMEM_SHM_DIR
cleanup() { rm -f "$log" "$SHM/$GPUMEM_SHM_PREFIX".* "$SHM/$GPUMEM_SHM_PREFIX"_*; }
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM
for t in "$@"; do
    case "$t" in
        *.sh) sh "$t" >"$log" 2>&1 ;;
        *) "$t" >"$log" 2>&1 ;;
    esac
    rc=$?
    name=$(echo "$t" | sed 's|.*/tests/||')
    summary=$(grep -E '^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$log" | tail -n 1)
    if [ -n "$summary" ]; then
        n=$(echo "$summary" | sed -E 's/.*Checks: ([0-9]+).*/\1/')
        f=$(echo "$summary" | sed -E 's/.*Failures: ([0-9]+).*/\1/')
        e=$(echo "$summary" | sed -E 's/.*Errors: ([0-9]+).*/\1/')
        bad=$((f + e))
        if [ "$bad" -eq 0 ] && [ "$rc" -ne 0 ]; then bad=1; fi
        passed=$((passed + n - f - e)); failed=$((failed + bad))
        if [ "$bad" -ne 0 ]; then
            echo "FAIL  $name: $summary (exit $rc)"; sed 's/^/      /' "$log" | grep -v '^      [0-9]*%: Checks' | tail -n 40
        else
            echo "ok    $name: $n checks"
        fi
    elif [ "$rc" -eq 0 ]; then
        passed=$((passed + 1)); echo "ok    $name"
    elif [ "$rc" -eq 77 ]; then
        skipped=$((skipped + 1)); echo "skip  $name: $(tail -n 1 "$log")"
    else
        failed=$((failed + 1)); echo "FAIL  $name (exit $rc)"; sed 's/^/      /' "$log" | tail -n 40
    fi
done
left=$(cd "$SHM" 2>/dev/null && ls -d "$GPUMEM_SHM_PREFIX".* "$GPUMEM_SHM_PREFIX"_* 2>/dev/null)
if [ -n "$left" ]; then
    failed=$((failed + 1))
    echo "FAIL  /dev/shm: the suites left files under $GPUMEM_SHM_PREFIX (removed now):"
    echo "$left" | sed 's/^/      /'
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
