/*
 * tools/cli/cmd_ps.c — `gpumem ps [--json] [--all] [--job J] [--prefix P]`: the
 * processes whose segments exist under a prefix, one row per process and
 * device (text) or one object per process (JSON, exact bytes), then the
 * shared budgets (groups) of that prefix with their members.
 *
 * Invariants: read-only; only the caller's segments unless --all; a
 * segment that cannot be validated is skipped, never trusted.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli/gpumem.h"
#include "tools/lib/util.h"

const char gm_help_ps[] =
    "NAME\n"
    "    gpumem ps - list the processes running under gpumem\n"
    "\n"
    "SYNOPSIS\n"
    "    gpumem ps [--json] [--all] [--job J] [--prefix P]\n"
    "\n"
    "DESCRIPTION\n"
    "    Reads every telemetry segment <prefix>.<pid> of the current user\n"
    "    in the segment directory ($GPUMEM_SHM_DIR, default /dev/shm; a\n"
    "    process of another pid namespace, such as a container, is named\n"
    "    <prefix>.<pid>.ns<inode>) and prints one row per process and\n"
    "    device: PID (in this pid namespace: a container's process shows\n"
    "    its host pid while it runs, ~N with its pid N inside the\n"
    "    container once it is gone), USER, JOB (the Slurm job.step, else\n"
    "    the Kubernetes namespace/pod, else the first 12 digits of the\n"
    "    container id, else -), DEV (device ordinal), USED and PEAK (device memory\n"
    "    charged now and its high-water mark), LIMIT, % (used of limit),\n"
    "    ALLOCS, FREES, OOMS (requests refused at the limit), FRAG\n"
    "    (external fragmentation now), P99 (allocation latency, upper\n"
    "    bound of its log2 bucket), MODE, STATE and COMMAND. Sizes use\n"
    "    binary units (K = 1024). STATE is live (the process runs), kept\n"
    "    (it exited with GPUMEM_KEEP=1) or dead (it was killed; --all).\n"
    "    A process that has not used a device yet shows DEV -. In\n"
    "    COMMAND, control bytes, DEL and bytes that are not UTF-8 show as\n"
    "    \\xHH and a backslash as \\\\ (--json: valid UTF-8, \\ufffd for\n"
    "    a byte that is not).\n"
    "\n"
    "    Then, when processes share a budget (GPUMEM_GROUP), a groups\n"
    "    section: one line per group and device with GROUP (name), DEVICE\n"
    "    (GPU- and the first 8 hex digits of its UUID), USED, PEAK and\n"
    "    LIMIT of the whole group, % (used of limit) and MEMBERS (live\n"
    "    members, and dead ones not reclaimed yet); below it, one line per\n"
    "    member: PID, WEIGHT (priority: high 1.5, normal 1, low 0.7),\n"
    "    SHARE (the part of the limit guaranteed to it), USED (charged to\n"
    "    it), STATE (live or dead) and COMMAND (when the process has a\n"
    "    segment under this prefix).\n"
    "\n"
    "OPTIONS\n"
    "    --json\n"
    "        Print one JSON object {\"processes\": [...], \"groups\": [...]}\n"
    "        with exact byte figures. A process: pid (null when not known),\n"
    "        ns_pid (inside its pid namespace), pidns (that namespace's\n"
    "        inode when not the initial one, else 0), user, uid, state,\n"
    "        command, mode, on_oom, policy, job (the JOB label or null),\n"
    "        identity (recorded, slurm_job_id, slurm_step_id,\n"
    "        slurm_job_user, pod_namespace, pod_name, container_name,\n"
    "        pod_uid, container_id, runtime: each a string or null; uid,\n"
    "        pidns, altered), used, peak, limit, context,\n"
    "        allocs, frees, ooms, live_allocs, live_bytes, host_pinned,\n"
    "        events, events_lost, start_realtime_ns, and devices (the same\n"
    "        per device, with physical, frag_ppm and allocation latency\n"
    "        p50/p99 in ns). Top-level figures are sums over devices. No\n"
    "        limit is null, never 0: limit_bytes of a device without one,\n"
    "        of a process when any of its devices has none (or it used\n"
    "        none yet), of a group likewise. A group: group,\n"
    "        path, user, uid, consistent, live_members, dead_members, used,\n"
    "        peak, limit, joins, reclaims, reclaimed_bytes, repairs,\n"
    "        waiters, created_realtime_ns, devices (device, uuid,\n"
    "        physical, limit, used, peak, reclaimed_bytes) and members\n"
    "        (slot, pid, state, weight, waiting, joined_realtime_ns,\n"
    "        command or null, used, share, and devices with share and\n"
    "        used).\n"
    "    --all\n"
    "        Also list segments of processes that died without closing\n"
    "        them, and other users' segments and groups that are readable.\n"
    "    --job J\n"
    "        Only the processes of job J: J is the JOB label, a Slurm job\n"
    "        id (all its steps) or job.step, a pod name or namespace/pod,\n"
    "        a container name, or 4 or more leading digits of a container\n"
    "        id.\n"
    "    --prefix P\n"
    "        Read segments named P.<pid> and P.group@<NAME> (default:\n"
    "        $GPUMEM_SHM_PREFIX, else gpumem).\n"
    "    -h, --help\n"
    "        Print this manual page and exit.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   Success (also when no process was found).\n"
    "    1   The segment directory could not be read.\n"
    "    2   Unknown option, bad prefix, or a segment directory that is\n"
    "        not safe to use (see gpumem-env(7), GPUMEM_SHM_DIR).\n"
    "\n"
    "EXAMPLES\n"
    "    gpumem ps\n"
    "        PID USER     JOB            DEV     USED     PEAK    LIMIT ...\n"
    "      41017 alice    4242.0           0   444.0M   544.0M     2.0G ...\n"
    "    gpumem ps --job 4242\n"
    "    gpumem ps --json | jq '.processes[] | {pid, used, limit}'\n"
    "    gpumem ps --json | jq '.groups[] | {group, used, limit,\n"
    "                                        members: [.members[].pid]}'\n";

static int print_json(const struct gm_scan *sc, const struct gm_gscan *gs)
{
    fputs("{\"processes\":", stdout);
    gm_scan_print_json(stdout, sc, GM_JSON_LEAK);
    fputs(",\"groups\":", stdout);
    gm_gscan_print_json(stdout, gs);
    fputs("}\n", stdout);
    return 0;
}

static int print_text(const struct gm_scan *sc, const struct gm_gscan *gs)
{
    size_t max = sc->n * GM_ABI_MAX_DEVICES + 1;
    struct gm_row *rows = calloc(max, sizeof *rows);
    if (rows == NULL) {
        fprintf(stderr, "gpumem: ps: out of memory\n");
        return 1;
    }
    gm_rows_print_text(stdout, rows, gm_scan_rows(sc, rows, max));
    free(rows);
    gm_gscan_print_text(stdout, gs);
    return 0;
}

int gm_cmd_ps(int argc, char **argv)
{
    bool json = false;
    unsigned flags = 0;
    const char *popt = NULL, *job = NULL;
    for (int i = 1; i < argc; i++) {
        int r;
        if ((r = gm_opt_value("ps", argc, argv, &i, "--job", &job)) != 0) {
            if (r < 0)
                return GM_EXIT_USAGE;
        } else if ((r = gm_opt_flag("ps", argv[i], "--json")) != 0) {
            if (r < 0)
                return GM_EXIT_USAGE;
            json = true;
        } else if ((r = gm_opt_flag("ps", argv[i], "--all")) != 0) {
            if (r < 0)
                return GM_EXIT_USAGE;
            flags |= GM_SCAN_ALL_USERS | GM_SCAN_DEAD;
        } else if ((r = gm_opt_value("ps", argc, argv, &i, "--prefix",
                                     &popt)) != 0) {
            if (r < 0)
                return GM_EXIT_USAGE;
        } else {
            fprintf(stderr, "gpumem: ps: unknown %s '%s'; usage: gpumem ps "
                    "[--json] [--all] [--job J] [--prefix P]\n",
                    argv[i][0] == '-' ? "option" : "argument", argv[i]);
            return GM_EXIT_USAGE;
        }
    }
    const char *prefix = gm_tool_prefix("ps", popt);
    if (prefix == NULL)
        return GM_EXIT_USAGE;
    struct gm_scan sc;
    struct gm_gscan gs;
    if (gm_scan_job(prefix, flags, job, &sc) < 0)
        return 1;
    if (gm_gscan(prefix, flags, &gs) < 0) {
        gm_scan_free(&sc);
        return 1;
    }
    int rc = json ? print_json(&sc, &gs) : print_text(&sc, &gs);
    gm_gscan_free(&gs);
    gm_scan_free(&sc);
    return rc;
}
