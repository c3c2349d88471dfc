/*
 * shim/telemetry/fragq.h — a device's fragmentation tracker
 * (shim/telemetry/frag.h) kept off the allocation path: an allocation
 * only logs its interval, its free cancels that add while it is still
 * logged, and the tracker's tree takes the logged adds in batches.
 *
 * Serialised by the caller: every call on one log runs under the
 * process's telemetry writer lock (shim/telemetry/telwrite.h), inside
 * the allocation's or free's telemetry event, so the log is plain memory
 * with no atomic operation. The one exception is gm_fragq_lost_remove,
 * for a free whose event could not take the lock.
 *
 * Adding (an allocation of a device pointer, after the driver returned
 * it): two stores into slot tail mod GM_FRAGQ_BATCH, tail + 1; the caller
 * keeps the mark (the new tail's low 32 bits) in the table entry.
 * Removing (its free, after the driver freed it): when the mark is among
 * the logged adds and the slot still holds this start, the add is
 * cancelled (its size set to 0) and never reaches the tree; otherwise the
 * add was applied and the tree drops the start at once. A start the
 * driver gave out again may so be added (by the new block's event) before
 * the old block's remove arrives: the tree counts a start's adds
 * (gm_frag_insert_over) and keeps it until as many removes, so every
 * order of the two leaves the same set.
 *
 * Applying (every GM_FRAGQ_BATCH-th operation, a rise of the peak, the
 * OOM snapshot, the exit): the logged adds in order, cancelled ones
 * skipped, then the removes lost for want of the lock; the figure is
 * handed back when it changed since the last one handed back.
 *
 * Freshness: the figure is the tracker's at the last apply: at most
 * GM_FRAGQ_BATCH - 1 operations are not in it (docs/metrics.md).
 *
 * Rebuilding: when a remove was lost beyond the kept slots (lost_over
 * rose) or a writer died holding the lock (gm_fragq_epoch moved), the
 * next apply, or remove from the tree, empties the tree, drops the
 * logged adds and refills it from the owner's table (gm_fragq_set_refill):
 * a start whose remove never came would otherwise stay counted for good.
 *
 * Invariants: head <= tail <= head + GM_FRAGQ_BATCH (an add that fills
 * the log applies it); the adds not applied are tickets head .. tail - 1,
 * ticket t in slot t mod GM_FRAGQ_BATCH; `since` counts the operations
 * since the last apply and stays below GM_FRAGQ_BATCH between calls.
 */
#ifndef GM_FRAGQ_H
#define GM_FRAGQ_H

#include <stdbool.h>
#include <stdint.h>

#include "shim/telemetry/frag.h"

#define GM_FRAGQ_BATCH 256u   /* a power of two */
#define GM_FRAGQ_MASK (GM_FRAGQ_BATCH - 1u)
#define GM_FRAGQ_LOST 8u      /* removes kept for a later apply */
#define GM_FRAGQ_KEEP 0xffffffffu /* no new figure (also GM_TEL_FRAG_KEEP) */

struct gm_fragq_op {
    uint64_t addr;
    uint64_t size;              /* 0: cancelled */
};

/* Refills an emptied tracker with every interval live now (the owner's
 * table of allocations): gm_frag_insert_over(&q->set, ...) for each. */
struct gm_fragq;
typedef void (*gm_fragq_refill_fn)(void *ctx, struct gm_fragq *q);

/* Bumped (under the writer lock) when a writer that died holding the lock
 * was replaced: it may have left a tree half changed, so every log
 * rebuilds its tree before touching it again. */
extern uint64_t gm_fragq_epoch __attribute__((visibility("hidden")));

struct gm_fragq {
    uint64_t tail;              /* adds logged */
    uint64_t head;              /* adds applied or skipped */
    uint32_t since;             /* operations since the last apply */
    uint32_t published;         /* the last figure handed back (ppm) */
    uint64_t epoch;             /* gm_fragq_epoch when the tree was built */
    uint64_t over_seen;         /* lost_over at the last rebuild */
    gm_fragq_refill_fn refill;  /* NULL: a rebuild leaves the tree empty */
    void *refill_ctx;
    /* Removes whose event could not take the writer lock (a signal
     * handler that interrupted the lock's holder, a holder given up on):
     * start addresses, 0 = empty, claimed with a compare-and-swap;
     * `lost_over` counts those that found every slot taken. */
    uint64_t lost[GM_FRAGQ_LOST];   /* atomic */
    uint64_t lost_over;             /* atomic */
    int lost_any;                   /* atomic: some slot may be taken */
    struct gm_frag set;
    struct gm_fragq_op ops[GM_FRAGQ_BATCH];
};

/* Empty log and tracker. */
void gm_fragq_init(struct gm_fragq *q);
/* What rebuilds the tree when the log cannot be trusted (a remove that
 * found every lost slot taken, a writer that died inside an update):
 * the tree is emptied, the logged adds dropped (their blocks are in the
 * owner's table, or will be freed) and fn called. */
void gm_fragq_set_refill(struct gm_fragq *q, gm_fragq_refill_fn fn,
                         void *ctx);
/* Release the tracker's memory; the log is reusable after _init. */
void gm_fragq_destroy(struct gm_fragq *q);

/* Apply every logged add and kept remove: the figure (ppm) when it
 * changed since the last one returned, else GM_FRAGQ_KEEP. `force`:
 * return it even unchanged. */
uint32_t gm_fragq_apply(struct gm_fragq *q, bool force)
    __attribute__((cold));
/* A remove whose add was applied (or is unknown): the tree drops the
 * start now; the figure as gm_fragq_apply's when this operation
 * completed a batch. */
uint32_t gm_fragq_remove_applied(struct gm_fragq *q, uint64_t addr);
/* Without the writer lock: keep addr's remove for the next apply; false
 * when every slot was taken (counted in lost_over: the start stays in
 * the tracker) or addr is 0. */
bool gm_fragq_lost_remove(struct gm_fragq *q, uint64_t addr)
    __attribute__((cold));

/* The ticket whose mark would be 0 (every 2^32nd): logged as a cancelled
 * add, after an apply that leaves room for it; returns the next ticket. */
uint64_t gm_fragq_skip_zero(struct gm_fragq *q, uint32_t *ppm)
    __attribute__((cold));

/* Log the add of [addr, addr + size); returns its mark, never 0 (0 is an
 * interval not logged: its free touches nothing). *ppm: the new figure
 * when this add completed a batch, else left alone. */
static inline __attribute__((always_inline)) uint32_t
gm_fragq_add(struct gm_fragq *q, uint64_t addr, uint64_t size, uint32_t *ppm)
{
    uint64_t t = q->tail;
    if (__builtin_expect((uint32_t)(t + 1) == 0, 0))
        t = gm_fragq_skip_zero(q, ppm);
    struct gm_fragq_op *op = &q->ops[t & GM_FRAGQ_MASK];
    op->addr = addr;
    op->size = size;
    q->tail = t + 1;
    if (__builtin_expect(++q->since >= GM_FRAGQ_BATCH, 0)) {
        uint32_t f = gm_fragq_apply(q, false);
        if (f != GM_FRAGQ_KEEP)
            *ppm = f;
    }
    return (uint32_t)(t + 1);
}

/* The free of the block at addr whose add returned `mark` (not 0): cancel
 * the add while it is logged, else remove the start from the tree. *ppm
 * as in gm_fragq_add. The mark is known modulo 2^32 only: the slot's
 * start must match too. */
static inline __attribute__((always_inline)) void
gm_fragq_remove(struct gm_fragq *q, uint32_t mark, uint64_t addr,
                uint32_t *ppm)
{
    /* Logged adds have marks head + 1 .. tail: back = tail - mark. */
    uint32_t back = (uint32_t)q->tail - mark;
    if (__builtin_expect(back < q->tail - q->head, 1)) {
        struct gm_fragq_op *op = &q->ops[(mark - 1u) & GM_FRAGQ_MASK];
        if (__builtin_expect(op->addr == addr && op->size != 0, 1)) {
            op->size = 0;
            return;
        }
    }
    uint32_t f = gm_fragq_remove_applied(q, addr);
    if (f != GM_FRAGQ_KEEP)
        *ppm = f;
}

#endif
