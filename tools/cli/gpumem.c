/*
 * tools/cli/gpumem.c — the `gpumem` command: dispatches to a subcommand from
 * one table and prints the manual pages (`gpumem --help`, `gpumem help
 * CMD`, `gpumem CMD --help`).
 *
 * Invariants: the table lists only subcommands that exist; help goes to
 * stdout with exit 0, usage errors to stderr ("gpumem: ...") with exit 2.
 * Everything after a "--" argument belongs to the subcommand untouched.
 */
#include <stdio.h>
#include <string.h>

#include "policy/policy.h"
#include "tools/cli/gpumem.h"
#include "tools/lib/version.h"

static const struct gm_cmd cmds[] = {
    { "policy", gm_cmd_policy,
      "explain the policy this environment yields, or why it is invalid",
      gm_help_policy },
    { "run", gm_cmd_run, "run a program under a policy", gm_help_run },
    { "ps", gm_cmd_ps, "list the processes under gpumem", gm_help_ps },
    { "log", gm_cmd_log, "print or follow their event streams", gm_help_log },
    { "report", gm_cmd_report, "memory figures of a process or a trace",
      gm_help_report },
    { "record", gm_cmd_record, "record a program's driver calls to a file",
      gm_help_record },
    { "replay", gm_cmd_replay, "replay a recording under a policy",
      gm_help_replay },
    { "fit", gm_cmd_fit, "find the largest parameter value that fits a limit",
      gm_help_fit },
    { "exporter", gm_cmd_exporter, "serve the node's figures to Prometheus",
      gm_help_exporter },
    { "gc", gm_cmd_gc, "remove the segments of exited processes", gm_help_gc },
};
#define NCMDS (sizeof cmds / sizeof cmds[0])

static const char help_head[] =
    "NAME\n"
    "    gpumem - per-process GPU memory limits and telemetry for CUDA "
    "programs\n"
    "\n"
    "SYNOPSIS\n"
    "    gpumem COMMAND [OPTIONS] [ARGS...]\n"
    "    gpumem help [COMMAND]\n"
    "    gpumem COMMAND --help\n"
    "    gpumem --version\n"
    "\n"
    "DESCRIPTION\n"
    "    gpumem is the companion command of libgpumem.so, the library that\n"
    "    is preloaded into a CUDA program (LD_PRELOAD=libgpumem.so) to\n"
    "    enforce a device-memory limit read from GPUMEM_* variables and to\n"
    "    publish live memory statistics. Each COMMAND below has its own\n"
    "    manual page: gpumem help COMMAND.\n"
    "\n"
    "COMMANDS\n";

static const char help_tail[] =
    "\n"
    "OPTIONS\n"
    "    -h, --help\n"
    "        Print this manual page and exit.\n"
    "    --version\n"
    "        Print \"gpumem VERSION\" and exit.\n"
    "\n"
    "EXIT STATUS\n"
    "    The status of the COMMAND run; see its manual page.\n"
    "    2   Unknown command or option, or a usage error.\n"
    "\n"
    "ENVIRONMENT\n"
    "    GPUMEM_*\n"
    "        The policy variables (GPUMEM_LIMIT, GPUMEM_MODE, ...); every\n"
    "        one is listed in gpumem help policy and docs/env.md.\n"
    "\n"
    "EXAMPLES\n"
    "    Check a policy before launching a job:\n"
    "        GPUMEM_LIMIT=40% GPUMEM_ON_OOM=wait:30s gpumem policy\n"
    "\n"
    "    Run a program under a 4 GiB limit:\n"
    "        LD_PRELOAD=libgpumem.so GPUMEM_LIMIT=4G python train.py\n";

static void print_top_help(FILE *f)
{
    size_t i;

    fputs(help_head, f);
    for (i = 0; i < NCMDS; i++)
        fprintf(f, "    %-10s %s\n", cmds[i].name, cmds[i].summary);
    fputs(help_tail, f);
}

static const struct gm_cmd *find_cmd(const char *name)
{
    size_t i;

    for (i = 0; i < NCMDS; i++)
        if (strcmp(cmds[i].name, name) == 0)
            return &cmds[i];
    return NULL;
}

static int unknown_cmd(const char *name)
{
    const char *names[NCMDS];
    const char *best;
    size_t i;

    if (strcmp(name, "top") == 0) {
        fprintf(stderr, "gpumem: 'top' is a program of its own: run "
                "gpumem-top (gpumem-top --help)\n");
        return GM_EXIT_USAGE;
    }
    for (i = 0; i < NCMDS; i++)
        names[i] = cmds[i].name;
    best = gm_closest_name(name, names, NCMDS, 2);
    if (best != NULL)
        fprintf(stderr, "gpumem: unknown command '%s'; did you mean '%s'? "
                "(gpumem --help lists the commands)\n", name, best);
    else
        fprintf(stderr, "gpumem: unknown command '%s'; gpumem --help lists "
                "the commands\n", name);
    return GM_EXIT_USAGE;
}

static int help_cmd(int argc, char **argv)
{
    const struct gm_cmd *c;

    if (argc < 3) {
        print_top_help(stdout);
        return 0;
    }
    if (argc > 3) {
        fprintf(stderr, "gpumem: help takes one command name; usage: gpumem "
                "help [COMMAND]\n");
        return GM_EXIT_USAGE;
    }
    c = find_cmd(argv[2]);
    if (c == NULL)
        return unknown_cmd(argv[2]);
    fputs(c->help, stdout);
    return 0;
}

/* "--help" anywhere before "--", or "-h" right after the command. */
static int wants_help(int argc, char **argv)
{
    int i;

    if (argc > 2 && strcmp(argv[2], "-h") == 0)
        return 1;
    for (i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0)
            return 1;
    return 0;
}

static int finish(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "gpumem: cannot write to standard output\n");
        return rc == 0 ? 1 : rc;
    }
    return rc;
}

int main(int argc, char **argv)
{
    const struct gm_cmd *c;

    if (argc < 2) {
        fprintf(stderr, "gpumem: no command given; usage: gpumem COMMAND "
                "[OPTIONS] (gpumem --help lists the commands)\n");
        return GM_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        print_top_help(stdout);
        return finish(0);
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("gpumem %s\n", GM_VERSION);
        return finish(0);
    }
    if (strcmp(argv[1], "help") == 0)
        return finish(help_cmd(argc, argv));
    if (argv[1][0] == '-') {
        fprintf(stderr, "gpumem: unknown option '%s'; usage: gpumem COMMAND "
                "[OPTIONS] (gpumem --help lists the commands)\n", argv[1]);
        return GM_EXIT_USAGE;
    }
    c = find_cmd(argv[1]);
    if (c == NULL)
        return unknown_cmd(argv[1]);
    if (wants_help(argc, argv)) {
        fputs(c->help, stdout);
        return finish(0);
    }
    return finish(c->fn(argc - 1, argv + 1));
}
