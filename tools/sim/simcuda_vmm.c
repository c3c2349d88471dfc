/*
 * tools/sim/simcuda_vmm.c — virtual memory management of the simulated driver:
 * cuMemGetAllocationGranularity, cuMemCreate, cuMemRelease,
 * cuMemRetainAllocationHandle, cuMemGetAllocationPropertiesFromHandle,
 * cuMemAddressReserve/Free, cuMemMap/Unmap, cuMemSetAccess.
 *
 * A handle from cuMemCreate is physical memory (a multiple of the 2 MiB
 * granularity) charged to prop->location.id. Its reference count starts at
 * 1; cuMemRetainAllocationHandle adds one, cuMemRelease drops one; each
 * mapping also keeps the memory alive. The memory is returned to the device
 * when both the count and the number of mappings are 0. A handle whose
 * count is 0 is invalid for the caller even while a mapping keeps it alive
 * (retaining it through a mapped address makes it valid again).
 * Address reservations come from one shared range (an address hint is
 * honoured when that range is free); mappings lie inside reservations and
 * never overlap; cuMemMap takes offset 0 only (CUDA_ERROR_NOT_SUPPORTED
 * otherwise) and cuMemAddressFree refuses a range that is still mapped, as
 * on a real driver.
 * Invariants: all of this is under vmm_lock (taken before any device lock);
 * a handle is registered (SIM_H_VMM) until its memory is returned.
 */
#include "tools/sim/simcuda.h"

#include <stdlib.h>
#include <string.h>

struct gm_sim_vmh {
    uint64_t id;
    int dev;
    uint64_t size;
    CUmemAllocationProp prop;
    unsigned refs, maps;
};

/* Device ordinal of a valid allocation property, or an error. */
static CUresult prop_dev(const CUmemAllocationProp *prop, int *dev)
{
    if (prop == NULL || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!gm_sim_valid_dev(prop->location.id))
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = prop->location.id;
    return CUDA_SUCCESS;
}

/* A handle the caller may use (reference count > 0); vmm_lock held. */
static struct gm_sim_vmh *vmh_get(CUmemGenericAllocationHandle h)
{
    struct gm_sim_vmh *v = gm_sim_reg_find(SIM_H_VMM, h, NULL);
    return v != NULL && v->refs > 0 ? v : NULL;
}

/* Returns the memory when nothing holds it any more; vmm_lock held. */
static void vmh_maybe_free(struct gm_sim_vmh *v)
{
    if (v->refs != 0 || v->maps != 0)
        return;
    struct gm_sim_dev *d = &gm_sim.dev[v->dev];
    pthread_mutex_lock(&d->lock);
    gm_sim_uncharge(d, v->size);
    d->vmm_bytes -= v->size;
    pthread_mutex_unlock(&d->lock);
    gm_sim_reg_del(SIM_H_VMM, v->id);
    free(v);
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option)
{
    int dev;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (granularity == NULL || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                                option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = prop_dev(prop, &dev)) != CUDA_SUCCESS)
        return rc;
    *granularity = SIM_GRAN;
    return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags)
{
    int dev;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (handle == NULL || flags != 0 || size == 0 || size % SIM_GRAN != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = prop_dev(prop, &dev)) != CUDA_SUCCESS)
        return rc;
    if ((rc = gm_sim_alloc_gate()) != CUDA_SUCCESS)
        return rc;
    struct gm_sim_vmh *v = calloc(1, sizeof *v);
    if (v == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    v->dev = dev;
    v->size = size;
    v->prop = *prop;
    v->refs = 1;
    struct gm_sim_dev *d = &gm_sim.dev[dev];
    pthread_mutex_lock(&gm_sim.vmm_lock);
    pthread_mutex_lock(&d->lock);
    bool ok = gm_sim_charge(d, size);
    if (ok)
        d->vmm_bytes += size;
    pthread_mutex_unlock(&d->lock);
    if (ok) {
        v->id = gm_sim.next_handle++;
        if (gm_sim_reg_add(SIM_H_VMM, v->id, dev, v) != 0) {
            v->refs = 0;
            vmh_maybe_free(v);      /* uncharges and frees v */
            v = NULL;
            ok = false;
        }
    } else {
        free(v);
        v = NULL;
    }
    if (ok)
        *handle = v->id;
    pthread_mutex_unlock(&gm_sim.vmm_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    gm_sim_latency();
    pthread_mutex_lock(&gm_sim.vmm_lock);
    struct gm_sim_vmh *v = vmh_get(handle);
    if (v != NULL) {
        v->refs--;
        vmh_maybe_free(v);
    } else {
        rc = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&gm_sim.vmm_lock);
    return rc;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (handle == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&gm_sim.vmm_lock);
    struct gm_sim_rec *r = gm_sim_rmap_covering(&gm_sim.vmm_map, (uintptr_t)addr);
    if (r != NULL) {
        struct gm_sim_vmh *v = r->owner;
        v->refs++;
        *handle = v->id;
    } else {
        rc = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&gm_sim.vmm_lock);
    return rc;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                CUmemGenericAllocationHandle handle)
{
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (prop == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&gm_sim.vmm_lock);
    struct gm_sim_vmh *v = gm_sim_reg_find(SIM_H_VMM, handle, NULL);  /* mapped counts */
    if (v != NULL)
        *prop = v->prop;
    else
        rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&gm_sim.vmm_lock);
    return rc;
}

/* ---- address space --------------------------------------------------------- */

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                             CUdeviceptr addr, unsigned long long flags)
{
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (ptr == NULL || flags != 0 || size == 0 || size % SIM_GRAN != 0 ||
        (alignment & (alignment - 1)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t align = alignment < SIM_GRAN ? SIM_GRAN : alignment, a = 0;
    pthread_mutex_lock(&gm_sim.vmm_lock);
    if (addr != 0 && addr % align == 0 && gm_sim_ext_take_at(&gm_sim.vmm_va, addr, size) == 0)
        a = addr;                       /* the hint was free */
    else
        a = gm_sim_ext_take(&gm_sim.vmm_va, size, align);
    if (a != 0) {
        struct gm_sim_rec r = { a, size, size, SIM_K_RESERVE, NULL, NULL, NULL };
        if (gm_sim_rmap_add(&gm_sim.vmm_res, &r) != 0) {
            gm_sim_ext_give(&gm_sim.vmm_va, a, size);
            a = 0;
        }
    }
    pthread_mutex_unlock(&gm_sim.vmm_lock);
    if (a == 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = a;
    return CUDA_SUCCESS;
}

/* Removes mapping record r; vmm_lock held. */
static void unmap_rec(struct gm_sim_rec *r)
{
    struct gm_sim_vmh *v = r->owner;
    gm_sim_rmap_del(&gm_sim.vmm_map, r);
    v->maps--;
    vmh_maybe_free(v);
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&gm_sim.vmm_lock);
    struct gm_sim_rec *res = gm_sim_rmap_find(&gm_sim.vmm_res, ptr);
    struct gm_sim_rec *m = gm_sim_rmap_from(&gm_sim.vmm_map, ptr);
    if (res == NULL || res->size != size || (m != NULL && m->base < ptr + size)) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else {
        gm_sim_rmap_del(&gm_sim.vmm_res, res);
        gm_sim_ext_give(&gm_sim.vmm_va, ptr, size);
    }
    pthread_mutex_unlock(&gm_sim.vmm_lock);
    return rc;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                  CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (flags != 0 || size == 0 || size % SIM_GRAN != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (offset != 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&gm_sim.vmm_lock);
    struct gm_sim_vmh *v = vmh_get(handle);
    struct gm_sim_rec *res = gm_sim_rmap_covering(&gm_sim.vmm_res, ptr);
    struct gm_sim_rec *next = gm_sim_rmap_from(&gm_sim.vmm_map, ptr);
    if (v != NULL && size <= v->size && res != NULL &&
        size <= res->base + res->size - ptr &&
        gm_sim_rmap_covering(&gm_sim.vmm_map, ptr) == NULL &&
        (next == NULL || next->base >= ptr + size)) {
        struct gm_sim_rec r = { ptr, size, size, SIM_K_MAP, v, NULL, NULL };
        if (gm_sim_rmap_add(&gm_sim.vmm_map, &r) == 0) {
            v->maps++;
            rc = CUDA_SUCCESS;
        } else {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    pthread_mutex_unlock(&gm_sim.vmm_lock);
    return rc;
}

/* True when [ptr, ptr + size) is covered by back-to-back mappings; with
 * `whole`, they must also start at ptr and end at ptr + size exactly.
 * vmm_lock held. */
static bool range_mapped(uint64_t ptr, uint64_t size, bool whole)
{
    uint64_t at = ptr, end = ptr + size;
    if (size == 0 || end < ptr)
        return false;
    while (at < end) {
        struct gm_sim_rec *r = whole ? gm_sim_rmap_find(&gm_sim.vmm_map, at)
                                     : gm_sim_rmap_covering(&gm_sim.vmm_map, at);
        if (r == NULL)
            return false;
        at = r->base + r->size;
    }
    return !whole || at == end;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&gm_sim.vmm_lock);
    if (range_mapped(ptr, size, true)) {
        struct gm_sim_rec *m;
        while ((m = gm_sim_rmap_from(&gm_sim.vmm_map, ptr)) != NULL && m->base < ptr + size)
            unmap_rec(m);
    } else {
        rc = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&gm_sim.vmm_lock);
    return rc;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (desc == NULL || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE)
            return CUDA_ERROR_INVALID_VALUE;
        if (!gm_sim_valid_dev(desc[i].location.id))
            return CUDA_ERROR_INVALID_DEVICE;
        if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
            desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
            desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&gm_sim.vmm_lock);
    if (!range_mapped(ptr, size, false))
        rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&gm_sim.vmm_lock);
    return rc;
}
