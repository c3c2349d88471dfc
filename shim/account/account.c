/*
 * shim/account/account.c — commit / rollback / release out of line, and
 * a key the driver reused before we saw its free.
 *
 * The telemetry update takes the process's telemetry writer lock (one
 * compare-and-swap; the fragmentation log is updated under it), the
 * table insert takes its shard's lock (one of 256).
 */
#include "shim/account/account.h"

#include "shim/account/commit.h"
#include "shim/account/release.h"

void gm_acct_rollback(struct gm_dev *d, uint64_t size)
{
    gm_budget_release(&d->budget, size);
    gm_grp_give(d, size);
    gm_release_wake();
}

void gm_acct_frag_sync(unsigned dev)
{
    if (dev < GM_MAX_DEVICES && gm_telemetry_on())
        gm_tel_frag_sync(&gm_st.tel, dev, &gm_st.dev[dev].frag);
}

struct refill {
    unsigned dev;
    struct gm_fragq *q;
};

static void refill_one(void *ctx, const struct gm_alloc *a)
{
    const struct refill *r = ctx;
    if (a->ns == GM_NS_PTR && a->dev == r->dev)
        (void)gm_frag_insert_over(&r->q->set, a->key, a->size);
}

void gm_acct_frag_refill(void *ctx, struct gm_fragq *q)
{
    struct refill r = { (unsigned)(uintptr_t)ctx, q };
    bool truncated;
    (void)gm_track_walk(refill_one, &r, UINT64_MAX, &truncated);
}

void gm_acct_commit_entry(struct gm_dev *d, const struct gm_alloc *a,
                          uint64_t t0, uint64_t t1)
{
    gm_acct_commit_as(d, a, gm_telemetry_on(), t0, t1, false);
}

void gm_acct_released(const struct gm_alloc *a, unsigned api, uint64_t t0,
                      uint64_t t1)
{
    gm_acct_released_as(a, api, gm_telemetry_on(), t0, t1, false);
}

/* The driver reused a key whose free we never saw (e.g. memory freed by
 * destroying its context): drop the stale charge (its release event
 * removes the old interval: the fragmentation tree counts both adds of
 * the start, so the new one stays), then store the new entry. */
void gm_acct_commit_collision(struct gm_alloc *a, const struct gm_alloc *old,
                              int r, uint64_t t1)
{
    if (r == 1) {
        gm_acct_released(old, old->api, t1, t1);
        gm_track_insert(a, NULL);
    } else {
        gm_log(GM_LOG_ERROR, "out of memory for the allocation table; "
               "this allocation is not tracked");
    }
}
