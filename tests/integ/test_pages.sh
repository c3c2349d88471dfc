#!/bin/sh
# tests/integ/test_pages.sh — the installed documentation agrees with the
# programs: --version, every manual page made from its help text (each
# line of `gpumem help CMD` appears in the formatted page) and formatted
# by groff without a warning, gpumem-env(7) carrying every variable of
# docs/env.md, the bash completion offering the commands and a command's
# options, and `make install` putting them in place; and the options
# of gpumem-trainsim's parser being those its --help and docs/trainsim.md
# list, its sample output in both being what it prints.
# Exit 0 pass, 1 fail, 77 skip (no groff or bash; the gpumem-trainsim
# checks run first, without them).
set -u
B=${BUILD:-build}
fail() { echo "FAIL: $*"; exit 1; }
t=$(mktemp -d "${TMPDIR:-/tmp}/gm-pages.XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT

# gpumem-trainsim: the --long options of its parser (long_opts in
# tools/trainsim/options.c), of its --help and of the options table of
# docs/trainsim.md, one a line, sorted.
TS=$B/gpumem-trainsim
sed -En 's/^[[:space:]]*\{ "([a-z][a-z0-9-]*)", (no|required|optional)_argument,.*/--\1/p' \
    tools/trainsim/options.c | sort > "$t/ts.parser"
"$TS" --help > "$t/ts.help" || fail "$TS --help exited $?"
awk '/^OPTIONS$/ { on = 1; next } /^[A-Z]/ { on = 0 }
    on && /^    --[a-z]/ { print $1 }' "$t/ts.help" | sort > "$t/ts.helpopts"
awk '/^## / { on = ($0 == "## Options"); next }
    on && /^\| `--[a-z]/ { o = $2; gsub(/`/, "", o); print o }' docs/trainsim.md |
    sort > "$t/ts.doc"
[ "$(wc -l < "$t/ts.parser")" -ge 20 ] ||
    fail "only $(wc -l < "$t/ts.parser") options found in tools/trainsim/options.c"
for f in helpopts doc; do
    what=$([ $f = doc ] && echo "docs/trainsim.md's options table" || echo "$TS --help")
    missing=$(comm -23 "$t/ts.parser" "$t/ts.$f" | tr '\n' ' ')
    extra=$(comm -13 "$t/ts.parser" "$t/ts.$f" | tr '\n' ' ')
    [ -z "$missing" ] || fail "$what lacks the options $missing"
    [ -z "$extra" ] || fail "$what lists options the parser lacks: $extra"
done

# Its sample output: the lines of --help's OUTPUT and of docs/trainsim.md's
# Output block are lines of the run with the default options (stdout); the
# failed allocation of --help, one of the run it names (stderr, exit 3).
sim() { env -u SIMCUDA_CONTEXT -u SIMCUDA_MEMORY -u SIMCUDA_DEVICES \
            -u SIMCUDA_FAIL LD_LIBRARY_PATH="$B/sim" "$@"; }
sim "$TS" > "$t/ts.out" 2> "$t/ts.out2" || fail "$TS exited $?: $(head -n 3 "$t/ts.out2")"
sim env LD_PRELOAD="$B/libgpumem.so" GPUMEM_LIMIT=1G "$TS" --quiet --leak 4M \
    > /dev/null 2> "$t/ts.err"
rc=$?
[ "$rc" -eq 3 ] || fail "$TS --leak 4M under GPUMEM_LIMIT=1G exited $rc, not 3"
awk '/^OUTPUT$/ { on = 1; next } /^[A-Z]/ { on = 0 }
    on && /^    trainsim: / { sub(/^    /, ""); print }' "$t/ts.help" > "$t/ts.samples"
awk '/^## / { on = ($0 == "## Output"); next }
    on && /^```/ { code = !code; next } on && code' docs/trainsim.md > "$t/ts.docsamples"
[ "$(wc -l < "$t/ts.samples")" -ge 3 ] || fail "$TS --help shows no sample output"
[ "$(wc -l < "$t/ts.docsamples")" -ge 2 ] || fail "docs/trainsim.md shows no sample output"
while IFS= read -r l; do
    case $l in
    *" failed: "*) grep -Fxq -- "$l" "$t/ts.err" ||
        fail "$TS --help shows '$l'; the run it names says: $(grep -F failed "$t/ts.err")" ;;
    *) grep -Fxq -- "$l" "$t/ts.out" ||
        fail "$TS --help shows '$l', which the default run does not print" ;;
    esac
done < "$t/ts.samples"
while IFS= read -r l; do
    grep -Fxq -- "$l" "$t/ts.out" ||
        fail "docs/trainsim.md shows '$l', which the default run does not print"
done < "$t/ts.docsamples"

command -v groff >/dev/null 2>&1 || { echo "skip: groff is not installed"; exit 77; }
command -v bash >/dev/null 2>&1 || { echo "skip: bash is not installed"; exit 77; }

v=$("$B/gpumem" --version) || fail "gpumem --version exited $?"
echo "$v" | grep -Eq '^gpumem [0-9]+\.[0-9]+\.[0-9]+$' || fail "gpumem --version: '$v'"
tv=$("$B/gpumem-top" --version) || fail "gpumem-top --version exited $?"
[ "$tv" = "gpumem-top ${v#gpumem }" ] || fail "gpumem-top --version: '$tv'"

P=$B/share
[ -f "$P/man1/gpumem.1" ] || fail "$P/man1/gpumem.1 was not made by make"

# Formatted text of a page, one space between words.
text() { groff -man -Tutf8 -P-c -ww "$1" 2>"$t/warn" | sed 's/\x1b\[[0-9;]*m//g' |
         sed 's/.\x08//g' | tr -s ' \t' ' '; }
check_page() { # page help-command...
    page=$1; shift
    "$@" > "$t/help" || fail "$* exited $?"
    text "$page" > "$t/page"
    [ -s "$t/warn" ] && fail "$page: groff warns: $(head -n 3 "$t/warn")"
    # Every line of the help, squeezed the same way, is in the page.
    while IFS= read -r line; do
        l=$(printf '%s' "$line" | tr -s ' \t' ' ' | sed 's/^ //; s/ $//')
        [ -z "$l" ] && continue
        case "$l" in NAME|SYNOPSIS|DESCRIPTION|OPTIONS|COMMANDS|EXIT\ STATUS|ENVIRONMENT|EXAMPLES|FILES|SEE\ ALSO) continue ;; esac
        # The NAME line reads "gpumem-run - ..." in the page.
        l2=$(printf '%s' "$l" | sed 's/^gpumem \([a-z]*\) - /gpumem-\1 - /')
        grep -Fq -- "$l2" "$t/page" || grep -Fq -- "$l" "$t/page" ||
            fail "$page lacks the help line: $l"
    done < "$t/help"
}
check_page "$P/man1/gpumem.1" "$B/gpumem" --help
check_page "$P/man1/gpumem-top.1" "$B/gpumem-top" --help
n=0
for c in $("$B/gpumem" --help | awk '/^COMMANDS$/{on=1;next} /^[A-Z]/{on=0} on&&NF{print $1}'); do
    check_page "$P/man1/gpumem-$c.1" "$B/gpumem" help "$c"
    n=$((n + 1))
done
[ "$n" -ge 6 ] || fail "only $n command pages"

# gpumem-env(7): every variable docs/env.md documents.
text "$P/man7/gpumem-env.7" > "$t/env"
[ -s "$t/warn" ] && fail "gpumem-env.7: groff warns: $(head -n 3 "$t/warn")"
for var in $(sed -n 's/^## \(GPUMEM_[A-Z_<>N]*\)$/\1/p' docs/env.md); do
    grep -Fq "$var" "$t/env" || fail "gpumem-env.7 lacks $var"
done
grep -Fq "GPUMEM_CUDA_LIBRARY='/opt/none/libcuda.so.1'" "$t/env" ||
    fail "gpumem-env.7 lacks the code samples"

# Completion.
got=$(bash -c ". '$P/bash-completion/gpumem'
    COMP_WORDS=(gpumem r); COMP_CWORD=1; _gpumem; echo \"\${COMPREPLY[*]}\"
    COMP_WORDS=(gpumem run --li); COMP_CWORD=2; _gpumem; echo \"\${COMPREPLY[*]}\"
    COMP_WORDS=(gpumem help p); COMP_CWORD=2; _gpumem; echo \"\${COMPREPLY[*]}\"
    COMP_WORDS=(gpumem-top --on); COMP_CWORD=1; _gpumem_top; echo \"\${COMPREPLY[*]}\"")
want="run report record replay
--limit
policy ps
--once"
[ "$got" = "$want" ] || fail "completion: got
$got"

# make install puts them in place.
make --no-print-directory BUILD="$B" install PREFIX="$t/inst" >/dev/null 2>&1 ||
    fail "make install exited $?"
for f in bin/gpumem bin/gpumem-top lib/libgpumem.so share/man/man1/gpumem.1 \
         share/man/man1/gpumem-run.1 share/man/man1/gpumem-top.1 \
         share/man/man7/gpumem-env.7 share/bash-completion/completions/gpumem \
         share/bash-completion/completions/gpumem-top; do
    [ -f "$t/inst/$f" ] || fail "make install did not install $f"
done
echo "ok: --version, $((n + 2)) pages, gpumem-env(7), completion, install," \
     "gpumem-trainsim's options and samples"
