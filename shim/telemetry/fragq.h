/*
 * shim/telemetry/fragq.h — a device's fragmentation tracker (shim/telemetry/frag.h) fed
 * through a lock-free hand-off, so no allocating or freeing thread ever
 * waits for another to update it.
 *
 * A thread posting an interval operation (add [addr, addr + size), or
 * remove the interval starting at addr) first tries to take the applier
 * role (one exchange; nobody spins on it). Holding it, it applies the
 * operations others left in the queue, then its own (only when nothing is
 * left queued before it), hands the new figure to the publish callback
 * when it changed (still holding the role, so figures are published in
 * the order they were computed), gives the role up and looks once more.
 * Finding the role taken, it leaves its operation in a bounded
 * multi-producer queue (ticket from an atomic increment, slot published
 * with a store of ticket + 1) and tries the role once more after
 * publishing, so an operation is never left with nobody to apply it; the
 * holder applies queued operations in ticket order and stops at the first
 * ticket not yet published.
 *
 * Order: a remove is posted before the driver frees the memory and an add
 * after the driver returned it, so the operations on one address reach
 * the tracker in the order the driver saw them.
 *
 * Invariants: ticket t lives in slot t mod GM_FRAGQ_CAP; a slot's seq is
 * t while free for ticket t, t + 1 once ticket t is published, and t + CAP
 * after it was applied. Only the role holder writes `head` and touches
 * `set` and `published`. A poster waits only when GM_FRAGQ_CAP operations
 * are pending (the applier was descheduled), and then applies pending work
 * itself when it can.
 */
#ifndef GM_FRAGQ_H
#define GM_FRAGQ_H

#include <stdbool.h>
#include <stdint.h>

#include "shim/telemetry/frag.h"

#define GM_FRAGQ_CAP 512u
#define GM_FRAGQ_MASK (GM_FRAGQ_CAP - 1u)

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
/* Cold (the OOM snapshot): the tracker's largest gap and figure, with
 * every published operation applied first. False, nothing set, when the
 * applier role is taken (another thread is updating it) or the tracker
 * holds no interval. */
bool gm_fragq_peek(struct gm_fragq *q, uint64_t *largest, uint32_t *ppm,
                   gm_fragq_publish publish, void *ctx);

/* ---- internals of gm_fragq_post (inline: it is on every allocation) -- */

/* True when ticket `head` is published (the applier's next step). */
static inline int gm_fragq_ready(struct gm_fragq *q)
{
    uint64_t h = __atomic_load_n(&q->head, __ATOMIC_RELAXED);
    return __atomic_load_n(&q->ops[h & GM_FRAGQ_MASK].seq,
                           __ATOMIC_SEQ_CST) == h + 1;
}

/* Cheaper first look: a ticket claimed and not yet applied. */
static inline int gm_fragq_pending(struct gm_fragq *q)
{
    return __atomic_load_n(&q->tail, __ATOMIC_SEQ_CST) !=
           __atomic_load_n(&q->head, __ATOMIC_RELAXED);
}

static inline int gm_fragq_take_role(struct gm_fragq *q)
{
    return __atomic_exchange_n(&q->busy, 1, __ATOMIC_SEQ_CST) == 0;
}

static inline __attribute__((always_inline)) void
gm_fragq_apply(struct gm_fragq *q, uint64_t addr, uint64_t size)
{
    if (size != 0)
        gm_frag_insert(&q->set, addr, size);
    else
        gm_frag_remove(&q->set, addr);
}

/* Holding the role: publish the figure if it changed, give the role up. */
static inline __attribute__((always_inline)) void
gm_fragq_publish_release(struct gm_fragq *q, gm_fragq_publish publish,
                         void *ctx)
{
    uint32_t ppm = gm_frag_ppm(&q->set);
    if (ppm != q->published) {
        q->published = ppm;
        publish(ctx, ppm);
    }
    __atomic_store_n(&q->busy, 0, __ATOMIC_SEQ_CST);
}

/* The paths taken only when threads meet: out of line and cold, so the
 * uncontended path keeps its registers. */
void gm_fragq_drain(struct gm_fragq *q) __attribute__((cold));
void gm_fragq_finish_slow(struct gm_fragq *q, gm_fragq_publish publish,
                          void *ctx) __attribute__((cold));
void gm_fragq_enqueue(struct gm_fragq *q, uint64_t addr, uint64_t size,
                      gm_fragq_publish publish, void *ctx)
    __attribute__((cold));

/* Holding the role: publish, give it up, and go again while an operation
 * was published meanwhile and the role is free. */
static inline __attribute__((always_inline)) void
gm_fragq_finish(struct gm_fragq *q, gm_fragq_publish publish, void *ctx)
{
    gm_fragq_publish_release(q, publish, ctx);
    if (__builtin_expect(gm_fragq_pending(q), 0))
        gm_fragq_finish_slow(q, publish, ctx);
}

/* Post an add (size > 0) or a remove (size == 0), then apply pending
 * operations unless another thread is applying. An operation is applied
 * on the spot only when nothing is queued before it (after draining what
 * can be drained): a queued operation ahead of it may be this thread's
 * own, or one it depends on, so otherwise it joins the queue. */
static inline __attribute__((always_inline)) void gm_fragq_post(
    struct gm_fragq *q, uint64_t addr, uint64_t size,
    gm_fragq_publish publish, void *ctx)
{
    if (__builtin_expect(!gm_fragq_take_role(q), 0))
        goto queue;
    if (__builtin_expect(gm_fragq_pending(q), 0)) {
        gm_fragq_drain(q);
        if (gm_fragq_pending(q)) {
            /* A ticket claimed but not yet published blocks the queue. */
            gm_fragq_finish(q, publish, ctx);
            goto queue;
        }
    }
    gm_fragq_apply(q, addr, size);
    gm_fragq_finish(q, publish, ctx);
    return;
queue:
    gm_fragq_enqueue(q, addr, size, publish, ctx);
}

#endif
