/*
 * tests/progs/cudahold.c — hold device memory until told to stop: loads
 * libcuda.so.1 with dlopen (so a preloaded shim sees it as a framework
 * would), allocates SIZE bytes with cuMemAlloc_v2, prints one line, then
 * waits until FILE exists (polling every 20 ms, at most SECONDS), frees
 * and exits. Lets a test look at live processes (gpumem ps) for as long
 * as it needs, without burning CPU.
 *
 *   cudahold SIZE [FILE SECONDS]
 *
 * Exit status: 0 held and freed; 1 driver or usage error; 3 the
 * allocation was refused; 4 FILE did not appear in time.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static unsigned long long size_arg(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);

    switch (*end) {
    case 'K': v <<= 10; end++; break;
    case 'M': v <<= 20; end++; break;
    case 'G': v <<= 30; end++; break;
    default: break;
    }
    return *end == '\0' ? v : 0;
}

int main(int argc, char **argv)
{
    unsigned long long size = argc >= 2 ? size_arg(argv[1]) : 0;
    if (size == 0 || (argc != 2 && argc != 4)) {
        fprintf(stderr, "usage: cudahold SIZE[K|M|G] [FILE SECONDS]\n");
        return 1;
    }
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (h == NULL) {
        fprintf(stderr, "cudahold: cannot load libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    __typeof__(cuInit) *init = (__typeof__(cuInit) *)dlsym(h, "cuInit");
    __typeof__(cuDeviceGet) *dget = (__typeof__(cuDeviceGet) *)dlsym(h, "cuDeviceGet");
    __typeof__(cuDevicePrimaryCtxRetain) *retain =
        (__typeof__(cuDevicePrimaryCtxRetain) *)dlsym(h, "cuDevicePrimaryCtxRetain");
    __typeof__(cuCtxSetCurrent) *setc = (__typeof__(cuCtxSetCurrent) *)dlsym(h, "cuCtxSetCurrent");
    __typeof__(cuMemAlloc_v2) *alloc = (__typeof__(cuMemAlloc_v2) *)dlsym(h, "cuMemAlloc_v2");
    __typeof__(cuMemFree_v2) *mfree = (__typeof__(cuMemFree_v2) *)dlsym(h, "cuMemFree_v2");
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr p;
    if (!init || !dget || !retain || !setc || !alloc || !mfree ||
        init(0) != CUDA_SUCCESS || dget(&dev, 0) != CUDA_SUCCESS ||
        retain(&ctx, dev) != CUDA_SUCCESS || setc(ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "cudahold: cannot set up device 0\n");
        return 1;
    }
    CUresult rc = alloc(&p, (size_t)size);
    if (rc != CUDA_SUCCESS) {
        printf("cudahold: %llu bytes refused (%d)\n", size, (int)rc);
        return 3;
    }
    printf("cudahold: holding %llu bytes\n", size);
    fflush(stdout);
    if (argc == 4) {
        long ticks = atol(argv[3]) * 50;
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        while (access(argv[2], F_OK) != 0) {
            if (ticks-- <= 0) {
                fprintf(stderr, "cudahold: %s did not appear\n", argv[2]);
                mfree(p);
                return 4;
            }
            nanosleep(&ts, NULL);
        }
    }
    mfree(p);
    return 0;
}
