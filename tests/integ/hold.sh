# tests/integ/hold.sh — sourced by shell tests (not a test itself):
#
#   hold PID...   stop the processes so that their figures hold still, and
#                 not in the middle of an update
#
# A process stopped inside a device block's seqlock leaves it busy
# (gpumem ps says "consistent":false, the exporter skips it), so each
# round lets them run a little and stops them again until every block of
# theirs reads whole (other processes are not looked at: one that
# allocates without pause may never read whole); after 50 rounds it calls
# the sourcing test's `bad`. Needs $G (the gpumem program) and a `bad`
# function.

# Whether any of the PIDs has a device block that did not read whole.
torn() { # PID...
    "$G" ps --json --all | awk -v pids=" $* " '
        { n = split($0, rec, /\{"pid":/)
          for (i = 2; i <= n; i++) {
              pid = rec[i]; sub(/[^0-9].*/, "", pid)
              if (index(pids, " " pid " ") && rec[i] ~ /"consistent":false/)
                  bad = 1
          } }
        END { exit !bad }'
}
hold() { # PID...
    i=0
    while [ $i -lt 50 ]; do
        kill -STOP "$@"
        sleep 0.05
        torn "$@" || return 0
        kill -CONT "$@"
        sleep 0.01
        i=$((i + 1))
    done
    bad "could not stop $* outside an update"
}
