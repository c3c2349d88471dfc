/*
 * shim/oomwait.h — GPUMEM_ON_OOM=wait: block a refused allocation until
 * memory is released in this process or the wait times out.
 */
#ifndef GM_OOMWAIT_H
#define GM_OOMWAIT_H

#include <stdbool.h>
#include <stdint.h>

struct gm_dev;

/* Wait until `size` can be reserved on `d` (then it is reserved and true
 * is returned with *used set) or until GPUMEM_ON_OOM's timeout (false). */
bool gm_oomwait(int dev, struct gm_dev *d, uint64_t size, unsigned api,
                uint64_t *used);
/* Memory was released: wake waiters. One relaxed load when nobody waits. */
void gm_oomwait_wake(void);
/* Fork child: reinitialise the primitives. */
void gm_oomwait_reset(void);

#endif
