/*
 * tests/gpu/gc_rt.h — runtime-API helpers for the real-GPU cases: start-up
 * on device 0, cudaMemGetInfo as the memory query, cudaMalloc as the
 * byte-granular API (and the filler of the fixed-size edges), and the
 * check that cudaMemGetInfo and cudaGetDeviceProperties report the limit.
 * Static only; include after gc.h.
 */
#ifndef GC_RT_H
#define GC_RT_H

#include <cuda_runtime.h>

#include "gc.h"

static inline int rt_meminfo(size_t *free_b, size_t *total_b)
{
    return (int)cudaMemGetInfo(free_b, total_b);
}

static inline int rt_malloc(size_t bytes, void **h)
{
    int rc = (int)cudaMalloc(h, bytes);
    if (rc != 0)
        (void)cudaGetLastError(); /* not sticky: clear it for the next call */
    return rc;
}

static inline int rt_free(void *h)
{
    return (int)cudaFree(h);
}

static const struct gc_api rt_malloc_api = {"cudaMalloc", rt_malloc, rt_free};

/* Device 0 with its primary context made current; skips without one. */
static inline void rt_start(void)
{
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess || n == 0) {
        char why[160];
        snprintf(why, sizeof why, "no CUDA device (cudaGetDeviceCount: %s)",
                 cudaGetErrorString(rc));
        gc_skip(why);
    }
    rc = cudaSetDevice(0);
    if (rc == cudaSuccess)
        rc = cudaFree(0);
    if (rc != cudaSuccess)
        gc_abort("cudaSetDevice(0)/cudaFree(0)", (int)rc);
}

/* cudaMemGetInfo's total and cudaGetDeviceProperties' totalGlobalMem. */
static inline void rt_check_totals(void)
{
    size_t f = 0, t = 0;
    int rc = rt_meminfo(&f, &t);
    gc_check(rc == 0, "cudaMemGetInfo succeeds (got %d)", rc);
    gc_check(f <= t, "cudaMemGetInfo free %zu <= total %zu", f, t);
    gc_check_total("cudaMemGetInfo total", t);
    struct cudaDeviceProp p;
    memset(&p, 0, sizeof p);
    rc = (int)cudaGetDeviceProperties(&p, 0);
    gc_check(rc == 0, "cudaGetDeviceProperties succeeds (got %d)", rc);
    gc_check_total("totalGlobalMem", p.totalGlobalMem);
}

#endif
