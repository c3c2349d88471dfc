#!/bin/sh
# tests/lint/test_layers.sh — `make check`'s layering case: the tree obeys
# the table in tests/lint/layers.sh, and the checker itself fails on a
# deliberately wrong include, a circle, a missing header and an unknown
# folder (its self-test).
here=$(cd "$(dirname "$0")" && pwd)
sh "$here/layers.sh" "$here/../.." || exit 1
sh "$here/layers.sh" --self-test
