/*
 * tools/simcuda_array.c — CUDA arrays of the simulated driver:
 * cuArrayCreate(_v2), cuArray3DCreate(_v2), cuArrayDestroy,
 * cuMipmappedArrayCreate/Destroy, cuArrayGetMemoryRequirements,
 * cuMipmappedArrayGetMemoryRequirements.
 *
 * Size rule: width x max(height,1) x max(depth,1) x element size x channels,
 * rounded up to 512 bytes (the reported alignment). A mipmapped array is the
 * sum of its levels, each level halving every non-zero dimension (layers of
 * a layered array are not halved), each level rounded up to 512 bytes.
 * Arrays have no device address; they charge the current context's device
 * and are freed with that context. Supported formats: the 8/16/32-bit
 * integer, half and float formats with 1, 2 or 4 channels.
 * Invariants: an array is registered (SIM_H_ARRAY / SIM_H_MIPMAP) and
 * charged exactly while it lives; its size never changes.
 */
#include "tools/simcuda.h"

#include <stdlib.h>
#include <string.h>

static unsigned fmt_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0;
    }
}

/* Bytes of one level, rounded to 512; 0 when invalid or overflowing. */
static uint64_t level_bytes(uint64_t w, uint64_t h, uint64_t d, CUarray_format f, unsigned ch)
{
    unsigned eb = fmt_bytes(f);
    if (w == 0 || eb == 0 || (ch != 1 && ch != 2 && ch != 4) || (d != 0 && h == 0))
        return 0;
    __extension__ unsigned __int128 b = (unsigned __int128)w * (h ? h : 1) * (d ? d : 1) * eb * ch;
    b = (b + SIM_ALIGN - 1) / SIM_ALIGN * SIM_ALIGN;
    return b > (unsigned __int128)UINT64_MAX ? 0 : (uint64_t)b;
}

static uint64_t halve(uint64_t v, unsigned l)
{
    if (v == 0)
        return 0;
    v = l >= 64 ? 0 : v >> l;
    return v ? v : 1;
}

/* Sum of the levels; 0 when invalid. */
static uint64_t mipmap_bytes(const CUDA_ARRAY3D_DESCRIPTOR *a, unsigned levels)
{
    bool layered = (a->Flags & CUDA_ARRAY3D_LAYERED) != 0;
    uint64_t big = a->Width, total = 0;
    unsigned max_levels = 0;

    if (a->Height > big)
        big = a->Height;
    if (!layered && a->Depth > big)
        big = a->Depth;
    for (; big != 0; big >>= 1)
        max_levels++;
    if (levels == 0 || levels > max_levels)
        return 0;
    for (unsigned l = 0; l < levels; l++) {
        uint64_t b = level_bytes(halve(a->Width, l), halve(a->Height, l),
                                 layered ? a->Depth : halve(a->Depth, l),
                                 a->Format, a->NumChannels);
        if (b == 0 || total + b < total)
            return 0;
        total += b;
    }
    return total;
}

/* Creates an array object of `bytes` in the current context. */
static CUresult array_new(void **out, uint64_t bytes, int kind)
{
    int dev;
    const void *ctx;
    CUresult rc = gm_sim_current(&dev, &ctx);
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
    o->bytes = bytes;
    struct gm_sim_dev *d = &gm_sim.dev[dev];
    pthread_mutex_lock(&d->lock);
    if (!gm_sim_charge(d, bytes)) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else if ((rc = gm_sim_obj_add(d, o)) != CUDA_SUCCESS) {
        gm_sim_uncharge(d, bytes);
    } else {
        d->array_bytes += bytes;
    }
    pthread_mutex_unlock(&d->lock);
    if (rc != CUDA_SUCCESS) {
        free(o);
        return rc;
    }
    *out = o;
    return CUDA_SUCCESS;
}

static CUresult array_create(CUarray *h, const void *desc, uint64_t bytes)
{
    void *o;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (h == NULL || desc == NULL || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = array_new(&o, bytes, SIM_H_ARRAY)) == CUDA_SUCCESS)
        *h = (CUarray)o;
    return rc;
}

CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    const CUDA_ARRAY_DESCRIPTOR *a = pAllocateArray;
    uint64_t b = a ? level_bytes(a->Width, a->Height, 0, a->Format, a->NumChannels) : 0;
    return array_create(pHandle, a, b);
}

CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *pAllocateArray)
{
    const CUDA_ARRAY_DESCRIPTOR_v1 *a = pAllocateArray;
    uint64_t b = a ? level_bytes(a->Width, a->Height, 0, a->Format, a->NumChannels) : 0;
    return array_create(pHandle, a, b);
}

CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    const CUDA_ARRAY3D_DESCRIPTOR *a = pAllocateArray;
    uint64_t b = a ? level_bytes(a->Width, a->Height, a->Depth, a->Format, a->NumChannels) : 0;
    return array_create(pHandle, a, b);
}

CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *pAllocateArray)
{
    const CUDA_ARRAY3D_DESCRIPTOR_v1 *a = pAllocateArray;
    uint64_t b = a ? level_bytes(a->Width, a->Height, a->Depth, a->Format, a->NumChannels) : 0;
    return array_create(pHandle, a, b);
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                unsigned int numMipmapLevels)
{
    void *o;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (pHandle == NULL || pMipmappedArrayDesc == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t b = mipmap_bytes(pMipmappedArrayDesc, numMipmapLevels);
    if (b == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = array_new(&o, b, SIM_H_MIPMAP)) == CUDA_SUCCESS)
        *pHandle = (CUmipmappedArray)o;
    return rc;
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
    memset(req, 0, sizeof *req);
    req->size = o->bytes;
    req->alignment = SIM_ALIGN;
    pthread_mutex_unlock(&d->lock);
    return CUDA_SUCCESS;
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
