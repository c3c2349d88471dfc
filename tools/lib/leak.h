/*
 * tools/lib/leak.h — steps, the used-floor series and the leak verdict of one
 * device, as the tools compute them from a segment's ring and history
 * (definitions in docs/metrics.md "Steps" and "Leak verdict").
 *
 * Steps come from the process's own marks (GM_EV_STEP events in the ring,
 * the step count of the history buckets) when it makes them, else from
 * the period of the device's used curve: the smallest lag P (in ALLOC and
 * FREE events) at which used[i+P] - used[i] takes one value for most i
 * (a training step repeats its allocations, a leak adds the same amount
 * each time). The series is one point per step from the ring when the
 * ring holds the run or at least 64 steps, else the history binned to at
 * most GM_TREND_MAX_POINTS points of equal width; shim/telemetry/trend.h
 * judges it.
 *
 * Everything here is pure over what the caller copied (records, history
 * points), except gm_leak_of_seg, which reads a segment. Bounded: the
 * period search looks at the last GM_PERIOD_EVENTS events and lags up to
 * GM_PERIOD_LAG_MAX; the per-step series keeps at most GM_LEAK_SERIES_MAX
 * points (the most recent). Not thread-safe: the period search, the
 * evidence and gm_leak_of_seg use static scratch (the tools analyse one
 * device at a time).
 */
#ifndef GM_LEAK_H
#define GM_LEAK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "shim/telemetry/abi.h"
#include "shim/telemetry/hist.h"
#include "shim/telemetry/trend.h"

#define GM_PERIOD_EVENTS 8192u
#define GM_PERIOD_LAG_MAX 2048u
#define GM_PERIOD_MIN_SCORE 0.5
#define GM_PERIOD_SAMPLES 1024u /* pairs scored per lag, at most */
#define GM_LEAK_SERIES_MAX 16384u
#define GM_LEAK_RING_STEPS 64u /* the ring's series wins from this many steps */

enum gm_step_src {
    GM_STEP_NONE = 0,     /* no step known: the fit is against time */
    GM_STEP_MARKED = 1,   /* gpumem_step() marks */
    GM_STEP_DETECTED = 2, /* the period of the used curve */
};
const char *gm_step_src_name(enum gm_step_src s); /* "none", "marked", ... */

/* The period of the used curve u[0..m) (a device's used after each of its
 * ALLOC and FREE events, oldest first): only the last GM_PERIOD_EVENTS
 * values are looked at; 0 when no lag in [2, min(GM_PERIOD_LAG_MAX, m/4)]
 * scores at least GM_PERIOD_MIN_SCORE. *score (may be NULL) gets the
 * chosen lag's score (the fraction of i where u[i+P] - u[i] equals the
 * lag's typical difference, over at most GM_PERIOD_SAMPLES evenly spaced
 * i). */
uint64_t gm_steps_period(const uint64_t *u, size_t m, double *score);

/* What the analysis reads. */
struct gm_leak_input {
    const struct gm_abi_record *ev; /* ring events, in order */
    size_t n;
    uint64_t lost;                  /* events lost before ev[0] */
    const struct gm_hist_point *hist; /* the stitched history, or NULL */
    size_t nhist;
    unsigned dev;
    uint64_t t0_ns;                 /* the origin of the times */
    uint64_t limit;                 /* 0: none */
    uint64_t dev_events;            /* the device's allocs + frees so far */
    uint64_t live_end;              /* the device's live allocations now */
    bool marked;                    /* the process has called gpumem_step */
    bool arena;                     /* static mode: the arena's own figure */
};

struct gm_leak {
    struct gm_trend trend;
    enum gm_step_src steps_from;
    uint64_t period;                /* events per step (detected), else 0 */
    double period_score;
    bool from_history;              /* the fitted series is the history's */
    struct gm_trend_evidence ev;    /* ev.from UINT64_MAX: not known */
    /* The series (per step, or the history's points), oldest first. */
    struct gm_trend_point *pts;     /* malloc'd; gm_leak_free */
    size_t npts;
};

/* Computes *out from in (pts is allocated; NULL with npts 0 when out of
 * memory, then the verdict is UNKNOWN). Returns 0, -1 on NULL arguments. */
int gm_leak_analyse(const struct gm_leak_input *in, struct gm_leak *out);
void gm_leak_free(struct gm_leak *l);

/* "leak":{...} as docs/metrics.md defines it (no trailing newline). */
void gm_leak_json(FILE *f, const struct gm_leak *l);

struct gm_seg;
struct gm_snapshot;
/* The whole analysis of device dev of an open segment: the ring events ev
 * (gm_leak_drain_all's), the history and the step count of s, the limit
 * and the counts of snap. Returns 0, or -1 with a reason in err (then *out
 * is still valid, UNKNOWN). */
int gm_leak_of_seg(const struct gm_seg *s, const struct gm_snapshot *snap,
                   unsigned dev, const struct gm_abi_record *ev, size_t n,
                   uint64_t lost, struct gm_leak *out, char *err,
                   size_t errcap);

/* Every event the ring of s holds (its last GM_LEAK_DRAIN_MAX at most),
 * in order, in a malloc'd array (*out, *n); *lost gets the events before
 * them (overwritten, or left out). 0, or -1 when out of memory. */
#define GM_LEAK_DRAIN_MAX (1u << 20)
int gm_leak_drain_all(const struct gm_seg *s, struct gm_abi_record **out,
                      size_t *n, uint64_t *lost);
/* The same, the last max events at most. */
int gm_leak_drain_last(const struct gm_seg *s, size_t max,
                       struct gm_abi_record **out, size_t *n, uint64_t *lost);

#endif
