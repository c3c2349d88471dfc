/*
 * tools/sim/simcuda_proc.c — cuGetProcAddress (4 arguments) and
 * cuGetProcAddress_v2 of the simulated driver.
 *
 * One table lists every entry point the simulator implements: the name
 * programs ask for, the CUDA version that introduced the variant, whether it
 * is the per-thread-default-stream (_ptsz) variant, and the function. A
 * lookup picks, among the rows of that name whose version is <= the one
 * asked, the newest; with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM a
 * per-thread row wins over a legacy one. Outcomes:
 *   found                          -> CUDA_SUCCESS, status SUCCESS
 *   name unknown                   -> CUDA_SUCCESS, *pfn NULL, SYMBOL_NOT_FOUND
 *   name known, version too low    -> CUDA_ERROR_NOT_FOUND, *pfn NULL,
 *                                     VERSION_NOT_SUFFICIENT
 *   version above 13000, bad flags, NULL symbol or pfn -> CUDA_ERROR_INVALID_VALUE
 * Works before cuInit (that is how runtimes find cuInit). Invariant: the
 * table only names functions of this library, so every pointer handed out
 * is the simulator's own.
 */
#include "tools/sim/simcuda.h"

#include <string.h>

struct proc_ent {
    const char *name;
    int version;
    bool ptsz;
    void *fn;
};

#define P(name, ver, fn) { name, ver, false, (void *)fn }
#define PT(name, ver, fn) { name, ver, true, (void *)fn }

static const struct proc_ent proc_tab[] = {
    P("cuInit", 2000, cuInit),
    P("cuDriverGetVersion", 2020, cuDriverGetVersion),
    P("cuGetErrorString", 6000, cuGetErrorString),
    P("cuGetErrorName", 6000, cuGetErrorName),
    P("cuGetProcAddress", 11030, cuGetProcAddress),
    P("cuGetProcAddress", 12000, cuGetProcAddress_v2),

    P("cuDeviceGet", 2000, cuDeviceGet),
    P("cuDeviceGetCount", 2000, cuDeviceGetCount),
    P("cuDeviceGetName", 2000, cuDeviceGetName),
    P("cuDeviceGetUuid", 9020, cuDeviceGetUuid),
    P("cuDeviceGetUuid", 11040, cuDeviceGetUuid_v2),
    P("cuDeviceTotalMem", 2000, cuDeviceTotalMem),
    P("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
    P("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    P("cuDeviceGetPCIBusId", 4010, cuDeviceGetPCIBusId),
    P("cuDeviceGetByPCIBusId", 4010, cuDeviceGetByPCIBusId),
    P("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool),
    P("cuDeviceGetMemPool", 11020, cuDeviceGetMemPool),
    P("cuDeviceSetMemPool", 11020, cuDeviceSetMemPool),

    P("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    P("cuDevicePrimaryCtxRelease", 7000, cuDevicePrimaryCtxRelease),
    P("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
    P("cuDevicePrimaryCtxReset", 7000, cuDevicePrimaryCtxReset),
    P("cuDevicePrimaryCtxReset", 11000, cuDevicePrimaryCtxReset_v2),
    P("cuDevicePrimaryCtxSetFlags", 7000, cuDevicePrimaryCtxSetFlags),
    P("cuDevicePrimaryCtxSetFlags", 11000, cuDevicePrimaryCtxSetFlags_v2),
    P("cuDevicePrimaryCtxGetState", 7000, cuDevicePrimaryCtxGetState),

    P("cuCtxCreate", 2000, cuCtxCreate),
    P("cuCtxCreate", 3020, cuCtxCreate_v2),
    P("cuCtxCreate", 11040, cuCtxCreate_v3),
    P("cuCtxCreate", 12050, cuCtxCreate_v4),
    P("cuCtxDestroy", 2000, cuCtxDestroy),
    P("cuCtxDestroy", 4000, cuCtxDestroy_v2),
    P("cuCtxPushCurrent", 2000, cuCtxPushCurrent),
    P("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2),
    P("cuCtxPopCurrent", 2000, cuCtxPopCurrent),
    P("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2),
    P("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    P("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    P("cuCtxGetDevice", 2000, cuCtxGetDevice),
    P("cuCtxGetDevice", 13000, cuCtxGetDevice_v2),
    P("cuCtxSynchronize", 2000, cuCtxSynchronize),
    P("cuCtxSynchronize", 13000, cuCtxSynchronize_v2),

    P("cuStreamCreate", 2000, cuStreamCreate),
    P("cuStreamDestroy", 2000, cuStreamDestroy),
    P("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    P("cuStreamSynchronize", 2000, cuStreamSynchronize),
    PT("cuStreamSynchronize", 7000, cuStreamSynchronize_ptsz),
    P("cuStreamGetDevice", 12080, cuStreamGetDevice),
    PT("cuStreamGetDevice", 12080, cuStreamGetDevice_ptsz),

    P("cuMemGetInfo", 2000, cuMemGetInfo),
    P("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    P("cuMemAlloc", 2000, cuMemAlloc),
    P("cuMemAlloc", 3020, cuMemAlloc_v2),
    P("cuMemAllocPitch", 2000, cuMemAllocPitch),
    P("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
    P("cuMemFree", 2000, cuMemFree),
    P("cuMemFree", 3020, cuMemFree_v2),
    P("cuMemGetAddressRange", 2000, cuMemGetAddressRange),
    P("cuMemGetAddressRange", 3020, cuMemGetAddressRange_v2),
    P("cuPointerGetAttribute", 4000, cuPointerGetAttribute),
    P("cuMemAllocHost", 2000, cuMemAllocHost),
    P("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    P("cuMemHostAlloc", 2020, cuMemHostAlloc),
    P("cuMemFreeHost", 2000, cuMemFreeHost),
    P("cuMemAllocManaged", 6000, cuMemAllocManaged),

    P("cuMemAllocAsync", 11020, cuMemAllocAsync),
    PT("cuMemAllocAsync", 11020, cuMemAllocAsync_ptsz),
    P("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync),
    PT("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync_ptsz),
    P("cuMemFreeAsync", 11020, cuMemFreeAsync),
    PT("cuMemFreeAsync", 11020, cuMemFreeAsync_ptsz),
    P("cuMemPoolCreate", 11020, cuMemPoolCreate),
    P("cuMemPoolDestroy", 11020, cuMemPoolDestroy),
    P("cuMemPoolGetAttribute", 11020, cuMemPoolGetAttribute),
    P("cuMemPoolSetAttribute", 11020, cuMemPoolSetAttribute),
    P("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo),
    P("cuMemPoolImportFromShareableHandle", 11020, cuMemPoolImportFromShareableHandle),

    P("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity),
    P("cuMemCreate", 10020, cuMemCreate),
    P("cuMemRelease", 10020, cuMemRelease),
    P("cuMemRetainAllocationHandle", 11000, cuMemRetainAllocationHandle),
    P("cuMemGetAllocationPropertiesFromHandle", 10020, cuMemGetAllocationPropertiesFromHandle),
    P("cuMemAddressReserve", 10020, cuMemAddressReserve),
    P("cuMemAddressFree", 10020, cuMemAddressFree),
    P("cuMemMap", 10020, cuMemMap),
    P("cuMemUnmap", 10020, cuMemUnmap),
    P("cuMemSetAccess", 10020, cuMemSetAccess),

    P("cuArrayCreate", 2000, cuArrayCreate),
    P("cuArrayCreate", 3020, cuArrayCreate_v2),
    P("cuArray3DCreate", 2000, cuArray3DCreate),
    P("cuArray3DCreate", 3020, cuArray3DCreate_v2),
    P("cuArrayDestroy", 2000, cuArrayDestroy),
    P("cuMipmappedArrayCreate", 5000, cuMipmappedArrayCreate),
    P("cuMipmappedArrayDestroy", 5000, cuMipmappedArrayDestroy),
    P("cuArrayGetMemoryRequirements", 11060, cuArrayGetMemoryRequirements),
    P("cuMipmappedArrayGetMemoryRequirements", 11060, cuMipmappedArrayGetMemoryRequirements),
};

#undef P
#undef PT

static CUresult proc_lookup(const char *symbol, void **pfn, int cudaVersion,
                            cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    const struct proc_ent *legacy = NULL, *per_thread = NULL;
    bool known = false, has_pt = false;
    bool want_pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;

    if (symbol == NULL || pfn == NULL || cudaVersion > SIM_DRIVER_VERSION ||
        flags > (CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    if (cudaVersion < 0)
        cudaVersion = SIM_DRIVER_VERSION;
    for (size_t i = 0; i < sizeof proc_tab / sizeof proc_tab[0]; i++) {
        const struct proc_ent *e = &proc_tab[i];
        if (strcmp(e->name, symbol) != 0)
            continue;
        known = true;
        has_pt |= e->ptsz;
        if (e->version > cudaVersion)
            continue;
        const struct proc_ent **best = e->ptsz ? &per_thread : &legacy;
        if (*best == NULL || e->version > (*best)->version)
            *best = e;
    }
    const struct proc_ent *pick = (want_pt && has_pt) ? per_thread : legacy;
    *pfn = pick != NULL ? pick->fn : NULL;
    if (status != NULL)
        *status = pick != NULL ? CU_GET_PROC_ADDRESS_SUCCESS
                  : known      ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                               : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_SUCCESS;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    return proc_lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return proc_lookup(symbol, pfn, cudaVersion, flags, NULL);
}
