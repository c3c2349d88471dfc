#!/bin/sh
# tools/cli/mkpages.sh — the installed manual pages and the bash
# completion, made from the same sources as what people read elsewhere:
#
#   man1/gpumem.1, man1/gpumem-COMMAND.1   from `gpumem help [COMMAND]`
#   man1/gpumem-top.1                       from `gpumem-top --help`
#   man7/gpumem-env.7                       from docs/env.md
#   bash-completion/gpumem, .../gpumem-top  commands and options from the
#                                           same help pages
#
#   sh tools/cli/mkpages.sh BUILD OUT
#
# BUILD holds the built gpumem and gpumem-top; OUT receives man1/, man7/
# and bash-completion/. Nothing is written twice by hand: a help text
# changed in the C source changes the page at the next `make`.
# Exit 0, or 1 with a message when a program cannot be run.
set -u
B=${1:?usage: mkpages.sh BUILD OUT}
O=${2:?usage: mkpages.sh BUILD OUT}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
GPUMEM=$B/gpumem
TOP=$B/gpumem-top
VERSION=$("$GPUMEM" --version 2>/dev/null | sed 's/^gpumem //')
[ -n "$VERSION" ] || { echo "mkpages: cannot run $GPUMEM --version" >&2; exit 1; }
mkdir -p "$O/man1" "$O/man7" "$O/bash-completion" || exit 1

# A help page (NAME / SYNOPSIS / ... with four-space indented bodies) as
# a man page: each section in no-fill mode, exactly as --help shows it.
help2man() { # page-name section < help text
    awk -v name="$1" -v sec="$2" -v ver="$VERSION" '
    function esc(s) {
        gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s)
        if (s ~ /^[.\047]/) s = "\\&" s
        return s
    }
    BEGIN {
        up = toupper(name); gsub(/-/, "\\-", up)
        printf ".TH %s %s \"\" \"gpumem %s\" \"gpumem manual\"\n", up, sec, ver
    }
    /^[A-Z][A-Z ]*$/ {
        if (nf) print ".fi"
        nf = 0; section = $0
        printf ".SH %s\n", $0
        next
    }
    section == "NAME" {
        line = $0; sub(/^ +/, "", line)
        if (line == "") next
        i = index(line, " - ")
        printf "%s \\- %s\n", esc(name), esc(substr(line, i + 3))
        next
    }
    {
        if (!nf) { print ".nf"; nf = 1 }
        line = $0; sub(/^    /, "", line)
        print (line == "" ? "" : esc(line))
    }
    END { if (nf) print ".fi" }'
}

# docs/env.md as gpumem-env(7): headings, paragraphs, lists, tables and
# code blocks; inline code in bold, links as their text.
md2man() {
    awk -v ver="$VERSION" '
    function esc(s) {
        gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s)
        return s
    }
    function inline(s,    out, i, c, code) {
        s = esc(s)
        while (match(s, /\[[^]]*\]\([^)]*\)/)) {
            t = substr(s, RSTART + 1); t = substr(t, 1, index(t, "]") - 1)
            s = substr(s, 1, RSTART - 1) t substr(s, RSTART + RLENGTH)
        }
        while (match(s, /\*\*[^*]+\*\*/))
            s = substr(s, 1, RSTART - 1) "\\fB" substr(s, RSTART + 2, RLENGTH - 4) "\\fR" substr(s, RSTART + RLENGTH)
        while (match(s, /`[^`]+`/))
            s = substr(s, 1, RSTART - 1) "\\fB" substr(s, RSTART + 1, RLENGTH - 2) "\\fR" substr(s, RSTART + RLENGTH)
        if (s ~ /^[.\047]/) s = "\\&" s
        return s
    }
    BEGIN {
        print ".TH GPUMEM\\-ENV 7 \"\" \"gpumem " ver "\" \"gpumem manual\""
        print ".SH NAME"
        print "gpumem\\-env \\- the GPUMEM_* variables that set the gpumem policy"
    }
    /^```/ {
        if (code) { print ".fi"; print ".RE"; code = 0 }
        else { print ".PP"; print ".RS 4"; print ".nf"; code = 1 }
        next
    }
    code { l = esc($0); if (l ~ /^[.\047]/) l = "\\&" l; print l; next }
    /^# / { next }
    /^## / { t = substr($0, 4); gsub(/`/, "", t); print ".SH \"" esc(t) "\""; next }
    /^### / { t = substr($0, 5); gsub(/`/, "", t); print ".SS \"" esc(t) "\""; next }
    /^\|/ {
        if ($0 ~ /^\|[- |:]+\|$/) next
        row = $0; sub(/^\| */, "", row); sub(/ *\|$/, "", row)
        gsub(/ *\| */, "\001", row)
        if (!intable) { print ".PP"; print ".nf"; intable = 1 }
        row = inline(row)
        gsub(/\001/, "  |  ", row)
        print row
        next
    }
    intable { print ".fi"; intable = 0 }
    /^$/ { print ".PP"; next }
    /^- / { print ".IP \\(bu 2"; print inline(substr($0, 3)); next }
    /^  [^ ]/ { l = $0; sub(/^ +/, "", l); print inline(l); next }
    { print inline($0) }
    END { if (intable) print ".fi"; if (code) print ".fi" }' "$HERE/docs/env.md"
}

# Characters beyond ASCII (µ, —, ≥) as troff's \[uXXXX], so every
# formatter reads the page whatever its input encoding (perl is part of
# every Debian system).
ascii() {
    perl -CSD -pe 's/([^\x00-\x7f])/sprintf("\\[u%04X]", ord $1)/ge'
}

# The commands gpumem lists in its COMMANDS section.
commands() {
    "$GPUMEM" --help | awk '/^COMMANDS$/ { on = 1; next }
        /^[A-Z]/ { on = 0 } on && NF { print $1 }'
}

# The --long options a help page lists in its OPTIONS section, one a
# line: the options named at the head of each item (a line indented four
# spaces that starts with '-'), where the head is options, each with an
# optional argument, separated by ", " ("-d SECONDS, --delay SECONDS",
# "--sweep LO:HI, --points N"); the description after the head, and the
# prose of other lines, name options of other commands too.
item_options() {
    awk '/^OPTIONS$/ { on = 1; next } /^[A-Z]/ { on = 0 }
        on && /^    -/ {
            head = substr($0, 5); sub(/  .*/, "", head)
            n = split(head, w, " ")
            for (i = 1; i <= n && w[i] ~ /^-/; i++) {
                more = sub(/,$/, "", w[i])    # another option follows
                o = w[i]; sub(/=.*/, "", o)
                if (o ~ /^--[a-z][a-z0-9-]*$/) print o
                if (more) continue
                # Its argument, when it has one, ends the head unless a
                # comma follows it.
                if (i == n || w[i + 1] ~ /^-/) break
                i++
                if (!sub(/,$/, "", w[i])) break
            }
        }'
}

# The options of a command, its help page on stdin, on one line: its
# own, and those of gpumem run when it takes RUN OPTIONS.
options() {
    page=$(cat)
    {
        printf '%s\n' "$page" | item_options
        case $page in *"RUN OPTIONS"*) "$GPUMEM" help run | item_options ;; esac
    } | sort -u | tr '\n' ' '
}

"$GPUMEM" --help | help2man gpumem 1 | ascii > "$O/man1/gpumem.1" || exit 1
"$TOP" --help | help2man gpumem-top 1 | ascii > "$O/man1/gpumem-top.1" || exit 1
cmds=$(commands)
[ -n "$cmds" ] || { echo "mkpages: $GPUMEM --help lists no commands" >&2; exit 1; }
for c in $cmds; do
    "$GPUMEM" help "$c" | help2man "gpumem-$c" 1 | ascii > "$O/man1/gpumem-$c.1" || exit 1
done
md2man | ascii > "$O/man7/gpumem-env.7" || exit 1

{
    echo "# bash completion for gpumem and gpumem-top (gpumem $VERSION)."
    echo "# Made by tools/cli/mkpages.sh from the programs' help pages."
    echo "_gpumem() {"
    echo '    local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]:-} w'
    echo '    for w in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do'
    echo '        [ "$w" = -- ] && { COMPREPLY=($(compgen -c -- "$cur")); return; }'
    echo '    done'
    echo '    if [ "$COMP_CWORD" -eq 1 ]; then'
    echo "        COMPREPLY=(\$(compgen -W \"$cmds help --help --version\" -- \"\$cur\"))"
    echo '        return'
    echo '    fi'
    echo '    case $cmd in'
    echo "    help) COMPREPLY=(\$(compgen -W \"$cmds\" -- \"\$cur\")) ;;"
    for c in $cmds; do
        echo "    $c) COMPREPLY=(\$(compgen -W \"$("$GPUMEM" help "$c" | options)\" -- \"\$cur\")) ;;"
    done
    echo '    esac'
    echo '}'
    echo 'complete -F _gpumem gpumem'
    echo "_gpumem_top() {"
    echo "    COMPREPLY=(\$(compgen -W \"$("$TOP" --help | options)\" -- \"\${COMP_WORDS[COMP_CWORD]}\"))"
    echo "}"
    echo 'complete -F _gpumem_top gpumem-top'
} > "$O/bash-completion/gpumem" || exit 1
cp "$O/bash-completion/gpumem" "$O/bash-completion/gpumem-top"
exit 0
