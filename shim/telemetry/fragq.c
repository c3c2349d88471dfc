/*
 * shim/telemetry/fragq.c — the log in front of a fragmentation tracker:
 * applying it, removes of applied adds, and removes kept for want of the
 * writer lock (protocol and invariants in shim/telemetry/fragq.h).
 *
 * Everything but gm_fragq_lost_remove runs under the telemetry writer
 * lock (gm_fragq_epoch too: bumped by the writer that replaced a dead
 * one, read by the logs' holders). A kept remove is claimed with a
 * compare-and-swap of an empty slot to its start and taken back by the
 * applier with an exchange to 0;
 * `lost_any` is raised (release) after the slot is written and lowered
 * by the applier before it looks at the slots, so a remove kept while an
 * apply runs is seen by that apply or the next.
 */
#include "shim/telemetry/fragq.h"

#include <string.h>

uint64_t gm_fragq_epoch;

void gm_fragq_init(struct gm_fragq *q)
{
    memset(q, 0, sizeof *q);
    gm_frag_init(&q->set);
    q->epoch = gm_fragq_epoch;
}

void gm_fragq_set_refill(struct gm_fragq *q, gm_fragq_refill_fn fn,
                         void *ctx)
{
    q->refill = fn;
    q->refill_ctx = ctx;
}

/* The log cannot be trusted: start over from the owner's table. Logged
 * adds are dropped (head = tail): a block already in the table comes
 * back through the refill, and its free, finding its mark out of the log,
 * removes it from the tree. */
static void rebuild(struct gm_fragq *q)
{
    gm_frag_destroy(&q->set);
    q->head = q->tail;
    for (unsigned i = 0; i < GM_FRAGQ_LOST; i++)
        __atomic_store_n(&q->lost[i], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&q->lost_any, 0, __ATOMIC_SEQ_CST);
    q->over_seen = __atomic_load_n(&q->lost_over, __ATOMIC_RELAXED);
    q->epoch = gm_fragq_epoch;
    if (q->refill != NULL)
        q->refill(q->refill_ctx, q);
}

static inline bool trusted(const struct gm_fragq *q)
{
    return q->epoch == gm_fragq_epoch &&
           __atomic_load_n(&q->lost_over, __ATOMIC_RELAXED) == q->over_seen;
}

void gm_fragq_destroy(struct gm_fragq *q)
{
    gm_frag_destroy(&q->set);
}

/* The logged adds, in order; cancelled ones are skipped. A start still
 * held (its remove not seen yet) is counted over, not refused. */
static void apply_adds(struct gm_fragq *q)
{
    for (uint64_t h = q->head; h != q->tail; h++) {
        const struct gm_fragq_op *op = &q->ops[h & GM_FRAGQ_MASK];
        if (op->size != 0)
            (void)gm_frag_insert_over(&q->set, op->addr, op->size);
    }
    q->head = q->tail;
}

/* The removes kept without the lock, after the adds (theirs were logged
 * before them): the tree drops each start once. */
static void apply_lost(struct gm_fragq *q)
{
    if (!__atomic_load_n(&q->lost_any, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&q->lost_any, 0, __ATOMIC_SEQ_CST);
    for (unsigned i = 0; i < GM_FRAGQ_LOST; i++) {
        uint64_t addr = __atomic_exchange_n(&q->lost[i], 0, __ATOMIC_ACQUIRE);
        if (addr != 0)
            (void)gm_frag_remove(&q->set, addr);
    }
}

uint32_t gm_fragq_apply(struct gm_fragq *q, bool force)
{
    if (!trusted(q))
        rebuild(q);
    apply_adds(q);
    apply_lost(q);
    q->since = 0;
    uint32_t ppm = gm_frag_ppm(&q->set);
    if (ppm == q->published && !force)
        return GM_FRAGQ_KEEP;
    q->published = ppm;
    return ppm;
}

uint32_t gm_fragq_remove_applied(struct gm_fragq *q, uint64_t addr)
{
    if (q->epoch != gm_fragq_epoch) /* a tree a dead writer left */
        return gm_fragq_apply(q, false);
    (void)gm_frag_remove(&q->set, addr);
    if (++q->since >= GM_FRAGQ_BATCH)
        return gm_fragq_apply(q, false);
    return GM_FRAGQ_KEEP;
}

uint64_t gm_fragq_skip_zero(struct gm_fragq *q, uint32_t *ppm)
{
    uint32_t f = gm_fragq_apply(q, false); /* head = tail: the log empty */
    if (f != GM_FRAGQ_KEEP)
        *ppm = f;
    uint64_t t = q->tail;
    q->ops[t & GM_FRAGQ_MASK] = (struct gm_fragq_op){ 0, 0 };
    q->tail = t + 1;
    return t + 1;
}

bool gm_fragq_lost_remove(struct gm_fragq *q, uint64_t addr)
{
    if (addr == 0)
        return false; /* never a device pointer the table holds */
    for (unsigned i = 0; i < GM_FRAGQ_LOST; i++) {
        uint64_t free_ = 0;
        if (__atomic_compare_exchange_n(&q->lost[i], &free_, addr, false,
                                        __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
            __atomic_store_n(&q->lost_any, 1, __ATOMIC_SEQ_CST);
            return true;
        }
    }
    __atomic_fetch_add(&q->lost_over, 1, __ATOMIC_RELAXED);
    return false;
}
