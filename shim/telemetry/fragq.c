/*
 * shim/telemetry/fragq.c — the lock-free hand-off in front of a fragmentation
 * tracker (protocol and invariants in shim/telemetry/fragq.h).
 *
 * Memory order: a poster's ticket increment, publish store and exchange
 * on `busy` are sequentially consistent, as are the applier's release of
 * `busy` and its second look at the queue, so of a poster that found the
 * role taken and an applier giving it up, at least one sees the other's
 * operation.
 */
#include "shim/telemetry/fragq.h"

#include <sched.h>
#include <stddef.h>
#include <string.h>

#include "shim/base/spin.h"

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

/* Holding the role: apply every published operation in ticket order. */
void gm_fragq_drain(struct gm_fragq *q)
{
    uint64_t h = __atomic_load_n(&q->head, __ATOMIC_RELAXED);
    struct gm_fragq_op *op = &q->ops[h & GM_FRAGQ_MASK];
    while (__atomic_load_n(&op->seq, __ATOMIC_ACQUIRE) == h + 1) {
        gm_fragq_apply(q, op->addr, op->size);
        __atomic_store_n(&op->seq, h + GM_FRAGQ_CAP, __ATOMIC_RELEASE);
        op = &q->ops[++h & GM_FRAGQ_MASK];
    }
    __atomic_store_n(&q->head, h, __ATOMIC_RELAXED);
}

void gm_fragq_finish_slow(struct gm_fragq *q, gm_fragq_publish publish,
                          void *ctx)
{
    while (gm_fragq_ready(q) && gm_fragq_take_role(q)) {
        gm_fragq_drain(q);
        gm_fragq_publish_release(q, publish, ctx);
    }
}

/* All CAP slots are pending: help or wait until ticket t's slot is free. */
static __attribute__((noinline, cold)) void wait_slot(
    struct gm_fragq *q, struct gm_fragq_op *op, uint64_t t,
    gm_fragq_publish publish, void *ctx)
{
    unsigned spins = 0;
    while (__atomic_load_n(&op->seq, __ATOMIC_ACQUIRE) != t) {
        if (gm_fragq_ready(q) && gm_fragq_take_role(q)) {
            gm_fragq_drain(q);
            gm_fragq_finish(q, publish, ctx);
        } else if (++spins < 100) {
            gm_cpu_relax();
        } else {
            sched_yield();
        }
    }
}

void gm_fragq_enqueue(struct gm_fragq *q, uint64_t addr, uint64_t size,
                      gm_fragq_publish publish, void *ctx)
{
    uint64_t t = __atomic_fetch_add(&q->tail, 1, __ATOMIC_SEQ_CST);
    struct gm_fragq_op *op = &q->ops[t & GM_FRAGQ_MASK];
    if (__builtin_expect(__atomic_load_n(&op->seq, __ATOMIC_ACQUIRE) != t,
                         0))
        wait_slot(q, op, t, publish, ctx);
    op->addr = addr;
    op->size = size;
    __atomic_store_n(&op->seq, t + 1, __ATOMIC_SEQ_CST);
    /* The holder may have left before the publish above. */
    if (gm_fragq_take_role(q)) {
        gm_fragq_drain(q);
        gm_fragq_finish(q, publish, ctx);
    }
}

bool gm_fragq_peek(struct gm_fragq *q, uint64_t *largest, uint32_t *ppm,
                   gm_fragq_publish publish, void *ctx)
{
    if (!gm_fragq_take_role(q))
        return false;
    gm_fragq_drain(q);
    bool any = q->set.count > 0;
    if (any) {
        *largest = q->set.largest;
        *ppm = gm_frag_ppm(&q->set);
    }
    gm_fragq_finish(q, publish, ctx); /* gives the role up, looks again */
    return any;
}
