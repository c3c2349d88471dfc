/*
 * tests/gpu/gc_drv.h — driver-API checks shared by the cases that reach the
 * driver by different paths (linked directly, dlopen + dlsym, the runtime's
 * cudaGetDriverEntryPoint). Each case fills a table of function pointers
 * its own way; the checks are the same: cuDeviceTotalMem and cuMemGetInfo
 * report the limit, an absurd cuMemAlloc fails with OOM, memory is real,
 * the exact limit edge, no drift. Static only; include after gc.h.
 */
#ifndef GC_DRV_H
#define GC_DRV_H

#include <cuda.h>
#include <dlfcn.h>

#include "gc.h"

struct gc_drv {
    CUresult (*init)(unsigned int);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*mem_get_info)(size_t *, size_t *);
    CUresult (*total_mem)(size_t *, CUdevice);
    CUresult (*memset_d8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*memcpy_dtoh)(void *, CUdeviceptr, size_t);
};

static const struct gc_drv *drv; /* the table the wrappers below use */

/* A global lookup (through the preload's dlsym, if any) of an optional
 * driver function; NULL when no loaded library has it. */
static inline void *drv_optional(const char *name)
{
    return dlsym(RTLD_DEFAULT, name);
}

static inline int drv_meminfo(size_t *free_b, size_t *total_b)
{
    return (int)drv->mem_get_info(free_b, total_b);
}

static inline int drv_alloc(size_t bytes, void **h)
{
    CUdeviceptr p = 0;
    int rc = (int)drv->mem_alloc(&p, bytes);
    *h = (void *)(uintptr_t)p;
    return rc;
}

static inline int drv_release(void *h)
{
    return (int)drv->mem_free((CUdeviceptr)(uintptr_t)h);
}

static const struct gc_api drv_alloc_api = {"cuMemAlloc", drv_alloc, drv_release};

/* Check the table is complete (memset_d8 and memcpy_dtoh may be NULL: a
 * driver without them, such as the simulated one, skips the check that
 * memory is real), init the driver, make device 0's primary context
 * current. Skips when the driver finds no device. */
static inline CUdevice drv_start(const struct gc_drv *d)
{
    const void *need[] = {(const void *)d->init,         (const void *)d->device_get,
                          (const void *)d->primary_retain, (const void *)d->ctx_set_current,
                          (const void *)d->mem_alloc,    (const void *)d->mem_free,
                          (const void *)d->mem_get_info, (const void *)d->total_mem};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!need[i])
            gc_abort("resolving driver entry point (NULL pointer)", (int)i);
    drv = d;
    CUresult rc = d->init(0);
    if (rc != CUDA_SUCCESS) {
        char why[120];
        snprintf(why, sizeof why, "no usable CUDA device (cuInit returned %d)", (int)rc);
        gc_skip(why);
    }
    CUdevice dev = 0;
    CUcontext ctx = NULL;
    rc = d->device_get(&dev, 0);
    if (rc != CUDA_SUCCESS)
        gc_abort("cuDeviceGet(0)", (int)rc);
    rc = d->primary_retain(&ctx, dev);
    if (rc != CUDA_SUCCESS)
        gc_abort("cuDevicePrimaryCtxRetain", (int)rc);
    rc = d->ctx_set_current(ctx);
    if (rc != CUDA_SUCCESS)
        gc_abort("cuCtxSetCurrent", (int)rc);
    return dev;
}

static inline void drv_check_totals(CUdevice dev)
{
    size_t f = 0, t = 0, tm = 0;
    int rc = (int)drv->total_mem(&tm, dev);
    gc_check(rc == 0, "cuDeviceTotalMem succeeds (got %d)", rc);
    gc_check_total("cuDeviceTotalMem", tm);
    rc = drv_meminfo(&f, &t);
    gc_check(rc == 0, "cuMemGetInfo succeeds (got %d)", rc);
    gc_check(f <= t, "cuMemGetInfo free %zu <= total %zu", f, t);
    gc_check_total("cuMemGetInfo total", t);
}

static inline void drv_check_usable(void)
{
    const size_t bytes = 64 * GC_MIB;
    unsigned char host[4096];
    CUdeviceptr p = 0;
    if (!drv->memset_d8 || !drv->memcpy_dtoh) {
        gc_note("the driver lacks cuMemsetD8/cuMemcpyDtoH: memory use not checked");
        return;
    }
    int rc = (int)drv->mem_alloc(&p, bytes);
    if (!gc_check(rc == 0, "cuMemAlloc(64 MiB) succeeds (got %d)", rc))
        return;
    rc = (int)drv->memset_d8(p, 0xa5, bytes);
    if (rc == 0)
        rc = (int)drv->memcpy_dtoh(host, p + bytes - sizeof host, sizeof host);
    int same = 1;
    for (size_t i = 0; i < sizeof host; i++)
        same &= host[i] == 0xa5;
    gc_check(rc == 0 && same, "memory set on the device reads back (rc %d)", rc);
    rc = (int)drv->mem_free(p);
    gc_check(rc == 0, "cuMemFree succeeds (got %d)", rc);
}

/* The whole driver-API sequence over the current table. */
static inline void drv_run_checks(CUdevice dev)
{
    drv_check_totals(dev);
    gc_check_huge(&drv_alloc_api);
    drv_check_usable();
    gc_roundtrip(&drv_alloc_api, drv_meminfo, 5 * GC_MIB + 3);
    gc_edge_bytes(&drv_alloc_api, drv_meminfo);
}

#endif
