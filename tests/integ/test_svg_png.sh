#!/bin/sh
# tests/integ/test_svg_png.sh — the images of `gpumem report --svg` render:
# rsvg-convert (Debian package librsvg2-bin) turns each into a PNG without
# a word on stderr, and the PNG is 960x500, the size the SVG declares.
# Two images: gpumem-trainsim reaching a 1 GiB limit (a refusal), and a
# run whose 1024-event ring lost most of its history (the note and the
# hatched span). The structure of the SVG is checked by test_svg.c.
#
# Uses its own GPUMEM_SHM_PREFIX and removes its segments and temporary
# files. GM_SVG_PNG_DIR=DIR keeps the SVG and PNG files there to look at.
# Exit 0 pass, 1 fail, 77 skip (no rsvg-convert).
set -u
B=${BUILD:-build}
fail() { echo "FAIL: $*"; exit 1; }
command -v rsvg-convert >/dev/null 2>&1 ||
    { echo "skip: rsvg-convert is not installed (Debian package librsvg2-bin)"; exit 77; }
t=$(mktemp -d "${TMPDIR:-/tmp}/gm-svgpng.XXXXXX") || exit 1
GPUMEM_SHM_PREFIX=gmsvgpng$$
export GPUMEM_SHM_PREFIX
SHM=/dev/shm
trap 'rm -rf "$t"; rm -f "$SHM/$GPUMEM_SHM_PREFIX".*' EXIT
case $B in /*) LD_LIBRARY_PATH=$B/sim ;; *) LD_LIBRARY_PATH=$PWD/$B/sim ;; esac
export LD_LIBRARY_PATH
unset GPUMEM_REPORT

# The 4 bytes at offset $2 of file $1 as a big-endian number.
be32() { od -An -tu1 -j "$2" -N4 "$1" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }'; }

# name, ring events, gpumem run arguments...: run kept, draw, render,
# check, remove.
render() {
    name=$1; ring=$2; shift 2
    env GPUMEM_KEEP=1 SIMCUDA_LATENCY=20us GPUMEM_RING_EVENTS="$ring" \
        "$B/gpumem" run "$@" >"$t/run.out" 2>&1
    "$B/gpumem" report --svg "$t/$name.svg" >"$t/report.out" 2>&1 ||
        fail "$name: gpumem report: $(cat "$t/report.out")"
    rsvg-convert -o "$t/$name.png" "$t/$name.svg" 2>"$t/rsvg.err" ||
        fail "$name: rsvg-convert exited $?: $(cat "$t/rsvg.err")"
    [ -s "$t/rsvg.err" ] && fail "$name: rsvg-convert says: $(head -n 3 "$t/rsvg.err")"
    sig=$(od -An -c -j1 -N3 "$t/$name.png" | tr -d ' ')
    [ "$sig" = "PNG" ] || fail "$name: not a PNG ('$sig')"
    w=$(be32 "$t/$name.png" 16); h=$(be32 "$t/$name.png" 20)
    [ "$w" = 960 ] && [ "$h" = 500 ] || fail "$name: PNG is ${w}x$h, not 960x500"
    if [ -n "${GM_SVG_PNG_DIR:-}" ]; then
        mkdir -p "$GM_SVG_PNG_DIR" && cp "$t/$name.svg" "$t/$name.png" "$GM_SVG_PNG_DIR/"
    fi
    "$B/gpumem" gc >/dev/null 2>&1
    left=$(ls "$SHM/$GPUMEM_SHM_PREFIX".* 2>/dev/null)
    [ -z "$left" ] || fail "$name: gpumem gc left $left"
    echo "ok: $name ${w}x$h"
}

render limit 65536 --limit 1G -- "$B/gpumem-trainsim" --steps 60 --leak 16M --quiet
grep -q "1 refused" "$t/report.out" || fail "limit: no refusal: $(cat "$t/report.out")"
render lost 1024 --limit 2G -- "$B/gpumem-trainsim" --steps 200 --quiet
grep -q "history before .* s lost (" "$t/lost.svg" || fail "lost: no note on lost history"
exit 0
