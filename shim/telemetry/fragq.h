/*
 * shim/telemetry/fragq.h — a device's fragmentation tracker (shim/telemetry/frag.h)
 * kept off the allocation path: allocating and freeing threads only log
 * their interval operation; the tracker is brought up to date in batches,
 * at a sync point, by whichever thread takes the applier role.
 *
 * Posting (every allocation and free of a device pointer): a ticket from
 * an atomic increment of `tail`, the operation stored in slot ticket mod
 * GM_FRAGQ_CAP, published with a store of ticket + 1. No tree is touched.
 * Every GM_FRAGQ_BATCH-th ticket's poster syncs.
 *
 * Syncing (gm_fragq_sync: a batch boundary, a rise of the peak, the
 * telemetry's periodic and exit points): take the applier role (one
 * exchange; nobody spins on it), apply the published operations in ticket
 * order up to the first one not yet published, hand the new figure to the
 * publish callback when it changed, give the role up and look once more.
 * Within a batch an add and the remove of the same start that follows it
 * cancel and never reach the tree, so a workload that frees what it
 * allocated costs the same whatever else is live (the tree's O(log n) is
 * paid only by allocations that outlive a batch). Cancelling is exact
 * because only a reused key (the driver returned a start whose free was
 * never seen) makes an add of a start the tracker may hold, and the shim
 * then posts GM_FRAGQ_REUSED, which applies such an add as a replacement
 * and turns cancelling off for that start in the batch
 * (shim/account/account.c); so do two adds of one start in a batch.
 *
 * Order: a remove is posted before the driver frees the memory and an add
 * after the driver returned it, so the operations on one address reach
 * the tracker in the order the driver saw them.
 *
 * Freshness: the figure is the tracker's after the last sync; at most
 * GM_FRAGQ_BATCH operations are pending after any post (docs/metrics.md).
 *
 * Invariants: ticket t lives in slot t mod GM_FRAGQ_CAP; a slot's seq is
 * t while free for ticket t, t + 1 once ticket t is published, and t + CAP
 * after it was applied. Only the role holder writes `head` and touches
 * `set` and `published`. A poster waits only when GM_FRAGQ_CAP operations
 * are pending, and then syncs itself when it can.
 */
#ifndef GM_FRAGQ_H
#define GM_FRAGQ_H

#include <stdint.h>

#include "shim/telemetry/frag.h"

#define GM_FRAGQ_CAP 512u
#define GM_FRAGQ_MASK (GM_FRAGQ_CAP - 1u)
#define GM_FRAGQ_BATCH 256u   /* a power of two, at most CAP / 2 */
/* The size of a remove posted after an add of a start that was live
 * (a reused key): the remove of the old interval. */
#define GM_FRAGQ_REUSED UINT64_MAX

struct gm_fragq_op {
    uint64_t seq;
    uint64_t addr;
    uint64_t size;    /* 0: remove */
};

struct gm_fragq {
    uint64_t tail;              /* atomic: tickets claimed */
    char pad0[56];
    uint64_t head;              /* atomic: next ticket to apply (written
                                   by the role holder only) */
    int busy;                   /* atomic: applier role taken */
    uint32_t published;         /* last figure published (role holder) */
    char pad1[48];
    struct gm_frag set;         /* role holder only */
    struct gm_fragq_op ops[GM_FRAGQ_CAP];
};

/* Called by the applier, holding the role, with the figure (ppm) after
 * a batch that changed it. */
typedef void (*gm_fragq_publish)(void *ctx, uint32_t ppm);

/* Empty queue and tracker (touches the slots once). */
void gm_fragq_init(struct gm_fragq *q);
/* Release the tracker's memory; the queue is reusable after _init. */
void gm_fragq_destroy(struct gm_fragq *q);

/* Bring the tracker up to date with every published operation and
 * publish the figure if it changed. Returns at once when another thread
 * holds the applier role (it applies what was published before it gives
 * the role up). */
void gm_fragq_sync(struct gm_fragq *q, gm_fragq_publish publish, void *ctx)
    __attribute__((cold));

/* All GM_FRAGQ_CAP slots pending: sync or wait until ticket t's slot is
 * free (out of line: only when syncs fell behind). */
void gm_fragq_wait_slot(struct gm_fragq *q, uint64_t t,
                        gm_fragq_publish publish, void *ctx)
    __attribute__((cold));

/* Log an add (size > 0), a remove (size == 0) or the remove of a reused
 * key (GM_FRAGQ_REUSED) of the interval starting at addr. Memory order: the ticket increment pairs with nothing (slots
 * are claimed by index); the release store of seq = t + 1 pairs with the
 * applier's acquire load of it in gm_fragq_sync. */
static inline __attribute__((always_inline)) void gm_fragq_post(
    struct gm_fragq *q, uint64_t addr, uint64_t size,
    gm_fragq_publish publish, void *ctx)
{
    uint64_t t = __atomic_fetch_add(&q->tail, 1, __ATOMIC_RELAXED);
    struct gm_fragq_op *op = &q->ops[t & GM_FRAGQ_MASK];
    if (__builtin_expect(__atomic_load_n(&op->seq, __ATOMIC_ACQUIRE) != t, 0))
        gm_fragq_wait_slot(q, t, publish, ctx);
    op->addr = addr;
    op->size = size;
    __atomic_store_n(&op->seq, t + 1, __ATOMIC_RELEASE);
    if (__builtin_expect(((t + 1) & (GM_FRAGQ_BATCH - 1)) == 0, 0))
        gm_fragq_sync(q, publish, ctx);
}

#endif
