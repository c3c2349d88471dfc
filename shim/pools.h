/*
 * shim/pools.h — stream-ordered pools: what a device is charged for
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

#include <stdbool.h>
#include <stdint.h>

#include "shim/cuda_api.h"

struct gm_dev;

/* The pool an async allocation on `dev` draws from: `pool` when given
 * (cuMemAllocFromPoolAsync), else the device's current pool. NULL when
 * its reserve cannot be accounted (the driver cannot say, the pool was
 * imported from another process, or the pool table is full): the live
 * bytes are charged instead. */
CUmemoryPool gm_pool_for(int dev, CUmemoryPool pool);
/* Bytes the pool holds but has not handed out (RESERVED - USED). */
uint64_t gm_pool_idle(CUmemoryPool pool);
/* Re-read the pool's reserve and charge or release the difference on its
 * device. Returns the device's used bytes afterwards. */
uint64_t gm_pool_refresh(int dev, struct gm_dev *d, CUmemoryPool pool);
/* Trim every pool of `dev` down to what it hands out (after synchronising
 * the device), refresh, and return the bytes given back (0 if none). */
uint64_t gm_pool_trim_device(int dev, struct gm_dev *d);
/* An async free happened: refresh pools at the next synchronisation. */
void gm_pool_freed(void);
/* Fork child: forget every pool. */
void gm_pools_reset(void);

#endif
