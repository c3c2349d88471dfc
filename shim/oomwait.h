/*
 * shim/oomwait.h — GPUMEM_ON_OOM=wait: block a refused allocation until
 * memory is released in this process or the wait times out.
 */
#ifndef GM_OOMWAIT_H
#define GM_OOMWAIT_H

#include <stdbool.h>
#include <stdint.h>

#include "shim/state.h"

struct gm_dev;

/* Wait until `size` can be reserved on `d` (then it is reserved and true
 * is returned with *used set) or until GPUMEM_ON_OOM's timeout (false). */
bool gm_oomwait(int dev, struct gm_dev *d, uint64_t size, unsigned api,
                uint64_t *used);
/* Memory was released: wake waiters. Without on_oom=wait nobody can be
 * waiting: one load, no fence. */
void gm_oomwait_wake_slow(void);
static inline void gm_oomwait_wake(void)
{
    if (GM_UNLIKELY(gm_st.policy.on_oom == GM_OOM_WAIT))
        gm_oomwait_wake_slow();
}
/* Fork child: reinitialise the primitives. */
void gm_oomwait_reset(void);

#endif
