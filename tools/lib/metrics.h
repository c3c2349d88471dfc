/*
 * tools/lib/metrics.h — what `gpumem exporter` exports: one scrape of
 * every segment and group file of a prefix, rendered as Prometheus or
 * OpenMetrics text (tools/lib/expo.h), the atomic text file for
 * node_exporter's textfile collector, and the exporter's options. Every
 * metric is defined in docs/metrics.md ("Exported metrics").
 *
 * Invariants: a scrape reads the segments afresh (nothing is carried from
 * one scrape to the next but the error counters of struct
 * gm_metrics_totals) and is bounded: at most max_segments process
 * segments and 256 group files are read (when more segments exist, at
 * most 16 times as many are looked at, header and liveness, so that live
 * writers take the places first, then kept, then dead ones with --dead,
 * each by pid), it stops reading when its time budget is spent, and its
 * text never exceeds max_bytes. A segment that
 * cannot be read (unreadable, invalid or half-written, truncated while
 * read, a device block or group file that is never consistent) is skipped
 * and counted under its reason in gpumem_scrape_errors_total; nothing a
 * segment holds makes a scrape fail. No two series of a scrape have one label set: a
 * process whose labels equal those of one exported before it in the same
 * scrape is skipped (reason "duplicate"). Figures are those of the snapshot `gpumem ps
 * --json` prints (the same reader, the same fields).
 */
#ifndef GM_TOOLS_METRICS_H
#define GM_TOOLS_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/lib/expo.h"

#define GM_EXPORTER_PORT 9455            /* default --listen port */
#define GM_EXPORTER_ADDR "127.0.0.1"
#define GM_METRICS_FILE "gpumem.prom"    /* --textfile DIR/gpumem.prom */

/* Why a segment (or a device block of one) was skipped. */
enum gm_mx_reason {
    GM_MX_UNREADABLE = 0,  /* open refused (permission) */
    GM_MX_INVALID,         /* not a segment this tool reads: bad magic,
                              version, sizes, a link, half-written */
    GM_MX_FAULTED,         /* truncated or unreadable while copied */
    GM_MX_INCONSISTENT,    /* a device block or a group file never read
                              consistently, or breaking the writer's
                              invariants */
    GM_MX_LIMIT,           /* past --max-segments (a segment that would
                              have been exported) or the size bound */
    GM_MX_TIMEOUT,         /* left when the scrape's time ran out */
    GM_MX_DUPLICATE,       /* the labels of a process already exported
                              by the scrape (a copy of its segment) */
    GM_MX_NREASONS
};
const char *gm_mx_reason_name(enum gm_mx_reason r); /* "invalid", ... */

struct gm_metrics_opts {
    const char *dir;             /* segment directory */
    const char *prefix;          /* segment prefix */
    bool hami;                   /* --compat hami */
    bool dead;                   /* --dead: also writers that died */
    unsigned max_segments;       /* process segments read at most (live,
                                    kept, dead: the order they take the
                                    places in) */
    uint64_t timeout_ns;         /* time budget of one scrape */
    size_t max_bytes;            /* bound on the text of one scrape */
};

/* Defaults: /dev/shm, "gpumem", 4096 segments, 5 s, 64 MiB. */
void gm_metrics_opts_default(struct gm_metrics_opts *o);

/* What outlives a scrape: counters since the exporter started. */
struct gm_metrics_totals {
    uint64_t errors[GM_MX_NREASONS];
    uint64_t scrapes;
};

struct gm_metrics_result {
    unsigned segments;           /* process segments exported */
    unsigned groups;             /* group files exported */
    unsigned skipped;            /* segments or devices skipped */
    uint64_t duration_ns;
};

/* One scrape into out (initialised by the caller; appended to). Adds this
 * scrape's skips to tot. Returns 0, or -1 when the directory cannot be
 * read or memory ran out (a one-line reason in err; out then holds only
 * the exporter's own health figures). */
int gm_metrics_scrape(const struct gm_metrics_opts *o,
                      struct gm_metrics_totals *tot, enum gm_expo_fmt fmt,
                      struct gm_expo_buf *out, struct gm_metrics_result *res,
                      char *err, size_t errcap);

/* Replace DIR/NAME atomically with n bytes at p: write DIR/.NAME.<pid>
 * (O_EXCL|O_NOFOLLOW, 0644), fsync, rename over NAME. Returns 0, or -1
 * with a reason in err (the temporary file removed). */
int gm_metrics_write_file(const char *dir, const char *name, const char *p,
                          size_t n, char *err, size_t errcap);

/* ---- the exporter's command line (gpumem exporter, gpumem-exporter) --- */

struct gm_exporter_cfg {
    struct gm_metrics_opts m;
    char addr[64];               /* --listen ADDR (IPv4 or IPv6 literal) */
    unsigned port;               /* --listen :PORT */
    const char *textfile;        /* --textfile DIR, or NULL */
    uint64_t interval_ns;        /* --interval (textfile), default 15 s */
    bool once;                   /* --once */
    bool openmetrics;            /* --format openmetrics (stdout, file) */
};

/* Parses argv[1..] (argv[0] is the command's name). Returns 0, or 2 after
 * one line on stderr naming the bad argument and what is accepted. */
int gm_exporter_parse(int argc, char **argv, struct gm_exporter_cfg *cfg);

/* --once / --textfile: scrape to stdout (once) or into DIR every interval
 * (once, or until SIGINT/SIGTERM). Returns the exit status: 0, or 1 when
 * the segment directory or the text file could not be written. */
int gm_exporter_run_local(const struct gm_exporter_cfg *cfg);

#endif
