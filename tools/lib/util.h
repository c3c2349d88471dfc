/*
 * tools/lib/util.h — helpers shared by `gpumem` and `gpumem-top`: the segment
 * prefix (--prefix, GPUMEM_SHM_PREFIX, "gpumem"), a
 * scan of every readable segment of a prefix into process records, the
 * per-device rows derived from them, the process table as text and
 * JSON (the same columns in `gpumem ps` and `gpumem-top --once/--json`),
 * and the same for shared budgets: a scan of the group segments
 * "<prefix>.group@<NAME>" and the groups section as text and JSON; the
 * options of the subcommands (an option's value, a flag).
 *
 * Invariants: a scan owns its records (gm_scan_free, gm_gscan_free release
 * them); rows point into the scan that produced them and live no longer
 * than it. Only segments owned by the caller's uid are listed unless asked
 * otherwise. Group segments are read with gm_group_snapshot (pread, no
 * mapping, no lock): a hostile or truncated file is skipped. Text from a
 * segment (command lines, policies, group names) is printed only in the
 * forms of tools/lib/escape.h: escaped for the terminal in text, as valid
 * UTF-8 in JSON.
 */
#ifndef GM_TOOLS_UTIL_H
#define GM_TOOLS_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "shim/group/group.h"
#include "tools/lib/escape.h"
#include "tools/lib/reader.h"

/* The segment prefix: opt when non-NULL, else $GPUMEM_SHM_PREFIX when set,
 * else "gpumem". Returns NULL (a message printed, naming `cmd`, exit
 * status 2 for the caller) when the name breaks the library's rule
 * (gm_shm_prefix_problem: empty, longer than 32 characters, a character
 * outside A-Za-z0-9_.-, a leading '.'), or when the segment directory
 * fails gm_tool_dir_check: every command that reads segments starts
 * here. */
const char *gm_tool_prefix(const char *cmd, const char *opt);

/* The directory holding segments and group files: $GPUMEM_SHM_DIR in its
 * normal form when set and non-empty, else "/dev/shm". */
const char *gm_tool_shm_dir(void);

/* 0 when GPUMEM_SHM_DIR is well formed and the directory passes
 * gm_shm_dir_check (shim/base/shmfile.h; any owner when run as root);
 * else -1 with a message naming `cmd`, the directory and the rule. */
int gm_tool_dir_check(const char *cmd);

/* What the library would do with p's segment directory (p->shm_dir,
 * gm_shm_dir_check): nothing to say (0); a warning printed, naming cmd,
 * when it is unsafe (0: telemetry would stay private, a group would be
 * left under GPUMEM_ON_BAD_CONFIG=warn); -1 with a message when a program
 * would exit with status 2 (a group there, GPUMEM_ON_BAD_CONFIG=exit). */
struct gm_policy;
int gm_tool_policy_dir(const char *cmd, const struct gm_policy *p);

/* Name of a uid ("uid 1234" when it has none); buf of at least 32 bytes. */
const char *gm_user_name(uid_t uid, char *buf, size_t cap);

/* One process whose segment could be read. */
struct gm_scan_proc {
    struct gm_proc p;            /* snapshot, owner, liveness */
    char path[512];              /* the segment file */
    bool kept;                   /* closed and left in place (GPUMEM_KEEP) */
};

struct gm_scan {
    struct gm_scan_proc *procs;  /* ascending pid shown (gm_proc_shown_pid,
                                    else the pid inside), then pidns */
    size_t n;
};

#define GM_SCAN_ALL_USERS 1u     /* also other users' (readable) segments */
#define GM_SCAN_DEAD 2u          /* also writers that died without closing */

/* Read every segment "<dir>/<prefix>.<pid>". Segments that fail to open or
 * validate are skipped. Returns the number of processes, -1 when the
 * directory cannot be read (message printed). */
int gm_scan(const char *prefix, unsigned flags, struct gm_scan *out);
/* The same, keeping only the processes whose identity matches job
 * (gm_ident_match; NULL: all). */
int gm_scan_job(const char *prefix, unsigned flags, const char *job,
                struct gm_scan *out);

/* The pid to show for a process: its pid in the reader's pid namespace
 * (the host pid for a container's process that runs), 0 when not known
 * (a process of another pid namespace that is gone). */
int gm_proc_shown_pid(const struct gm_proc *p);
/* That pid as text, or "~N" (N: the pid inside its own namespace) when
 * it is not known. */
const char *gm_proc_pid_text(const struct gm_proc *p, char *buf, size_t cap);
void gm_scan_free(struct gm_scan *sc);

/* "live", "kept", "dead" (exited without GPUMEM_KEEP shows as "exited"). */
const char *gm_proc_state_word(const struct gm_scan_proc *sp);

/* One table row: a process on one device (dev -1: no device used yet). */
struct gm_row {
    const struct gm_scan_proc *sp;
    int dev;
    const struct gm_abi_dev *d;  /* NULL when dev < 0 */
};

/* True when a process used the device: any allocation, free, refusal,
 * context memory or charge (the devices `gpumem ps` lists). */
bool gm_dev_used(const struct gm_abi_dev *d);

/* The rows of a scan: one per (process, device used), at least one per
 * process. Returns how many were stored (at most max). */
size_t gm_scan_rows(const struct gm_scan *sc, struct gm_row *rows,
                    size_t max);

/* Latency quantile (per mille) of a device block in ns; 0 when none. */
uint64_t gm_dev_lat_q(const struct gm_abi_dev *d, unsigned per_mille);

/* The rows (at least 1) consecutive buckets of the histogram h[0..nb)
 * to show when its used range (first to last non-zero bucket) is longer
 * than that: the window that holds the most counts (the lowest one on a
 * tie), so a few outliers never push the bulk off the screen. *lo and
 * *hi are inclusive; false (and nothing stored) when every bucket is 0. */
bool gm_hist_window(const uint64_t *h, unsigned nb, unsigned rows,
                    unsigned *lo, unsigned *hi);

/* Compact size for narrow columns: "512B", "1.5K", "144.0M", "2.0G". */
size_t gm_size_short(uint64_t bytes, char *buf, size_t cap);

/* ⌊part × scale / whole⌋ computed in 128 bits (no wrap for any 64-bit
 * figures), UINT64_MAX when it does not fit; 0 when whole is 0. */
uint64_t gm_share(uint64_t part, uint64_t whole, uint64_t scale);

/* Used of the limit as the tables show it (docs/metrics.md): ⌊used ×
 * 100 / limit⌋ capped at GM_PCT_SHOWN_MAX, "N%"; "-" without a limit. */
#define GM_PCT_SHOWN_MAX 999u
uint64_t gm_pct_shown(uint64_t used, uint64_t limit);
void gm_pct_text(uint64_t used, uint64_t limit, char *buf, size_t cap);

/* The process table as text (header line + one line per row), as
 * `gpumem ps` prints it. */
void gm_rows_print_text(FILE *f, const struct gm_row *rows, size_t n);

/* One process as a JSON object (no newline): exact byte figures, summed
 * over devices at the top level, per device in "devices"; with
 * GM_JSON_LEAK each device also carries "leak" (tools/lib/leak.h: a full
 * read of the ring and the analysis, milliseconds per process). */
#define GM_JSON_LEAK 1u
void gm_proc_print_json(FILE *f, const struct gm_scan_proc *sp,
                        unsigned flags);

/* Every process of a scan as a JSON array (no newline). */
void gm_scan_print_json(FILE *f, const struct gm_scan *sc, unsigned flags);

/* ---- shared budgets (groups) ---- */

/* One group segment that could be read and validated. */
struct gm_scan_group {
    char path[512];
    uid_t uid;                   /* file owner */
    struct gm_group_view v;
    /* cmd[i]: the command line of v.member[i] from its process segment
     * "<prefix>.<pid>" (same pid and start time, live or not), "" when
     * it has none. */
    char cmd[GM_GROUP_MAX_MEMBERS][GM_ABI_CMDLINE_LEN];
};

struct gm_gscan {
    struct gm_scan_group *groups; /* ascending name */
    size_t n;
};

/* Read every group segment "<dir>/<prefix>.group@<NAME>" owned by the
 * caller (with GM_SCAN_ALL_USERS: every readable one). Files that fail
 * validation are skipped. Returns the number of groups, -1 when the
 * directory cannot be read or memory runs out (message printed). */
int gm_gscan(const char *prefix, unsigned flags, struct gm_gscan *out);
void gm_gscan_free(struct gm_gscan *gs);

/* Members of a view whose process exists now / exists no more (dead
 * members not reclaimed yet). */
unsigned gm_group_live_members(const struct gm_group_view *v);
unsigned gm_group_dead_members(const struct gm_group_view *v);

/* "GPU-1a2b3c4d": the first 4 bytes of a device UUID (cap >= 13). */
const char *gm_uuid_short(const unsigned char uuid[16], char *buf,
                          size_t cap);

/* "GPU-1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809", the form nvidia-smi
 * prints (cap >= 41). */
void gm_uuid_full(const unsigned char u[16], char *buf, size_t cap);
/* The group files of prefix in dir (at most 256), in a malloc'd array
 * the caller frees (gp->path); 0, or -1 with errno when dir cannot be
 * read. */
struct gm_gpaths {
    char (*path)[512];
    size_t n, cap;
};
int gm_group_paths(const char *dir, const char *prefix, struct gm_gpaths *gp);

/* A device block's UUID as "GPU-...", or "" when the writer recorded
 * none (both words 0); buf holds at least 41 bytes. */
void gm_dev_uuid(const struct gm_abi_dev *d, char *buf, size_t cap);

/* The groups section of `gpumem ps` and `gpumem-top --once`: a header,
 * one line per group and device (name, device, used, peak, limit, %,
 * members), then one indented line per member and device (pid, weight,
 * guaranteed share, used, live/dead, command when its process has a
 * segment). Prints nothing when there is no group. */
void gm_gscan_print_text(FILE *f, const struct gm_gscan *gs);

/* Every group as a JSON array (no newline); see docs/tools.md. */
void gm_gscan_print_json(FILE *f, const struct gm_gscan *gs);

/* Parse "--name VALUE" / "--name=VALUE" at argv[*i]; on a match stores
 * the value in *val, advances *i past it and returns 1; returns 0 when
 * argv[*i] is another argument, -1 (message printed: "option --name
 * needs a value") when the value is missing: nothing follows, or "--",
 * the end of the options, does. */
int gm_opt_value(const char *cmd, int argc, char **argv, int *i,
                 const char *name, const char **val);

/* Match the flag `name` (an option without a value) against arg: 1 when
 * arg is the flag, 0 when it is another argument, -1 (message printed:
 * "option --name takes no value") when it is "--name=VALUE". */
int gm_opt_flag(const char *cmd, const char *arg, const char *name);

#endif
