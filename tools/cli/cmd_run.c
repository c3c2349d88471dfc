/*
 * tools/cli/cmd_run.c — `gpumem run [OPTIONS] -- CMD ARGS...`: run a program
 * under a policy. The options become GPUMEM_* variables; the policy the
 * resulting environment yields is validated first (exactly as the shim
 * will load it); libgpumem.so is prepended to LD_PRELOAD; then CMD is
 * exec'd, so its exit status is ours.
 *
 * Invariants: nothing is exec'd when the policy is invalid or the library
 * cannot be found (exit 2 / 1); the caller's LD_PRELOAD entries are kept
 * after ours; an option not given leaves its variable as it was; the
 * library is never added when one is already loaded into gpumem itself
 * (node-wide through /etc/ld.so.preload, or the caller's LD_PRELOAD): CMD
 * inherits that one, and two copies would count every allocation twice.
 */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/policy.h"
#include "tools/cli/gpumem.h"
#include "tools/lib/util.h"

extern char **environ;

const char gm_help_run[] =
    "NAME\n"
    "    gpumem run - run a program under a gpumem policy\n"
    "\n"
    "SYNOPSIS\n"
    "    gpumem run [--limit SIZE] [--mode M] [--static-size SIZE]\n"
    "               [--warmup D] [--on-oom P] [--group G]\n"
    "               [--group-limit SIZE] [--priority P] [--report] [--keep]\n"
    "               [--no-telemetry] [--prefix P]\n"
    "               -- CMD [ARGS...]\n"
    "\n"
    "DESCRIPTION\n"
    "    Sets the GPUMEM_* variables matching the options, checks the\n"
    "    policy that the environment then yields (the same check the\n"
    "    library makes at the program's first CUDA call), puts\n"
    "    libgpumem.so first in LD_PRELOAD (entries already there are kept)\n"
    "    and executes CMD in place of gpumem. Variables already set in the\n"
    "    environment and not overridden by an option stay in force.\n"
    "\n"
    "    libgpumem.so is looked up next to the gpumem binary (a build\n"
    "    tree) and then in ../lib relative to it (an installed layout).\n"
    "    When a gpumem library is already loaded into gpumem itself (a\n"
    "    node that preloads it through /etc/ld.so.preload, or LD_PRELOAD\n"
    "    set by the caller), LD_PRELOAD is left as it is: CMD gets that\n"
    "    library, never a second copy. On a node with an admin policy\n"
    "    file the options are held to its ceilings like any variable.\n"
    "\n"
    "OPTIONS\n"
    "    --limit SIZE       GPUMEM_LIMIT: 4G, 1.5GiB, 40%, share[:F], none\n"
    "    --mode M           GPUMEM_MODE: grow, static, staged\n"
    "    --on-oom P         GPUMEM_ON_OOM: fail, wait[:DURATION], spill, warn\n"
    "    --static-size SIZE GPUMEM_STATIC_SIZE: the static arena (bytes or NN%\n"
    "                       of the limit)\n"
    "    --warmup D         GPUMEM_WARMUP: staged mode's warm-up (30s, 5m)\n"
    "    --group G          GPUMEM_GROUP: a shared budget's name\n"
    "    --group-limit SIZE GPUMEM_GROUP_LIMIT: the shared budget's limit\n"
    "                       (4G, 40%, ...); required with --group, in\n"
    "                       every member (the first member to use a device\n"
    "                       fixes the group's limit there)\n"
    "    --priority P       GPUMEM_PRIORITY: high, normal, low, or 0.1..10\n"
    "    --report           GPUMEM_REPORT=1: the exit report on stderr\n"
    "    --keep             GPUMEM_KEEP=1: keep the segment after exit, for\n"
    "                       gpumem report and gpumem log\n"
    "    --no-telemetry     GPUMEM_TELEMETRY=0: enforce limits only (no\n"
    "                       segment, events, statistics or report)\n"
    "    --prefix P         GPUMEM_SHM_PREFIX: the segment name prefix\n"
    "    -h, --help         Print this manual page and exit.\n"
    "    Each option also takes the form --name=VALUE.\n"
    "\n"
    "EXIT STATUS\n"
    "    The exit status of CMD.\n"
    "    1    libgpumem.so was not found.\n"
    "    2    Usage error, or the policy is invalid (messages on stderr).\n"
    "    126  CMD could not be executed; 127 CMD was not found.\n"
    "\n"
    "EXAMPLES\n"
    "    gpumem run --limit 4G -- python train.py\n"
    "    gpumem run --limit 40% --on-oom wait:30s --report -- ./solver\n"
    "    gpumem run --limit 6G --group team --group-limit 16G -- ./worker\n"
    "    gpumem run --limit 1G -- sh -c 'echo $GPUMEM_LIMIT; exit 7'\n"
    "        1G      (and the exit status is 7)\n";

struct run_opt {
    const char *opt;
    const char *var;
    bool flag;          /* no value: the variable becomes set (or "1") */
    const char *set;
};

static const struct run_opt run_opts[] = {
    { "--limit", "GPUMEM_LIMIT", false, NULL },
    { "--mode", "GPUMEM_MODE", false, NULL },
    { "--on-oom", "GPUMEM_ON_OOM", false, NULL },
    { "--static-size", "GPUMEM_STATIC_SIZE", false, NULL },
    { "--warmup", "GPUMEM_WARMUP", false, NULL },
    { "--group", "GPUMEM_GROUP", false, NULL },
    { "--group-limit", "GPUMEM_GROUP_LIMIT", false, NULL },
    { "--priority", "GPUMEM_PRIORITY", false, NULL },
    { "--prefix", "GPUMEM_SHM_PREFIX", false, NULL },
    { "--report", "GPUMEM_REPORT", true, NULL },
    { "--keep", "GPUMEM_KEEP", true, NULL },
    { "--no-telemetry", "GPUMEM_TELEMETRY", true, "0" },
};
#define NRUN_OPTS (sizeof run_opts / sizeof run_opts[0])

static int usage(const char *msg, const char *arg)
{
    fprintf(stderr, "gpumem: run: %s%s%s; usage: gpumem run [OPTIONS] -- "
            "CMD [ARGS...] (gpumem run --help)\n", msg, arg ? " " : "",
            arg ? arg : "");
    return GM_EXIT_USAGE;
}

/* Match argv[*i] against the table; sets the variable. 1 matched, 0 not,
 * -1 error. */
int gm_run_apply_opt(const char *cmd, int argc, char **argv, int *i)
{
    for (size_t k = 0; k < NRUN_OPTS; k++) {
        const struct run_opt *o = &run_opts[k];
        if (o->flag) {
            int r = gm_opt_flag(cmd, argv[*i], o->opt);
            if (r == 0)
                continue;
            if (r < 0)
                return -1;
            setenv(o->var, o->set ? o->set : "1", 1);
            return 1;
        }
        const char *v = NULL;
        int r = gm_opt_value(cmd, argc, argv, i, o->opt, &v);
        if (r == 0)
            continue;
        if (r < 0)
            return -1;
        setenv(o->var, v, 1);
        return 1;
    }
    return 0;
}

static int find_library(char *out, size_t cap)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    char *dir = dirname(exe);
    static const char *const rel[] = { "libgpumem.so", "../lib/libgpumem.so" };
    for (size_t i = 0; i < 2; i++) {
        char cand[PATH_MAX + 32];
        snprintf(cand, sizeof cand, "%s/%s", dir, rel[i]);
        if (access(cand, R_OK) == 0 && realpath(cand, out) != NULL &&
            strlen(out) < cap)
            return 0;
    }
    return -1;
}

/* A gpumem library already in this process: this program does not
 * define the driver's entry points, so an object that does is the
 * preloaded library (its path into out). */
static bool shim_loaded(char *out, size_t cap)
{
    void *f = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    Dl_info info;

    if (f == NULL || dladdr(f, &info) == 0 || info.dli_fname == NULL)
        return false;
    snprintf(out, cap, "%s", info.dli_fname);
    return true;
}

static int set_preload(const char *lib)
{
    const char *old = getenv("LD_PRELOAD");
    if (old == NULL || *old == '\0')
        return setenv("LD_PRELOAD", lib, 1);
    size_t n = strlen(lib) + strlen(old) + 2;
    char *v = malloc(n);
    if (v == NULL)
        return -1;
    snprintf(v, n, "%s:%s", lib, old);
    int r = setenv("LD_PRELOAD", v, 1);
    free(v);
    return r;
}

static int check_policy(const char *cmd)
{
    static struct gm_policy p;
    static struct gm_diag d;
    static struct gm_admin_file admin;
    int rc = gm_policy_load_node(&p, environ, &admin, &d);
    /* A valid policy's warnings are the library's to print, once, at the
     * program's first CUDA call; printed here too they would appear
     * twice. */
    if (rc != 0) {
        fputs(d.text, stderr);
        fprintf(stderr, "gpumem: %s: the policy is invalid; nothing was "
                "run (gpumem policy explains every variable)\n", cmd);
        return GM_EXIT_USAGE;
    }
    if (gm_tool_policy_dir("run", &p) != 0) {
        fprintf(stderr, "gpumem: run: nothing was run\n");
        return GM_EXIT_USAGE;
    }
    return 0;
}

int gm_run_setup(const char *cmd)
{
    if (check_policy(cmd) != 0)
        return GM_EXIT_USAGE;
    char lib[PATH_MAX];
    if (shim_loaded(lib, sizeof lib)) {
        if (getenv("GPUMEM_LOG_LEVEL") != NULL &&
            strcmp(getenv("GPUMEM_LOG_LEVEL"), "debug") == 0)
            fprintf(stderr, "gpumem: %s: %s is already preloaded; not "
                    "adding it again\n", cmd, lib);
        return 0;
    }
    if (find_library(lib, sizeof lib) != 0) {
        fprintf(stderr, "gpumem: %s: libgpumem.so not found next to the "
                "gpumem binary nor in ../lib; set LD_PRELOAD yourself\n", cmd);
        return 1;
    }
    if (set_preload(lib) != 0) {
        fprintf(stderr, "gpumem: %s: cannot set LD_PRELOAD\n", cmd);
        return 1;
    }
    return 0;
}

int gm_cmd_run(int argc, char **argv)
{
    int i;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        int r = gm_run_apply_opt("run", argc, argv, &i);
        if (r < 0)
            return GM_EXIT_USAGE;
        if (r == 0) {
            if (argv[i][0] == '-')
                return usage("unknown option", argv[i]);
            break; /* CMD without "--" */
        }
    }
    if (i >= argc)
        return usage("no command given", NULL);
    int rc = gm_run_setup("run");
    if (rc != 0)
        return rc;
    fflush(NULL);
    execvp(argv[i], &argv[i]);
    int e = errno;
    fprintf(stderr, "gpumem: run: cannot execute '%s': %s\n", argv[i],
            strerror(e));
    return e == ENOENT ? 127 : 126;
}
