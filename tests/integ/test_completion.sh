#!/bin/sh
# tests/integ/test_completion.sh — the bash completion made by
# tools/cli/mkpages.sh offers only words the programs take, and every
# option they take that it offers elsewhere:
#   - each command it offers after `gpumem` has a manual page;
#   - each option it offers after `gpumem CMD` (and after gpumem-top) is
#     one that CMD's parser accepts;
#   - each option it offers anywhere that CMD's parser accepts is offered
#     for CMD too (the RUN OPTIONS of record, replay and fit).
# Whether a parser accepts WORD is asked by running CMD WORD= followed by
# an option no program has: the parser stops at one or the other, so
# nothing is ever run; a WORD it does not know is refused by name
# ("unknown option 'WORD='"), a flag refuses the empty value and an
# option with a value takes it (or refuses it as a value), and the parser
# then refuses the other option.
# Exit 0 pass, 1 fail (each failure named), 77 skip (no bash).
set -u
B=${BUILD:-build}
C=$B/share/bash-completion/gpumem
NOSUCH=--gmtest-no-such-option
command -v bash >/dev/null 2>&1 || { echo "skip: bash is not installed"; exit 77; }
[ -f "$C" ] || { echo "FAIL: $C was not made by make"; exit 1; }
t=$(mktemp -d "${TMPDIR:-/tmp}/gm-compl.XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The words the completion offers after `gpumem CMD ` (top: after
# `gpumem-top `, -: after `gpumem `), one a line.
offered() {
    case $1 in
    top) bash -c '. "$1"; COMP_WORDS=(gpumem-top ""); COMP_CWORD=1
                  _gpumem_top; printf "%s\n" "${COMPREPLY[@]}"' bash "$C" ;;
    -) bash -c '. "$1"; COMP_WORDS=(gpumem ""); COMP_CWORD=1
                _gpumem; printf "%s\n" "${COMPREPLY[@]}"' bash "$C" ;;
    *) bash -c '. "$1"; COMP_WORDS=(gpumem "$2" ""); COMP_CWORD=2
                _gpumem; printf "%s\n" "${COMPREPLY[@]}"' bash "$C" "$1" ;;
    esac | sort -u
}

# Run command CMD of gpumem (top: gpumem-top) with the arguments after it,
# for 10 s at most.
run() {
    c=$1; shift
    if [ "$c" = top ]; then
        timeout 10 "$B/gpumem-top" "$@" </dev/null
    else
        timeout 10 "$B/gpumem" "$c" "$@" </dev/null
    fi
}

# 0 when CMD accepts the option WORD, 1 when it refuses it as unknown,
# 2 (and a failure) when the probe ran something instead of stopping.
# --help and --version are taken before any parser: they must exit 0.
accepts() {
    case $2 in
    --help|--version) run "$1" "$2" >/dev/null 2>&1; return $(( $? != 0 )) ;;
    esac
    run "$1" "$2=" "$NOSUCH" >/dev/null 2>"$t/err"
    rc=$?
    if [ "$rc" -ne 2 ]; then
        fail "$1 $2= $NOSUCH exited $rc, not 2: $(head -n 2 "$t/err")"
        return 2
    fi
    grep -Fq -e "option '$2='" -e "option $2=" "$t/err" && return 1
    return 0
}

cmds=$("$B/gpumem" --help | awk '/^COMMANDS$/ { on = 1; next }
    /^[A-Z]/ { on = 0 } on && NF { print $1 }')
[ -n "$cmds" ] || { echo "FAIL: gpumem --help lists no commands"; exit 1; }

# The first word: the commands, help, --help and --version.
for w in $(offered -); do
    case $w in
    help|--help|--version) "$B/gpumem" "$w" >/dev/null 2>&1 ||
        fail "gpumem $w exited $?" ;;
    *) "$B/gpumem" help "$w" >/dev/null 2>&1 ||
        fail "the completion offers 'gpumem $w', which is no command" ;;
    esac
done

# The refusal is seen: an option no program has is refused by each.
for c in $cmds top; do
    accepts "$c" "$NOSUCH"
    [ $? -eq 1 ] || fail "$c: the refusal of $NOSUCH is not seen"
done

# Every word offered for a command is an option it accepts.
n=0
for c in $cmds top; do
    offered "$c" > "$t/offered.$c"
    [ -s "$t/offered.$c" ] || fail "the completion offers nothing for $c"
    while IFS= read -r w; do
        n=$((n + 1))
        case $w in
        --[a-z]*) ;;
        *) fail "the completion offers '$w' for $c: not an option"; continue ;;
        esac
        accepts "$c" "$w"
        [ $? -eq 1 ] && fail "the completion offers $w for $c, which refuses it"
    done < "$t/offered.$c"
done
[ "$n" -ge 50 ] || fail "only $n words offered for all the commands"

# Every option offered anywhere that a command accepts is offered for it.
cat "$t"/offered.* | sort -u > "$t/all"
for c in $cmds top; do
    while IFS= read -r w; do
        grep -Fxq -- "$w" "$t/offered.$c" && continue
        case $w in --[a-z]*) ;; *) continue ;; esac
        accepts "$c" "$w"
        [ $? -eq 0 ] && fail "$c accepts $w, but the completion does not offer it"
    done < "$t/all"
done

[ "$fails" -eq 0 ] || exit 1
echo "ok: $n words offered, each accepted; none accepted left out"
