#!/bin/sh
# tests/integ/with_preload.sh — run a command in a private mount namespace
# whose /etc/ld.so.preload names LIB (or is empty, for "-"), so that every
# process started there loads LIB as on a node deployed with it. The
# machine's own /etc/ld.so.preload is never touched: an existing one has a
# test file bind-mounted over it; when there is none, /etc is covered by an
# overlay (lower: the real /etc, upper: a temporary directory) and the file
# is created in the overlay. Both vanish with the namespace.
#
#   sh tests/integ/with_preload.sh LIB|- CMD [ARGS...]
#
# Exit 77 when a private mount namespace or the mount cannot be made (not
# root, no unshare, a container that forbids it); else CMD's status.
set -u
[ $# -ge 2 ] || { echo "usage: with_preload.sh LIB|- CMD [ARGS...]" >&2; exit 2; }
lib=$1; shift
command -v unshare >/dev/null 2>&1 || { echo "skip: no unshare" >&2; exit 77; }
[ "$(id -u)" = 0 ] || { echo "skip: mounting needs root" >&2; exit 77; }
t=$(mktemp -d "${TMPDIR:-/tmp}/gm-preload.XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT INT TERM
if [ "$lib" = - ]; then : > "$t/preload"; else echo "$lib" > "$t/preload"; fi
chmod 0644 "$t/preload"
mkdir "$t/up" "$t/work"
# The inner shell: mount, then run CMD; 77 when the mount fails.
unshare -m --propagation private sh -c '
    t=$1; shift
    if [ -e /etc/ld.so.preload ]; then
        mount --bind "$t/preload" /etc/ld.so.preload 2>/dev/null || exit 77
    else
        mount -t overlay overlay -o "lowerdir=/etc,upperdir=$t/up,workdir=$t/work" \
            /etc 2>/dev/null || exit 77
        cp "$t/preload" /etc/ld.so.preload || exit 77
    fi
    exec "$@"' sh "$t" "$@"
rc=$?
[ $rc -eq 77 ] && echo "skip: cannot mount over /etc/ld.so.preload in a private namespace" >&2
exit $rc
