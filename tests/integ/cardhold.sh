# tests/integ/cardhold.sh — sourced by shell tests (not a test itself):
#
#   hold_card NAME DEVICES [LIMIT]
#                 start cudahold under the shim with CUDA_VISIBLE_DEVICES
#                 set to DEVICES (and GPUMEM_LIMIT to LIMIT when given),
#                 holding 600 MiB until $T/stop exists or 60 s pass; wait
#                 until it says it holds. Its pid goes into PID_<NAME> and
#                 the list $PIDS (the sourcing test's cleanup kills them),
#                 its output into $T/NAME.out.
#
# Needs $B (the build directory), $T (the test's temporary directory) and
# a `fail` function.
hold_card() { # name visible-devices [limit]
    env CUDA_VISIBLE_DEVICES="$2" ${3:+GPUMEM_LIMIT="$3"} \
        LD_PRELOAD="$B/libgpumem.so" \
        "$B/tests/progs/cudahold" 600M "$T/stop" 60 >"$T/$1.out" 2>&1 &
    PIDS="$PIDS $!"
    eval "PID_$1=\$!"
    n=0
    until grep -q holding "$T/$1.out" 2>/dev/null; do
        n=$((n + 1)); [ $n -gt 500 ] && fail "$1 never held its memory: $(cat "$T/$1.out")"
        sleep 0.01
    done
}
