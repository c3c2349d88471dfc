#!/bin/sh
# tests/run-tests.sh — run test programs, sum their results, print one closing
# line "N passed, N failed, N skipped". Check suites report their own counts
# ("NN%: Checks: N, Failures: F, Errors: E"); a shell test counts as one case
# (exit 0 pass, 77 skip, anything else fail). Exit 1 when anything failed.
passed=0; failed=0; skipped=0
log=$(mktemp "${TMPDIR:-/tmp}/gm-test.XXXXXX") || exit 1
trap 'rm -f "$log"' EXIT
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
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
