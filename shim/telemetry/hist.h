/*
 * shim/telemetry/hist.h — the per-device history of the telemetry segment
 * (layout in shim/telemetry/abi.h, protocol in docs/abi.md "History"):
 * three tiers of 512 buckets (1 s, 16 s, 256 s), written by the event
 * writers when an event falls past the open bucket's end, and the pure
 * arithmetic readers share with it (indices, folding, stitching the tiers
 * into one series).
 *
 * Invariants: tier t+1 bucket j is the fold of tier t buckets 16j..16j+15
 * that had events; a bucket's seq is its index + 1 once published and only
 * grows; one thread rolls a device's history at a time (hist_lock, taken
 * without waiting); nothing here allocates, prints or makes a syscall.
 * Time is whatever the caller passes (events carry their own time stamp),
 * so tests drive it with any clock.
 */
#ifndef GM_HIST_H
#define GM_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim/telemetry/abi.h"

/* Bucket width of tier t in ns (t < GM_ABI_HIST_TIERS). */
static inline uint64_t gm_hist_width_ns(unsigned tier)
{
    return GM_ABI_HIST_TICK_NS << (4u * tier);
}

/* Tier-0 index of time ts (ts < base: 0). */
static inline uint64_t gm_hist_index(uint64_t base_ns, uint64_t ts_ns)
{
    return ts_ns > base_ns ? (ts_ns - base_ns) / GM_ABI_HIST_TICK_NS : 0;
}

/* ---- writer ----------------------------------------------------------- */

/* The roll itself, gm_hist_roll, is declared in telwrite.h (its caller). */
/* Exit: publish every device's open bucket and close the history (spins
 * a bounded time for a roll in progress). */
struct gm_tw;
void gm_hist_flush(const struct gm_tw *w);

/* OOM snapshot: whether device dev has a history and no snapshot yet
 * (a cheap test before the walk), and the one-time write (state 0 -> 1 by
 * compare-exchange, the fields, 2 with a release store). False when the
 * device has no history or another snapshot was claimed first. */
bool gm_hist_oom_wanted(const struct gm_tw *w, unsigned dev);
bool gm_hist_oom_write(const struct gm_tw *w, unsigned dev,
                       const struct gm_abi_oom *snap);

/* ---- pure arithmetic -------------------------------------------------- */

/* Fold src (a finer bucket) into dst (its coarser bucket): min of the
 * mins, max of the maxes, the newer end figures, summed (saturating)
 * counts. dst_fresh: dst held another index, start it from src. */
void gm_hist_fold(struct gm_abi_bucket *dst, const struct gm_abi_bucket *src,
                  bool dst_fresh);

/* One interval of a stitched series. */
struct gm_hist_point {
    uint64_t index;              /* bucket index within its tier */
    uint64_t start_ns, end_ns;   /* CLOCK_REALTIME */
    uint32_t tier;               /* 0, 1, 2 */
    uint32_t open;               /* 1: the bucket still being filled */
    uint64_t used_min, used_max, used_last;
    uint64_t live_allocs;
    uint64_t allocs, frees, refusals;
    uint64_t steps;              /* step count at its end */
};
#define GM_HIST_POINTS_MAX (GM_ABI_HIST_TIERS * GM_ABI_HIST_BUCKETS + 1u)

/* Stitch the copied tiers (tier[t][slot], already validated: a slot whose
 * seq is not a plain index + 1 is empty) and the open bucket (NULL: none)
 * into one series in time order: tier 2 before tier 1's oldest complete
 * coverage, tier 1 before tier 0's, each switch on a boundary of the
 * coarser bucket; buckets without events are absent. Returns the number
 * of points written (at most max). */
size_t gm_hist_stitch(const struct gm_abi_bucket tiers[GM_ABI_HIST_TIERS]
                                                     [GM_ABI_HIST_BUCKETS],
                      const struct gm_hist_point *open, uint64_t base_ns,
                      struct gm_hist_point *out, size_t max);

/* Append the open bucket's point `open` to a series of n points stitched
 * from a copy of the tiers taken after it: points the copy holds from the
 * open bucket's time on (the bucket itself, closed since, and any closed
 * and folded into a coarser tier by later rolls) are dropped, so the
 * series stays in time order without overlaps. Returns the new count (at
 * most max). */
size_t gm_hist_append_open(struct gm_hist_point *out, size_t n, size_t max,
                           const struct gm_hist_point *open);

/* The open bucket of a consistent device-block copy as a point (false
 * when none is open). steps: the header's step count. */
bool gm_hist_open_point(const struct gm_abi_dev *d, uint64_t base_ns,
                        uint64_t steps, struct gm_hist_point *out);

/* Seqlocked copy of bucket slot src expected to hold some index: returns
 * true with *dst when consistent and published (dst->seq = index + 1). */
bool gm_hist_read_bucket(const struct gm_abi_bucket *src,
                         struct gm_abi_bucket *dst);

#endif
