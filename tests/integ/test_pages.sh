#!/bin/sh
# tests/integ/test_pages.sh — the installed documentation agrees with the
# programs: --version, every manual page made from its help text (each
# line of `gpumem help CMD` appears in the formatted page) and formatted
# by groff without a warning, gpumem-env(7) carrying every variable of
# docs/env.md, the bash completion offering the commands and a command's
# options, and `make install` putting them in place.
# Exit 0 pass, 1 fail, 77 skip (no groff or bash).
set -u
B=${BUILD:-build}
fail() { echo "FAIL: $*"; exit 1; }
command -v groff >/dev/null 2>&1 || { echo "skip: groff is not installed"; exit 77; }
command -v bash >/dev/null 2>&1 || { echo "skip: bash is not installed"; exit 77; }
t=$(mktemp -d "${TMPDIR:-/tmp}/gm-pages.XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT

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
echo "ok: --version, $((n + 2)) pages, gpumem-env(7), completion, install"
