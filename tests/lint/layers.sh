#!/bin/sh
# tests/lint/layers.sh — the layering rule of shim/, policy/ and tools/.
#
#   sh tests/lint/layers.sh [ROOT]     check the tree at ROOT (default .)
#   sh tests/lint/layers.sh --self-test
#
# Reads every `#include "..."` of every .c and .h file under shim/, policy/
# and tools/ and fails (exit 1), naming file and line, on
#   - an include of a folder that the including folder may not use (an
#     arrow pointing up or sideways: the table below),
#   - a folder that is not in the table (a new folder needs a row),
#   - an include of a file that does not exist,
#   - a circle between modules (a module is foo.c with foo.h; foo.c
#     including foo.h is no edge), even inside one folder.
# Prints "layers: N files, N includes, no violation" and exits 0 otherwise.

# The table: a folder, then the folders it may include besides itself.
# Read from the bottom up: each row lists only rows below it.
LAYERS='
shim/base
policy          shim/base
shim/driver     shim/base
shim/telemetry  shim/base policy
shim/group      shim/base policy
shim/account    shim/driver shim/telemetry shim/group shim/base policy
shim/admit      shim/account shim/driver shim/telemetry shim/group shim/base policy
shim/record     shim/base policy
shim/intercept  shim/admit shim/account shim/record shim/driver shim/telemetry shim/group shim/base policy
tools/lib       shim/record shim/telemetry shim/group shim/base policy
tools/sim       shim/driver shim/base policy
tools/simnvml   tools/sim shim/driver shim/base policy
tools/trainsim  shim/base policy
tools/replay    tools/lib shim/record shim/telemetry shim/group shim/base policy
tools/spank     shim/group shim/base policy
tools/cli       tools/lib shim/record shim/telemetry shim/group shim/base policy
tools/top       tools/lib shim/telemetry shim/group shim/base policy
tools/exporter  tools/cli tools/lib shim/telemetry shim/group shim/base policy
'

check() { # root
    root=$1
    list=$(cd "$root" && find shim policy tools -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null | sort)
    if [ -z "$list" ]; then
        echo "layers: no source under $root/shim, policy, tools" >&2
        return 1
    fi
    (cd "$root" && for f in $list; do
        grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
            sed "s|^\([0-9]*\):.*\"\(.*\)\".*|$f \1 \2|"
        echo "$f 0 -"   # every file is a node, even without includes
    done) | awk -v layers="$LAYERS" -v root="$root" '
    function dir(p) { sub(/\/[^\/]*$/, "", p); return p }
    function mod(p) { sub(/\.[ch]$/, "", p); return p }
    function bad(msg) { print msg > "/dev/stderr"; nbad++ }
    BEGIN {
        n = split(layers, rows, "\n")
        for (i = 1; i <= n; i++) {
            k = split(rows[i], w, " ")
            if (k == 0) continue
            known[w[1]] = 1
            allowed[w[1]] = ""
            for (j = 2; j <= k; j++) { may[w[1], w[j]] = 1; allowed[w[1]] = allowed[w[1]] " " w[j] }
        }
    }
    {
        file = $1; line = $2; inc = $3
        nfiles += (line == 0)
        if (line == 0) next
        nincs++
        from = dir(file); to = dir(inc)
        if (!(from in known)) {
            if (!(from in told)) bad(file ": folder " from " is not in the layer table of tests/lint/layers.sh")
            told[from] = 1
            next
        }
        if ((getline junk < (root "/" inc)) < 0) {
            bad(file ":" line ": includes \"" inc "\", which does not exist (includes name a path from the repository root)")
            next
        }
        close(root "/" inc)
        if (to != from && !((from, to) in may)) {
            bad(file ":" line ": includes \"" inc "\": " from " may not include " to \
                " (it may include:" (allowed[from] == "" ? " nothing outside itself" : allowed[from]) ")")
            next
        }
        a = mod(file); b = mod(inc)
        if (a != b && !((a, b) in edge)) {
            edge[a, b] = file ":" line
            out[a] = out[a] " " b
            nodes[a] = 1; nodes[b] = 1
        }
    }
    # Depth-first search; a grey node reached again closes a circle.
    function visit(u,    k, i, v, w, c, p) {
        color[u] = 1; stack[++sp] = u
        k = split(out[u], w, " ")
        for (i = 1; i <= k; i++) {
            v = w[i]
            if (color[v] == 1) {
                c = ""
                for (p = sp; p >= 1 && stack[p] != v; p--) ;
                for (; p < sp; p++) c = c "\n    " edge[stack[p], stack[p + 1]] " -> " stack[p + 1]
                c = c "\n    " edge[u, v] " -> " v
                bad("include circle through " v ":" c)
            } else if (color[v] == 0) {
                visit(v)
            }
        }
        sp--; color[u] = 2
    }
    END {
        for (u in nodes) if (color[u] == 0) visit(u)
        if (nbad) { printf "layers: %d violation(s)\n", nbad > "/dev/stderr"; exit 1 }
        printf "layers: %d files, %d includes, no violation\n", nfiles, nincs
    }'
}

self_test() {
    t=$(mktemp -d "${TMPDIR:-/tmp}/gm-layers.XXXXXX") || return 1
    trap 'rm -rf "$t"' EXIT INT TERM
    fails=0
    expect() { # want(0|1) what pattern root
        out=$(check "$4" 2>&1); rc=$?
        if [ "$1" = 0 ] && [ $rc -ne 0 ]; then
            echo "self-test: $2: expected a pass, got:"; echo "$out"; fails=$((fails + 1))
        elif [ "$1" = 1 ] && { [ $rc -eq 0 ] || ! echo "$out" | grep -q -- "$3"; }; then
            echo "self-test: $2: expected a failure matching '$3', got (exit $rc):"
            echo "$out"; fails=$((fails + 1))
        else
            echo "self-test: $2: ok"
        fi
    }
    mk() { mkdir -p "$(dirname "$t/$1/$2")"; printf '%s\n' "$3" > "$t/$1/$2"; }

    mk clean shim/base/a.h '/* a */'
    mk clean shim/account/b.h '#include "shim/base/a.h"'
    mk clean shim/account/b.c '#include "shim/account/b.h"'
    expect 0 "a clean tree" "" "$t/clean"

    cp -r "$t/clean" "$t/up"
    mk up shim/base/a.c '#include "shim/base/a.h"
#include "shim/account/b.h"'
    expect 1 "an upward include" 'shim/base/a.c:2: includes "shim/account/b.h": shim/base may not include shim/account' "$t/up"

    cp -r "$t/clean" "$t/circle"
    mk circle shim/account/c.h '#include "shim/account/b.h"'
    mk circle shim/account/b.c '#include "shim/account/b.h"
#include "shim/account/c.h"'
    mk circle shim/account/c.c '#include "shim/account/b.h"'
    mk circle shim/account/b.h '#include "shim/base/a.h"'
    printf '#include "shim/account/c.h"\n' >> "$t/circle/shim/account/b.h"
    expect 1 "a circle inside a folder" 'include circle through shim/account/' "$t/circle"

    cp -r "$t/clean" "$t/missing"
    mk missing shim/account/d.c '#include "shim/account/nothere.h"'
    expect 1 "a missing header" 'shim/account/d.c:1: includes "shim/account/nothere.h", which does not exist' "$t/missing"

    cp -r "$t/clean" "$t/unknown"
    mk unknown shim/newlayer/e.c '#include "shim/base/a.h"'
    expect 1 "a folder without a row" 'folder shim/newlayer is not in the layer table' "$t/unknown"

    # The real tree with one deliberately wrong include added at the bottom.
    here=$(cd "$(dirname "$0")/../.." && pwd)
    mkdir -p "$t/real"
    (cd "$here" && cp -r shim policy tools "$t/real/")
    expect 0 "the real tree" "" "$t/real"
    n=$(($(wc -l < "$t/real/shim/base/clock.h") + 1))
    echo '#include "shim/intercept/lifecycle.h"' >> "$t/real/shim/base/clock.h"
    expect 1 "the real tree with an upward include" \
        "shim/base/clock.h:$n: includes \"shim/intercept/lifecycle.h\": shim/base may not include shim/intercept" "$t/real"

    [ $fails -eq 0 ] && echo "self-test: all cases behave" && return 0
    return 1
}

case "${1:-}" in
    --self-test) self_test ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' ;;
    *) check "${1:-.}" ;;
esac
