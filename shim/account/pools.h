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

#include "policy/budget.h"
#include "shim/account/state.h"

/* ---- blocks known to lie in memory the pool holds ------------------------
 * A pool grows only to serve a request, and the block served then lies in
 * the new memory; memory leaves a pool only at a trim, a destruction or a
 * synchronisation after a free (each bumps `gen`). So a block that the
 * pool served before, at the same address and at least this size, since
 * the last bump, is served again without growth: its settle needs no
 * query of the reserve. `seen` holds such blocks, one word each, packed
 * so that no reader can pair one block's address with another's size:
 * bits 0-47 the address, 48-53 floor(log2(size)), 54-63 gen mod 1024 (0
 * = empty). Addresses at or above 2^48 are never remembered. Every query
 * of the reserve also bumps `gen`, so entries date from the last query:
 * were the driver to release memory at a point the shim does not see,
 * the charge would miss a regrowth into that memory only until the next
 * query. */
#define GM_POOL_SEEN 8u
#define GM_POOL_SEEN_ADDR ((1ull << 48) - 1)

/* A known pool: its handle, device and charge. Defined here for the
 * inline fast paths below only; shim/account/pools.c owns every field. */
struct gm_pool {
    _Atomic uint64_t key;      /* CUmemoryPool; 0 = free slot */
    _Atomic uint64_t charged;  /* bytes of this pool in the budget */
    _Atomic int dev;
    _Atomic int imported;      /* 1: belongs to another process */
    _Atomic int dead;          /* destroyed */
    _Atomic uint64_t draining; /* destroyed with this many live blocks */
    _Atomic uint64_t gen;      /* bumped whenever memory may have left */
    _Atomic uint64_t seen[GM_POOL_SEEN]; /* blocks served since (above) */
};

/* Each device's current pool (its slot), once known. */
extern struct gm_pool *_Atomic gm_pool_current[GM_MAX_DEVICES]
    __attribute__((visibility("hidden")));

static inline unsigned gm_pool_seen_slot(uint64_t p)
{
    return (unsigned)((p * 0x9e3779b97f4a7c15ull) >> 61); /* 8 slots */
}

static inline uint64_t gm_pool_seen_word(uint64_t p, unsigned log2sz,
                                         uint64_t gen)
{
    return p | ((uint64_t)log2sz << 48) | ((gen & 1023u) << 54);
}

/* True when block [p, p + size) lies in memory the pool served it from
 * since the last bump of its generation. */
static inline bool gm_pool_seen_hit(struct gm_pool *s, uint64_t p,
                                    uint64_t size)
{
    if (p == 0 || p > GM_POOL_SEEN_ADDR)
        return false;
    uint64_t w = atomic_load_explicit(&s->seen[gm_pool_seen_slot(p)],
                                      memory_order_relaxed);
    uint64_t g = atomic_load_explicit(&s->gen, memory_order_relaxed);
    return w != 0 && (w & GM_POOL_SEEN_ADDR) == p &&
           (w >> 54) == (g & 1023u) &&
           size <= (1ull << ((w >> 48) & 63u));
}

/* The pool an async allocation on `dev` draws from: `pool` when given
 * (cuMemAllocFromPoolAsync), else the device's current pool. NULL when
 * its reserve cannot be accounted (the driver cannot say, the pool was
 * imported from another process, or the pool table is full): the live
 * bytes are charged instead. */
struct gm_pool *gm_pool_for_slow(int dev, CUmemoryPool pool);
/* Inline when the device's current pool is known (the common case);
 * a given pool, or the first lookup of a device's, out of line. */
static inline __attribute__((always_inline)) struct gm_pool *
gm_pool_for(int dev, CUmemoryPool pool)
{
    if (GM_LIKELY(pool == NULL && (unsigned)dev < GM_MAX_DEVICES)) {
        struct gm_pool *s = atomic_load_explicit(&gm_pool_current[dev],
                                                 memory_order_acquire);
        if (GM_LIKELY(s != NULL))
            return atomic_load_explicit(&s->imported, memory_order_relaxed)
                       ? NULL : s;
    }
    return gm_pool_for_slow(dev, pool);
}
/* The device a cuMemAllocFromPoolAsync from `pool` on `stream` is served
 * by, -1 when unknown: the pool's (as registered: created on it, or made
 * its current pool); a pool the shim has not seen is looked for among the
 * default pools of the devices with contexts, else taken for the
 * stream's device's. */
int gm_pool_device(CUmemoryPool pool, CUstream stream);
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
uint64_t gm_pool_settle_slow(int dev, struct gm_dev *d, struct gm_pool *s,
                             uint64_t held, CUdeviceptr p, uint64_t size);
/* Inline in its common case: a live pool of this device that served the
 * block from memory it held (no growth, the charge stands): only the
 * hold is given back. Every other case (another device's pool, a
 * destroyed one, a block not seen, a query of the reserve) out of line. */
static inline __attribute__((always_inline)) uint64_t
gm_pool_settle(int dev, struct gm_dev *d, struct gm_pool *s, uint64_t held,
               CUdeviceptr p, uint64_t size)
{
    if (GM_LIKELY(s != NULL &&
                  !atomic_load_explicit(&s->imported, memory_order_relaxed) &&
                  atomic_load_explicit(&s->dev, memory_order_relaxed) == dev &&
                  !atomic_load_explicit(&s->dead, memory_order_relaxed) &&
                  gm_pool_seen_hit(s, (uint64_t)p, size)))
        return held ? gm_budget_release(&d->budget, held)
                    : gm_budget_used(&d->budget);
    return gm_pool_settle_slow(dev, d, s, held, p, size);
}
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
 * (its charge follows the driver's reserve), trimmed, handed to the
 * program as a pool of `dev` (cuDeviceGetMemPool,
 * cuDeviceGetDefaultMemPool), or made a device's current pool. */
void gm_pool_created(CUmemoryPool pool, int dev);
void gm_pool_imported(CUmemoryPool pool, int dev);
void gm_pool_destroyed(CUmemoryPool pool);
void gm_pool_trimmed(CUmemoryPool pool);
void gm_pool_known(CUmemoryPool pool, int dev);
void gm_pool_set_current(int dev, CUmemoryPool pool);
/* Fork child: forget every pool. */
void gm_pools_reset(void);

#endif
