/*
 * tools/cli/cmd_policy.c — `gpumem policy [--json]`: load the policy from this
 * process's environment exactly as libgpumem.so will at first CUDA use,
 * print every variable's effective value and where it came from.
 *
 * Invariants: diagnostics go to stderr, the policy to stdout; exit 0 when
 * the policy is valid (warnings alone keep it valid), 2 when it is not or
 * the command line is wrong. With --json the document is printed even for
 * an invalid policy, with "valid": false and the messages in it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "tools/cli/gpumem.h"
#include "tools/lib/util.h"

extern char **environ;

const char gm_help_policy[] =
    "NAME\n"
    "    gpumem policy - print the policy the current environment yields\n"
    "\n"
    "SYNOPSIS\n"
    "    gpumem policy [--json]\n"
    "\n"
    "DESCRIPTION\n"
    "    Reads the admin policy file and the GPUMEM_* variables of the\n"
    "    environment (and HAMi-core's CUDA_DEVICE_MEMORY_LIMIT[_<N>])\n"
    "    exactly as libgpumem.so does at a program's first CUDA call, and\n"
    "    prints one line per variable: its name, the effective value (sizes\n"
    "    also in exact bytes) and its source: env (set by a variable),\n"
    "    admin (set or held by the admin policy file) or default. A value\n"
    "    an admin ceiling changed shows what was asked: (asked none).\n"
    "    The admin file's rules (GPUMEM_MAX_LIMIT, GPUMEM_FORCE_GROUP,\n"
    "    GPUMEM_ALLOW_ON_OOM, GPUMEM_FORCE_TELEMETRY, GPUMEM_ALLOW_DISABLE)\n"
    "    and the file itself (read, absent or refused) close the list.\n"
    "    Use it to tune a policy before launching a job.\n"
    "\n"
    "    A bad value is reported with one line naming the variable, quoting\n"
    "    the value and listing the accepted forms. Unknown GPUMEM_*\n"
    "    variables are warnings naming the closest known variable.\n"
    "\n"
    "OPTIONS\n"
    "    --json\n"
    "        Print a JSON object keyed by variable name, each {\"value\":\n"
    "        ..., \"source\": \"env\"|\"admin\"|\"default\", ...}, plus \"valid\"\n"
    "        (true/false) and \"messages\" (every diagnostic).\n"
    "        Printed even when the policy is invalid.\n"
    "    -h, --help\n"
    "        Print this manual page and exit.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   The policy is valid (warnings may have been printed).\n"
    "    1   The output could not be written.\n"
    "    2   The policy is invalid (messages on standard error; a bad or\n"
    "        untrusted admin policy file included), a group is set in a\n"
    "        segment directory that is not safe to use (a program would\n"
    "        exit with status 2; without a group that is a warning:\n"
    "        telemetry would stay private), or an unknown option\n"
    "        was given.\n"
    "\n"
    "ENVIRONMENT\n"
    "    Sizes are binary: K = 1024, M = 1024^2, G = 1024^3, T = 1024^4.\n"
    "    GPUMEM_LIMIT         bytes, 4G, 1.5GiB, NN%, share[:F], 0|none|\n"
    "                         unlimited (default: no limit)\n"
    "    GPUMEM_LIMIT_<N>     same forms, for device N; overrides\n"
    "                         GPUMEM_LIMIT on that device (default: unset)\n"
    "    GPUMEM_MODE          grow, static, staged (default: grow)\n"
    "    GPUMEM_STATIC_SIZE   size or NN% of the limit (default: the limit)\n"
    "    GPUMEM_WARMUP        duration: 30s, 5m, 1500ms (default: 60s)\n"
    "    GPUMEM_HEADROOM      NN%, 0% to 1000% (default: 10%)\n"
    "    GPUMEM_ON_OOM        fail, wait, wait:DURATION, spill, warn\n"
    "                         (default: fail; wait means wait:60s)\n"
    "    GPUMEM_GROUP         name [A-Za-z0-9_.-]{1,64} (default: unset)\n"
    "    GPUMEM_GROUP_LIMIT   limit forms; required with a group\n"
    "    GPUMEM_PRIORITY      high, normal, low, or 0.1 to 10\n"
    "                         (default: normal)\n"
    "    GPUMEM_REPORT        0, 1|stderr, json:PATH (%p = pid) (default: 0)\n"
    "    GPUMEM_KEEP          0, 1 (default: 0)\n"
    "    GPUMEM_TELEMETRY     1 (segment, events, report), 0 (limits only)\n"
    "                         (default: 1)\n"
    "    GPUMEM_RING_EVENTS   power of two, 1024 to 16777216\n"
    "                         (default: 65536)\n"
    "    GPUMEM_SHM_PREFIX    name [A-Za-z0-9_.-]{1,32}, not starting with .\n"
    "                         (default: gpumem)\n"
    "    GPUMEM_SHM_DIR       absolute directory of the segments and group\n"
    "                         files (default: /dev/shm); owned by root or\n"
    "                         the user, not a symbolic link, not writable\n"
    "                         by others unless sticky\n"
    "    GPUMEM_LOG_LEVEL     quiet, error, warn, info, debug (default: warn)\n"
    "    GPUMEM_WARN_BEFORE   duration before the limit to warn at, 0 off\n"
    "                         (default: 5m)\n"
    "    GPUMEM_CUDA_LIBRARY  real driver (default: libcuda.so.1)\n"
    "    GPUMEM_ON_BAD_CONFIG exit, warn (default: exit)\n"
    "    GPUMEM_RECORD        absolute path of a private directory to record\n"
    "                         every memory call into (default: unset)\n"
    "    GPUMEM_NVML_VIEW     1 (NVML shows the limit), 0 (default: 1)\n"
    "    GPUMEM_POD_NAMESPACE, GPUMEM_POD_NAME and GPUMEM_CONTAINER_NAME\n"
    "    are not policy: the job identity recorded in the segment.\n"
    "    share reads the local rank count from LOCAL_WORLD_SIZE,\n"
    "    OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS, SLURM_NTASKS_PER_NODE\n"
    "    or HOROVOD_LOCAL_SIZE (the first one set), else 1.\n"
    "    Every form and message is in docs/env.md.\n"
    "\n"
    "EXAMPLES\n"
    "    GPUMEM_LIMIT=4G gpumem policy\n"
    "        GPUMEM_LIMIT           4.0 GiB (4294967296 B)             env\n"
    "        GPUMEM_LIMIT_<N>       (unset)                            "
    "default\n"
    "        GPUMEM_MODE            grow                               "
    "default\n"
    "        ...\n"
    "\n"
    "    LOCAL_WORLD_SIZE=4 GPUMEM_LIMIT=share:0.9 gpumem policy --json\n"
    "\n"
    "    GPUMEM_LIMIT='4 gigs' gpumem policy; echo $?\n"
    "        gpumem: GPUMEM_LIMIT='4 gigs' is not a size; use bytes, a number\n"
    "        with K/M/G/T (binary units), NN%, share[:F], or none\n"
    "        ...\n"
    "        2\n";

static int print_policy(const struct gm_policy *p, const struct gm_diag *d,
                        bool json)
{
    size_t n = gm_policy_format_ex(p, d, json, NULL, 0);
    char *buf = malloc(n + 1);

    if (buf == NULL) {
        fprintf(stderr, "gpumem: policy: out of memory\n");
        return 1;
    }
    gm_policy_format_ex(p, d, json, buf, n + 1);
    fwrite(buf, 1, n, stdout);
    free(buf);
    return 0;
}

static void explain_invalid(const struct gm_policy *p, const struct gm_diag *d)
{
    fprintf(stderr, "gpumem: the policy is invalid (%u error%s); ", d->errors,
            d->errors == 1 ? "" : "s");
    if (p->admin_fatal)
        fprintf(stderr, "the admin policy file is at fault: every CUDA "
                "program on this node would exit with status 2 at its first "
                "CUDA call, whatever GPUMEM_ON_BAD_CONFIG says\n");
    else if (p->on_bad_config == GM_BAD_WARN)
        fprintf(stderr, "with GPUMEM_ON_BAD_CONFIG=warn a program would run "
                "with the defaults in place of the bad values\n");
    else
        fprintf(stderr, "a program would exit with status 2 at its first "
                "CUDA call\n");
}

int gm_cmd_policy(int argc, char **argv)
{
    static struct gm_policy p;
    static struct gm_diag d;
    static struct gm_admin_file admin;
    bool json = false;
    int i, rc;

    for (i = 1; i < argc; i++) {
        int r = gm_opt_flag("policy", argv[i], "--json");
        if (r < 0)
            return GM_EXIT_USAGE;
        if (r > 0) {
            json = true;
            continue;
        }
        fprintf(stderr, "gpumem: policy: unknown %s '%s'; usage: gpumem "
                "policy [--json]\n", argv[i][0] == '-' ? "option" : "argument",
                argv[i]);
        return GM_EXIT_USAGE;
    }
    rc = gm_policy_load_node(&p, environ, &admin, &d);
    fputs(d.text, stderr);
    if (rc != 0)
        explain_invalid(&p, &d);
    /* The directory: a warning, or, with a group there, an exit. */
    bool dir_bad = rc == 0 && gm_tool_policy_dir("policy", &p) != 0;
    if ((rc == 0 || json) && print_policy(&p, &d, json) != 0)
        return 1;
    return rc == 0 && !dir_bad ? 0 : GM_EXIT_USAGE;
}
