# tests/integ/hold.sh — sourced by shell tests (not a test itself):
#
#   hold PID...   stop the processes so that their figures hold still, and
#                 not in the middle of an update
#
# A process stopped inside a device block's seqlock leaves it busy
# (gpumem ps says "consistent":false, the exporter skips it), so each
# round lets them run a little and stops them again until every block
# reads whole; after 50 rounds it calls the sourcing test's `bad`.
# Needs $G (the gpumem program) and a `bad` function.
hold() { # PID...
    i=0
    while [ $i -lt 50 ]; do
        kill -STOP "$@"
        sleep 0.05
        "$G" ps --json --all | grep -q '"consistent":false' || return 0
        kill -CONT "$@"
        sleep 0.01
        i=$((i + 1))
    done
    bad "could not stop $* outside an update"
}
