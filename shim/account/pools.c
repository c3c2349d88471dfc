/*
 * shim/account/pools.c — stream-ordered pool accounting: the known pools,
 * their charges, what the pool wrappers (shim/intercept/hooks_pool.c)
 * report of a pool's life, and the refresh after a synchronisation.
 *
 * Pools are few: a fixed open-addressing table of POOLS slots, keys
 * claimed with compare-and-swap and never removed (a destroyed pool is
 * marked dead and its slot revived if the driver reuses the handle).
 * Reading a pool's reserve is a driver call, so no lock is held around it:
 * the new figure is exchanged into `charged` and the difference applied to
 * the budget, which keeps the budget equal to the sum of the figures last
 * exchanged whatever the interleaving.
 */
#include "shim/account/pools.h"

#include <stdatomic.h>

#include "shim/account/chargesum.h"
#include "shim/account/device.h"
#include "shim/account/grouphook.h"
#include "shim/account/release.h"
#include "shim/account/track.h"
#include "shim/account/device.h"
#include "shim/account/state.h"
#include "shim/base/spin.h"
#include "shim/driver/real.h"
#include "shim/telemetry/abi.h"

#define POOLS 256u
#define pool gm_pool

static struct pool pools[POOLS];
_Atomic int gm_pools_dirty; /* an async free since the last refresh */
static _Atomic uint64_t dev_reserve[GM_MAX_DEVICES]; /* sum of charged */
/* Each device's current pool (its slot), once known. */
struct gm_pool *_Atomic gm_pool_current[GM_MAX_DEVICES];

static gm_spin create_lock; /* new slots only; lookups take no lock */
/* Pools destroyed while blocks of theirs were live: the driver keeps
 * their memory until the last block is freed, and so does the charge.
 * Non-zero makes every async free look its pool up (gm_pool_freed). */
static _Atomic unsigned draining_pools;

/* Remember a block served under generation `gen` (read before the query
 * whose result it goes with, so an entry never outlives a bump that came
 * after its query). */
static inline void seen_note(struct pool *s, uint64_t p, uint64_t size,
                             uint64_t gen)
{
    if (p == 0 || p > GM_POOL_SEEN_ADDR || size == 0)
        return;
    unsigned l = 63u - (unsigned)__builtin_clzll(size);
    uint64_t w = gm_pool_seen_word(p, l, gen);
    if (w != 0)
        atomic_store_explicit(&s->seen[gm_pool_seen_slot(p)], w,
                              memory_order_relaxed);
}

/* Memory may have left the pool: forget every block seen. */
static inline void seen_forget(struct pool *s)
{
    atomic_fetch_add(&s->gen, 1);
}

static struct pool *slot(CUmemoryPool p, int dev, int create)
{
    uint64_t k = (uint64_t)(uintptr_t)p;
    if (k == 0)
        return NULL;
    unsigned h = (unsigned)((k * 0x9e3779b97f4a7c15ull) >> 56);
    for (unsigned i = 0; i < POOLS; i++) {
        struct pool *s = &pools[(h + i) & (POOLS - 1)];
        uint64_t cur = atomic_load_explicit(&s->key, memory_order_acquire);
        if (GM_LIKELY(cur == k))
            return s;
        if (cur != 0)
            continue;
        if (!create)
            return NULL;
        /* Claim under the lock; the slot's fields are set before its key is
         * published (release store, paired with the acquire above). */
        gm_spin_lock(&create_lock);
        cur = atomic_load_explicit(&s->key, memory_order_acquire);
        if (cur == 0) {
            atomic_store(&s->dev, dev);
            atomic_store(&s->charged, 0);
            atomic_store(&s->imported, 0);
            atomic_store(&s->dead, 0);
            atomic_store(&s->draining, 0);
            seen_forget(s);
            atomic_store_explicit(&s->key, k, memory_order_release);
            cur = k;
        }
        gm_spin_unlock(&create_lock);
        if (cur == k)
            return s;
    }
    return NULL; /* table full: that pool's live bytes are charged */
}

static inline uint64_t pool_attr(CUmemoryPool p, CUmemPool_attribute a)
{
    cuuint64_t v = 0;
    if (gm_real.cuMemPoolGetAttribute == NULL)
        return 0;
    gm_depth++;
    CUresult rc = gm_real.cuMemPoolGetAttribute(p, a, &v);
    gm_depth--;
    return rc == CUDA_SUCCESS ? (uint64_t)v : 0;
}

/* The slot of `pool` if it can be accounted (a slot exists or was made,
 * not imported), else NULL: the caller then charges the live bytes. */
static struct pool *accountable(CUmemoryPool pool, int dev)
{
    struct pool *s = slot(pool, dev, 1);
    return s != NULL && !atomic_load_explicit(&s->imported,
                                              memory_order_relaxed)
               ? s : NULL;
}

CUmemoryPool gm_pool_handle(const struct gm_pool *s)
{
    return (CUmemoryPool)(uintptr_t)atomic_load_explicit(
        &s->key, memory_order_relaxed);
}

struct gm_pool *gm_pool_for_slow(int dev, CUmemoryPool pool)
{
    if (dev < 0 || dev >= GM_MAX_DEVICES)
        return NULL;
    if (pool != NULL)
        return accountable(pool, dev);
    /* The device's current pool is not known yet: ask the driver. */
    struct pool *s;
    if (gm_real.cuDeviceGetMemPool == NULL ||
        gm_real.cuMemPoolGetAttribute == NULL)
        return NULL;
    CUmemoryPool p = NULL;
    gm_depth++;
    CUresult rc = gm_real.cuDeviceGetMemPool(&p, (CUdevice)dev);
    gm_depth--;
    if (rc != CUDA_SUCCESS)
        return NULL;
    s = slot(p, dev, 1);
    if (s != NULL)
        atomic_store_explicit(&gm_pool_current[dev], s, memory_order_release);
    return s != NULL && !atomic_load_explicit(&s->imported,
                                              memory_order_relaxed)
               ? s : NULL;
}

/* The device whose default pool `pool` is, among the devices with
 * contexts; -1 when none. */
static int default_pool_device(CUmemoryPool pool)
{
    if (gm_real.cuDeviceGetDefaultMemPool == NULL)
        return -1;
    uint64_t m = atomic_load_explicit(&gm_ctx_devices, memory_order_relaxed);
    for (; m != 0; m &= m - 1) {
        int dev = __builtin_ctzll(m);
        CUmemoryPool p = NULL;
        gm_depth++;
        CUresult rc = gm_real.cuDeviceGetDefaultMemPool(&p, (CUdevice)dev);
        gm_depth--;
        if (rc == CUDA_SUCCESS && p == pool)
            return dev;
    }
    return -1;
}

int gm_pool_device(CUmemoryPool pool, CUstream stream)
{
    struct pool *s = slot(pool, 0, 0);
    if (s != NULL)
        return atomic_load_explicit(&s->dev, memory_order_relaxed);
    int dev = pool != NULL ? default_pool_device(pool) : -1;
    if (dev < 0)
        gm_dev_of_stream(stream, &dev);
    return dev;
}

uint64_t gm_pool_idle(struct gm_pool *s)
{
    CUmemoryPool pool = gm_pool_handle(s);
    uint64_t r = pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
    uint64_t u = pool_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
    return r > u ? r - u : 0;
}

/* Add the change of one pool's charge to its device's published sum
 * (shim/account/chargesum.h: deltas in any order, no clamp), and publish
 * the device's used with it: a recharge at a synchronisation or a trim
 * has no event after it to carry the budget's new figure. Each publisher
 * re-reads the sum and the budget after its store and stores again while
 * either moved (at most 16 times): a publisher whose re-read saw no later
 * change is followed by the store of whoever changed it (a recharge's own
 * publish, or an event's used), so the published figures end at the
 * final ones. */
static void publish(struct gm_dev *d, int dev, int64_t delta)
{
    if (dev < 0 || dev >= GM_MAX_DEVICES)
        return;
    uint64_t v = gm_chargesum_add(&dev_reserve[dev], delta);
    uint64_t u = gm_budget_used(&d->budget);
    for (int tries = 0; tries < 16; tries++) {
        gm_tel_pool(&gm_st.tel, (unsigned)dev, gm_chargesum_shown(v), u,
                    gm_budget_peak(&d->budget));
        uint64_t now = atomic_load(&dev_reserve[dev]); /* seq_cst: pairs
                                           with the fetch_add above */
        uint64_t unow = gm_budget_used(&d->budget);
        if (now == v && unow == u)
            break;
        v = now;
        u = unow;
    }
}

/* Set the pool's charge to `now`, applying the difference to its device's
 * budget in one step together with the release of `held` bytes (an
 * admission's provisional hold, or 0). */
static inline uint64_t recharge(struct pool *s, struct gm_dev *d, uint64_t now,
                                uint64_t held)
{
    uint64_t old = atomic_load_explicit(&s->charged, memory_order_relaxed);
    if (GM_LIKELY(old == now)) /* the common case: the pool did not grow */
        return held ? gm_budget_release(&d->budget, held)
                    : gm_budget_used(&d->budget);
    old = atomic_exchange(&s->charged, now);
    int dev = atomic_load_explicit(&s->dev, memory_order_relaxed);
    uint64_t used = gm_budget_settle(&d->budget, now > old ? now - old : 0,
                                     held + (old > now ? old - now : 0));
    if (now < old)
        seen_forget(s);
    if (now != old) {
        /* The group is charged what the process is (docs/groups.md). */
        gm_grp_settle(d, now > old ? now - old : 0, old > now ? old - now : 0);
        publish(d, dev, (int64_t)(now - old));
        if (now < old)
            gm_release_wake();
    }
    return used;
}

uint64_t gm_pool_settle_slow(int dev, struct gm_dev *d, struct gm_pool *s,
                             uint64_t held, CUdeviceptr p, uint64_t size)
{
    if (s == NULL ||
        atomic_load_explicit(&s->imported, memory_order_relaxed))
        return held ? gm_budget_release(&d->budget, held)
                    : gm_budget_used(&d->budget);
    int pdev = atomic_load_explicit(&s->dev, memory_order_relaxed);
    struct gm_dev *pd = d;
    if (pdev != dev) { /* a pool of another device: charge it there */
        if (held)
            gm_budget_release(&d->budget, held);
        held = 0;
        pd = gm_dev_get(pdev);
        if (pd == NULL)
            return gm_budget_used(&d->budget);
    }
    if (GM_UNLIKELY(atomic_load_explicit(&s->dead, memory_order_relaxed)))
        atomic_store(&s->dead, 0);
    if (GM_LIKELY(gm_pool_seen_hit(s, (uint64_t)p, size))) /* served without growth */
        return recharge(s, pd, atomic_load_explicit(&s->charged,
                                                    memory_order_relaxed),
                        held);
    /* Each query starts a generation: a block is remembered only from the
     * last query on, so a release the shim did not see is caught by the
     * next query instead of outliving it. */
    seen_forget(s);
    uint64_t gen = atomic_load_explicit(&s->gen, memory_order_relaxed);
    uint64_t used = recharge(s, pd,
                             pool_attr(gm_pool_handle(s),
                                       CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT),
                             held);
    seen_note(s, (uint64_t)p, size, gen);
    return used;
}

uint64_t gm_pool_refresh(int dev, struct gm_dev *d, struct gm_pool *s)
{
    return gm_pool_settle_slow(dev, d, s, 0, 0, 0);
}

static uint64_t refresh_handle(int dev, struct gm_dev *d, CUmemoryPool pool)
{
    return gm_pool_refresh(dev, d, slot(pool, dev, 1));
}

uint64_t gm_pool_trim_device(int dev, struct gm_dev *d)
{
    if (gm_real.cuMemPoolTrimTo == NULL)
        return 0;
    uint64_t freed = 0;
    bool synced = false;
    for (unsigned i = 0; i < POOLS; i++) {
        struct pool *s = &pools[i];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == 0 || atomic_load(&s->dev) != dev || atomic_load(&s->dead) ||
            atomic_load(&s->imported))
            continue;
        CUmemoryPool p = (CUmemoryPool)(uintptr_t)k;
        uint64_t used = pool_attr(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
        uint64_t before = atomic_load(&s->charged);
        if (before <= used)
            continue;
        gm_depth++;
        if (!synced && gm_real.cuCtxSynchronize) {
            gm_real.cuCtxSynchronize(); /* frees must land before a trim */
            synced = true;
        }
        gm_real.cuMemPoolTrimTo(p, (size_t)used);
        gm_depth--;
        seen_forget(s);
        uint64_t after = pool_attr(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
        recharge(s, d, after, 0);
        if (after < before) {
            freed += before - after;
            gm_tel_event(&gm_st.tel, GM_EV_TRIM, (unsigned)dev,
                         GM_API_POOL_TRIM, before - after, k,
                         gm_budget_used(&d->budget));
        }
    }
    return freed;
}

/* The pool's charge goes, with an event, as the driver's memory does. */
static void drop_charge(struct pool *s, struct gm_dev *d, CUmemoryPool pool)
{
    uint64_t before = atomic_load(&s->charged);
    uint64_t used = recharge(s, d, 0, 0);
    if (before)
        gm_tel_event(&gm_st.tel, GM_EV_FREE, (unsigned)atomic_load(&s->dev),
                     GM_API_POOL_DESTROY, before, (uint64_t)(uintptr_t)pool,
                     used);
}

/* A block of a destroyed pool was freed: the last one releases the
 * pool's charge. */
static void drained(uint64_t handle)
{
    struct pool *s = slot((CUmemoryPool)(uintptr_t)handle, 0, 0);
    if (s == NULL || !atomic_load(&s->dead))
        return;
    uint64_t n = atomic_load(&s->draining);
    do {
        if (n == 0)
            return;
    } while (!atomic_compare_exchange_weak(&s->draining, &n, n - 1));
    if (n != 1)
        return;
    atomic_fetch_sub(&draining_pools, 1);
    struct gm_dev *d = gm_dev_get(atomic_load(&s->dev));
    if (d != NULL)
        drop_charge(s, d, (CUmemoryPool)(uintptr_t)handle);
}

void gm_pool_freed(uint64_t pool)
{
    atomic_store_explicit(&gm_pools_dirty, 1, memory_order_relaxed);
    if (GM_UNLIKELY(atomic_load_explicit(&draining_pools,
                                         memory_order_relaxed) != 0))
        drained(pool);
}

void gm_pools_synced_slow(void)
{
    if (!atomic_exchange(&gm_pools_dirty, 0))
        return;
    for (unsigned i = 0; i < POOLS; i++) {
        struct pool *s = &pools[i];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k != 0)
            seen_forget(s); /* the release threshold may have applied */
        if (k == 0 || atomic_load(&s->dead) || atomic_load(&s->imported) ||
            atomic_load(&s->charged) == 0)
            continue;
        int dev = atomic_load(&s->dev);
        struct gm_dev *d = gm_dev_get(dev);
        if (d)
            gm_pool_refresh(dev, d, s);
    }
}

void gm_pools_reset(void)
{
    atomic_store(&gm_pools_dirty, 0);
    atomic_store(&draining_pools, 0);
    for (unsigned i = 0; i < POOLS; i++) {
        atomic_store(&pools[i].draining, 0);
        atomic_store(&pools[i].key, 0);
        atomic_store(&pools[i].charged, 0);
        atomic_store(&pools[i].dead, 0);
        atomic_store(&pools[i].imported, 0);
    }
    for (unsigned i = 0; i < GM_MAX_DEVICES; i++) {
        atomic_store(&dev_reserve[i], 0);
        atomic_store(&gm_pool_current[i], NULL);
    }
}

/* ---- what the pool wrappers report --------------------------------------- */

void gm_pool_created(CUmemoryPool pool, int dev)
{
    slot(pool, dev, 1);
}

void gm_pool_imported(CUmemoryPool pool, int dev)
{
    struct pool *s = slot(pool, dev, 1);
    if (s)
        atomic_store(&s->imported, 1);
}

void gm_pool_destroyed(CUmemoryPool pool)
{
    struct pool *s = slot(pool, 0, 0);
    if (s == NULL)
        return;
    seen_forget(s);
    struct gm_dev *d = gm_dev_get(atomic_load(&s->dev));
    uint64_t live = gm_track_count_aux(GM_NS_PTR, (uint64_t)(uintptr_t)pool);
    if (live != 0 && d != NULL && !atomic_load(&s->imported) &&
        atomic_load(&s->draining) == 0) {
        /* The driver frees the pool's memory when its last block is
         * freed: until then its charge stays (it may err high, never
         * low). The count is set before `dead`, which drained() reads
         * first. */
        atomic_store(&s->draining, live);
        atomic_fetch_add(&draining_pools, 1);
        atomic_store(&s->dead, 1);
        gm_log(GM_LOG_INFO, "a pool was destroyed with %llu live blocks; "
               "its memory stays charged until they are freed",
               (unsigned long long)live);
    } else {
        atomic_store(&s->dead, 1);
        if (d != NULL && !atomic_load(&s->imported))
            drop_charge(s, d, pool);
    }
    for (unsigned i = 0; i < GM_MAX_DEVICES; i++) {
        struct pool *cur = s;
        atomic_compare_exchange_strong(&gm_pool_current[i], &cur, NULL);
    }
}

void gm_pool_trimmed(CUmemoryPool pool)
{
    struct pool *s = slot(pool, 0, 0);
    if (s == NULL)
        return;
    seen_forget(s);
    int dev = atomic_load(&s->dev);
    struct gm_dev *d = gm_dev_get(dev);
    if (d)
        refresh_handle(dev, d, pool);
}

void gm_pool_known(CUmemoryPool pool, int dev)
{
    if (dev >= 0 && dev < GM_MAX_DEVICES)
        slot(pool, dev, 1);
}

void gm_pool_set_current(int dev, CUmemoryPool pool)
{
    if (dev >= 0 && dev < GM_MAX_DEVICES)
        atomic_store(&gm_pool_current[dev], slot(pool, dev, 1));
}
