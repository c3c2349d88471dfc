/*
 * tests/gpu/rt_entry.cu — driver functions obtained from the runtime with
 * cudaGetDriverEntryPoint (which calls the driver's cuGetProcAddress_v2):
 * the driver-API checks run through those pointers. Also: the by-version
 * lookup returns the same cuMemAlloc, and cuMemAllocAsync asked for with
 * the per-thread default-stream flag (the _ptsz variant) is limited too.
 */
#include "gc_drv.h"
#include "gc_rt.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

typedef CUresult (*alloc_async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);

static void *entry(const char *name, unsigned long long flags)
{
    void *p = NULL;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    int rc = (int)cudaGetDriverEntryPoint(name, &p, flags, &q);
    gc_check(rc == 0 && p && q == cudaDriverEntryPointSuccess,
             "cudaGetDriverEntryPoint(%s, flags %llu) resolves (rc %d, status %d)", name,
             flags, rc, (int)q);
    return p;
}

#define LOAD(field, name)                                                                   \
    do {                                                                                    \
        void *s_ = entry(name, cudaEnableDefault);                                          \
        memcpy(&(field), &s_, sizeof s_);                                                   \
    } while (0)

static void check_by_version(const struct gc_drv *d)
{
    void *p = NULL;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    int rc = (int)cudaGetDriverEntryPointByVersion("cuMemAlloc", &p, 12000,
                                                   cudaEnableDefault, &q);
    void *first = NULL;
    memcpy(&first, &d->mem_alloc, sizeof first);
    gc_check(rc == 0 && p == first,
             "cudaGetDriverEntryPointByVersion(cuMemAlloc, 12000) gives the same "
             "function (rc %d)", rc);
}

/* The per-thread-default-stream variants of cuMemAllocAsync/FreeAsync. */
static void check_ptsz_async(void)
{
    alloc_async_fn aa = NULL;
    free_async_fn fa = NULL;
    void *p1 = entry("cuMemAllocAsync", cudaEnablePerThreadDefaultStream);
    void *p2 = entry("cuMemFreeAsync", cudaEnablePerThreadDefaultStream);
    memcpy(&aa, &p1, sizeof p1);
    memcpy(&fa, &p2, sizeof p2);
    if (!aa || !fa)
        return;
    CUdeviceptr p = 0;
    int rc = (int)aa(&p, 8 * GC_MIB, (CUstream)0);
    if (gc_check(rc == 0, "cuMemAllocAsync_ptsz(8 MiB) succeeds (got %d)", rc)) {
        rc = (int)fa(p, (CUstream)0);
        gc_check(rc == 0, "cuMemFreeAsync_ptsz succeeds (got %d)", rc);
    }
    gc_check(cudaStreamSynchronize(cudaStreamPerThread) == cudaSuccess,
             "per-thread stream synchronizes");
    if (!gc_limit)
        return;
    size_t f0 = gc_free_now(rt_meminfo);
    rc = (int)aa(&p, f0 + 1, (CUstream)0);
    gc_check(rc == GC_OOM, "cuMemAllocAsync_ptsz(free + 1) refused with OOM (got %d)", rc);
    if (rc == 0)
        fa(p, (CUstream)0);
    (void)cudaGetLastError();
    cudaStreamSynchronize(cudaStreamPerThread);
}

int main(int argc, char **argv)
{
    gc_init(argc, argv);
    rt_start();
    struct gc_drv d;
    LOAD(d.init, "cuInit");
    LOAD(d.device_get, "cuDeviceGet");
    LOAD(d.primary_retain, "cuDevicePrimaryCtxRetain");
    LOAD(d.ctx_set_current, "cuCtxSetCurrent");
    LOAD(d.mem_alloc, "cuMemAlloc");
    LOAD(d.mem_free, "cuMemFree");
    LOAD(d.mem_get_info, "cuMemGetInfo");
    LOAD(d.total_mem, "cuDeviceTotalMem");
    LOAD(d.memset_d8, "cuMemsetD8");
    LOAD(d.memcpy_dtoh, "cuMemcpyDtoH");
    CUdevice dev = drv_start(&d);
    drv_run_checks(dev);
    check_by_version(&d);
    check_ptsz_async();
    return gc_finish();
}
