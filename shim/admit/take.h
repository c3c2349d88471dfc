/*
 * shim/admit/take.h — the one reservation step every admission repeats
 * (the first try, each retry after reclaim or a wake-up): charge the
 * process budget, then the group; all or nothing.
 *
 * A reservation holds bytes against the limit but does not raise the
 * peak: the peak is the high-water mark of memory actually held, raised
 * when the driver has answered and the allocation is committed
 * (shim/account/commit.h). A request the driver refuses leaves no peak.
 */
#ifndef GM_TAKE_H
#define GM_TAKE_H

#include <stdbool.h>
#include <stdint.h>

#include "shim/account/grouphook.h"
#include "shim/account/state.h"

/* Reserve `size` on the device budget and, if the device is in a group,
 * on the group; on refusal nothing stays reserved, *used is the budget's
 * use without the request (what a refusal publishes) and *by_group says
 * whether the group refused. */
static inline bool gm_admit_take(struct gm_dev *d, uint64_t size,
                                 uint64_t *used, bool *by_group)
{
    *by_group = false;
    if (!gm_budget_hold(&d->budget, size, used))
        return false;
    if (gm_grp_take(d, size))
        return true;
    *used = gm_budget_release(&d->budget, size);
    *by_group = true;
    return false;
}
#endif
