/*
 * shim/intercept/hooks_pool.c — the pool wrappers (cuMemPoolCreate,
 * cuMemPoolDestroy, cuMemPoolTrimTo, cuMemPoolImportFromShareableHandle,
 * cuDeviceSetMemPool, cuDeviceGetMemPool, cuDeviceGetDefaultMemPool) and
 * the synchronisation points after which a pool may have released memory
 * (cuCtxSynchronize(_v2), cuStreamSynchronize(_ptsz), cuEventSynchronize).
 * Wrappers only: what a pool is charged is shim/account/pools.c.
 */
#include <stdbool.h>

#include "shim/account/pools.h"
#include "shim/account/state.h"
#include "shim/driver/real.h"
#include "shim/intercept/lifecycle.h"
#include "shim/record/record.h"

GM_EXPORT CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool,
                                           const CUmemPoolProps *props)
{
    GM_NEED_REAL(cuMemPoolCreate);
    bool on = gm_active();
    gm_depth++;
    CUresult rc = gm_real.cuMemPoolCreate(pool, props);
    gm_depth--;
    if (on && rc == CUDA_SUCCESS && pool != NULL && props != NULL &&
        props->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        gm_pool_created(*pool, props->location.id);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuMemPoolImportFromShareableHandle(
    CUmemoryPool *pool, void *handle, CUmemAllocationHandleType type,
    unsigned long long flags)
{
    GM_NEED_REAL(cuMemPoolImportFromShareableHandle);
    bool on = gm_active();
    gm_depth++;
    CUresult rc = gm_real.cuMemPoolImportFromShareableHandle(pool, handle,
                                                            type, flags);
    gm_depth--;
    if (on && rc == CUDA_SUCCESS && pool != NULL)
        gm_pool_imported(*pool, gm_current_device());
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
    GM_NEED_REAL(cuMemPoolDestroy);
    bool on = gm_active();
    gm_depth++;
    CUresult rc = gm_real.cuMemPoolDestroy(pool);
    gm_depth--;
    if (on && rc == CUDA_SUCCESS)
        gm_pool_destroyed(pool);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool,
                                           size_t minBytesToKeep)
{
    GM_NEED_REAL(cuMemPoolTrimTo);
    bool on = gm_active();
    gm_depth++;
    CUresult rc = gm_real.cuMemPoolTrimTo(pool, minBytesToKeep);
    gm_depth--;
    if (on && rc == CUDA_SUCCESS)
        gm_pool_trimmed(pool);
    if (on)
        GM_REC(GM_RO_POOL_TRIM, 0, -1, minBytesToKeep, 0, 0,
               (uintptr_t)pool, rc);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    GM_NEED_REAL(cuDeviceSetMemPool);
    bool on = gm_active();
    gm_depth++;
    CUresult rc = gm_real.cuDeviceSetMemPool(dev, pool);
    gm_depth--;
    if (on && rc == CUDA_SUCCESS)
        gm_pool_set_current(dev, pool);
    return rc;
}

/* A pool handle the program is given for a device: from then on the
 * shim knows the pool's device, even before that device has a context
 * (its blocks are that device's whatever the stream's). */
GM_EXPORT CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    GM_NEED_REAL(cuDeviceGetMemPool);
    bool on = gm_active();
    gm_depth++;
    CUresult rc = gm_real.cuDeviceGetMemPool(pool, dev);
    gm_depth--;
    if (on && rc == CUDA_SUCCESS && pool != NULL)
        gm_pool_known(*pool, dev);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool,
                                                     CUdevice dev)
{
    GM_NEED_REAL(cuDeviceGetDefaultMemPool);
    bool on = gm_active();
    gm_depth++;
    CUresult rc = gm_real.cuDeviceGetDefaultMemPool(pool, dev);
    gm_depth--;
    if (on && rc == CUDA_SUCCESS && pool != NULL)
        gm_pool_known(*pool, dev);
    return rc;
}

#define SYNC_WRAPPER(name, params, args)                                  \
    GM_EXPORT CUresult CUDAAPI name params                               \
    {                                                                     \
        GM_NEED_REAL(name);                                               \
        bool on = gm_active();                                            \
        gm_depth++;                                                       \
        CUresult rc = gm_real.name args;                                  \
        gm_depth--;                                                       \
        if (on && rc == CUDA_SUCCESS)                                     \
            gm_pools_synced();                                                 \
        if (on)                                                           \
            GM_REC(GM_RO_SYNC, 0, -1, 0, 0, 0, 0, rc);                    \
        return rc;                                                        \
    }

SYNC_WRAPPER(cuCtxSynchronize, (void), ())
SYNC_WRAPPER(cuCtxSynchronize_v2, (CUcontext ctx), (ctx))
SYNC_WRAPPER(cuStreamSynchronize, (CUstream s), (s))
SYNC_WRAPPER(cuStreamSynchronize_ptsz, (CUstream s), (s))
SYNC_WRAPPER(cuEventSynchronize, (CUevent e), (e))
