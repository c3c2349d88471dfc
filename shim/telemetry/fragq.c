/*
 * shim/telemetry/fragq.c — the batch applier behind a fragmentation tracker
 * (protocol and invariants in shim/telemetry/fragq.h).
 *
 * Memory order: a poster's release store of seq = t + 1 (gm_fragq_post)
 * pairs with the acquire load of seq here. A syncing thread issues a
 * sequentially consistent fence after its own publish and before its
 * exchange on `busy`; the holder's release of `busy` and its second look
 * at the queue are sequentially consistent; so of a thread that found the
 * role taken and a holder giving it up, at least one sees the other's
 * operation.
 */
#include "shim/telemetry/fragq.h"

#include <errno.h>
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

/* ---- one batch ----------------------------------------------------------
 * Pass 1 finds, for each add, the remove of the same start that follows
 * it in the batch and marks both cancelled; pass 2 applies the rest in
 * ticket order and frees every slot. The table maps a start to the batch
 * index of its pending add: OPEN (an add waits for its remove), CLOSED
 * (the pair cancelled, or a remove of an interval older than the batch;
 * a later add reopens it), MIXED (two adds of one start, or a reused
 * key: nothing of that start is cancelled any more in this batch). */
#define HBITS 10u
#define HSIZE (1u << HBITS)   /* > 2 * GM_FRAGQ_CAP: probes stay short */
enum { H_EMPTY, H_OPEN, H_CLOSED, H_MIXED };

struct batch {
    uint16_t idx[HSIZE];          /* batch index of the entry's add */
    uint8_t state[HSIZE];
    uint8_t cancel[GM_FRAGQ_CAP];
};

static inline unsigned hslot(uint64_t addr)
{
    return (unsigned)((addr * 0x9e3779b97f4a7c15ull) >> (64 - HBITS));
}

/* Pass 1 over ops [h, h + n). */
static void pair_up(struct gm_fragq *q, uint64_t h, unsigned n,
                    struct batch *b)
{
    for (unsigned i = 0; i < n; i++) {
        const struct gm_fragq_op *op = &q->ops[(h + i) & GM_FRAGQ_MASK];
        unsigned s = hslot(op->addr);
        while (b->state[s] != H_EMPTY &&
               q->ops[(h + b->idx[s]) & GM_FRAGQ_MASK].addr != op->addr)
            s = (s + 1) & (HSIZE - 1);
        uint8_t st = b->state[s];
        if (op->size == GM_FRAGQ_REUSED) {  /* nothing of it cancels now */
            b->idx[s] = (uint16_t)i;
            b->state[s] = H_MIXED;
        } else if (op->size != 0) {     /* add */
            if (st == H_EMPTY || st == H_CLOSED) {
                b->idx[s] = (uint16_t)i;
                b->state[s] = H_OPEN;
            } else if (st == H_OPEN) {
                b->state[s] = H_MIXED;
            }
        } else if (st == H_OPEN) {      /* remove of the batch's own add */
            b->cancel[b->idx[s]] = 1;
            b->cancel[i] = 1;
            b->state[s] = H_CLOSED;
        } else if (st == H_EMPTY) {     /* remove of an older interval: */
            b->idx[s] = (uint16_t)i;    /* later ops of it pair as usual */
            b->state[s] = H_CLOSED;
        }
    }
}

/* An add of a start the tracker holds: the driver reused a key whose
 * free was never seen, and the new interval replaces the old (the shim
 * then posts GM_FRAGQ_REUSED and the add again, shim/account/account.c). */
static __attribute__((noinline, cold)) void
replace(struct gm_fragq *q, const struct gm_fragq_op *op)
{
    gm_frag_remove(&q->set, op->addr);
    gm_frag_insert(&q->set, op->addr, op->size);
}

/* Holding the role: published operations from head on, at most CAP. */
static unsigned ready_count(struct gm_fragq *q, uint64_t h)
{
    unsigned n = 0;
    while (n < GM_FRAGQ_CAP &&
           __atomic_load_n(&q->ops[(h + n) & GM_FRAGQ_MASK].seq,
                           __ATOMIC_ACQUIRE) == h + n + 1)
        n++;
    return n;
}

/* Holding the role: apply one batch; false when nothing was ready. */
static int apply_batch(struct gm_fragq *q)
{
    uint64_t h = __atomic_load_n(&q->head, __ATOMIC_RELAXED);
    unsigned n = ready_count(q, h);
    if (n == 0)
        return 0;
    struct batch b;
    memset(b.state, 0, sizeof b.state);
    memset(b.cancel, 0, n);
    pair_up(q, h, n, &b);
    for (unsigned i = 0; i < n; i++) {
        struct gm_fragq_op *op = &q->ops[(h + i) & GM_FRAGQ_MASK];
        if (!b.cancel[i]) {
            if (op->size == 0 || op->size == GM_FRAGQ_REUSED)
                gm_frag_remove(&q->set, op->addr);
            else if (gm_frag_insert(&q->set, op->addr, op->size) == -EEXIST)
                replace(q, op);
        }
        /* Frees the slot: pairs with the poster's acquire load of seq. */
        __atomic_store_n(&op->seq, h + i + GM_FRAGQ_CAP, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&q->head, h + n, __ATOMIC_RELAXED);
    return 1;
}

static int take_role(struct gm_fragq *q)
{
    return __atomic_exchange_n(&q->busy, 1, __ATOMIC_SEQ_CST) == 0;
}

/* True when the operation at head is published. */
static int head_ready(struct gm_fragq *q)
{
    uint64_t h = __atomic_load_n(&q->head, __ATOMIC_RELAXED);
    return __atomic_load_n(&q->ops[h & GM_FRAGQ_MASK].seq,
                           __ATOMIC_SEQ_CST) == h + 1;
}

void gm_fragq_sync(struct gm_fragq *q, gm_fragq_publish publish, void *ctx)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* after this thread's publish */
    while (take_role(q)) {
        while (apply_batch(q))
            ;
        uint32_t ppm = gm_frag_ppm(&q->set);
        if (ppm != q->published) {
            q->published = ppm;
            publish(ctx, ppm);
        }
        __atomic_store_n(&q->busy, 0, __ATOMIC_SEQ_CST);
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
