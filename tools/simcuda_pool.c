/*
 * tools/simcuda_pool.c — stream-ordered memory pools of the simulated
 * driver: default and current pools per device, cuMemPoolCreate/Destroy/
 * Get/SetAttribute/TrimTo, cuMemAllocAsync(_ptsz),
 * cuMemAllocFromPoolAsync(_ptsz), cuMemFreeAsync(_ptsz).
 *
 * Model: a pool reserves device memory in chunks (each a multiple of 2 MiB,
 * at least the request, charged to the device's capacity) and hands out
 * 512-byte-aligned blocks from them first-fit. `reserved` is the sum of its
 * chunks, `used` the sum of its live blocks. A free returns the block to its
 * chunk (used drops, reserved stays); then, right away (SIMCUDA_POOL_RELEASE
 * =free, the default) or at the next stream/context synchronisation (=sync),
 * the pool returns wholly free chunks to the device while it holds more than
 * its release threshold. cuMemPoolTrimTo returns wholly free chunks while at
 * least minBytesToKeep stays reserved. A destroyed pool is unusable at once;
 * its free chunks go back immediately and the others as their last blocks
 * are freed (as on a real GPU).
 * Invariants (device locked): pool->reserved = sum of chunk sizes;
 * pool->used = sum of block spans; chunk->nblocks counts its live blocks;
 * device pool_reserved/pool_used are the sums over its pools; a pool is
 * registered exactly while it is not destroyed.
 */
#include "tools/simcuda.h"

#include <stdlib.h>
#include <string.h>

struct gm_sim_chunk {
    struct gm_sim_chunk *next;
    uint64_t base, size;
    uint64_t nblocks;
    struct gm_sim_extents free;
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

static void chunk_release(struct gm_sim_dev *d, struct gm_sim_pool *p, struct gm_sim_chunk *c)
{
    gm_sim_ext_give(&d->va, c->base, c->size);
    gm_sim_uncharge(d, c->size);
    p->reserved -= c->size;
    d->pool_reserved -= c->size;
    gm_sim_ext_fini(&c->free);
    free(c);
}

/* Returns wholly free chunks to the device. at_least: keep >= keep bytes
 * reserved (trim); otherwise release while more than keep is reserved
 * (release threshold). Device locked. */
static void pool_release(struct gm_sim_dev *d, struct gm_sim_pool *p, uint64_t keep, bool at_least)
{
    struct gm_sim_chunk **cp = &p->chunks;
    while (*cp != NULL && p->reserved > keep) {
        struct gm_sim_chunk *c = *cp;
        bool go = c->nblocks == 0 && (!at_least || p->reserved - c->size >= keep);
        if (go) {
            *cp = c->next;
            chunk_release(d, p, c);
        } else {
            cp = &c->next;
        }
    }
}

/* A new chunk of at least `need` bytes; NULL when the device (or the pool's
 * maximum size) has no room. Device locked. */
static struct gm_sim_chunk *pool_grow(struct gm_sim_dev *d, struct gm_sim_pool *p, uint64_t need)
{
    uint64_t size = sim_round(need, SIM_GRAN);
    if (size < need || (p->max_size != 0 && size > p->max_size - p->reserved))
        return NULL;
    struct gm_sim_chunk *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    if (!gm_sim_charge(d, size)) {
        free(c);
        return NULL;
    }
    c->base = gm_sim_ext_take(&d->va, size, SIM_GRAN);
    if (c->base == 0 || gm_sim_ext_init(&c->free, c->base, c->base + size) != 0) {
        if (c->base != 0)
            gm_sim_ext_give(&d->va, c->base, size);
        gm_sim_uncharge(d, size);
        free(c);
        return NULL;
    }
    c->size = size;
    c->next = p->chunks;
    p->chunks = c;
    p->reserved += size;
    d->pool_reserved += size;
    if (p->reserved > p->reserved_high)
        p->reserved_high = p->reserved;
    return c;
}

/* A block of `size` bytes from pool p; device locked. */
static CUresult pool_alloc(struct gm_sim_dev *d, struct gm_sim_pool *p, uint64_t size, uint64_t *out)
{
    uint64_t span = sim_round(size, SIM_ALIGN), a = 0;
    struct gm_sim_chunk *c;

    if (span < size)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (c = p->chunks; c != NULL; c = c->next)
        if ((a = gm_sim_ext_take(&c->free, span, SIM_ALIGN)) != 0)
            break;
    if (c == NULL) {
        c = pool_grow(d, p, span);
        if (c == NULL || (a = gm_sim_ext_take(&c->free, span, SIM_ALIGN)) == 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    struct gm_sim_rec r = { a, size, span, SIM_K_BLOCK, p, c, NULL };
    if (gm_sim_rmap_add(&d->live, &r) != 0) {
        gm_sim_ext_give(&c->free, a, span);
        pool_release(d, p, p->threshold, false);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    c->nblocks++;
    p->used += span;
    d->pool_used += span;
    if (p->used > p->used_high)
        p->used_high = p->used;
    *out = a;
    return CUDA_SUCCESS;
}

void gm_sim_pool_free_block(struct gm_sim_dev *d, struct gm_sim_rec *r)
{
    struct gm_sim_pool *p = r->owner;
    struct gm_sim_chunk *c = r->aux;

    gm_sim_ext_give(&c->free, r->base, r->span);
    c->nblocks--;
    p->used -= r->span;
    d->pool_used -= r->span;
    gm_sim_rmap_del(&d->live, r);
    if (p->destroyed) {
        pool_release(d, p, 0, false);
        if (p->chunks == NULL)
            pool_unlink_free(d, p);
    } else if (gm_sim.cfg.release == SIM_RELEASE_FREE) {
        pool_release(d, p, p->threshold, false);
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
            pool_release(d, p, p->threshold, false);
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
        return CUDA_ERROR_INVALID_DEVICE;
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
    pool_release(d, p, 0, false);
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
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (pool == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!gm_sim_valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
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
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!gm_sim_valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
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

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
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
    pool_release(d, p, minBytesToKeep, true);
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

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream s)
{
    int dev;
    uint64_t a = 0;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dptr == NULL || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = gm_sim_stream_dev(s, &dev)) != CUDA_SUCCESS)
        return rc;
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

static CUresult alloc_from_pool(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream s)
{
    struct gm_sim_dev *d;
    uint64_t a = 0;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dptr == NULL || bytesize == 0 || pool == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = stream_ok(s)) != CUDA_SUCCESS)
        return rc;
    if (gm_sim_reg_find(SIM_H_POOL, (uintptr_t)pool, NULL) == NULL)
        return CUDA_ERROR_INVALID_VALUE;
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

static CUresult free_async(CUdeviceptr dptr, CUstream s)
{
    struct gm_sim_dev *d;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if ((rc = stream_ok(s)) != CUDA_SUCCESS)
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
