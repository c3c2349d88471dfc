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
#define GM_EXIT_USAGE 2

struct gm_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;     /* one line for `gpumem --help` */
    const char *help;        /* manual page: NAME, SYNOPSIS, ... EXAMPLES */
};

/* gpumem policy [--json] */
/* A pid's segment could not be opened (err: the reader's reason): say
 * so on stderr, as "no gpumem process N" when there is no segment. */
void gm_cli_open_failed(const char *cmd, const char *prefix, int pid,
                        const char *err);

int gm_cmd_policy(int argc, char **argv);
extern const char gm_help_policy[];
/* gpumem run [OPTIONS] -- CMD ARGS... */
int gm_cmd_run(int argc, char **argv);
extern const char gm_help_run[];
/* gpumem ps [--json] [--all] [--job J] [--prefix P] */
int gm_cmd_ps(int argc, char **argv);
extern const char gm_help_ps[];
/* gpumem log [-f] [--format F] [--kinds K,...] [--prefix P] [PID...] */
int gm_cmd_log(int argc, char **argv);
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
