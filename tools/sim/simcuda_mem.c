/*
 * tools/sim/simcuda_mem.c — plain device memory of the simulated driver:
 * cuMemAlloc(_v2), cuMemAllocPitch(_v2), cuMemAllocManaged, cuMemFree(_v2),
 * cuMemGetInfo(_v2), cuMemGetAddressRange(_v2), cuPointerGetAttribute, and
 * pinned host memory (cuMemHostAlloc, cuMemAllocHost(_v2), cuMemFreeHost).
 *
 * A device allocation charges exactly its requested size to the current
 * context's device and takes an address from that device's range (512-byte
 * aligned; 2 MiB aligned from 2 MiB up). v1 calls, whose pointers are 32
 * bits, take addresses from the shared low range below 4 GiB; like a real
 * 64-bit driver they need a context made by the v1 cuCtxCreate, and their
 * _v2 counterparts refuse such a context. Frees need no context. Managed
 * memory takes an address but no capacity (it can oversubscribe, as on a
 * real GPU); it is counted in its own figure. cuMemGetInfo's free counts
 * what other simulated processes hold on the same physical device (their
 * boards, tools/sim/simmachine.h), as a real device's does; admission
 * still checks only this process's charge. Pinned host memory is real
 * (page-aligned malloc) and charged to no device.
 * Invariants: the live map of a device holds every ALLOC, MANAGED and pool
 * BLOCK record it hands out, until it is freed; alloc_bytes and
 * managed_bytes are the sums of their records' sizes.
 */
#include "tools/sim/simcuda.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HOST_ALIGN 4096ULL

static bool is_low(uint64_t addr)
{
    return addr >= SIM_LOW_BASE && addr < SIM_LOW_END;
}

int gm_sim_addr_dev(uint64_t addr)
{
    if (addr < SIM_DEV_BASE)
        return -1;
    uint64_t i = (addr - SIM_DEV_BASE) / SIM_DEV_SPAN;
    return i < (uint64_t)gm_sim.cfg.ndev ? (int)i : -1;
}

/* Takes address space for a record; device locked. */
static uint64_t va_take(struct gm_sim_dev *d, uint64_t span, uint64_t align, bool low)
{
    if (!low)
        return gm_sim_ext_take(&d->va, span, align);
    pthread_mutex_lock(&gm_sim.low_lock);
    uint64_t a = gm_sim_ext_take(&gm_sim.low_va, span, align);
    pthread_mutex_unlock(&gm_sim.low_lock);
    return a;
}

static void va_give(struct gm_sim_dev *d, uint64_t base, uint64_t span)
{
    if (!is_low(base)) {
        gm_sim_ext_give(&d->va, base, span);
        return;
    }
    pthread_mutex_lock(&gm_sim.low_lock);
    gm_sim_ext_give(&gm_sim.low_va, base, span);
    pthread_mutex_unlock(&gm_sim.low_lock);
}

/* The one allocation path for ALLOC and MANAGED records. api: the context
 * API version the call needs (0: any). v1 calls (api 1) get low addresses. */
static CUresult mem_alloc(uint64_t *out, uint64_t size, int kind, int api)
{
    bool low = api == 1;
    int dev;
    const void *ctx;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (out == NULL || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = gm_sim_current(api, &dev, &ctx)) != CUDA_SUCCESS)
        return rc;
    if ((rc = gm_sim_alloc_gate()) != CUDA_SUCCESS)
        return rc;

    uint64_t align = size >= SIM_GRAN ? SIM_GRAN : SIM_ALIGN;
    uint64_t span = sim_round(size, align);
    struct gm_sim_dev *d = &gm_sim.dev[dev];
    struct gm_sim_rec r = { 0, size, span, kind, NULL, NULL, ctx };

    if (span < size)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&d->lock);
    if (kind == SIM_K_ALLOC && !gm_sim_charge(d, size)) {
        pthread_mutex_unlock(&d->lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r.base = va_take(d, span, align, low);
    if (r.base == 0 || gm_sim_rmap_add(&d->live, &r) != 0) {
        if (r.base != 0)
            va_give(d, r.base, span);
        if (kind == SIM_K_ALLOC)
            gm_sim_uncharge(d, size);
        pthread_mutex_unlock(&d->lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (kind == SIM_K_ALLOC)
        d->alloc_bytes += size;
    else
        d->managed_bytes += size;
    pthread_mutex_unlock(&d->lock);
    *out = r.base;
    return CUDA_SUCCESS;
}

void gm_sim_free_rec(struct gm_sim_dev *d, struct gm_sim_rec *r)
{
    if (r->kind == SIM_K_BLOCK) {
        gm_sim_pool_free_block(d, r);
        return;
    }
    if (r->kind == SIM_K_ALLOC) {
        gm_sim_uncharge(d, r->size);
        d->alloc_bytes -= r->size;
    } else {
        d->managed_bytes -= r->size;
    }
    va_give(d, r->base, r->span);
    gm_sim_rmap_del(&d->live, r);
}

void gm_sim_mem_drop_ctx(struct gm_sim_dev *d, const void *ctx)
{
    size_t i = 0;
    while (i < d->live.n) {
        struct gm_sim_rec *r = &d->live.v[i];
        if (r->ctx == ctx && (r->kind == SIM_K_ALLOC || r->kind == SIM_K_MANAGED))
            gm_sim_free_rec(d, r);      /* removes entry i */
        else
            i++;
    }
}

struct gm_sim_rec *gm_sim_lock_rec(uint64_t addr, bool exact, struct gm_sim_dev **dp)
{
    int dev = gm_sim_addr_dev(addr);
    int lo = dev, hi = dev;

    if (dev < 0) {
        if (!is_low(addr))
            return NULL;
        lo = 0;                 /* the low range is shared by all devices */
        hi = gm_sim.cfg.ndev - 1;
    }
    for (int i = lo; i <= hi; i++) {
        struct gm_sim_dev *d = &gm_sim.dev[i];
        pthread_mutex_lock(&d->lock);
        struct gm_sim_rec *r = exact ? gm_sim_rmap_find(&d->live, addr)
                                     : gm_sim_rmap_covering(&d->live, addr);
        if (r != NULL) {
            *dp = d;
            return r;
        }
        pthread_mutex_unlock(&d->lock);
    }
    return NULL;
}

/* ---- allocation entry points ------------------------------------------------ */

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    uint64_t a;
    CUresult rc = mem_alloc(dptr ? &a : NULL, bytesize, SIM_K_ALLOC, 2);
    if (rc == CUDA_SUCCESS)
        *dptr = a;
    return rc;
}

CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    uint64_t a;
    CUresult rc = mem_alloc(dptr ? &a : NULL, bytesize, SIM_K_ALLOC, 1);
    if (rc == CUDA_SUCCESS)
        *dptr = (CUdeviceptr_v1)a;
    return rc;
}

/* Pitch: rows padded to 512 bytes; ElementSizeBytes must be 4, 8 or 16. */
static CUresult pitch_size(size_t width, size_t height, unsigned int elem,
                           uint64_t *pitch, uint64_t *bytes)
{
    if (width == 0 || height == 0 || (elem != 4 && elem != 8 && elem != 16))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t p = sim_round(width, SIM_ALIGN);
    if (p < width || p > UINT64_MAX / height)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pitch = p;
    *bytes = p * height;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                            size_t Height, unsigned int ElementSizeBytes)
{
    uint64_t pitch, bytes, a;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dptr == NULL || pPitch == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = pitch_size(WidthInBytes, Height, ElementSizeBytes, &pitch, &bytes)) != CUDA_SUCCESS)
        return rc;
    if ((rc = mem_alloc(&a, bytes, SIM_K_ALLOC, 2)) != CUDA_SUCCESS)
        return rc;
    *dptr = a;
    *pPitch = pitch;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
                         unsigned int Height, unsigned int ElementSizeBytes)
{
    uint64_t pitch, bytes, a;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dptr == NULL || pPitch == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = pitch_size(WidthInBytes, Height, ElementSizeBytes, &pitch, &bytes)) != CUDA_SUCCESS)
        return rc;
    if (bytes > 0xffffffffULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = mem_alloc(&a, bytes, SIM_K_ALLOC, 1)) != CUDA_SUCCESS)
        return rc;
    *dptr = (CUdeviceptr_v1)a;
    *pPitch = (unsigned int)pitch;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    uint64_t a;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    rc = mem_alloc(dptr ? &a : NULL, bytesize, SIM_K_MANAGED, 0);
    if (rc == CUDA_SUCCESS)
        *dptr = a;
    return rc;
}

/* ---- frees --------------------------------------------------------------- */

/* Frees a plain, managed or pool allocation; 0 is a no-op, as on a real
 * driver. No current context is needed. */
static CUresult mem_free(uint64_t addr)
{
    struct gm_sim_dev *d;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS || addr == 0)
        return rc;
    gm_sim_latency();
    struct gm_sim_rec *r = gm_sim_lock_rec(addr, true, &d);
    if (r == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    gm_sim_free_rec(d, r);
    pthread_mutex_unlock(&d->lock);
    return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    return mem_free(dptr);
}

CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
    return mem_free(dptr);
}

/* ---- queries ---------------------------------------------------------------- */

struct others {
    int self, phys;
    uint64_t used;
};

static void add_other(const struct gm_sim_proc *p, void *arg)
{
    struct others *o = arg;
    if (p->pid != o->self)
        o->used += p->used[o->phys];
}

/* What the other simulated processes hold on physical device `phys`. */
static uint64_t others_used(int phys)
{
    struct others o = { (int)getpid(), phys, 0 };
    (void)gm_sim_board_scan(gm_sim.cfg.machine.board, add_other, &o);
    return o.used;
}

/* Free is the device's: capacity less this process's charge and what the
 * other simulated processes hold (their boards), clamped at 0. */
static CUresult mem_info(int api, uint64_t *free_b, uint64_t *total_b)
{
    int dev;
    CUresult rc = gm_sim_current(api, &dev, NULL);
    if (rc != CUDA_SUCCESS)
        return rc;
    uint64_t others = others_used(gm_sim.cfg.phys[dev]);
    struct gm_sim_dev *d = &gm_sim.dev[dev];
    pthread_mutex_lock(&d->lock);
    uint64_t f = d->capacity - d->used;
    *free_b = others < f ? f - others : 0;
    *total_b = d->capacity;
    pthread_mutex_unlock(&d->lock);
    return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    uint64_t f, t;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (free == NULL || total == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = mem_info(2, &f, &t)) == CUDA_SUCCESS) {
        *free = f;
        *total = t;
    }
    return rc;
}

static unsigned int clamp32(uint64_t v)
{
    return v > 0xffffffffULL ? 0xffffffffU : (unsigned int)v;
}

CUresult cuMemGetInfo(unsigned int *free, unsigned int *total)
{
    uint64_t f, t;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (free == NULL || total == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = mem_info(1, &f, &t)) == CUDA_SUCCESS) {
        *free = clamp32(f);
        *total = clamp32(t);
    }
    return rc;
}

/* Base and size of the live range holding addr, of any kind. */
static CUresult addr_range(uint64_t addr, uint64_t *base, uint64_t *size)
{
    struct gm_sim_dev *d;
    struct gm_sim_rec *r;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if ((r = gm_sim_lock_rec(addr, false, &d)) != NULL) {
        *base = r->base;
        *size = r->size;
        pthread_mutex_unlock(&d->lock);
        return CUDA_SUCCESS;
    }
    rc = CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&gm_sim.vmm_lock);
    if ((r = gm_sim_rmap_covering(&gm_sim.vmm_map, addr)) != NULL) {
        *base = r->base;
        *size = r->size;
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&gm_sim.vmm_lock);
    if (rc == CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&gm_sim.host_lock);
    if ((r = gm_sim_rmap_covering(&gm_sim.host, addr)) != NULL) {
        *base = r->base;
        *size = r->size;
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&gm_sim.host_lock);
    return rc;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    uint64_t b, s;
    CUresult rc = addr_range(dptr, &b, &s);
    if (rc == CUDA_SUCCESS) {
        if (pbase != NULL)
            *pbase = b;
        if (psize != NULL)
            *psize = s;
    }
    return rc;
}

CUresult cuMemGetAddressRange(CUdeviceptr_v1 *pbase, unsigned int *psize, CUdeviceptr_v1 dptr)
{
    uint64_t b, s;
    CUresult rc = addr_range(dptr, &b, &s);
    if (rc == CUDA_SUCCESS && (b > 0xffffffffULL || s > 0xffffffffULL))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        if (pbase != NULL)
            *pbase = (CUdeviceptr_v1)b;
        if (psize != NULL)
            *psize = (unsigned int)s;
    }
    return rc;
}

/* cuPointerGetAttribute for the device records (allocations, managed
 * memory, pool blocks): the context it was made in (a pool block: the
 * device's primary context), the device, the range, the memory type and
 * whether it is managed. Like a real driver it needs no current context
 * and answers CUDA_ERROR_INVALID_VALUE for an address no live record
 * holds, such as one freed with its context; other attributes, and VMM
 * mappings and host memory, answer CUDA_ERROR_NOT_SUPPORTED. */
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                               CUdeviceptr ptr)
{
    struct gm_sim_dev *d;
    struct gm_sim_rec *r;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (data == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = gm_sim_lock_rec(ptr, false, &d)) == NULL) {
        uint64_t b, s;
        return addr_range(ptr, &b, &s) == CUDA_SUCCESS
                   ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
    }
    rc = CUDA_SUCCESS;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = (CUcontext)(r->ctx != NULL ? r->ctx
                                                       : (const void *)&d->primary);
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = d->ordinal;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = r->base;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = (size_t)r->size;
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = r->kind == SIM_K_MANAGED ? CU_MEMORYTYPE_UNIFIED
                                                         : CU_MEMORYTYPE_DEVICE;
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(unsigned int *)data = r->kind == SIM_K_MANAGED;
        break;
    default:
        rc = CUDA_ERROR_NOT_SUPPORTED;
    }
    pthread_mutex_unlock(&d->lock);
    return rc;
}

/* ---- pinned host memory ---------------------------------------------------- */

/* Pinned host memory; 0 bytes gives NULL and success, as on a real driver.
 * api: as for mem_alloc. */
static CUresult host_alloc(void **pp, uint64_t size, unsigned int flags, int api)
{
    int dev;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (pp == NULL ||
        (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                             CU_MEMHOSTALLOC_WRITECOMBINED)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = gm_sim_current(api, &dev, NULL)) != CUDA_SUCCESS)
        return rc;
    if (size == 0) {
        *pp = NULL;
        return CUDA_SUCCESS;
    }
    if ((rc = gm_sim_alloc_gate()) != CUDA_SUCCESS)
        return rc;
    uint64_t span = sim_round(size, HOST_ALIGN);
    void *p = NULL;
    if (span < size || span > SIZE_MAX || posix_memalign(&p, HOST_ALIGN, (size_t)span) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct gm_sim_rec r = { (uintptr_t)p, size, span, SIM_K_HOST, NULL, NULL, NULL };
    pthread_mutex_lock(&gm_sim.host_lock);
    int added = gm_sim_rmap_add(&gm_sim.host, &r);
    if (added == 0)
        gm_sim.host_bytes += size;
    pthread_mutex_unlock(&gm_sim.host_lock);
    if (added != 0) {
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pp = p;
    return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    return host_alloc(pp, bytesize, Flags, 0);
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return host_alloc(pp, bytesize, 0, 2);
}

CUresult cuMemAllocHost(void **pp, unsigned int bytesize)
{
    return host_alloc(pp, bytesize, 0, 1);
}

CUresult cuMemFreeHost(void *p)
{
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS || p == NULL)
        return rc;
    gm_sim_latency();
    pthread_mutex_lock(&gm_sim.host_lock);
    struct gm_sim_rec *r = gm_sim_rmap_find(&gm_sim.host, (uintptr_t)p);
    if (r != NULL) {
        gm_sim.host_bytes -= r->size;
        gm_sim_rmap_del(&gm_sim.host, r);
    }
    pthread_mutex_unlock(&gm_sim.host_lock);
    if (r == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    free(p);
    return CUDA_SUCCESS;
}
