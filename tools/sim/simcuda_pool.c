/*
 * tools/sim/simcuda_pool.c — stream-ordered memory pools of the simulated
 * driver: default and current pools per device, cuMemPoolCreate/Destroy/
 * Get/SetAttribute/TrimTo, cuMemAllocAsync(_ptsz),
 * cuMemAllocFromPoolAsync(_ptsz), cuMemFreeAsync(_ptsz).
 *
 * Model (shaped after what a real driver reports): a pool holds chunks of
 * address space, each backed by 32 MiB units of device memory (a chunk's
 * last unit may be smaller: when the device cannot fit a 32 MiB-rounded
 * growth, the pool grows by the request rounded up to 2 MiB). A growth
 * first tries to extend the newest chunk in place, so a block can span its
 * free tail and the new units. Blocks are carved first-fit at 512-byte
 * alignment, preferring space that is still backed. RESERVED is the size of the units
 * that are backed; USED is the sum of the requested sizes of live blocks.
 * A free returns the block to its chunk (used drops, reserved stays); the
 * pool gives back units that hold no live block, while it keeps at least
 * its release threshold, at the next synchronisation (stream or context;
 * SIMCUDA_POOL_RELEASE=sync, the default) or right away (=free).
 * cuMemPoolTrimTo does the same down to minBytesToKeep. A block that lands
 * on units given back re-backs them (charging the device again). A pool
 * grows only while it holds less than its maxSize (when set). A destroyed
 * pool is unusable at once; its idle units go back immediately and the
 * rest as their last blocks are freed.
 * Invariants (device locked): pool->reserved = sum of backed unit sizes;
 * pool->used = sum of live block sizes; unit live counts = number of live
 * blocks touching the unit; device pool_reserved/pool_used are the sums
 * over its pools; a pool is registered exactly while it is not destroyed.
 */
#include "tools/sim/simcuda.h"

#include <stdlib.h>
#include <string.h>

#define POOL_UNIT (32ULL << 20)

struct gm_sim_chunk {
    struct gm_sim_chunk *next;
    uint64_t base, size;
    size_t nunits;
    uint32_t *live;                 /* live blocks touching each unit */
    bool *backed;                   /* unit holds device memory */
    uint64_t nblocks;
    struct gm_sim_extents free;     /* free addresses inside the chunk */
};

struct gm_sim_pool {
    struct gm_sim_pool *next;       /* in dev->pools */
    int dev;
    bool is_default, destroyed;
    uint64_t reserved, used, reserved_high, used_high;
    uint64_t threshold, max_size;
    int reuse[3];                   /* the three REUSE_* attributes */
    struct gm_sim_chunk *chunks;
};

static struct gm_sim_pool *pool_new(struct gm_sim_dev *d, uint64_t max_size, bool is_default)
{
    struct gm_sim_pool *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    p->dev = d->ordinal;
    p->is_default = is_default;
    p->max_size = max_size;
    p->reuse[0] = p->reuse[1] = p->reuse[2] = 1;
    if (gm_sim_reg_add(SIM_H_POOL, (uintptr_t)p, d->ordinal, p) != 0) {
        free(p);
        return NULL;
    }
    p->next = d->pools;
    d->pools = p;
    return p;
}

int gm_sim_pools_init(struct gm_sim_dev *d)
{
    d->default_pool = pool_new(d, 0, true);
    d->cur_pool = d->default_pool;
    return d->default_pool != NULL ? 0 : -1;
}

static void pool_unlink_free(struct gm_sim_dev *d, struct gm_sim_pool *p)
{
    for (struct gm_sim_pool **pp = &d->pools; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    free(p);
}

static uint64_t unit_size(const struct gm_sim_chunk *c, size_t i)
{
    uint64_t off = (uint64_t)i * POOL_UNIT;
    return c->size - off < POOL_UNIT ? c->size - off : POOL_UNIT;
}

/* Units [*first, *last] touched by [a, a + span). */
static void unit_span(const struct gm_sim_chunk *c, uint64_t a, uint64_t span,
                      size_t *first, size_t *last)
{
    *first = (size_t)((a - c->base) / POOL_UNIT);
    *last = (size_t)((a + span - 1 - c->base) / POOL_UNIT);
}

static void chunk_free(struct gm_sim_chunk *c)
{
    gm_sim_ext_fini(&c->free);
    free(c->live);
    free(c->backed);
    free(c);
}

static void pool_account(struct gm_sim_dev *d, struct gm_sim_pool *p, uint64_t bytes, bool add)
{
    /* reserved and used are stored atomically: the attribute query
     * reads them without the device lock (pool_peek). */
    if (add) {
        __atomic_store_n(&p->reserved, p->reserved + bytes, __ATOMIC_RELAXED);
        d->pool_reserved += bytes;
        if (p->reserved > p->reserved_high)
            p->reserved_high = p->reserved;
    } else {
        gm_sim_uncharge(d, bytes);
        __atomic_store_n(&p->reserved, p->reserved - bytes, __ATOMIC_RELAXED);
        d->pool_reserved -= bytes;
    }
}

/* Gives back idle units while at least `keep` bytes stay reserved; frees
 * chunks left with neither blocks nor backed units. Device locked. */
static void pool_release(struct gm_sim_dev *d, struct gm_sim_pool *p, uint64_t keep)
{
    struct gm_sim_chunk **cp = &p->chunks;
    while (*cp != NULL) {
        struct gm_sim_chunk *c = *cp;
        bool any_backed = false;
        for (size_t i = c->nunits; i-- > 0;) {
            uint64_t us = unit_size(c, i);
            if (c->backed[i] && c->live[i] == 0 && p->reserved - us >= keep) {
                c->backed[i] = false;
                pool_account(d, p, us, false);
            }
            any_backed |= c->backed[i];
        }
        if (!any_backed && c->nblocks == 0) {
            *cp = c->next;
            gm_sim_ext_give(&d->va, c->base, c->size);
            chunk_free(c);
        } else {
            cp = &c->next;
        }
    }
}

/* Charges a growth of `want` bytes (a multiple of 32 MiB) or, when the
 * device cannot fit it, of `span` rounded up to 2 MiB; returns the size
 * charged or 0. Device locked. */
static uint64_t grow_charge(struct gm_sim_dev *d, uint64_t want, uint64_t span)
{
    if (gm_sim_charge(d, want))
        return want;
    uint64_t small = sim_round(span, SIM_GRAN);
    return small < want && gm_sim_charge(d, small) ? small : 0;
}

/* Grows the newest chunk in place when the address space after it is free
 * and its free tail plus the growth fits the block, as a real pool extends
 * its mapping. Returns the chunk or NULL. Device locked. */
static struct gm_sim_chunk *pool_extend(struct gm_sim_dev *d, struct gm_sim_pool *p, uint64_t span)
{
    struct gm_sim_chunk *c = p->chunks;
    if (c == NULL || c->size % POOL_UNIT != 0)
        return NULL;
    uint64_t end = c->base + c->size, tail = 0;
    const struct gm_sim_extents *f = &c->free;
    if (f->n > 0 && f->v[f->n - 1].hi == end)
        tail = end - f->v[f->n - 1].lo;
    if (tail == 0 || tail >= span)
        return NULL;
    uint64_t grow = sim_round(span - tail, POOL_UNIT);
    if (grow < span - tail)
        return NULL; /* rounding wrapped: no device has that */
    /* The address space and the device's room first: a growth no device
     * holds never sizes the unit arrays (it asked malloc for terabytes). */
    if (gm_sim_ext_take_at(&d->va, end, grow) != 0)
        return NULL;
    if (!gm_sim_charge(d, grow)) {
        gm_sim_ext_give(&d->va, end, grow);
        return NULL;
    }
    size_t n = c->nunits + (size_t)(grow / POOL_UNIT);
    uint32_t *live = realloc(c->live, n * sizeof *live);
    if (live != NULL)
        c->live = live;
    bool *backed = live ? realloc(c->backed, n * sizeof *backed) : NULL;
    if (backed != NULL)
        c->backed = backed;
    if (live == NULL || backed == NULL) {
        gm_sim_uncharge(d, grow);
        gm_sim_ext_give(&d->va, end, grow);
        return NULL;
    }
    for (size_t i = c->nunits; i < n; i++) {
        c->live[i] = 0;
        c->backed[i] = true;
    }
    c->nunits = n;
    c->size += grow;
    gm_sim_ext_give(&c->free, end, grow);
    pool_account(d, p, grow, true);
    return c;
}

/* Room for a block of `span` bytes: the newest chunk grown in place, or a
 * new, fully backed chunk; NULL when the device has no room or the pool is
 * at its maximum size. Device locked. */
static struct gm_sim_chunk *pool_grow(struct gm_sim_dev *d, struct gm_sim_pool *p, uint64_t span)
{
    uint64_t want = sim_round(span, POOL_UNIT), size;
    if (want < span || (p->max_size != 0 && p->reserved >= p->max_size))
        return NULL;
    struct gm_sim_chunk *c = pool_extend(d, p, span);
    if (c != NULL)
        return c;
    if ((size = grow_charge(d, want, span)) == 0)
        return NULL;
    c = calloc(1, sizeof *c);
    size_t n = (size_t)((size + POOL_UNIT - 1) / POOL_UNIT);
    if (c != NULL) {
        c->live = calloc(n, sizeof *c->live);
        c->backed = calloc(n, sizeof *c->backed);
        c->base = gm_sim_ext_take(&d->va, size, SIM_GRAN);
    }
    if (c == NULL || c->live == NULL || c->backed == NULL || c->base == 0 ||
        gm_sim_ext_init(&c->free, c->base, c->base + size) != 0) {
        if (c != NULL && c->base != 0)
            gm_sim_ext_give(&d->va, c->base, size);
        if (c != NULL)
            chunk_free(c);
        gm_sim_uncharge(d, size);
        return NULL;
    }
    c->size = size;
    c->nunits = n;
    for (size_t i = 0; i < n; i++)
        c->backed[i] = true;
    c->next = p->chunks;
    p->chunks = c;
    pool_account(d, p, size, true);
    return c;
}

/* Bytes of unbacked units under [a, a + span). */
static uint64_t unbacked(const struct gm_sim_chunk *c, uint64_t a, uint64_t span)
{
    size_t first, last;
    uint64_t n = 0;
    unit_span(c, a, span, &first, &last);
    for (size_t i = first; i <= last; i++)
        if (!c->backed[i])
            n += unit_size(c, i);
    return n;
}

/* Places a block in an existing chunk. Pass 0 takes only backed space;
 * pass 1 may re-back idle units (charging the device). Returns the chunk
 * or NULL. Device locked. */
static struct gm_sim_chunk *pool_place(struct gm_sim_dev *d, struct gm_sim_pool *p,
                                       uint64_t span, int pass, uint64_t *out)
{
    for (struct gm_sim_chunk *c = p->chunks; c != NULL; c = c->next) {
        uint64_t a = gm_sim_ext_take(&c->free, span, SIM_ALIGN);
        if (a == 0)
            continue;
        uint64_t need = unbacked(c, a, span);
        if (need != 0 && (pass == 0 || (p->max_size != 0 && p->reserved >= p->max_size) ||
                          !gm_sim_charge(d, need))) {
            gm_sim_ext_give(&c->free, a, span);
            continue;
        }
        if (need != 0) {
            size_t first, last;
            unit_span(c, a, span, &first, &last);
            for (size_t i = first; i <= last; i++)
                c->backed[i] = true;
            pool_account(d, p, need, true);
        }
        *out = a;
        return c;
    }
    return NULL;
}

/* A block of `size` bytes from pool p; device locked. */
static CUresult pool_alloc(struct gm_sim_dev *d, struct gm_sim_pool *p, uint64_t size, uint64_t *out)
{
    uint64_t span = sim_round(size, SIM_ALIGN), a = 0;
    struct gm_sim_chunk *c;

    if (span < size)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((c = pool_place(d, p, span, 0, &a)) == NULL && (c = pool_place(d, p, span, 1, &a)) == NULL) {
        c = pool_grow(d, p, span);
        if (c == NULL || (a = gm_sim_ext_take(&c->free, span, SIM_ALIGN)) == 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    struct gm_sim_rec r = { a, size, span, SIM_K_BLOCK, p, c, NULL };
    if (gm_sim_rmap_add(&d->live, &r) != 0) {
        gm_sim_ext_give(&c->free, a, span);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    size_t first, last;
    unit_span(c, a, span, &first, &last);
    for (size_t i = first; i <= last; i++)
        c->live[i]++;
    c->nblocks++;
    __atomic_store_n(&p->used, p->used + size, __ATOMIC_RELAXED);
    d->pool_used += size;
    if (p->used > p->used_high)
        p->used_high = p->used;
    *out = a;
    return CUDA_SUCCESS;
}

void gm_sim_pool_free_block(struct gm_sim_dev *d, struct gm_sim_rec *r)
{
    struct gm_sim_pool *p = r->owner;
    struct gm_sim_chunk *c = r->aux;
    size_t first, last;

    unit_span(c, r->base, r->span, &first, &last);
    for (size_t i = first; i <= last; i++)
        c->live[i]--;
    gm_sim_ext_give(&c->free, r->base, r->span);
    c->nblocks--;
    __atomic_store_n(&p->used, p->used - r->size, __ATOMIC_RELAXED);
    d->pool_used -= r->size;
    gm_sim_rmap_del(&d->live, r);
    if (p->destroyed) {
        pool_release(d, p, 0);
        if (p->chunks == NULL)
            pool_unlink_free(d, p);
    } else if (gm_sim.cfg.release == SIM_RELEASE_FREE) {
        pool_release(d, p, p->threshold);
    }
}

void gm_sim_pools_sync(int dev)
{
    if (gm_sim.cfg.release != SIM_RELEASE_SYNC)
        return;
    struct gm_sim_dev *d = &gm_sim.dev[dev];
    pthread_mutex_lock(&d->lock);
    for (struct gm_sim_pool *p = d->pools; p != NULL; p = p->next)
        if (!p->destroyed)
            pool_release(d, p, p->threshold);
    pthread_mutex_unlock(&d->lock);
}

/* ---- pool objects ----------------------------------------------------------- */

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (pool == NULL || poolProps == NULL ||
        poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    if (poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!gm_sim_valid_dev(poolProps->location.id))
        return CUDA_ERROR_INVALID_VALUE;
    struct gm_sim_dev *d = &gm_sim.dev[poolProps->location.id];
    pthread_mutex_lock(&d->lock);
    struct gm_sim_pool *p = pool_new(d, poolProps->maxSize, false);
    pthread_mutex_unlock(&d->lock);
    if (p == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pool = (CUmemoryPool)(void *)p;
    return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    struct gm_sim_dev *d;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    struct gm_sim_pool *p = gm_sim_lock_handle(SIM_H_POOL, (uintptr_t)pool, &d);
    if (p == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->is_default) {
        pthread_mutex_unlock(&d->lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (d->cur_pool == p)
        d->cur_pool = d->default_pool;
    gm_sim_reg_del(SIM_H_POOL, (uintptr_t)p);
    p->destroyed = true;
    pool_release(d, p, 0);
    if (p->chunks == NULL)
        pool_unlink_free(d, p);
    pthread_mutex_unlock(&d->lock);
    return CUDA_SUCCESS;
}

CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out, void *handle,
                                            CUmemAllocationHandleType handleType,
                                            unsigned long long flags)
{
    (void)pool_out;
    (void)handle;
    (void)handleType;
    (void)flags;
    return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult dev_pool(CUmemoryPool *pool, CUdevice dev, bool current)
{
    CUresult rc = gm_sim_dev_entry(dev, pool != NULL);
    if (rc != CUDA_SUCCESS)
        return rc;
    struct gm_sim_dev *d = &gm_sim.dev[dev];
    pthread_mutex_lock(&d->lock);
    *pool = (CUmemoryPool)(void *)(current ? d->cur_pool : d->default_pool);
    pthread_mutex_unlock(&d->lock);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    return dev_pool(pool_out, dev, false);
}

CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    return dev_pool(pool, dev, true);
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    struct gm_sim_dev *d;
    CUresult rc = gm_sim_dev_entry(dev, true);
    if (rc != CUDA_SUCCESS)
        return rc;
    struct gm_sim_pool *p = gm_sim_lock_handle(SIM_H_POOL, (uintptr_t)pool, &d);
    if (p == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->dev == dev)
        d->cur_pool = p;
    else
        rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&d->lock);
    return rc;
}

/* The two figures a caller polls after every stream-ordered allocation,
 * read without the device lock: the registry lock keeps the pool from
 * being freed meanwhile (a destroyed pool leaves the registry first). */
struct pool_peek {
    CUmemPool_attribute attr;
    cuuint64_t v;
};

static void pool_peek(void *obj, void *arg)
{
    const struct gm_sim_pool *p = obj;
    struct pool_peek *pk = arg;
    pk->v = pk->attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT
                ? __atomic_load_n(&p->reserved, __ATOMIC_RELAXED)
                : __atomic_load_n(&p->used, __ATOMIC_RELAXED);
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    struct gm_sim_dev *d;
    atomic_fetch_add_explicit(&gm_sim.pool_attr_calls, 1, memory_order_relaxed);
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT ||
        attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT) {
        struct pool_peek pk = { attr, 0 };
        if (!gm_sim_reg_with(SIM_H_POOL, (uintptr_t)pool, pool_peek, &pk))
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(value, &pk.v, sizeof pk.v);
        return CUDA_SUCCESS;
    }
    struct gm_sim_pool *p = gm_sim_lock_handle(SIM_H_POOL, (uintptr_t)pool, &d);
    if (p == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    cuuint64_t v = 0;
    bool is64 = true;
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        *(int *)value = p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
        is64 = false;
        break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: v = p->threshold; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: v = p->reserved; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: v = p->reserved_high; break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: v = p->used; break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: v = p->used_high; break;
    default: rc = CUDA_ERROR_INVALID_VALUE; is64 = false; break;
    }
    if (is64)
        memcpy(value, &v, sizeof v);
    pthread_mutex_unlock(&d->lock);
    return rc;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    struct gm_sim_dev *d;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct gm_sim_pool *p = gm_sim_lock_handle(SIM_H_POOL, (uintptr_t)pool, &d);
    if (p == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    cuuint64_t v = 0;
    bool is64 = attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD ||
                attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH || attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH;
    if (is64)
        memcpy(&v, value, sizeof v);
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = *(const int *)value != 0;
        break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        p->threshold = v;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:     /* may only be reset to 0 */
        if (v != 0)
            rc = CUDA_ERROR_INVALID_VALUE;
        else
            p->reserved_high = p->reserved;
        break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        if (v != 0)
            rc = CUDA_ERROR_INVALID_VALUE;
        else
            p->used_high = p->used;
        break;
    default:
        rc = CUDA_ERROR_INVALID_VALUE;
        break;
    }
    pthread_mutex_unlock(&d->lock);
    return rc;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    struct gm_sim_dev *d;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    struct gm_sim_pool *p = gm_sim_lock_handle(SIM_H_POOL, (uintptr_t)pool, &d);
    if (p == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    pool_release(d, p, minBytesToKeep);
    pthread_mutex_unlock(&d->lock);
    return CUDA_SUCCESS;
}

/* ---- stream-ordered allocation ---------------------------------------------- */

/* A named stream must be alive; NULL, legacy and per-thread always are. */
static CUresult stream_ok(CUstream s)
{
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return CUDA_SUCCESS;
    return gm_sim_reg_find(SIM_H_STREAM, (uintptr_t)s, NULL) != NULL
               ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* 0 bytes: success and a NULL pointer, as on a real driver. */
static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream s)
{
    int dev;
    uint64_t a = 0;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dptr == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = gm_sim_stream_dev(s, &dev)) != CUDA_SUCCESS)
        return rc;
    if (bytesize == 0) {
        *dptr = 0;
        return CUDA_SUCCESS;
    }
    if ((rc = gm_sim_alloc_gate()) != CUDA_SUCCESS)
        return rc;
    struct gm_sim_dev *d = &gm_sim.dev[dev];
    pthread_mutex_lock(&d->lock);
    rc = pool_alloc(d, d->cur_pool, bytesize, &a);
    pthread_mutex_unlock(&d->lock);
    if (rc == CUDA_SUCCESS)
        *dptr = a;
    return rc;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_async(dptr, bytesize, hStream);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_async(dptr, bytesize, hStream);
}

/* The pool's device serves the block, whatever the stream's device. */
static CUresult alloc_from_pool(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream s)
{
    int dev;
    struct gm_sim_dev *d;
    uint64_t a = 0;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dptr == NULL || pool == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = gm_sim_stream_dev(s, &dev)) != CUDA_SUCCESS)
        return rc;
    if (gm_sim_reg_find(SIM_H_POOL, (uintptr_t)pool, NULL) == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (bytesize == 0) {
        *dptr = 0;
        return CUDA_SUCCESS;
    }
    if ((rc = gm_sim_alloc_gate()) != CUDA_SUCCESS)
        return rc;
    struct gm_sim_pool *p = gm_sim_lock_handle(SIM_H_POOL, (uintptr_t)pool, &d);
    if (p == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = pool_alloc(d, p, bytesize, &a);
    pthread_mutex_unlock(&d->lock);
    if (rc == CUDA_SUCCESS)
        *dptr = a;
    return rc;
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream)
{
    return alloc_from_pool(dptr, bytesize, pool, hStream);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream)
{
    return alloc_from_pool(dptr, bytesize, pool, hStream);
}

/* Frees a pool block (or a plain allocation); 0 is a no-op. */
static CUresult free_async(CUdeviceptr dptr, CUstream s)
{
    struct gm_sim_dev *d;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if ((rc = stream_ok(s)) != CUDA_SUCCESS || dptr == 0)
        return rc;
    gm_sim_latency();
    struct gm_sim_rec *r = gm_sim_lock_rec(dptr, true, &d);
    if (r == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    gm_sim_free_rec(d, r);
    pthread_mutex_unlock(&d->lock);
    return CUDA_SUCCESS;
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    return free_async(dptr, hStream);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    return free_async(dptr, hStream);
}
