/*
 * tests/progs/drv.h — the driver as a test program finds it: libcuda.so.1
 * opened with dlopen, its functions looked up with dlsym (the lookup the
 * preloaded shim answers with its wrappers), device 0's primary context
 * made current. gm_prog_drv_open returns 0, or 1 with a line on stderr
 * naming the program and what failed.
 */
#ifndef GM_PROG_DRV_H
#define GM_PROG_DRV_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

struct gm_prog_drv {
    __typeof__(cuMemAlloc_v2) *alloc;
    __typeof__(cuMemFree_v2) *free;
};

static inline int gm_prog_drv_open(const char *prog, struct gm_prog_drv *f)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (h == NULL) {
        fprintf(stderr, "%s: %s\n", prog, dlerror());
        return 1;
    }
    __typeof__(cuInit) *init = (__typeof__(cuInit) *)dlsym(h, "cuInit");
    __typeof__(cuDeviceGet) *dget =
        (__typeof__(cuDeviceGet) *)dlsym(h, "cuDeviceGet");
    __typeof__(cuDevicePrimaryCtxRetain) *retain =
        (__typeof__(cuDevicePrimaryCtxRetain) *)dlsym(
            h, "cuDevicePrimaryCtxRetain");
    __typeof__(cuCtxSetCurrent) *set =
        (__typeof__(cuCtxSetCurrent) *)dlsym(h, "cuCtxSetCurrent");
    f->alloc = (__typeof__(cuMemAlloc_v2) *)dlsym(h, "cuMemAlloc_v2");
    f->free = (__typeof__(cuMemFree_v2) *)dlsym(h, "cuMemFree_v2");
    CUdevice dev;
    CUcontext ctx;
    if (!init || !dget || !retain || !set || !f->alloc || !f->free ||
        init(0) != CUDA_SUCCESS || dget(&dev, 0) != CUDA_SUCCESS ||
        retain(&ctx, dev) != CUDA_SUCCESS || set(ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "%s: driver setup failed\n", prog);
        return 1;
    }
    return 0;
}

#endif
