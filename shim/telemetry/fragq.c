/*
 * shim/telemetry/fragq.c — the batch applier behind a fragmentation tracker
 * (protocol and invariants in shim/telemetry/fragq.h).
 *
 * Memory order: a poster's release store of seq = t + 1 (gm_fragq_post)
 * pairs with the acquire loads of seq here; the applier's claim (a
 * compare-and-swap of seq to t + CAP) and a canceller's (to t + 1 |
 * GM_FRAGQ_DEAD) are read-modify-writes of the same word, so exactly one
 * succeeds; the applier reads the operation's fields before its claim,
 * since the slot may be reused at once after it. A sync that finds the
 * role taken returns at once: the holder looks at the queue once more
 * after giving the role up (its release of `busy` and that look are
 * sequentially consistent), which usually takes the new operation in,
 * and the next sync applies it at the latest. Nothing waits for it: a
 * figure is at most one batch behind (GM_FRAGQ_CAP slots bound the log,
 * and a poster that finds its slot taken syncs itself).
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

/* Holding the role: apply (or skip, when cancelled) every published
 * operation from head on, in ticket order. */
static void apply_ready(struct gm_fragq *q)
{
    uint64_t h = __atomic_load_n(&q->head, __ATOMIC_RELAXED);
    for (;;) {
        struct gm_fragq_op *op = &q->ops[h & GM_FRAGQ_MASK];
        uint64_t s = __atomic_load_n(&op->seq, __ATOMIC_ACQUIRE);
        if ((s & ~GM_FRAGQ_DEAD) != h + 1)
            break;
        uint64_t addr = __atomic_load_n(&op->addr, __ATOMIC_RELAXED);
        uint64_t size = op->size;
        uint64_t next = h + GM_FRAGQ_CAP;
        if (s & GM_FRAGQ_DEAD) {
            /* Cancelled: only the applier touches a dead slot; freeing it
             * pairs with the poster's acquire load of seq. */
            __atomic_store_n(&op->seq, next, __ATOMIC_RELEASE);
        } else if (__atomic_compare_exchange_n(&op->seq, &s, next, false,
                                               __ATOMIC_ACQ_REL,
                                               __ATOMIC_ACQUIRE)) {
            if (size != 0)
                gm_frag_insert(&q->set, addr, size);
            else
                gm_frag_remove(&q->set, addr);
        } else {
            /* Cancelled between the load and the claim. */
            __atomic_store_n(&op->seq, next, __ATOMIC_RELEASE);
        }
        h++;
    }
    __atomic_store_n(&q->head, h, __ATOMIC_RELAXED);
}

/* Holding the role: hand the figure on when it changed, give the role
 * up (sequentially consistent: pairs with take_role's exchange). */
static void publish_release(struct gm_fragq *q, uint32_t ppm,
                            gm_fragq_publish publish, void *ctx)
{
    if (ppm != q->published) {
        q->published = ppm;
        publish(ctx, ppm);
    }
    __atomic_store_n(&q->busy, 0, __ATOMIC_SEQ_CST);
}

static int take_role(struct gm_fragq *q)
{
    return __atomic_exchange_n(&q->busy, 1, __ATOMIC_SEQ_CST) == 0;
}

/* True when the operation at head is published. */
static int head_ready(struct gm_fragq *q)
{
    uint64_t h = __atomic_load_n(&q->head, __ATOMIC_RELAXED);
    uint64_t s = __atomic_load_n(&q->ops[h & GM_FRAGQ_MASK].seq,
                                 __ATOMIC_SEQ_CST);
    return (s & ~GM_FRAGQ_DEAD) == h + 1;
}

void gm_fragq_sync(struct gm_fragq *q, gm_fragq_publish publish, void *ctx)
{
    while (take_role(q)) {
        apply_ready(q);
        publish_release(q, gm_frag_ppm(&q->set), publish, ctx);
        /* Published while this thread held the role? Then go again. */
        if (!head_ready(q))
            return;
    }
}

void gm_fragq_wait_slot(struct gm_fragq *q, uint64_t t,
                        gm_fragq_publish publish, void *ctx)
{
    struct gm_fragq_op *op = &q->ops[t & GM_FRAGQ_MASK];
    unsigned spins = 0;
    while (__atomic_load_n(&op->seq, __ATOMIC_ACQUIRE) != t) {
        if (head_ready(q)) {
            gm_fragq_sync(q, publish, ctx);
        } else if (++spins < 100) {
            gm_cpu_relax();
        } else {
            sched_yield();
        }
    }
}

bool gm_fragq_peek(struct gm_fragq *q, uint64_t *largest, uint32_t *ppm_out,
                   gm_fragq_publish publish, void *ctx)
{
    if (!take_role(q))
        return false;
    apply_ready(q);
    uint32_t ppm = gm_frag_ppm(&q->set);
    bool any = q->set.count > 0;
    if (any) {
        *largest = q->set.largest;
        *ppm_out = ppm;
    }
    publish_release(q, ppm, publish, ctx);
    return any;
}
