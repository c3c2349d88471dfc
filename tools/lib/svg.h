/*
 * tools/lib/svg.h — device memory over time as an SVG image (`gpumem report
 * --svg`): a timeline of "used" samples per device, with the limit, the
 * peak, the refused requests (OOM) and the history the ring lost, drawn
 * on axes with 1-2-5 ticks, one binary unit for the memory axis and
 * every size on the image, and a legend of what is drawn.
 *
 * Invariants: a timeline owns its sample arrays (gm_tl_free releases
 * them); samples of a device are kept in the order added (callers add
 * them in event order); the peak of a device is at least every sample;
 * events lost are counted as "before" until the first sample or refusal
 * is added and as "after" (gaps) from then on.
 */
#ifndef GM_SVG_H
#define GM_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "shim/telemetry/abi.h"

struct gm_tl_point {
    uint64_t t_ns;               /* CLOCK_REALTIME ns */
    uint64_t used;               /* bytes */
};

/* The fitted trend of a device's used floor (tools/lib/leak.h), drawn as
 * a dashed line from (t0_ns, y0) to (t1_ns, y1) with its text in the
 * legend. */
struct gm_tl_trend {
    bool on;
    uint64_t t0_ns, t1_ns;
    double y0, y1;               /* bytes */
    char text[96];               /* "grows 3.0 MiB per step" */
};

/* A mark on the time axis: a labelled mark (gpumem_mark) or a step tick. */
struct gm_tl_mark {
    uint64_t t_ns;
    bool step;                   /* a step tick (label: the step number) */
    char label[48];
};

struct gm_tl_dev {
    bool present;
    struct gm_tl_trend trend;
    uint64_t limit;              /* 0: no limit */
    uint64_t peak, peak_ns;      /* high-water mark and when */
    struct gm_tl_point *pts;
    size_t n, cap;
    struct gm_tl_point *ooms;    /* used at the refusal */
    size_t noom, oomcap;
};

struct gm_timeline {
    uint64_t t0_ns;              /* x = 0 (process start); 0: first event */
    uint64_t first_ns;           /* earliest event added; 0: none yet */
    uint64_t lost_before;        /* events lost before the first added */
    uint64_t lost_after;         /* events lost after it (gaps) */
    char title[256];
    /* Samples before this time came from the segment's history (1 s
     * buckets and coarser), not from events: noted on the image. */
    uint64_t hist_until_ns;
    struct gm_tl_mark *marks;
    size_t nmarks, markcap;
    struct gm_tl_dev dev[GM_ABI_MAX_DEVICES];
};

void gm_tl_init(struct gm_timeline *tl);
void gm_tl_free(struct gm_timeline *tl);
/* A "used" sample on dev; raises the peak. -1 when out of memory or dev
 * is out of range. */
int gm_tl_add(struct gm_timeline *tl, unsigned dev, uint64_t t_ns,
              uint64_t used);
/* A refused request on dev while `used` bytes were charged. */
int gm_tl_oom(struct gm_timeline *tl, unsigned dev, uint64_t t_ns,
              uint64_t used);
/* n events the ring (or the trace) no longer holds, at this point of the
 * event order. */
void gm_tl_lost(struct gm_timeline *tl, uint64_t n);
/* A mark at t_ns (label cut to fit, escaped when drawn). -1 when out of
 * memory. */
int gm_tl_mark(struct gm_timeline *tl, uint64_t t_ns, bool step,
               const char *label);

/* Write the image; returns 0, or -1 when writing failed or memory ran
 * out. */
int gm_svg_write(const struct gm_timeline *tl, FILE *f);

#endif
