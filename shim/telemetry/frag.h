/*
 * shim/telemetry/frag.h — incremental external-fragmentation tracker, one per device.
 *
 * Holds the set of live intervals [addr, addr + size) keyed by start
 * address (starts are unique). Free space is defined over the heap span
 * [lowest start, highest end): each interval owns the gap between the end
 * of its predecessor (in start order) and its own start, clamped at 0, so
 * overlapping intervals (a bad caller, or address kinds that nest) make a
 * gap of 0 instead of a negative one; the leftmost interval owns no gap.
 *
 *   total_free   = sum of the gaps
 *   largest_free = the largest gap
 *   frag (ppm)   = floor((total_free - largest_free) * 1e6 / total_free),
 *                  i.e. 1 - largest/total; 0 when total_free == 0 (which
 *                  includes fewer than two intervals).
 *
 * Insert and remove take expected O(log n) time (a treap whose nodes carry
 * their subtree's largest gap; its shape depends on internal random
 * priorities, never on the caller's address pattern); every query is O(1).
 * Nodes come from mmap'd slabs recycled through a free list
 * (shim/base/nodepool.h), never from malloc; slabs are kept until
 * gm_frag_destroy. gm_frag_init maps nothing,
 * so an unused tracker costs nothing.
 *
 * Thread safety: none inside. The caller serialises every call on one
 * tracker (the shim: its log, shim/telemetry/fragq.h, under the
 * telemetry writer lock); queries may run under the same lock.
 *
 * Errors are negative errno values: -EINVAL (size 0, or addr + size past
 * 2^64), -EEXIST (an interval with this start is already live), -ENOENT
 * (remove of an unknown start), -ENOMEM (no memory for a node). A call
 * that fails changes nothing. A start added more than once by
 * gm_frag_insert_over stays until the same number of removes.
 */
#ifndef GM_FRAG_H
#define GM_FRAG_H

#include <stddef.h>
#include <stdint.h>

#include "shim/base/nodepool.h"

struct gm_frag_node;

struct gm_frag {
    struct gm_frag_node *root;
    struct gm_nodepool nodes;     /* where the tree's nodes come from */
    uint64_t count;               /* live intervals */
    uint64_t total_gap;           /* sum of the gaps */
    uint64_t largest;             /* the largest gap (root's maximum) */
    uint64_t rng;                 /* priority generator state */
};

int gm_frag_init(struct gm_frag *f);
/* Unmaps every slab; the tracker is empty and reusable afterwards. */
void gm_frag_destroy(struct gm_frag *f);

int gm_frag_insert(struct gm_frag *f, uint64_t addr, uint64_t size);
int gm_frag_remove(struct gm_frag *f, uint64_t addr);
/* Insert, or, when an interval with this start is live, count one more
 * holder of the start (the interval takes the new size): the start then
 * leaves the set only after as many removes as adds. For a log whose adds
 * and removes of one start may arrive out of order (the free of a block
 * logged after the add of the block the driver gave the same start to):
 * returns 0 (inserted), 1 (counted over a live start), or an error as
 * gm_frag_insert. */
int gm_frag_insert_over(struct gm_frag *f, uint64_t addr, uint64_t size);

static inline uint32_t gm_frag_ppm(const struct gm_frag *f)
{
    uint64_t total = f->total_gap;
    if (total == 0)
        return 0;
    uint64_t rest = total - f->largest;
    if (total < (1ull << 44)) /* rest * 1e6 fits in 64 bits */
        return (uint32_t)(rest * 1000000u / total);
    return (uint32_t)((unsigned __int128)rest * 1000000u / total);
}
uint64_t gm_frag_total_free(const struct gm_frag *f);
uint64_t gm_frag_largest_free(const struct gm_frag *f);
uint64_t gm_frag_count(const struct gm_frag *f);

/* Walks the whole tree and checks every invariant (key and priority order,
 * parent links, gaps, subtree maxima, totals). O(n) time, recursion as deep
 * as the tree; for tests. 0 when sound, -1 not. */
int gm_frag_check(const struct gm_frag *f);

#endif
