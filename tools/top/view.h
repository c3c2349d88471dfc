/*
 * tools/top/view.h — the screen of `gpumem-top`: the model tools/top/top.c fills
 * (processes, device sums, shared budgets) and tools/top/view.c draws with
 * ncurses (drawing only: no segment access, no state changes).
 *
 * Invariants: the model is complete for one frame; gm_view_draw erases
 * the curses buffer, draws the whole frame into it and refreshes once (no
 * flicker); it fits any terminal size, dropping columns and sections that
 * do not fit (usable at 80x24), and never draws over the key line (the
 * last one); under 4 lines (title, header, one row, key line) a single
 * line says the terminal is too small. A row's figures are the last ones its
 * process published: once it is gone (`final`), its final ones.
 */
#ifndef GM_VIEW_H
#define GM_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim/telemetry/abi.h"
#include "shim/group/group.h"

#define GM_TOP_HIST 240          /* usage samples kept per row */
#define GM_TOP_EVENTS 32         /* last events kept for the detail view */

/* Sortable columns, in the order `s` cycles through them. */
enum gm_top_col {
    GM_COL_PID = 0, GM_COL_USER, GM_COL_JOB, GM_COL_DEV, GM_COL_USED,
    GM_COL_PEAK, GM_COL_LIMIT, GM_COL_PCT, GM_COL_ARATE, GM_COL_FRATE,
    GM_COL_OOMS, GM_COL_FRAG, GM_COL_P99, GM_COL_TREND, GM_COL_ETA,
    GM_COL_MODE, GM_COL_CMD, GM_COL_COUNT
};

/* One process on one device, as last seen. */
struct gm_top_ent {
    int pid;                     /* in the writer's pid namespace (key) */
    uint64_t pidns;              /* the segment name's namespace (key) */
    int dev;                     /* -1: no device used yet */
    uint64_t start_ticks;
    int show_pid;                /* in ours (a container's: host pid, the
                                    last one known); 0: never known */
    char job[48];                /* gm_ident_job label, "-": none */
    struct gm_abi_ident ident;   /* for the job filter */
    char user[32];
    char mode[16];
    char state[8];               /* "live", "kept", "exited", "dead" */
    char cmd[GM_ABI_CMDLINE_LEN];
    /* cmd[prog..args) is the program's name without its directory;
     * cmd + args its arguments (from a space, or ""); cmd + diff the
     * first argument that differs from the most similar other row's
     * (same program), == args when none is shared. */
    size_t cmd_prog, cmd_args, cmd_diff;
    char policy[GM_ABI_POLICY_LEN];
    struct gm_abi_dev d;         /* copy of the device block */
    double arate, frate;         /* allocations / frees per second */
    /* GPUMEM_MODE=static with an arena: its size (used - context - pool
     * reserve, the arena being charged whole) and the bytes of the live
     * pieces in it (live_bytes). */
    bool arena;
    uint64_t arena_size, arena_used;
    bool gone;                   /* not running (exited, killed; dimmed) */
    bool final;                  /* d holds the process's final figures */
    uint64_t gone_ns;            /* CLOCK_MONOTONIC when it went */
    bool seen;                   /* present in the latest scan */
    uint64_t last_allocs, last_frees, last_ooms, last_ns;
    uint64_t hist[GM_TOP_HIST];  /* used bytes, oldest first */
    bool hist_oom[GM_TOP_HIST];  /* an OOM happened in that interval */
    size_t nhist;
    /* The leak verdict (tools/top/trendcol.h), recomputed every few s:
     * trend 0 unknown, 1 steady, 2 grows; per_step true when the growth
     * is per step (steps known); growth NaN unless grows; eta_s NaN when
     * there is no forecast. */
    int trend;
    bool per_step;
    double growth, eta_s;
    uint64_t trend_ns;           /* CLOCK_MONOTONIC of the last analysis */
};

/* One physical device (card): the sums over the running processes that
 * use it, whatever ordinal each sees it as (CUDA_VISIBLE_DEVICES differs
 * between processes). Keyed by its UUID; a device block without one
 * (none recorded) is its own card per ordinal. */
struct gm_top_devsum {
    int dev;                     /* the lowest ordinal it is seen as */
    uint64_t ordinals;           /* bit N: some process sees it as N */
    unsigned char uuid[16];      /* all 0: none recorded */
    char label[40];              /* "0 GPU-1a2b3c4d": the ordinals, its
                                    short UUID; "0,1 GPU-...", "0" (no
                                    UUID) */
    uint64_t physical, limits, used;
    unsigned procs;
    unsigned unlimited;          /* processes with no limit there */
};

#define GM_TOP_CARDS (2 * GM_ABI_MAX_DEVICES)  /* device lines at most */

#define GM_TOP_GROUPS 64         /* group lines kept per frame */

/* One member of a shared budget on one device, as last seen. */
struct gm_top_gmember {
    int pid;
    double weight;
    uint64_t used, share;        /* share 0: the device has no limit */
    bool alive;
};

/* One group (GPUMEM_GROUP) on one device: the group line of the screen. */
struct gm_top_group {
    char name[GM_NAME_MAX + 1];
    char device[24];             /* "GPU-1a2b3c4d" when the group has
                                    several devices, else "" */
    uint64_t used, peak, limit;  /* limit 0: none */
    uint64_t physical;
    unsigned live, dead;         /* members alive / dead, not reclaimed */
    unsigned nmembers;
    struct gm_top_gmember member[GM_GROUP_MAX_MEMBERS];
};

enum gm_top_screen { GM_SCR_TABLE = 0, GM_SCR_DETAIL, GM_SCR_HELP };

struct gm_top_model {
    const char *prefix;
    double delay_s;
    struct gm_top_ent *const *rows;   /* sorted and filtered */
    size_t nrows;
    const struct gm_top_devsum *devs;
    size_t ndevs;
    const struct gm_top_group *groups;  /* under the device lines */
    size_t ngroups;
    enum gm_top_col sort;
    bool desc;
    char dev_filter[40];         /* "": all; else the label of the
                                    device whose rows are shown */
    char job_filter[64];         /* "": all; else gm_ident_match */
    bool show_job;               /* some row has a job: JOB column shown */
    char text_filter[64];
    bool editing;                /* typing the / filter */
    size_t selected;             /* index in rows */
    enum gm_top_screen screen;
    const struct gm_top_ent *detail;  /* DETAIL: the process shown */
    const struct gm_abi_record *events;  /* its last events, oldest first */
    size_t nevents;
    const struct gm_abi_record *refusals; /* its last refusals (oom) */
    size_t nrefusals;
    uint64_t events_lost;
};

#define GM_TOP_REFUSALS 3        /* refusals kept for the detail view */

/* Start / stop curses (cbreak, no echo, keypad, hidden cursor, colours),
 * in the user's locale (setlocale(LC_ALL, ""); numbers stay in the C
 * form): latencies in "µs" when its codeset is UTF-8, else in "us". */
int gm_view_open(void);
void gm_view_close(void);
/* Draw one frame. */
void gm_view_draw(const struct gm_top_model *m);
/* The next key within timeout_ms (ERR = none). KEY_RESIZE is handled. */
int gm_view_key(int timeout_ms);
/* Column names ("PID", "USED", ...). */
const char *gm_view_col_name(enum gm_top_col c);

#endif
