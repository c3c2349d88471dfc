/*
 * tests/gpu/bench_alloc.cu — cost of a cuMemAlloc_v2 + cuMemFree_v2 pair at
 * 256 B, 64 KiB, 2 MiB, 64 MiB and 1 GiB, and of one cuMemGetInfo call,
 * through the driver API linked directly. One process measures one variant
 * (run.sh chooses it with the environment: no preload, the shim without a
 * limit, with a limit, in static mode) and prints CSV lines
 *   pair,SIZE,N,NS_PER_PAIR   and   getinfo,0,N,NS_PER_CALL
 * N is calibrated so each figure takes about 0.1 s. With --static, it first
 * checks that allocations really come from one arena (cuMemGetAddressRange
 * of a small allocation spans more than it) and exits 3 if not. With
 * --async it times cuMemAllocAsync + cuMemFreeAsync pairs instead, on one
 * stream from the device's default pool kept warm (release threshold
 * UINT64_MAX: freed memory stays in the pool, so a pair is a pool hit
 * after the first), at 256 B, 64 KiB, 2 MiB and 64 MiB, the stream
 * synchronised once at the end of each loop:
 *   apair,SIZE,N,NS_PER_PAIR
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(const char *what, CUresult rc)
{
    fprintf(stderr, "bench_alloc: %s failed with code %d\n", what, (int)rc);
    exit(1);
}

/* Time n alloc+free pairs of the given size; ns per pair. */
static double pairs(size_t bytes, long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        CUdeviceptr p = 0;
        CUresult rc = cuMemAlloc(&p, bytes);
        if (rc != CUDA_SUCCESS)
            die("cuMemAlloc", rc);
        rc = cuMemFree(p);
        if (rc != CUDA_SUCCESS)
            die("cuMemFree", rc);
    }
    return (now_ns() - t0) / (double)n;
}

static long calibrate(double ns_each, double target_ns);

/* Time n stream-ordered pairs on stream s; ns per pair. */
static double apairs(size_t bytes, long n, CUstream s)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        CUdeviceptr p = 0;
        CUresult rc = cuMemAllocAsync(&p, bytes, s);
        if (rc != CUDA_SUCCESS)
            die("cuMemAllocAsync", rc);
        rc = cuMemFreeAsync(p, s);
        if (rc != CUDA_SUCCESS)
            die("cuMemFreeAsync", rc);
    }
    CUresult rc = cuStreamSynchronize(s);
    if (rc != CUDA_SUCCESS)
        die("cuStreamSynchronize", rc);
    return (now_ns() - t0) / (double)n;
}

static int run_async(CUdevice dev, double target)
{
    static const size_t asizes[] = {256, 64u << 10, 2u << 20, 64u << 20};
    CUmemoryPool pool;
    CUstream s;
    CUresult rc = cuDeviceGetDefaultMemPool(&pool, dev);
    if (rc != CUDA_SUCCESS)
        die("cuDeviceGetDefaultMemPool", rc);
    cuuint64_t keep = ~(cuuint64_t)0;
    if ((rc = cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep)) !=
        CUDA_SUCCESS)
        die("cuMemPoolSetAttribute", rc);
    if ((rc = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
        die("cuStreamCreate", rc);
    for (size_t i = 0; i < sizeof asizes / sizeof asizes[0]; i++) {
        apairs(asizes[i], 3, s); /* the pool grows once; hits from here */
        long n = calibrate(apairs(asizes[i], 5, s), target);
        printf("apair,%zu,%ld,%.1f\n", asizes[i], n, apairs(asizes[i], n, s));
        fflush(stdout);
    }
    cuStreamDestroy(s);
    return 0;
}

static double getinfo(long n)
{
    size_t f, t;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        CUresult rc = cuMemGetInfo(&f, &t);
        if (rc != CUDA_SUCCESS)
            die("cuMemGetInfo", rc);
    }
    return (now_ns() - t0) / (double)n;
}

/* How many repetitions fill the target time, from a short trial. */
static long calibrate(double ns_each, double target_ns)
{
    double n = target_ns / (ns_each > 1.0 ? ns_each : 1.0);
    if (n < 10)
        n = 10;
    if (n > 200000)
        n = 200000;
    return (long)n;
}

static int is_arena(void)
{
    CUdeviceptr p = 0, base = 0;
    size_t size = 0;
    CUresult rc = cuMemAlloc(&p, 2u << 20);
    if (rc != CUDA_SUCCESS)
        die("cuMemAlloc (arena probe)", rc);
    rc = cuMemGetAddressRange(&base, &size, p);
    cuMemFree(p);
    if (rc != CUDA_SUCCESS)
        die("cuMemGetAddressRange", rc);
    return size > (4u << 20);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {256, 64u << 10, 2u << 20, 64u << 20, 1u << 30};
    const double target = 1e8; /* 0.1 s per figure */
    int want_static = argc > 1 && strcmp(argv[1], "--static") == 0;
    int want_async = argc > 1 && strcmp(argv[1], "--async") == 0;
    CUdevice dev;
    CUcontext ctx;
    CUresult rc = cuInit(0);
    if (rc != CUDA_SUCCESS)
        die("cuInit", rc);
    if ((rc = cuDeviceGet(&dev, 0)) != CUDA_SUCCESS)
        die("cuDeviceGet", rc);
    if ((rc = cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS)
        die("cuDevicePrimaryCtxRetain", rc);
    if ((rc = cuCtxSetCurrent(ctx)) != CUDA_SUCCESS)
        die("cuCtxSetCurrent", rc);
    if (want_async)
        return run_async(dev, target);
    if (want_static && !is_arena()) {
        fprintf(stderr, "bench_alloc: allocations do not come from a static arena\n");
        return 3;
    }
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        pairs(sizes[i], 3); /* warm-up */
        long n = calibrate(pairs(sizes[i], 5), target);
        printf("pair,%zu,%ld,%.1f\n", sizes[i], n, pairs(sizes[i], n));
        fflush(stdout);
    }
    getinfo(10);
    long n = calibrate(getinfo(100), target / 2);
    printf("getinfo,0,%ld,%.1f\n", n, getinfo(n));
    return 0;
}
