/*
 * shim/admit/admit.h — the decision for one request: reserve `size` on the
 * device's budget and, when the device is in a group, on the group; on
 * refusal, reclaim and apply the out-of-memory policy (admit.c). What an
 * admitted request then becomes (commit or rollback) is shim/account.
 *
 * Invariant: a refused request leaves nothing reserved; an admitted one
 * (GM_ADMIT_OK) holds exactly `size` on the process budget and on the
 * group, which the caller commits or rolls back.
 */
#ifndef GM_ADMIT_H
#define GM_ADMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "shim/account/account.h"
#include "shim/account/grouphook.h"
#include "shim/account/state.h"
#include "shim/admit/staged.h"
#include "shim/admit/take.h"

/* Outcome of a reservation. */
enum gm_admit {
    GM_ADMIT_OK = 0,      /* charged; call the driver, then commit/rollback */
    GM_ADMIT_REFUSED,     /* return CUDA_ERROR_OUT_OF_MEMORY */
    GM_ADMIT_SPILL,       /* not charged: serve as managed memory instead */
    GM_ADMIT_DRIVER,      /* not charged: no limit, but the size cannot
                           * be counted (it would wrap the byte count), so
                           * no driver can serve it: let the driver give
                           * its own error, and undo (refuse) in the
                           * impossible case that it succeeds */
};

/* Reserve, applying reclaim and the out-of-memory policy on refusal. */
enum gm_admit gm_admit_reserve_slow(int dev, struct gm_dev *d, uint64_t size,
                                    unsigned api, bool spillable);
/* plain: the caller is on the plain path (gm_plain_now: no staged freeze,
 * no group). */
static inline __attribute__((always_inline)) enum gm_admit
gm_admit_reserve_as(int dev, struct gm_dev *d, uint64_t size, unsigned api,
                    bool spillable, bool plain)
{
    uint64_t used;
    if (!plain)
        gm_staged_poll();
    if (GM_LIKELY(gm_budget_hold(&d->budget, size, &used))) {
        if (GM_LIKELY(plain || gm_grp_take(d, size)))
            return GM_ADMIT_OK;
        gm_budget_release(&d->budget, size);
    }
    return gm_admit_reserve_slow(dev, d, size, api, spillable);
}

static inline enum gm_admit gm_admit_reserve(int dev, struct gm_dev *d,
                                             uint64_t size, unsigned api,
                                             bool spillable)
{
    return gm_admit_reserve_as(dev, d, size, api, spillable, false);
}
/* Static mode: the arena (`arena` bytes, its largest free block
 * `largest`) has no block for `size`, and on_oom=wait, if set, has
 * waited. What GPUMEM_ON_OOM makes of it: GM_ADMIT_SPILL (not charged:
 * serve it as managed memory), GM_ADMIT_OK (warn: held past the limit on
 * the budget and the group, as gm_admit_reserve holds; serve it from the
 * driver, then commit or roll back) or GM_ADMIT_REFUSED (nothing held;
 * reported and printed). */
enum gm_admit gm_admit_arena_full(int dev, struct gm_dev *d, uint64_t size,
                                  unsigned api, uint64_t arena,
                                  uint64_t largest);
/* Adjust a reservation to the size the driver actually used (pitch,
 * arrays). Returns false (and keeps the original charge) when growing it
 * would pass the limit. */
bool gm_admit_adjust(struct gm_dev *d, uint64_t reserved, uint64_t actual);

#endif
