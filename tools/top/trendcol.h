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

/* Refresh e's trend from the segment file at path with snapshot snap,
 * when GM_TOP_TREND_NS have passed since the last one (now: monotonic). */
void gm_top_trend(struct gm_top_ent *e, const char *path,
                  const struct gm_snapshot *snap, uint64_t now);

#endif
