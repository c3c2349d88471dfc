/*
 * shim/telemetry/fragq.h — a device's fragmentation tracker (shim/telemetry/frag.h)
 * kept off the allocation path: allocating threads only log their
 * interval, freeing threads cancel the add they find still logged (else
 * log a remove), and the tracker is brought up to date in batches, at a
 * sync point, by whichever thread takes the applier role.
 *
 * Posting (an allocation of a device pointer, or the free of one whose
 * add was applied): a ticket from an atomic increment of `tail`, the
 * operation stored in slot ticket mod GM_FRAGQ_CAP, published with a
 * release store of seq = ticket + 1. No tree is touched. Every
 * GM_FRAGQ_BATCH-th ticket's poster syncs. The poster keeps the ticket
 * (the live-allocation table stores it with the entry).
 *
 * Cancelling (the free of a block whose add is still logged): one
 * compare-and-swap of the slot's seq from ticket + 1 to ticket + 1 with
 * GM_FRAGQ_DEAD set. The applier claims each live operation with a
 * compare-and-swap of seq from ticket + 1 to ticket + CAP (the slot's
 * next free value) before it applies it, so of a free and the applier
 * exactly one wins: either the add never reaches the tree, or the free
 * logs its remove. A block allocated and freed between two syncs so
 * costs the same whatever else is live: the tree's O(log n) is paid only
 * by allocations that outlive a sync.
 *
 * Syncing (gm_fragq_sync: a batch boundary, a rise of the peak, the exit):
 * take the applier role (one exchange; nobody spins on it), apply the
 * published operations in ticket order up to the first one not yet
 * published (skipping cancelled ones), hand the new figure to the publish
 * callback when it changed, give the role up and look once more.
 *
 * Order: a remove is posted (or the add cancelled) before the driver
 * frees the memory and an add after the driver returned it, so the
 * operations on one address reach the tracker in the order the driver
 * saw them.
 *
 * Freshness: the figure is the tracker's after the last sync; at most
 * GM_FRAGQ_BATCH operations are pending after any post (docs/metrics.md).
 *
 * Invariants: ticket t lives in slot t mod GM_FRAGQ_CAP; a slot's seq is
 * t while free for ticket t, t + 1 once ticket t is published, (t + 1) |
 * GM_FRAGQ_DEAD once cancelled, and t + CAP once applied or skipped. Only
 * the role holder writes `head` and touches `set` and `published`. A
 * poster waits only when GM_FRAGQ_CAP operations are pending, and then
 * syncs itself when it can.
 */
#ifndef GM_FRAGQ_H
#define GM_FRAGQ_H

#include <stdbool.h>
#include <stdint.h>

#include "shim/telemetry/frag.h"

#define GM_FRAGQ_CAP 512u
#define GM_FRAGQ_MASK (GM_FRAGQ_CAP - 1u)
#define GM_FRAGQ_BATCH 256u   /* a power of two, at most CAP / 2 */
#define GM_FRAGQ_DEAD (1ull << 63)

struct gm_fragq_op {
    uint64_t seq;     /* atomic */
    uint64_t addr;    /* atomic (relaxed): read by a canceller */
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
/* Cold (the OOM snapshot): the tracker's largest gap and figure, with
 * every published operation applied first. False, nothing set, when the
 * applier role is taken (another thread is updating it) or the tracker
 * holds no interval. */
bool gm_fragq_peek(struct gm_fragq *q, uint64_t *largest, uint32_t *ppm,
                   gm_fragq_publish publish, void *ctx);


/* Bring the tracker up to date with every published operation and
 * publish the figure if it changed. Returns at once when another thread
 * holds the applier role (that thread, or the next sync, applies the
 * rest). */
void gm_fragq_sync(struct gm_fragq *q, gm_fragq_publish publish, void *ctx)
    __attribute__((cold));

/* All GM_FRAGQ_CAP slots pending: sync or wait until ticket t's slot is
 * free (out of line: only when syncs fell behind). */
void gm_fragq_wait_slot(struct gm_fragq *q, uint64_t t,
                        gm_fragq_publish publish, void *ctx)
    __attribute__((cold));

/* Log an add (size > 0) or a remove (size == 0) of the interval starting
 * at addr; returns the ticket. Memory order: the ticket increment pairs
 * with nothing (slots are claimed by index); the release store of
 * seq = t + 1 pairs with the applier's and the canceller's acquire loads
 * of it. */
static inline __attribute__((always_inline)) uint64_t gm_fragq_post(
    struct gm_fragq *q, uint64_t addr, uint64_t size,
    gm_fragq_publish publish, void *ctx)
{
    uint64_t t = __atomic_fetch_add(&q->tail, 1, __ATOMIC_RELAXED);
    struct gm_fragq_op *op = &q->ops[t & GM_FRAGQ_MASK];
    if (__builtin_expect(__atomic_load_n(&op->seq, __ATOMIC_ACQUIRE) != t, 0))
        gm_fragq_wait_slot(q, t, publish, ctx);
    __atomic_store_n(&op->addr, addr, __ATOMIC_RELAXED);
    op->size = size;
    __atomic_store_n(&op->seq, t + 1, __ATOMIC_RELEASE);
    if (__builtin_expect(((t + 1) & (GM_FRAGQ_BATCH - 1)) == 0, 0))
        gm_fragq_sync(q, publish, ctx);
    return t;
}

/* Cancel the add of the interval at addr logged as a ticket whose low 32
 * bits plus one are `mark` (0: none), if it was not applied yet; true
 * when cancelled (the caller then logs no remove). The ticket is known
 * modulo 2^32 only: the slot's start must match too. The compare-and-
 * swap pairs with the applier's claim in gm_fragq_sync (exactly one
 * succeeds). */
static inline __attribute__((always_inline)) bool gm_fragq_cancel(
    struct gm_fragq *q, uint32_t mark, uint64_t addr)
{
    struct gm_fragq_op *op = &q->ops[(mark - 1u) & GM_FRAGQ_MASK];
    uint64_t s = __atomic_load_n(&op->seq, __ATOMIC_ACQUIRE);
    if (mark == 0 || (uint32_t)s != mark || (s & GM_FRAGQ_DEAD) ||
        __atomic_load_n(&op->addr, __ATOMIC_RELAXED) != addr)
        return false;
    return __atomic_compare_exchange_n(&op->seq, &s, s | GM_FRAGQ_DEAD,
                                       false, __ATOMIC_ACQ_REL,
                                       __ATOMIC_RELAXED);
}

/* The mark of ticket t for gm_fragq_cancel (0 when it cannot be told). */
static inline uint32_t gm_fragq_mark(uint64_t t)
{
    return (uint32_t)(t + 1);
}

#endif
