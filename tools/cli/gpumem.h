/*
 * tools/cli/gpumem.h — the `gpumem` command's internal interface: one entry
 * function and one manual page per subcommand.
 *
 * Adding a subcommand: write tools/cmd_NAME.c defining gm_cmd_NAME() and
 * gm_help_NAME[], declare both here, and add one line to the table in
 * tools/cli/gpumem.c. The dispatcher handles `gpumem help NAME` and
 * `gpumem NAME --help`; a subcommand receives argv with argv[0] = "NAME"
 * and returns the process exit status (0 ok, 2 usage or bad policy).
 */
#ifndef GM_GPUMEM_H
#define GM_GPUMEM_H

/* Exit status for usage errors and invalid configuration. */
#include <stddef.h>

#define GM_EXIT_USAGE 2

struct gm_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;     /* one line for `gpumem --help` */
    const char *help;        /* manual page: NAME, SYNOPSIS, ... EXAMPLES */
};

/* gpumem policy [--json] */
/* A pid's segment could not be opened (err: the reader's reason, which
 * starts with the path): say so on stderr, as "no gpumem process N" when
 * there is no segment. */
void gm_cli_open_failed(const char *cmd, const char *prefix, int pid,
                        const char *err);

int gm_cmd_policy(int argc, char **argv);
extern const char gm_help_policy[];
/* gpumem run [OPTIONS] -- CMD ARGS... */
int gm_cmd_run(int argc, char **argv);
extern const char gm_help_run[];
/* The run options (--limit, --mode, ...; tools/cli/cmd_run.c) shared by
 * the commands that run programs: argv[*i] matched sets its GPUMEM_*
 * variable (1), not an option of run (0), a bad value (-1, message
 * printed as "gpumem: CMD: ..."). */
int gm_run_apply_opt(const char *cmd, int argc, char **argv, int *i);
/* Check the policy of the environment and put libgpumem.so first in
 * LD_PRELOAD: 0, or the exit status to return (message printed). */
int gm_run_setup(const char *cmd);
/* gpumem record -o FILE [run options] -- CMD ARGS... */
int gm_cmd_record(int argc, char **argv);
extern const char gm_help_record[];
/* gpumem replay FILE [run options] [--sweep LO:HI] [--json] */
int gm_cmd_replay(int argc, char **argv);
extern const char gm_help_replay[];
/* gpumem fit --limit L --param NAME=LO:HI ... -- CMD ... {NAME} ... */
int gm_cmd_fit(int argc, char **argv);
extern const char gm_help_fit[];
/* gpumem ps [--json] [--all] [--job J] [--prefix P] */
int gm_cmd_ps(int argc, char **argv);
extern const char gm_help_ps[];
/* gpumem log [-f] [--format F] [--kinds K,...] [--prefix P] [PID...] */
int gm_cmd_log(int argc, char **argv);
/* gpumem log --from FILE: fmt 0 text, 1 jsonl, 2 csv (tools/cli/logfrom.c) */
int gm_log_from(const char *file, int fmt, const int *pids, size_t np);
extern const char gm_help_log[];
/* gpumem report [PID | --from TRACE] [--json] [--svg FILE] */
int gm_cmd_report(int argc, char **argv);
extern const char gm_help_report[];
/* gpumem exporter [--listen ADDR:PORT | --textfile DIR | --once] ... */
int gm_cmd_exporter(int argc, char **argv);
extern const char gm_help_exporter[];
/* gpumem gc [--dry-run] [--prefix P] */
int gm_cmd_gc(int argc, char **argv);
extern const char gm_help_gc[];

#endif
