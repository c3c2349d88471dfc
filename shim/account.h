/*
 * shim/account.h — the accounting steps every allocation wrapper takes:
 * reserve against the device budget (applying the out-of-memory policy on
 * refusal), then commit (record the allocation, publish telemetry) or roll
 * back; and on free, release exactly what was recorded.
 *
 * Invariant: for every live entry in the track table, exactly entry.size
 * bytes are charged to budget[entry.dev] (unless GM_AF_UNCHARGED); a
 * reservation that is not committed is always rolled back.
 */
#ifndef GM_ACCOUNT_H
#define GM_ACCOUNT_H

#include <stdbool.h>
#include <stdint.h>

#include "shim/grouphook.h"
#include "shim/staged.h"
#include "shim/state.h"
#include "shim/track.h"

/* Outcome of a reservation. */
enum gm_admit {
    GM_ADMIT_OK = 0,      /* charged; call the driver, then commit/rollback */
    GM_ADMIT_REFUSED,     /* return CUDA_ERROR_OUT_OF_MEMORY */
    GM_ADMIT_SPILL,       /* not charged: serve as managed memory instead */
};

/* Reserve `size` on the device budget and, if the device is in a group,
 * on the group; on refusal nothing stays reserved and *by_group says
 * whether the group refused. */
static inline bool gm_acct_take(struct gm_dev *d, uint64_t size,
                                uint64_t *used, bool *by_group)
{
    *by_group = false;
    if (!gm_budget_reserve(&d->budget, size, used))
        return false;
    if (gm_grp_take(d, size))
        return true;
    gm_budget_release(&d->budget, size);
    *by_group = true;
    return false;
}
/* Reserve, applying reclaim and the out-of-memory policy on refusal. */
enum gm_admit gm_acct_reserve_slow(int dev, struct gm_dev *d, uint64_t size,
                                   unsigned api, bool spillable);
static inline enum gm_admit gm_acct_reserve(int dev, struct gm_dev *d,
                                            uint64_t size, unsigned api,
                                            bool spillable)
{
    uint64_t used;
    gm_staged_poll();
    if (GM_LIKELY(gm_budget_reserve(&d->budget, size, &used))) {
        if (GM_LIKELY(gm_grp_take(d, size)))
            return GM_ADMIT_OK;
        gm_budget_release(&d->budget, size);
    }
    return gm_acct_reserve_slow(dev, d, size, api, spillable);
}
void gm_acct_rollback(struct gm_dev *d, uint64_t size);
/* Record a successful allocation of `size` charged bytes. */
/* Record a prepared entry (flags, aux set by the caller); t0 and t1 are
 * gm_ticks() readings just before and after the driver call (latency and
 * event time). */
void gm_acct_commit_entry(struct gm_dev *d, const struct gm_alloc *a,
                          uint64_t t0, uint64_t t1);
static inline void gm_acct_commit(int dev, struct gm_dev *d, enum gm_ns ns,
                                  uint64_t key, uint64_t size, unsigned api,
                                  unsigned flags, uint64_t t0, uint64_t t1)
{
    struct gm_alloc a = {
        .key = key, .size = size, .dev = (uint8_t)dev, .ns = (uint8_t)ns,
        .api = (uint8_t)api, .flags = (uint8_t)flags, .refs = 1,
    };
    gm_acct_commit_entry(d, &a, t0, t1);
}
/* Adjust a reservation to the size the driver actually used (pitch,
 * arrays). Returns false (and keeps the original charge) when growing it
 * would pass the limit. */
bool gm_acct_adjust(struct gm_dev *d, uint64_t reserved, uint64_t actual);
/* Post the entry's interval to its device's fragmentation tracker: add
 * (after the driver returned the memory) or remove (before the driver
 * frees it); only device pointers have one. */
/* The applier's figure goes to the device's stats (ctx: the device). */
void gm_acct_publish_frag(void *ctx, uint32_t ppm);
static inline __attribute__((always_inline)) void
gm_acct_frag_post(const struct gm_alloc *a, bool add)
{
    /* Handles and arrays have no address in the device's heap. */
    if (a->ns == GM_NS_PTR && GM_LIKELY(a->dev < GM_MAX_DEVICES) &&
        gm_telemetry_on())
        gm_fragq_post(&gm_st.dev[a->dev].frag, a->key, add ? a->size : 0,
                      gm_acct_publish_frag, (void *)(uintptr_t)a->dev);
}
/* Publish the release of an entry already removed from the table (and,
 * for a device pointer, already posted as removed). */
void gm_acct_released(const struct gm_alloc *a, unsigned api, uint64_t t0,
                      uint64_t t1);

#endif
