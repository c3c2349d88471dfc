/*
 * shim/account/pools.h — stream-ordered pools: what a device is charged for
 * cuMemAllocAsync / cuMemAllocFromPoolAsync is what its pools hold
 * (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), not the sum of live async
 * allocations, because memory freed with cuMemFreeAsync stays reserved in
 * the pool and is still device memory.
 *
 * Invariant: for every known pool, `charged` bytes are included in its
 * device's budget; charged follows the pool's reserve after every async
 * allocation, free, trim and destroy (refreshes exchange the new figure
 * in atomically, so concurrent refreshes never drift: the budget always
 * holds the sum of the last figures exchanged). Imported pools belong to
 * their exporter and are never charged.
 */
#ifndef GM_POOLS_H
#define GM_POOLS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "shim/driver/cuda_api.h"

struct gm_dev;
struct gm_pool;  /* a known pool: its handle, device and charge */

/* The pool an async allocation on `dev` draws from: `pool` when given
 * (cuMemAllocFromPoolAsync), else the device's current pool. NULL when
 * its reserve cannot be accounted (the driver cannot say, the pool was
 * imported from another process, or the pool table is full): the live
 * bytes are charged instead. */
struct gm_pool *gm_pool_for(int dev, CUmemoryPool pool);
CUmemoryPool gm_pool_handle(const struct gm_pool *s);
/* Bytes the pool holds but has not handed out (RESERVED - USED). */
uint64_t gm_pool_idle(struct gm_pool *s);
/* Re-read the pool's reserve and charge or release the difference on its
 * device. Returns the device's used bytes afterwards. */
uint64_t gm_pool_refresh(int dev, struct gm_dev *d, struct gm_pool *s);
/* The same after an allocation of block [p, p + size) admitted with a
 * provisional hold of `held` bytes on d (gm_budget_hold): the hold is
 * replaced by the pool's growth in one step, so the peak never counts
 * both. The reserve is not queried when the pool served that block since
 * memory last left it (it cannot have grown for it: pools.c). */
uint64_t gm_pool_settle(int dev, struct gm_dev *d, struct gm_pool *s,
                        uint64_t held, CUdeviceptr p, uint64_t size);
/* Trim every pool of `dev` down to what it hands out (after synchronising
 * the device), refresh, and return the bytes given back (0 if none). */
uint64_t gm_pool_trim_device(int dev, struct gm_dev *d);
/* An async free of a block from `pool` (its handle) happened: refresh
 * pools at the next synchronisation; the last block of a destroyed pool
 * releases that pool's charge. */
void gm_pool_freed(uint64_t pool);
/* A synchronisation succeeded: the driver may have released pool memory
 * down to each pool's release threshold, so when an async free happened
 * since the last refresh, refresh every pool once. */
extern _Atomic int gm_pools_dirty __attribute__((visibility("hidden")));
void gm_pools_synced_slow(void);
static inline void gm_pools_synced(void)
{
    if (GM_UNLIKELY(atomic_load_explicit(&gm_pools_dirty,
                                         memory_order_relaxed) != 0))
        gm_pools_synced_slow();
}
/* What the pool wrappers saw succeed: a pool created on `dev`, one
 * imported from another process (never charged here), destroyed
 * (its charge follows the driver's reserve), trimmed, or made a
 * device's current pool. */
void gm_pool_created(CUmemoryPool pool, int dev);
void gm_pool_imported(CUmemoryPool pool, int dev);
void gm_pool_destroyed(CUmemoryPool pool);
void gm_pool_trimmed(CUmemoryPool pool);
void gm_pool_set_current(int dev, CUmemoryPool pool);
/* Fork child: forget every pool. */
void gm_pools_reset(void);

#endif
