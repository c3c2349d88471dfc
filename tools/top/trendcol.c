/*
 * tools/top/trendcol.c — TREND and ETA of a gpumem-top row (see
 * tools/top/trendcol.h).
 */
#include "tools/top/trendcol.h"

#include <math.h>
#include <stdlib.h>

#include "tools/lib/leak.h"

#include "tools/lib/util.h"

/* The rows wanted this refresh (at most as many as top keeps entries). */
#define WANT_MAX 1024

static struct want {
    struct gm_top_ent *e;
    const struct gm_row *r;
} wants[WANT_MAX];
static size_t nwants;
static int budget = GM_TOP_TREND_PER_REFRESH; /* analyses left this refresh */

void gm_top_trend_refresh(void)
{
    budget = GM_TOP_TREND_PER_REFRESH;
}

void gm_top_trend_begin(void)
{
    nwants = 0;
}

void gm_top_trend_want(struct gm_top_ent *e, const struct gm_row *r)
{
    if (e->dev >= 0 && nwants < WANT_MAX)
        wants[nwants++] = (struct want){ e, r };
}

void gm_top_trend_run(uint64_t now)
{
    for (; budget > 0; budget--) {
        struct want *best = NULL;
        for (size_t i = 0; i < nwants; i++) {
            struct gm_top_ent *e = wants[i].e;
            if (e == NULL || (e->trend_ns != 0 && now - e->trend_ns < GM_TOP_TREND_NS))
                continue;
            if (best == NULL || e->trend_ns < best->e->trend_ns)
                best = &wants[i];
        }
        if (best == NULL)
            return;
        gm_top_trend(best->e, best->r->sp->path, &best->r->sp->p.snap, now);
        best->e->trend_ns = now; /* tried, also when unreadable */
        best->e = NULL;
    }
}

void gm_top_trend(struct gm_top_ent *e, const char *path,
                  const struct gm_snapshot *snap, uint64_t now)
{
    if (e->dev < 0)
        return;
    struct gm_seg seg;
    char err[256];
    if (gm_seg_open_path(&seg, path, err, sizeof err) != 0)
        return;
    if (seg.start_ticks != snap->start_ticks) { /* the pid was reused */
        gm_seg_close(&seg);
        return;
    }
    struct gm_abi_record *ev = NULL;
    size_t n = 0;
    uint64_t lost = 0;
    if (gm_leak_drain_last(&seg, GM_TOP_TREND_EVENTS, &ev, &n, &lost) == 0) {
        struct gm_leak l;
        gm_leak_of_seg(&seg, snap, (unsigned)e->dev, ev, n, lost, &l, err,
                       sizeof err);
        const struct gm_trend *t = &l.trend;
        e->trend = (int)t->verdict;
        e->per_step = t->by_step;
        e->growth = t->verdict != GM_TREND_GROWS ? NAN
                    : t->by_step ? t->bytes_per_step : t->bytes_per_second;
        e->eta_s = t->seconds_to_limit;
        e->trend_ns = now;
        gm_leak_free(&l);
    }
    free(ev);
    gm_seg_close(&seg);
}
