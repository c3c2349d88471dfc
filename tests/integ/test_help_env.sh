#!/bin/sh
# tests/integ/test_help_env.sh — the ENVIRONMENT section of `gpumem help
# policy` (the source of gpumem-policy(1)) lists every variable `gpumem
# policy` prints (GPUMEM_WARN_BEFORE, GPUMEM_RECORD and GPUMEM_NVML_VIEW
# were left out while the unknown-variable warning sends users there),
# and the admin file's rules are named in its DESCRIPTION. A variable
# added to the policy without its line here fails. Exit 0 pass, 1 fail.
BUILD=${BUILD:-build}
B=$(cd "$BUILD" && pwd) || { echo "no build directory $BUILD"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gm-helpenv.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

"$B/gpumem" help policy >"$T/help" || bad "gpumem help policy failed"
sed -n '/^ENVIRONMENT$/,/^EXAMPLES$/p' "$T/help" >"$T/env"
sed -n '/^DESCRIPTION$/,/^OPTIONS$/p' "$T/help" >"$T/desc"
env -i PATH="$PATH" "$B/gpumem" policy 2>/dev/null | awk '$1 ~ /^GPUMEM_/ {print $1}' >"$T/names"
[ "$(wc -l <"$T/names")" -ge 20 ] || bad "gpumem policy printed too few variables: $(cat "$T/names")"
while read -r v; do
    case $v in
    GPUMEM_MAX_*|GPUMEM_FORCE_*|GPUMEM_ALLOW_*)
        grep -q -- "$v" "$T/desc" || bad "$v: not named in DESCRIPTION" ;;
    *)
        grep -q -- "^    $v " "$T/env" || bad "$v: no line in ENVIRONMENT" ;;
    esac
done <"$T/names"
[ $fail = 0 ] && echo ok
exit $fail
