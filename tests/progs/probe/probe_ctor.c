/*
 * tests/progs/probe/probe_ctor.c — a library whose constructor uses CUDA
 * (through dlopen + dlsym) before the program's main runs: its allocation
 * must be counted like any other.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

__attribute__((visibility("default"))) unsigned long long gm_probe_ctor_ptr;
__attribute__((visibility("default"))) int gm_probe_ctor_rc = -1;

__attribute__((constructor)) static void early_cuda(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        return;
    __typeof__(cuInit) *init = (__typeof__(cuInit) *)dlsym(h, "cuInit");
    __typeof__(cuDevicePrimaryCtxRetain) *retain =
        (__typeof__(cuDevicePrimaryCtxRetain) *)dlsym(h,
                                                     "cuDevicePrimaryCtxRetain");
    __typeof__(cuCtxSetCurrent) *set =
        (__typeof__(cuCtxSetCurrent) *)dlsym(h, "cuCtxSetCurrent");
    __typeof__(cuMemAlloc_v2) *alloc =
        (__typeof__(cuMemAlloc_v2) *)dlsym(h, "cuMemAlloc_v2");
    CUcontext c;
    CUdeviceptr p = 0;
    if (!init || !retain || !set || !alloc || init(0) || retain(&c, 0) ||
        set(c))
        return;
    gm_probe_ctor_rc = (int)alloc(&p, 100u << 20);
    gm_probe_ctor_ptr = p;
}
