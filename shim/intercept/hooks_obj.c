/*
 * shim/intercept/hooks_obj.c — wrappers of the handle-based allocations: VMM
 * (cuMemCreate / cuMemRelease / cuMemRetainAllocationHandle / cuMemMap /
 * cuMemUnmap, with reference counts: the charge is released when the last
 * release or unmap leaves no reference, shim/account/mappings.h), CUDA
 * arrays and mipmapped arrays (charged what the driver's memory
 * requirements say), and pinned host memory (recorded as host memory,
 * never charged to a device).
 */
#include "shim/admit/oomsnap.h"
#include "shim/intercept/lifecycle.h"
#include "shim/telemetry/abi.h"
#include "shim/admit/admit.h"
#include "shim/driver/cuformat.h"
#include "shim/driver/real.h"
#include "shim/account/device.h"
#include "shim/account/mappings.h"
#include "shim/account/state.h"
#include "shim/record/record.h"


/* ---- VMM -------------------------------------------------------------- */

static CUresult create_acct(CUmemGenericAllocationHandle *handle, size_t size,
                            const CUmemAllocationProp *prop,
                            unsigned long long flags)
{
    int dev = prop->location.id;
    struct gm_dev *d = gm_dev_get(dev);
    if (d == NULL)
        return gm_real.cuMemCreate(handle, size, prop, flags);
    enum gm_admit ad = gm_admit_reserve(dev, d, size, GM_API_MEM_CREATE,
                                        false);
    if (ad == GM_ADMIT_DRIVER) { /* uncountable: the driver's own answer */
        gm_depth++;
        CUresult rc = gm_real.cuMemCreate(handle, size, prop, flags);
        if (rc == CUDA_SUCCESS && gm_real.cuMemRelease != NULL)
            gm_real.cuMemRelease(*handle);
        gm_depth--;
        return rc == CUDA_SUCCESS ? CUDA_ERROR_OUT_OF_MEMORY : rc;
    }
    if (ad != GM_ADMIT_OK)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t t0 = gm_hook_ticks();
    gm_depth++;
    CUresult rc = gm_real.cuMemCreate(handle, size, prop, flags);
    gm_depth--;
    uint64_t t1 = gm_hook_ticks();
    if (rc != CUDA_SUCCESS) {
        gm_acct_rollback(d, size);
        return rc;
    }
    gm_acct_commit(dev, d, GM_NS_HANDLE, *handle, size, GM_API_MEM_CREATE, 0,
                   t0, t1);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle,
                                       size_t size,
                                       const CUmemAllocationProp *prop,
                                       unsigned long long flags)
{
    GM_NEED_REAL(cuMemCreate);
    if (!gm_active() || handle == NULL || prop == NULL || size == 0 ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return gm_real.cuMemCreate(handle, size, prop, flags);
    CUresult rc = create_acct(handle, size, prop, flags);
    GM_REC(GM_RO_CREATE, 0, prop->location.id, size,
           rc == CUDA_SUCCESS ? *handle : 0, 0, 0, rc);
    return rc;
}

static CUresult release_acct(CUmemGenericAllocationHandle handle)
{
    struct gm_alloc a;
    int u = gm_track_unref(GM_NS_HANDLE, handle, &a);
    gm_depth++;
    CUresult rc = gm_real.cuMemRelease(handle);
    gm_depth--;
    if (rc != CUDA_SUCCESS) {
        if (u == 1)
            gm_track_insert(&a, NULL);
        else if (u == 0)
            gm_track_ref(GM_NS_HANDLE, handle);
        return rc;
    }
    if (u == 1) {
        uint64_t t = gm_hook_ticks();
        gm_acct_released(&a, GM_API_MEM_RELEASE, t, t);
    }
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
    GM_NEED_REAL(cuMemRelease);
    if (!gm_active())
        return gm_real.cuMemRelease(handle);
    CUresult rc = release_acct(handle);
    GM_REC(GM_RO_RELEASE, 0, -1, 0, handle, 0, 0, rc);
    return rc;
}

/* A mapping holds its handle's memory: it takes a reference on the
 * handle's entry, and the charge ends with the last of the handle's
 * releases and unmaps (shim/account/mappings.h). */
GM_EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size,
                                    size_t offset,
                                    CUmemGenericAllocationHandle handle,
                                    unsigned long long flags)
{
    GM_NEED_REAL(cuMemMap);
    bool on = gm_active();
    bool held = on && gm_map_hold(handle);
    gm_depth++;
    CUresult rc = gm_real.cuMemMap(ptr, size, offset, handle, flags);
    gm_depth--;
    if (held)
        gm_map_done(ptr, size, handle, rc == CUDA_SUCCESS);
    if (on)
        GM_REC(GM_RO_MAP, 0, -1, size, handle, ptr, offset, rc);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    GM_NEED_REAL(cuMemUnmap);
    bool on = gm_active();
    struct gm_unmap u;
    if (on)
        gm_unmap_take(&u, ptr, size);
    gm_depth++;
    CUresult rc = gm_real.cuMemUnmap(ptr, size);
    gm_depth--;
    if (on) {
        gm_unmap_done(&u, rc == CUDA_SUCCESS);
        GM_REC(GM_RO_UNMAP, 0, -1, size, 0, ptr, 0, rc);
    }
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuMemRetainAllocationHandle(
    CUmemGenericAllocationHandle *handle, void *addr)
{
    GM_NEED_REAL(cuMemRetainAllocationHandle);
    gm_depth++;
    CUresult rc = gm_real.cuMemRetainAllocationHandle(handle, addr);
    gm_depth--;
    if (rc == CUDA_SUCCESS && handle != NULL && gm_active()) {
        gm_track_ref(GM_NS_HANDLE, *handle);
        GM_REC(GM_RO_RETAIN, 0, -1, 0, *handle, (uintptr_t)addr, 0, rc);
    }
    return rc;
}

/* ---- arrays ----------------------------------------------------------- */

/* Unknown formats count as one byte per channel (the driver refuses
 * them; the reservation is rolled back). */
static uint64_t format_bytes(CUarray_format f)
{
    unsigned b = gm_cu_format_bytes(f);
    return b ? b : 1;
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return a != 0 && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

/* One level's bytes by the driver's layout: rows of width x element size
 * rounded up to 512 bytes, times height and depth. */
static uint64_t extent_bytes(uint64_t w, uint64_t h, uint64_t dp,
                             CUarray_format f, unsigned ch)
{
    uint64_t row = mul_sat(mul_sat(w ? w : 1, format_bytes(f)), ch ? ch : 1);
    row = row > UINT64_MAX - 511 ? UINT64_MAX : (row + 511) & ~(uint64_t)511;
    return mul_sat(mul_sat(row, h ? h : 1), dp ? dp : 1);
}

/* Arrays are laid out in 64 KiB units. */
static uint64_t array_round(uint64_t n)
{
    const uint64_t a = 64u << 10;
    return n > UINT64_MAX - (a - 1) ? UINT64_MAX : (n + a - 1) & ~(a - 1);
}

/* What the driver says the array takes, or `est` when it cannot say. */
static uint64_t array_actual(CUarray a, int dev, uint64_t est)
{
    CUDA_ARRAY_MEMORY_REQUIREMENTS req;
    if (gm_real.cuArrayGetMemoryRequirements == NULL)
        return est;
    gm_depth++;
    CUresult rc = gm_real.cuArrayGetMemoryRequirements(&req, a, dev);
    gm_depth--;
    return rc == CUDA_SUCCESS && req.size ? (uint64_t)req.size : est;
}

static uint64_t mipmap_actual(CUmipmappedArray m, int dev, uint64_t est)
{
    CUDA_ARRAY_MEMORY_REQUIREMENTS req;
    if (gm_real.cuMipmappedArrayGetMemoryRequirements == NULL)
        return est;
    gm_depth++;
    CUresult rc = gm_real.cuMipmappedArrayGetMemoryRequirements(&req, m, dev);
    gm_depth--;
    return rc == CUDA_SUCCESS && req.size ? (uint64_t)req.size : est;
}

enum akind { A_V2, A_V1, A_3D_V2, A_3D_V1, A_MIPMAP };

struct areq {
    enum akind kind;
    const void *desc;
    unsigned levels;
    uint64_t est;
    unsigned api;
};

static CUresult array_real(const struct areq *r, void *out)
{
    CUresult rc;
    gm_depth++;
    switch (r->kind) {
    case A_V2:
        rc = gm_real.cuArrayCreate_v2(out, r->desc);
        break;
    case A_V1:
        rc = gm_real.cuArrayCreate(out, r->desc);
        break;
    case A_3D_V2:
        rc = gm_real.cuArray3DCreate_v2(out, r->desc);
        break;
    case A_3D_V1:
        rc = gm_real.cuArray3DCreate(out, r->desc);
        break;
    default:
        rc = gm_real.cuMipmappedArrayCreate(out, r->desc, r->levels);
        break;
    }
    gm_depth--;
    return rc;
}

static void array_destroy_real(const struct areq *r, void *h)
{
    gm_depth++;
    if (r->kind == A_MIPMAP)
        gm_real.cuMipmappedArrayDestroy(h);
    else
        gm_real.cuArrayDestroy(h);
    gm_depth--;
}

/* Create through the real driver; `out` receives a CUarray or
 * CUmipmappedArray (both pointer-sized handles). */
static CUresult array_create_acct(const struct areq *r, void **out)
{
    int dev = gm_current_device();
    struct gm_dev *d = gm_dev_get(dev);
    if (d == NULL)
        return array_real(r, out);
    enum gm_admit ad = gm_admit_reserve(dev, d, r->est, r->api, false);
    if (ad == GM_ADMIT_DRIVER) { /* uncountable: the driver's own answer */
        CUresult rc = array_real(r, out);
        if (rc == CUDA_SUCCESS)
            array_destroy_real(r, *out);
        return rc == CUDA_SUCCESS ? CUDA_ERROR_OUT_OF_MEMORY : rc;
    }
    if (ad != GM_ADMIT_OK)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t t0 = gm_hook_ticks();
    CUresult rc = array_real(r, out);
    uint64_t t1 = gm_hook_ticks();
    if (rc != CUDA_SUCCESS) {
        gm_acct_rollback(d, r->est);
        return rc;
    }
    uint64_t actual = r->kind == A_MIPMAP
                          ? mipmap_actual(*out, dev, r->est)
                          : array_actual(*out, dev, r->est);
    if (!gm_admit_adjust(d, r->est, actual)) {
        array_destroy_real(r, *out);
        gm_acct_rollback(d, r->est);
        gm_admit_refused(d, (unsigned)dev, r->api, actual,
                      gm_budget_used(&d->budget), gm_budget_limit(&d->budget));
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    enum gm_ns ns = r->kind == A_MIPMAP ? GM_NS_MIPMAP : GM_NS_ARRAY;
    gm_acct_commit(dev, d, ns, (uint64_t)(uintptr_t)*out, actual, r->api, 0,
                   t0, t1);
    return rc;
}

static CUresult array_create(const struct areq *r, void **out)
{
    CUresult rc = array_create_acct(r, out);
    GM_REC(GM_RO_ARRAY, r->kind == A_MIPMAP ? GM_RECF_MIPMAP : 0,
           gm_current_device(), r->est,
           rc == CUDA_SUCCESS ? (uintptr_t)*out : 0, r->api, 0, rc);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuArrayCreate_v2(
    CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *desc)
{
    GM_NEED_REAL(cuArrayCreate_v2);
    if (!gm_active() || pHandle == NULL || desc == NULL ||
        gm_real.cuArrayDestroy == NULL)
        return gm_real.cuArrayCreate_v2(pHandle, desc);
    struct areq r = { A_V2, desc, 0,
                      array_round(extent_bytes(desc->Width, desc->Height, 1,
                                               desc->Format,
                                               desc->NumChannels)),
                      GM_API_ARRAY_CREATE };
    return array_create(&r, (void **)pHandle);
}

GM_EXPORT CUresult CUDAAPI cuArrayCreate(
    CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *desc)
{
    GM_NEED_REAL(cuArrayCreate);
    if (!gm_active() || pHandle == NULL || desc == NULL ||
        gm_real.cuArrayDestroy == NULL)
        return gm_real.cuArrayCreate(pHandle, desc);
    struct areq r = { A_V1, desc, 0,
                      array_round(extent_bytes(desc->Width, desc->Height, 1,
                                               desc->Format,
                                               desc->NumChannels)),
                      GM_API_ARRAY_CREATE };
    return array_create(&r, (void **)pHandle);
}

GM_EXPORT CUresult CUDAAPI cuArray3DCreate_v2(
    CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    GM_NEED_REAL(cuArray3DCreate_v2);
    /* Deferred-mapping arrays take no memory: what is mapped into them
     * later comes from cuMemCreate, which is charged. */
    if (!gm_active() || pHandle == NULL || desc == NULL ||
        (desc->Flags & CUDA_ARRAY3D_DEFERRED_MAPPING) ||
        gm_real.cuArrayDestroy == NULL)
        return gm_real.cuArray3DCreate_v2(pHandle, desc);
    struct areq r = { A_3D_V2, desc, 0,
                      array_round(extent_bytes(desc->Width, desc->Height,
                                               desc->Depth, desc->Format,
                                               desc->NumChannels)),
                      GM_API_ARRAY3D_CREATE };
    return array_create(&r, (void **)pHandle);
}

GM_EXPORT CUresult CUDAAPI cuArray3DCreate(
    CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *desc)
{
    GM_NEED_REAL(cuArray3DCreate);
    /* Deferred mapping: no memory, as for cuArray3DCreate_v2. */
    if (!gm_active() || pHandle == NULL || desc == NULL ||
        (desc->Flags & CUDA_ARRAY3D_DEFERRED_MAPPING) ||
        gm_real.cuArrayDestroy == NULL)
        return gm_real.cuArray3DCreate(pHandle, desc);
    struct areq r = { A_3D_V1, desc, 0,
                      array_round(extent_bytes(desc->Width, desc->Height,
                                               desc->Depth, desc->Format,
                                               desc->NumChannels)),
                      GM_API_ARRAY3D_CREATE };
    return array_create(&r, (void **)pHandle);
}

/* The levels the driver makes: CUDA clamps numMipmapLevels to
 * [1, 1 + floor(log2(largest extent))]. The depth of a layered array is
 * its layer count, which halves at no level, so it is no extent here (as
 * the simulated driver, checked against a real one, counts it). */
static unsigned mipmap_levels(const CUDA_ARRAY3D_DESCRIPTOR *d,
                              unsigned levels)
{
    uint64_t big = d->Width > d->Height ? d->Width : d->Height;
    if (!(d->Flags & CUDA_ARRAY3D_LAYERED) && d->Depth > big)
        big = d->Depth;
    unsigned chain = big ? 64u - (unsigned)__builtin_clzll(big) : 1u;
    return levels == 0 ? 1u : levels > chain ? chain : levels;
}

static uint64_t mipmap_estimate(const CUDA_ARRAY3D_DESCRIPTOR *d,
                                unsigned levels)
{
    uint64_t sum = 0, w = d->Width, h = d->Height, dp = d->Depth;
    levels = mipmap_levels(d, levels);
    for (unsigned l = 0; l < levels; l++) {
        uint64_t b = extent_bytes(w, h, dp, d->Format, d->NumChannels);
        sum = b > UINT64_MAX - sum ? UINT64_MAX : sum + b;
        w = w > 1 ? w / 2 : w;
        h = h > 1 ? h / 2 : h;
        if (!(d->Flags & CUDA_ARRAY3D_LAYERED))
            dp = dp > 1 ? dp / 2 : dp;
    }
    return array_round(sum);
}

GM_EXPORT CUresult CUDAAPI cuMipmappedArrayCreate(
    CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc,
    unsigned int numMipmapLevels)
{
    GM_NEED_REAL(cuMipmappedArrayCreate);
    if (!gm_active() || pHandle == NULL || desc == NULL ||
        (desc->Flags & CUDA_ARRAY3D_DEFERRED_MAPPING) ||
        gm_real.cuMipmappedArrayDestroy == NULL)
        return gm_real.cuMipmappedArrayCreate(pHandle, desc, numMipmapLevels);
    struct areq r = { A_MIPMAP, desc, numMipmapLevels,
                      mipmap_estimate(desc, numMipmapLevels),
                      GM_API_MIPMAP_CREATE };
    return array_create(&r, (void **)pHandle);
}

static CUresult handle_destroy(enum gm_ns ns, unsigned api, void *h)
{
    if (!gm_active()) {
        return ns == GM_NS_MIPMAP ? gm_real.cuMipmappedArrayDestroy(h)
                                  : gm_real.cuArrayDestroy(h);
    }
    struct gm_alloc a;
    bool known = gm_track_remove(ns, (uint64_t)(uintptr_t)h, &a);
    uint64_t t0 = gm_hook_ticks();
    gm_depth++;
    CUresult rc = ns == GM_NS_MIPMAP ? gm_real.cuMipmappedArrayDestroy(h)
                                     : gm_real.cuArrayDestroy(h);
    gm_depth--;
    uint64_t t1 = gm_hook_ticks();
    if (rc != CUDA_SUCCESS) {
        if (known)
            gm_track_insert(&a, NULL);
        return rc;
    }
    if (known)
        gm_acct_released(&a, api, t0, t1);
    GM_REC(GM_RO_ARRAY_DESTROY, ns == GM_NS_MIPMAP ? GM_RECF_MIPMAP : 0, -1,
           0, (uintptr_t)h, 0, 0, rc);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuArrayDestroy(CUarray hArray)
{
    GM_NEED_REAL(cuArrayDestroy);
    return handle_destroy(GM_NS_ARRAY, GM_API_ARRAY_DESTROY, hArray);
}

GM_EXPORT CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray h)
{
    GM_NEED_REAL(cuMipmappedArrayDestroy);
    return handle_destroy(GM_NS_MIPMAP, GM_API_MIPMAP_DESTROY, h);
}

/* ---- pinned host memory ------------------------------------------------ */

static void host_record(void *p, uint64_t size, unsigned api)
{
    struct gm_alloc a = { .key = (uint64_t)(uintptr_t)p, .size = size,
                          .ns = GM_NS_HOST, .api = (uint8_t)api,
                          .flags = GM_AF_UNCHARGED, .refs = 1 };
    struct gm_alloc old;
    if (gm_track_insert(&a, &old) == 1)
        gm_tel_host(&gm_st.tel, old.api, old.key, -(int64_t)old.size);
    gm_tel_host(&gm_st.tel, api, a.key, (int64_t)size);
}

GM_EXPORT CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize,
                                          unsigned int Flags)
{
    GM_NEED_REAL(cuMemHostAlloc);
    gm_depth++;
    CUresult rc = gm_real.cuMemHostAlloc(pp, bytesize, Flags);
    gm_depth--;
    if (rc == CUDA_SUCCESS && pp != NULL && gm_active())
        host_record(*pp, bytesize, GM_API_MEM_HOST_ALLOC);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    GM_NEED_REAL(cuMemAllocHost_v2);
    gm_depth++;
    CUresult rc = gm_real.cuMemAllocHost_v2(pp, bytesize);
    gm_depth--;
    if (rc == CUDA_SUCCESS && pp != NULL && gm_active())
        host_record(*pp, bytesize, GM_API_MEM_ALLOC_HOST);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuMemAllocHost(void **pp, unsigned int bytesize)
{
    GM_NEED_REAL(cuMemAllocHost);
    gm_depth++;
    CUresult rc = gm_real.cuMemAllocHost(pp, bytesize);
    gm_depth--;
    if (rc == CUDA_SUCCESS && pp != NULL && gm_active())
        host_record(*pp, bytesize, GM_API_MEM_ALLOC_HOST);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuMemFreeHost(void *p)
{
    GM_NEED_REAL(cuMemFreeHost);
    if (!gm_active() || p == NULL)
        return gm_real.cuMemFreeHost(p);
    struct gm_alloc a;
    bool known = gm_track_remove(GM_NS_HOST, (uint64_t)(uintptr_t)p, &a);
    gm_depth++;
    CUresult rc = gm_real.cuMemFreeHost(p);
    gm_depth--;
    if (rc != CUDA_SUCCESS) {
        if (known)
            gm_track_insert(&a, NULL);
        return rc;
    }
    if (known)
        gm_tel_host(&gm_st.tel, GM_API_MEM_FREE_HOST, a.key,
                    -(int64_t)a.size);
    return rc;
}
