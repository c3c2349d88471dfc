/*
 * tools/top/trendcol.h — the TREND and ETA figures of a gpumem-top row: the
 * leak verdict of tools/lib/leak.h for the row's process and device,
 * recomputed at most every GM_TOP_TREND_NS (a full drain of the ring and
 * a period search cost milliseconds per process).
 *
 * Invariants: reads the segment at path only; fills e->trend, per_step,
 * growth, eta_s and trend_ns, nothing else; a segment that cannot be read
 * leaves the previous figures.
 */
#ifndef GM_TRENDCOL_H
#define GM_TRENDCOL_H

#include <stdint.h>

#include "tools/lib/reader.h"
#include "tools/top/view.h"

#define GM_TOP_TREND_NS 3000000000ull
#define GM_TOP_TREND_PER_REFRESH 4 /* analyses per refresh, at most */
#define GM_TOP_TREND_EVENTS 65536u /* the last events of a ring read */

struct gm_row;

/* A refresh starts with gm_top_trend_refresh. Then, for each batch of
 * rows read (the scan, then each vanished process): gm_top_trend_begin,
 * gm_top_trend_want for every row (the row and its scan are referred to,
 * not copied: they must outlive the batch's run), and gm_top_trend_run,
 * which analyses the wanted rows whose figures are the oldest among those
 * GM_TOP_TREND_NS old or never made (now: monotonic ns), at most
 * GM_TOP_TREND_PER_REFRESH in the whole refresh, so that 50 processes cost
 * what 4 do. A segment whose start time is not the row's (a reused pid) is
 * not analysed. */
void gm_top_trend_refresh(void);
void gm_top_trend_begin(void);
void gm_top_trend_want(struct gm_top_ent *e, const struct gm_row *r);
void gm_top_trend_run(uint64_t now);

/* Refresh e's trend from the segment file at path with snapshot snap now. */
void gm_top_trend(struct gm_top_ent *e, const char *path,
                  const struct gm_snapshot *snap, uint64_t now);

#endif
