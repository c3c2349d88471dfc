#!/bin/sh
# tools/prereq.sh — what a build step needs from the system, said in one
# line with the command that installs it, instead of a compiler error.
#
#   sh tools/prereq.sh tools   # make: pkg-config and ncurses (gpumem-top)
#   sh tools/prereq.sh tests   # make check: also Check and tmux
#
# Exit 0 when everything is there, 1 (after one line on stderr) when not.
# The package names are Debian's; README.md lists the same ones.
PKGS="build-essential pkg-config libncurses-dev check tmux binutils groff-base librsvg2-bin"
missing=""
have_pc() { command -v pkg-config >/dev/null 2>&1 && pkg-config --exists "$1"; }
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
have_pc ncursesw || have_pc ncurses || missing="$missing libncurses-dev"
if [ "${1:-tools}" = tests ]; then
    have_pc check || missing="$missing check"
    command -v tmux >/dev/null 2>&1 || missing="$missing tmux"
    command -v objdump >/dev/null 2>&1 || missing="$missing binutils"
fi
[ -z "$missing" ] && exit 0
what=tools
[ "${1:-tools}" = tests ] && what=tests
echo "gpumem: the $what need the Debian package(s)$missing; install everything with: sudo apt-get install $PKGS" >&2
exit 1
