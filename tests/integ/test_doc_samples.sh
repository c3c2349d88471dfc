#!/bin/sh
# tests/integ/test_doc_samples.sh — the samples in docs/tools.md are what
# the programs print. A code block preceded by the line `<!-- sample -->`
# is checked:
#   - a synopsis block (its first word gpumem or gpumem-top) must equal the
#     SYNOPSIS of that command's help, whitespace aside;
#   - a session block ("$ CMD" lines, each followed by its output) is run,
#     command by command, on the simulated driver with a prefix of its own;
#     its output must be the sample's, line for line in any order (stdout
#     and stderr interleave differently in a pipe than on a terminal),
#     once run-dependent figures are masked: times ("at 0.4 s", a
#     refusal's time and its allocations' age without steps, a leak
#     verdict's rate per second and time to the limit, the TIME column of
#     `report --every`, the age in seconds of an OOM snapshot's blocks,
#     which a fast run may not show at all), latencies (p50/p99) and pids.
# Exit 0 pass, 1 fail (naming the block's line and the first difference).
set -u
B=${BUILD:-build}
ABS=$(cd "$B" && pwd) || exit 1
DOC=docs/tools.md
t=$(mktemp -d "${TMPDIR:-/tmp}/gm-docs.XXXXXX") || exit 1
prefix=gmtdoc$$
trap 'rm -rf "$t"; rm -f /dev/shm/$prefix.* /dev/shm/$prefix.group@*' EXIT
fails=0; n=0
fail() { echo "FAIL: $DOC:$*"; fails=$((fails + 1)); }

# Split the marked blocks into files: $t/b.LINE (first line of the block).
awk -v dir="$t" '
    /^<!-- sample -->$/ { want = 1; next }
    want && /^```/ { inb = 1; want = 0; line = NR + 1; f = dir "/b." line; printf "" > f; next }
    inb && /^```/ { inb = 0; close(f); next }
    inb { print > f }
    { want = 0 }' "$DOC"

mask() {
    sed -e 's/at [0-9][0-9.]* s;/at T s;/' \
        -e 's/p50 [0-9][0-9.]* [µnmu]*s p99 [0-9][0-9.]* [µnmu]*s/p50 L p99 L/' \
        -e 's/pid [0-9][0-9]*/pid N/g' \
        -e 's/: refused \([^:]*\) at [0-9][0-9.]* s: /: refused \1 at T s: /' \
        -e 's/ allocated over the last [0-9][0-9.]* s/ allocated over the last T s/' \
        -e 's/ ([0-9][0-9.]* [KMGT]*i*B\/s)/ (R\/s)/' \
        -e 's/ allocated over the last [0-9][0-9.]* [µnmu]*s;/;/' \
        -e 's/ steps ([0-9][0-9.]* [a-z]*)$/ steps (T)/' \
        -e 's/^\( *[0-9][0-9]*\)  *[0-9][0-9.]*\(s\|min\|h\|d\) /\1 T /' \
        -e 's/[[:space:]]*$//' | sort
}

synopsis() { # block-file line
    first=$(head -n 1 "$1")
    case "$first" in
        gpumem-top*) help=$("$ABS/gpumem-top" --help) ;;
        gpumem\ *) cmd=$(echo "$first" | awk '{print $2}')
                   help=$("$ABS/gpumem" help "$cmd") ;;
        *) fail "$2: a sample block that is neither a synopsis nor a session"; return ;;
    esac
    want=$(echo "$help" | awk '/^SYNOPSIS$/ {on = 1; next} /^[A-Z]/ {on = 0} on' | tr -s ' \n' '  ' | sed 's/^ //; s/ $//')
    got=$(tr -s ' \n' '  ' < "$1" | sed 's/^ //; s/ $//')
    [ "$want" = "$got" ] || fail "$2: synopsis differs from the help:
      doc:  $got
      help: $want"
}

session() { # block-file line
    # Commands and their expected output, one pair of files per command.
    awk -v dir="$t" -v l="$2" '
        /^\$ / { k++; c = dir "/c." l "." k; o = dir "/o." l "." k
                 print substr($0, 3) > c; close(c); printf "" > o; next }
        /^$/ { next }
        k { print > o }' "$1"
    k=1
    while [ -f "$t/c.$2.$k" ]; do
        cmd=$(cat "$t/c.$2.$k")
        (cd "$t" && env LD_LIBRARY_PATH="$ABS/sim" PATH="$ABS:$PATH" \
            GPUMEM_SHM_PREFIX=$prefix SIMCUDA_LATENCY=0 sh -c "$cmd" \
            > "$t/r.$2.$k" 2>&1; echo "$?" > "$t/rc")
        # "echo $?" after a command: the status of that command.
        case "$cmd" in
            "echo \$?") cp "$t/lastrc" "$t/r.$2.$k" ;;
        esac
        cp "$t/rc" "$t/lastrc"
        if ! mask < "$t/o.$2.$k" > "$t/mo" || ! mask < "$t/r.$2.$k" > "$t/mr" ||
           ! cmp -s "$t/mo" "$t/mr"; then
            fail "$2: \$ $cmd prints otherwise:
$(diff "$t/mo" "$t/mr" | sed -n '1,12s/^/      /p')"
        fi
        k=$((k + 1))
    done
}

for b in $(ls "$t" | sed -n 's/^b\.//p' | sort -n); do
    n=$((n + 1))
    if head -n 1 "$t/b.$b" | grep -q '^\$ '; then
        session "$t/b.$b" "$b"
    else
        synopsis "$t/b.$b" "$b"
    fi
done
[ "$n" -ge 4 ] || { echo "FAIL: only $n marked samples in $DOC"; exit 1; }
[ "$fails" -eq 0 ] || exit 1
echo "ok: $n samples of $DOC match the programs"
