/*
 * tools/sim/simcuda_array.c — CUDA arrays of the simulated driver:
 * cuArrayCreate(_v2), cuArray3DCreate(_v2), cuArrayDestroy,
 * cuMipmappedArrayCreate/Destroy, cuArrayGetMemoryRequirements,
 * cuMipmappedArrayGetMemoryRequirements.
 *
 * Size rule (it reproduces what a real driver reports for deferred-mapping
 * arrays): each level takes rows of width x element size x channels rounded
 * up to 512 bytes, times max(height,1) x max(depth,1); a mipmapped array
 * sums its levels (each level halves every non-zero dimension, except the
 * layers of a layered array); the total is rounded up to 64 KiB, the
 * reported alignment. 0 levels count as 1, more than the full chain as the
 * full chain. Arrays have no device address; they charge that size to the
 * current context's device and are freed with the context. Arrays created
 * with CUDA_ARRAY3D_DEFERRED_MAPPING take no memory (it is mapped later)
 * and are the only ones whose memory requirements can be queried, as on a
 * real driver. Supported formats: 8/16/32-bit integers, half, float, with
 * 1, 2 or 4 channels.
 * Invariants: an array is registered (SIM_H_ARRAY / SIM_H_MIPMAP) and
 * charged exactly while it lives; its size never changes.
 */
#include "tools/sim/simcuda.h"

#include <stdlib.h>
#include <string.h>

#include "shim/driver/cuformat.h"

#define ARRAY_ALIGN (64ULL << 10)

__extension__ typedef unsigned __int128 u128;

/* Bytes of one level (not rounded to the alignment); 0 when invalid. */
static u128 level_bytes(uint64_t w, uint64_t h, uint64_t d, CUarray_format f, unsigned ch)
{
    unsigned eb = gm_cu_format_bytes(f);
    if (w == 0 || eb == 0 || (ch != 1 && ch != 2 && ch != 4) || (d != 0 && h == 0))
        return 0;
    u128 row = ((u128)w * eb * ch + SIM_ALIGN - 1) / SIM_ALIGN * SIM_ALIGN;
    return row * (h ? h : 1) * (d ? d : 1);
}

static uint64_t halve(uint64_t v, unsigned l)
{
    if (v == 0)
        return 0;
    v = l >= 64 ? 0 : v >> l;
    return v ? v : 1;
}

/* Total of `levels` levels rounded to ARRAY_ALIGN; 0 when invalid. */
static uint64_t array_bytes(uint64_t w, uint64_t h, uint64_t d, CUarray_format f,
                            unsigned ch, unsigned flags, unsigned levels)
{
    bool layered = (flags & CUDA_ARRAY3D_LAYERED) != 0;
    uint64_t big = w > h ? w : h;
    unsigned max_levels = 0;
    u128 total = 0;

    if (!layered && d > big)
        big = d;
    for (; big != 0; big >>= 1)
        max_levels++;
    if (levels == 0)
        levels = 1;
    if (levels > max_levels)
        levels = max_levels;
    for (unsigned l = 0; l < levels; l++) {
        u128 b = level_bytes(halve(w, l), halve(h, l), layered ? d : halve(d, l), f, ch);
        if (b == 0)
            return 0;
        total += b;
    }
    total = (total + ARRAY_ALIGN - 1) / ARRAY_ALIGN * ARRAY_ALIGN;
    return total > (u128)UINT64_MAX ? 0 : (uint64_t)total;
}

/* Creates an array object of `size` bytes in the current context. */
static CUresult array_new(void **out, uint64_t size, unsigned flags, int kind)
{
    int dev;
    const void *ctx;
    CUresult rc = gm_sim_current(0, &dev, &ctx);
    if (rc != CUDA_SUCCESS)
        return rc;
    if ((rc = gm_sim_alloc_gate()) != CUDA_SUCCESS)
        return rc;
    struct gm_sim_obj *o = calloc(1, sizeof *o);
    if (o == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    o->kind = kind;
    o->dev = dev;
    o->ctx = ctx;
    o->flags = flags;
    o->reqs = size;
    o->bytes = (flags & CUDA_ARRAY3D_DEFERRED_MAPPING) ? 0 : size;
    struct gm_sim_dev *d = &gm_sim.dev[dev];
    pthread_mutex_lock(&d->lock);
    if (!gm_sim_charge(d, o->bytes)) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else if ((rc = gm_sim_obj_add(d, o)) != CUDA_SUCCESS) {
        gm_sim_uncharge(d, o->bytes);
    } else {
        d->array_bytes += o->bytes;
    }
    pthread_mutex_unlock(&d->lock);
    if (rc != CUDA_SUCCESS) {
        free(o);
        return rc;
    }
    *out = o;
    return CUDA_SUCCESS;
}

static CUresult array_create(void *h, int kind, uint64_t size, unsigned flags)
{
    void *o;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (h == NULL || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = array_new(&o, size, flags, kind)) == CUDA_SUCCESS)
        memcpy(h, &o, sizeof o);
    return rc;
}

CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    const CUDA_ARRAY_DESCRIPTOR *a = pAllocateArray;
    uint64_t b = a ? array_bytes(a->Width, a->Height, 0, a->Format, a->NumChannels, 0, 1) : 0;
    return array_create(pHandle, SIM_H_ARRAY, b, 0);
}

CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *pAllocateArray)
{
    const CUDA_ARRAY_DESCRIPTOR_v1 *a = pAllocateArray;
    uint64_t b = a ? array_bytes(a->Width, a->Height, 0, a->Format, a->NumChannels, 0, 1) : 0;
    return array_create(pHandle, SIM_H_ARRAY, b, 0);
}

CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    const CUDA_ARRAY3D_DESCRIPTOR *a = pAllocateArray;
    uint64_t b = a ? array_bytes(a->Width, a->Height, a->Depth, a->Format, a->NumChannels,
                                 a->Flags, 1) : 0;
    return array_create(pHandle, SIM_H_ARRAY, b, a ? a->Flags : 0);
}

CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *pAllocateArray)
{
    const CUDA_ARRAY3D_DESCRIPTOR_v1 *a = pAllocateArray;
    uint64_t b = a ? array_bytes(a->Width, a->Height, a->Depth, a->Format, a->NumChannels,
                                 a->Flags, 1) : 0;
    return array_create(pHandle, SIM_H_ARRAY, b, a ? a->Flags : 0);
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                unsigned int numMipmapLevels)
{
    const CUDA_ARRAY3D_DESCRIPTOR *a = pMipmappedArrayDesc;
    uint64_t b = a ? array_bytes(a->Width, a->Height, a->Depth, a->Format, a->NumChannels,
                                 a->Flags, numMipmapLevels) : 0;
    return array_create(pHandle, SIM_H_MIPMAP, b, a ? a->Flags : 0);
}

static CUresult array_destroy(const void *h, int kind)
{
    struct gm_sim_dev *d;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    gm_sim_latency();
    struct gm_sim_obj *o = gm_sim_lock_handle(kind, (uintptr_t)h, &d);
    if (o == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    gm_sim_obj_del(d, o);
    pthread_mutex_unlock(&d->lock);
    return CUDA_SUCCESS;
}

CUresult cuArrayDestroy(CUarray hArray)
{
    return array_destroy(hArray, SIM_H_ARRAY);
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    return array_destroy(hMipmappedArray, SIM_H_MIPMAP);
}

static CUresult array_reqs(CUDA_ARRAY_MEMORY_REQUIREMENTS *req, const void *h, int kind,
                           CUdevice device)
{
    struct gm_sim_dev *d;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (req == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!gm_sim_valid_dev(device))
        return CUDA_ERROR_INVALID_DEVICE;
    struct gm_sim_obj *o = gm_sim_lock_handle(kind, (uintptr_t)h, &d);
    if (o == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!(o->flags & CUDA_ARRAY3D_DEFERRED_MAPPING))
        rc = CUDA_ERROR_INVALID_VALUE;      /* only deferred-mapping arrays answer */
    else {
        memset(req, 0, sizeof *req);
        req->size = o->reqs;
        req->alignment = ARRAY_ALIGN;
    }
    pthread_mutex_unlock(&d->lock);
    return rc;
}

CUresult cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *memoryRequirements,
                                      CUarray array, CUdevice device)
{
    return array_reqs(memoryRequirements, array, SIM_H_ARRAY, device);
}

CUresult cuMipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *memoryRequirements,
                                               CUmipmappedArray mipmap, CUdevice device)
{
    return array_reqs(memoryRequirements, mipmap, SIM_H_MIPMAP, device);
}
