/*
 * shim/telemetry/fragq.c — the log in front of a fragmentation tracker:
 * applying it, removes of applied adds, and removes kept for want of the
 * writer lock (protocol and invariants in shim/telemetry/fragq.h).
 *
 * Everything but gm_fragq_lost_remove runs under the telemetry writer
 * lock. A kept remove is claimed with a compare-and-swap of an empty slot
 * to its start and taken back by the applier with an exchange to 0;
 * `lost_any` is raised (release) after the slot is written and lowered
 * by the applier before it looks at the slots, so a remove kept while an
 * apply runs is seen by that apply or the next.
 */
#include "shim/telemetry/fragq.h"

#include <string.h>

void gm_fragq_init(struct gm_fragq *q)
{
    memset(q, 0, sizeof *q);
    gm_frag_init(&q->set);
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
    (void)gm_frag_remove(&q->set, addr);
    if (++q->since >= GM_FRAGQ_BATCH)
        return gm_fragq_apply(q, false);
    return GM_FRAGQ_KEEP;
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
