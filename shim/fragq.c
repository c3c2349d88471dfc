/*
 * shim/fragq.c — the lock-free hand-off in front of a fragmentation
 * tracker (protocol and invariants in shim/fragq.h).
 *
 * Memory order: a poster's publish store and its exchange on `busy` are
 * sequentially consistent, as are the applier's release of `busy` and its
 * second look at the queue, so of a poster that found the role taken and
 * an applier giving it up, at least one sees the other's operation.
 */
#include "shim/fragq.h"

#include <sched.h>
#include <stddef.h>
#include <string.h>

#include "shim/spin.h"

#define MASK (GM_FRAGQ_CAP - 1u)

void gm_fragq_init(struct gm_fragq *q)
{
    memset(q, 0, offsetof(struct gm_fragq, ops));
    gm_frag_init(&q->set);
    for (uint64_t i = 0; i < GM_FRAGQ_CAP; i++) {
        q->ops[i].seq = i;
        q->ops[i].addr = 0;
        q->ops[i].size = 0;
    }
}

void gm_fragq_destroy(struct gm_fragq *q)
{
    gm_frag_destroy(&q->set);
}

/* True when ticket `head` is published (the applier's next step). */
static inline int ready(struct gm_fragq *q)
{
    uint64_t h = __atomic_load_n(&q->head, __ATOMIC_RELAXED);
    return __atomic_load_n(&q->ops[h & MASK].seq, __ATOMIC_SEQ_CST) == h + 1;
}

/* Cheaper first look: any ticket claimed and not yet applied. */
static inline int pending(struct gm_fragq *q)
{
    return __atomic_load_n(&q->tail, __ATOMIC_SEQ_CST) !=
           __atomic_load_n(&q->head, __ATOMIC_RELAXED);
}

static inline int take_role(struct gm_fragq *q)
{
    return __atomic_exchange_n(&q->busy, 1, __ATOMIC_SEQ_CST) == 0;
}

static inline void apply(struct gm_fragq *q, uint64_t addr, uint64_t size)
{
    if (size != 0)
        gm_frag_insert(&q->set, addr, size);
    else
        gm_frag_remove(&q->set, addr);
}

/* Holding the role: apply every published operation in ticket order. */
static inline void drain(struct gm_fragq *q)
{
    uint64_t h = __atomic_load_n(&q->head, __ATOMIC_RELAXED);
    struct gm_fragq_op *op = &q->ops[h & MASK];
    while (__atomic_load_n(&op->seq, __ATOMIC_ACQUIRE) == h + 1) {
        apply(q, op->addr, op->size);
        __atomic_store_n(&op->seq, h + GM_FRAGQ_CAP, __ATOMIC_RELEASE);
        op = &q->ops[++h & MASK];
    }
    __atomic_store_n(&q->head, h, __ATOMIC_RELAXED);
}

/* Holding the role: publish, give the role up, and go again while an
 * operation was published meanwhile and the role is free. */
static inline void finish(struct gm_fragq *q, gm_fragq_publish publish,
                          void *ctx)
{
    for (;;) {
        uint32_t ppm = gm_frag_ppm(&q->set);
        if (ppm != q->published) {
            q->published = ppm;
            publish(ctx, ppm);
        }
        __atomic_store_n(&q->busy, 0, __ATOMIC_SEQ_CST);
        if (__builtin_expect(!pending(q), 1) || !ready(q) || !take_role(q))
            return;
        drain(q);
    }
}

/* All CAP slots are pending: help or wait until ticket t's slot is free. */
static __attribute__((noinline, cold)) void wait_slot(
    struct gm_fragq *q, struct gm_fragq_op *op, uint64_t t,
    gm_fragq_publish publish, void *ctx)
{
    unsigned spins = 0;
    while (__atomic_load_n(&op->seq, __ATOMIC_ACQUIRE) != t) {
        if (ready(q) && take_role(q)) {
            drain(q);
            finish(q, publish, ctx);
        } else if (++spins < 100) {
            gm_cpu_relax();
        } else {
            sched_yield();
        }
    }
}

/* The role was taken: leave the operation for the holder. */
static __attribute__((noinline)) void enqueue(
    struct gm_fragq *q, uint64_t addr, uint64_t size,
    gm_fragq_publish publish, void *ctx)
{
    uint64_t t = __atomic_fetch_add(&q->tail, 1, __ATOMIC_RELAXED);
    struct gm_fragq_op *op = &q->ops[t & MASK];
    if (__builtin_expect(__atomic_load_n(&op->seq, __ATOMIC_ACQUIRE) != t,
                         0))
        wait_slot(q, op, t, publish, ctx);
    op->addr = addr;
    op->size = size;
    __atomic_store_n(&op->seq, t + 1, __ATOMIC_SEQ_CST);
    /* The holder may have left before the publish above. */
    if (take_role(q)) {
        drain(q);
        finish(q, publish, ctx);
    }
}

void gm_fragq_post(struct gm_fragq *q, uint64_t addr, uint64_t size,
                   gm_fragq_publish publish, void *ctx)
{
    if (__builtin_expect(!take_role(q), 0)) {
        enqueue(q, addr, size, publish, ctx);
        return;
    }
    /* Operations published before this one go first. */
    if (__builtin_expect(pending(q), 0))
        drain(q);
    apply(q, addr, size);
    finish(q, publish, ctx);
}
