/*
 * shim/driver/hooklist.h — the one table of intercepted driver entry points.
 *
 * Each line: X(variant, family, min_version, ptsz)
 *   variant      the exported symbol name (our wrapper has exactly this name
 *                and signature, and the real pointer is looked up by it);
 *   family       the name programs pass to cuGetProcAddress;
 *   min_version  the lowest cudaVersion for which the driver hands out this
 *                variant (used only when the driver returns a pointer that
 *                matches none of the variants we resolved by name);
 *   ptsz         1 if this is the per-thread-default-stream variant
 *                (selected by CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM).
 * Variants of one family are listed from the highest min_version down.
 * Adding an entry point is one line here plus its wrapper.
 */
#ifndef GM_HOOKLIST_H
#define GM_HOOKLIST_H

#define GM_HOOKS(X)                                                     \
    X(cuMemAlloc_v2, cuMemAlloc, 3020, 0)                               \
    X(cuMemAlloc, cuMemAlloc, 0, 0)                                     \
    X(cuMemAllocPitch_v2, cuMemAllocPitch, 3020, 0)                     \
    X(cuMemAllocPitch, cuMemAllocPitch, 0, 0)                           \
    X(cuMemAllocManaged, cuMemAllocManaged, 0, 0)                       \
    X(cuMemFree_v2, cuMemFree, 3020, 0)                                 \
    X(cuMemFree, cuMemFree, 0, 0)                                       \
    X(cuMemAllocAsync_ptsz, cuMemAllocAsync, 0, 1)                      \
    X(cuMemAllocAsync, cuMemAllocAsync, 0, 0)                           \
    X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 0, 1)      \
    X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 0, 0)           \
    X(cuMemFreeAsync_ptsz, cuMemFreeAsync, 0, 1)                        \
    X(cuMemFreeAsync, cuMemFreeAsync, 0, 0)                             \
    X(cuMemCreate, cuMemCreate, 0, 0)                                   \
    X(cuMemRelease, cuMemRelease, 0, 0)                                 \
    X(cuMemRetainAllocationHandle, cuMemRetainAllocationHandle, 0, 0)   \
    X(cuMemMap, cuMemMap, 0, 0)                                         \
    X(cuMemUnmap, cuMemUnmap, 0, 0)                                     \
    X(cuArrayCreate_v2, cuArrayCreate, 3020, 0)                         \
    X(cuArrayCreate, cuArrayCreate, 0, 0)                               \
    X(cuArray3DCreate_v2, cuArray3DCreate, 3020, 0)                     \
    X(cuArray3DCreate, cuArray3DCreate, 0, 0)                           \
    X(cuArrayDestroy, cuArrayDestroy, 0, 0)                             \
    X(cuMipmappedArrayCreate, cuMipmappedArrayCreate, 0, 0)             \
    X(cuMipmappedArrayDestroy, cuMipmappedArrayDestroy, 0, 0)           \
    X(cuMemHostAlloc, cuMemHostAlloc, 0, 0)                             \
    X(cuMemAllocHost_v2, cuMemAllocHost, 3020, 0)                       \
    X(cuMemAllocHost, cuMemAllocHost, 0, 0)                             \
    X(cuMemFreeHost, cuMemFreeHost, 0, 0)                               \
    X(cuMemGetInfo_v2, cuMemGetInfo, 3020, 0)                           \
    X(cuMemGetInfo, cuMemGetInfo, 0, 0)                                 \
    X(cuDeviceTotalMem_v2, cuDeviceTotalMem, 3020, 0)                   \
    X(cuDeviceTotalMem, cuDeviceTotalMem, 0, 0)                         \
    X(cuCtxCreate_v4, cuCtxCreate, 12050, 0)                            \
    X(cuCtxCreate_v3, cuCtxCreate, 11040, 0)                            \
    X(cuCtxCreate_v2, cuCtxCreate, 3020, 0)                             \
    X(cuCtxCreate, cuCtxCreate, 0, 0)                                   \
    X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 0, 0)         \
    X(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, 11000, 0) \
    X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, 0, 0)       \
    X(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset, 11000, 0)    \
    X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset, 0, 0)           \
    X(cuCtxDestroy_v2, cuCtxDestroy, 4000, 0)                           \
    X(cuCtxDestroy, cuCtxDestroy, 0, 0)                                 \
    X(cuMemPoolCreate, cuMemPoolCreate, 0, 0)                           \
    X(cuMemPoolDestroy, cuMemPoolDestroy, 0, 0)                         \
    X(cuMemPoolTrimTo, cuMemPoolTrimTo, 0, 0)                           \
    X(cuMemPoolImportFromShareableHandle,                               \
      cuMemPoolImportFromShareableHandle, 0, 0)                         \
    X(cuDeviceSetMemPool, cuDeviceSetMemPool, 0, 0)                     \
    X(cuDeviceGetMemPool, cuDeviceGetMemPool, 0, 0)                     \
    X(cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool, 0, 0)       \
    X(cuCtxSynchronize_v2, cuCtxSynchronize, 13000, 0)                  \
    X(cuCtxSynchronize, cuCtxSynchronize, 0, 0)                         \
    X(cuStreamSynchronize_ptsz, cuStreamSynchronize, 0, 1)              \
    X(cuStreamSynchronize, cuStreamSynchronize, 0, 0)                   \
    X(cuEventSynchronize, cuEventSynchronize, 0, 0)                     \
    X(cuGetProcAddress_v2, cuGetProcAddress, 12000, 0)                  \
    X(cuGetProcAddress, cuGetProcAddress, 0, 0)

/* Driver functions the shim calls itself but does not wrap. */
#define GM_PLAIN(X)                                                     \
    X(cuCtxGetDevice)                                                   \
    X(cuDevicePrimaryCtxGetState)                                       \
    X(cuCtxPushCurrent_v2)                                              \
    X(cuCtxPopCurrent_v2)                                               \
    X(cuDeviceGetUuid_v2)                                               \
    X(cuArrayGetMemoryRequirements)                                     \
    X(cuMipmappedArrayGetMemoryRequirements)                            \
    X(cuMemPoolGetAttribute)                                            \
    X(cuStreamGetDevice)                                                \
    X(cuStreamGetCtx)                                                   \
    X(cuPointerGetAttribute)

#endif
