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
 * before the creation exactly.
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
    cuDevicePrimaryCtxRelease(dev);
    return gc_finish();
}
