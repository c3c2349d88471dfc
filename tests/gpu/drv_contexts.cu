/*
 * tests/gpu/drv_contexts.cu — a second context on one device (cuCtxCreate
 * next to the primary context) costs device memory as the first did;
 * under the shim it is charged while it lives and given back, to the
 * byte, when it is destroyed, and the limit holds with both.
 *
 * Without the shim: the driver's free memory drops by about a context at
 * the creation and comes back at the destroy (GC_NATIVE_SLACK).
 * Under the shim (--expect-limit): used = limit - free; the second
 * context's charge is within GC_NATIVE_SLACK of the first's, the limit
 * edge is exact with both, and the destroy returns used to its figure
 * before the creation exactly. Then what a context's end frees with it
 * (ended_contexts_free_their_memory).
 */
#include <cuda.h>

#include "gc.h"

static unsigned long long free_now(void)
{
    size_t f = 0, t = 0;
    CUresult rc = cuMemGetInfo(&f, &t);
    if (rc != CUDA_SUCCESS)
        gc_abort("cuMemGetInfo", (int)rc);
    return f;
}

static unsigned long long diff(unsigned long long a, unsigned long long b)
{
    return a > b ? a - b : b - a;
}

/* What a context's end frees: a created context's blocks, found dead by
 * cuPointerGetAttribute (CUDA_ERROR_INVALID_VALUE, the answer the shim
 * relies on when other contexts live), while the primary's stay; then a
 * reset frees the primary's. Under the shim the charge follows at once:
 * free memory is back to f1 (primary context only, nothing allocated)
 * less what still lives, exactly. */
static void ended_contexts_free_their_memory(CUdevice dev, CUcontext primary,
                                             unsigned long long f1)
{
    CUcontext third = NULL, c = NULL;
    CUdeviceptr a = 0, m = 0, b = 0;
    CUresult rc;
    if ((rc = cuCtxCreate(&third, NULL, 0, dev)) != CUDA_SUCCESS)
        gc_abort("cuCtxCreate", (int)rc);
    if ((rc = cuMemAlloc(&a, 64 * GC_MIB)) != CUDA_SUCCESS)
        gc_abort("cuMemAlloc", (int)rc);
    if ((rc = cuMemAllocManaged(&m, 16 * GC_MIB, CU_MEM_ATTACH_GLOBAL)) !=
        CUDA_SUCCESS)
        gc_abort("cuMemAllocManaged", (int)rc);
    if ((rc = cuCtxSetCurrent(primary)) != CUDA_SUCCESS)
        gc_abort("cuCtxSetCurrent", (int)rc);
    if ((rc = cuMemAlloc(&b, 32 * GC_MIB)) != CUDA_SUCCESS)
        gc_abort("cuMemAlloc", (int)rc);
    if ((rc = cuCtxDestroy(third)) != CUDA_SUCCESS)
        gc_abort("cuCtxDestroy", (int)rc);
    rc = cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, a);
    gc_check(rc == CUDA_ERROR_INVALID_VALUE,
             "a block of the destroyed context is unknown to the driver (%d)",
             (int)rc);
    rc = cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, b);
    gc_check(rc == CUDA_SUCCESS && c == primary,
             "the primary context's block lives on (%d)", (int)rc);
    unsigned long long f4 = free_now();
    if (gc_limit)
        gc_check(f4 == f1 - 32 * GC_MIB, "after the destroy only the primary's "
                 "32 MiB stay charged (free %llu, want %llu)", f4,
                 f1 - 32 * GC_MIB);
    else
        gc_check(diff(f4, f1 - 32 * GC_MIB) <= GC_NATIVE_SLACK,
                 "the destroy frees its blocks");
    if ((rc = cuDevicePrimaryCtxReset(dev)) != CUDA_SUCCESS)
        gc_abort("cuDevicePrimaryCtxReset", (int)rc);
    if ((rc = cuDevicePrimaryCtxRetain(&primary, dev)) != CUDA_SUCCESS)
        gc_abort("cuDevicePrimaryCtxRetain", (int)rc);
    cuDevicePrimaryCtxRelease(dev); /* the reset kept the reference */
    if ((rc = cuCtxSetCurrent(primary)) != CUDA_SUCCESS)
        gc_abort("cuCtxSetCurrent", (int)rc);
    unsigned long long f5 = free_now();
    if (gc_limit)
        gc_check(f5 == f1, "after the reset nothing is charged but the context "
                 "(free %llu, want %llu)", f5, f1);
    else
        gc_check(diff(f5, f1) <= GC_NATIVE_SLACK, "the reset frees its blocks");
}

int main(int argc, char **argv)
{
    gc_init(argc, argv);
    CUresult rc = cuInit(0);
    if (rc != CUDA_SUCCESS)
        gc_skip("cuInit failed: no usable GPU");
    CUdevice dev;
    CUcontext primary, second = NULL;
    if ((rc = cuDeviceGet(&dev, 0)) != CUDA_SUCCESS)
        gc_abort("cuDeviceGet", (int)rc);
    if ((rc = cuDevicePrimaryCtxRetain(&primary, dev)) != CUDA_SUCCESS)
        gc_abort("cuDevicePrimaryCtxRetain", (int)rc);
    if ((rc = cuCtxSetCurrent(primary)) != CUDA_SUCCESS)
        gc_abort("cuCtxSetCurrent", (int)rc);
    unsigned long long f1 = free_now();
    /* CUDA 13: cuCtxCreate is cuCtxCreate_v4 (no creation parameters). */
    if ((rc = cuCtxCreate(&second, NULL, 0, dev)) != CUDA_SUCCESS) /* current */
        gc_abort("cuCtxCreate", (int)rc);
    unsigned long long f2 = free_now();
    if (!gc_limit) {
        gc_note("a second context took %llu MiB", (f1 - f2) / GC_MIB);
        gc_check(f2 < f1 && f1 - f2 > GC_NATIVE_SLACK,
                 "the second context takes memory (%llu MiB)",
                 (f1 > f2 ? f1 - f2 : 0) / GC_MIB);
    } else {
        unsigned long long first = gc_limit - f1, both = gc_limit - f2;
        gc_note("first context %llu MiB, both %llu MiB", first / GC_MIB,
                both / GC_MIB);
        gc_check(both > first && diff(both - first, first) <= GC_NATIVE_SLACK,
                 "the second context is charged like the first (%llu vs %llu MiB)",
                 (both > first ? both - first : 0) / GC_MIB, first / GC_MIB);
        CUdeviceptr p = 0, q = 0;
        rc = cuMemAlloc(&p, (size_t)f2);
        gc_check(rc == CUDA_SUCCESS, "what is left under the limit fits (%d)", (int)rc);
        rc = cuMemAlloc(&q, 1);
        gc_check(rc == CUDA_ERROR_OUT_OF_MEMORY,
                 "one byte more is refused with both contexts (%d)", (int)rc);
        if (p)
            cuMemFree(p);
        if (q)
            cuMemFree(q);
    }
    if ((rc = cuCtxDestroy(second)) != CUDA_SUCCESS)
        gc_abort("cuCtxDestroy", (int)rc);
    if ((rc = cuCtxSetCurrent(primary)) != CUDA_SUCCESS)
        gc_abort("cuCtxSetCurrent", (int)rc);
    unsigned long long f3 = free_now();
    if (gc_limit)
        gc_check(f3 == f1, "the destroy gives the charge back exactly (%llu, %llu)",
                 f3, f1);
    else
        gc_check(diff(f3, f1) <= GC_NATIVE_SLACK, "the destroy frees the context");
    ended_contexts_free_their_memory(dev, primary, f1);
    cuDevicePrimaryCtxRelease(dev);
    return gc_finish();
}
