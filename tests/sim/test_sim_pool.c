/*
 * tests/sim/test_sim_pool.c — Check suite for the simulated driver's
 * stream-ordered pools: default/current pools, reserved vs used bytes, the
 * release threshold, release points, trims, reuse of reserve, growth at the
 * device's edge, maximum sizes, created and destroyed pools, and a
 * PyTorch-like alloc/free pattern.
 *
 * Several sequences replay what a real CUDA 13.0 driver reported on an H200
 * (32 MiB growth units, release at synchronisation down to the threshold),
 * so the expected figures are the real driver's. One process per test
 * (Check's fork mode), each configuring the driver before cuInit.
 */
#include "tools/sim/simcuda.h"
#include "tests/sim/sim_boot.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1ULL << 20)

static void clean_env(void)
{
    gm_simt_env("8G");
}

static CUcontext boot(void)
{
    return gm_simt_boot();
}

static cuuint64_t attr(CUmemoryPool p, CUmemPool_attribute a)
{
    cuuint64_t v = ~0ULL;
    ck_assert_int_eq(cuMemPoolGetAttribute(p, a, &v), CUDA_SUCCESS);
    return v;
}

static cuuint64_t reserved(CUmemoryPool p)
{
    return attr(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
}

static cuuint64_t used(CUmemoryPool p)
{
    return attr(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
}

static void set_threshold(CUmemoryPool p, cuuint64_t v)
{
    ck_assert_int_eq(cuMemPoolSetAttribute(p, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v), CUDA_SUCCESS);
}

static struct gm_simcuda_stats stats(int dev)
{
    struct gm_simcuda_stats s;
    ck_assert_int_eq(gm_simcuda_stats(dev, &s), 0);
    return s;
}

static CUmemoryPool default_pool(void)
{
    CUmemoryPool p = NULL;
    ck_assert_int_eq(cuDeviceGetDefaultMemPool(&p, 0), CUDA_SUCCESS);
    return p;
}

static CUmemoryPool new_pool(int dev, size_t max)
{
    CUmemPoolProps pp;
    CUmemoryPool p = NULL;
    memset(&pp, 0, sizeof pp);
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pp.location.id = dev;
    pp.maxSize = max;
    ck_assert_int_eq(cuMemPoolCreate(&p, &pp), CUDA_SUCCESS);
    return p;
}

static CUdeviceptr aa(size_t n)
{
    CUdeviceptr d = 0;
    ck_assert_int_eq(cuMemAllocAsync(&d, n, NULL), CUDA_SUCCESS);
    return d;
}

static void fa(CUdeviceptr d)
{
    ck_assert_int_eq(cuMemFreeAsync(d, NULL), CUDA_SUCCESS);
}

static void sync0(void)
{
    ck_assert_int_eq(cuStreamSynchronize(NULL), CUDA_SUCCESS);
}

START_TEST(default_and_current)
{
    CUmemoryPool d0, cur, p, p1;
    setenv("SIMCUDA_MEMORY", "8G,8G", 1);
    boot();
    d0 = default_pool();
    ck_assert_int_eq(cuDeviceGetMemPool(&cur, 0), CUDA_SUCCESS);
    ck_assert_ptr_eq(cur, d0);
    ck_assert_int_eq(cuDeviceGetDefaultMemPool(&cur, 1), CUDA_SUCCESS);
    ck_assert_ptr_ne(cur, d0);
    ck_assert_int_eq(cuDeviceGetDefaultMemPool(&cur, 2), CUDA_ERROR_INVALID_DEVICE);
    ck_assert_int_eq(cuDeviceGetDefaultMemPool(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    p = new_pool(0, 0);
    p1 = new_pool(1, 0);
    ck_assert_int_eq(cuDeviceSetMemPool(0, p1), CUDA_ERROR_INVALID_VALUE);  /* other device */
    ck_assert_int_eq(cuDeviceSetMemPool(0, (CUmemoryPool)(void *)&cur), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuDeviceSetMemPool(5, p), CUDA_ERROR_INVALID_DEVICE);
    ck_assert_int_eq(cuDeviceSetMemPool(0, p), CUDA_SUCCESS);
    ck_assert_int_eq(cuDeviceGetMemPool(&cur, 0), CUDA_SUCCESS);
    ck_assert_ptr_eq(cur, p);
    CUdeviceptr a = aa(1000);                   /* served by the current pool */
    ck_assert_uint_eq(used(p), 1000);
    ck_assert_uint_eq(used(d0), 0);
    fa(a);
    ck_assert_int_eq(cuMemPoolDestroy(p), CUDA_SUCCESS);
    ck_assert_int_eq(cuDeviceGetMemPool(&cur, 0), CUDA_SUCCESS);
    ck_assert_ptr_eq(cur, d0);                  /* back to the default */
}
END_TEST

START_TEST(reserved_vs_used)
{
    boot();
    CUmemoryPool p = default_pool();
    CUdeviceptr a = aa(1024);
    ck_assert_uint_eq(reserved(p), 32 * MiB);   /* pools grow by 32 MiB */
    ck_assert_uint_eq(used(p), 1024);
    ck_assert_uint_eq(stats(0).used, 32 * MiB);
    CUdeviceptr b = aa(1000);
    ck_assert_uint_eq(b - a, 1024);             /* packed at 512-byte alignment */
    CUdeviceptr c = aa(3 * MiB);
    ck_assert_uint_eq(reserved(p), 32 * MiB);
    ck_assert_uint_eq(used(p), 2024 + 3 * MiB);
    ck_assert_uint_eq(stats(0).pool_used, 2024 + 3 * MiB);
    ck_assert_uint_eq(stats(0).pool_reserved, 32 * MiB);
    fa(a);
    fa(b);
    fa(c);
    ck_assert_uint_eq(used(p), 0);
    ck_assert_uint_eq(reserved(p), 32 * MiB);   /* held until a synchronisation */
    sync0();
    ck_assert_uint_eq(reserved(p), 0);
    ck_assert_uint_eq(stats(0).used, 0);
    /* A growth spans units: 33 MiB takes two. */
    a = aa(33 * MiB);
    ck_assert_uint_eq(reserved(p), 64 * MiB);
    b = aa(1024);
    c = aa(1000);
    fa(b);
    sync0();
    ck_assert_uint_eq(reserved(p), 64 * MiB);
    fa(a);
    sync0();
    ck_assert_uint_eq(reserved(p), 32 * MiB);   /* the unit still holding c stays */
    ck_assert_uint_eq(used(p), 1000);
    fa(c);
    ck_assert_int_eq(cuCtxSynchronize(), CUDA_SUCCESS);
    ck_assert_uint_eq(reserved(p), 0);
}
END_TEST

START_TEST(release_at_free)
{
    setenv("SIMCUDA_POOL_RELEASE", "free", 1);
    boot();
    CUmemoryPool p = default_pool();
    CUdeviceptr a = aa(5 * MiB);
    ck_assert_uint_eq(reserved(p), 32 * MiB);
    fa(a);
    ck_assert_uint_eq(reserved(p), 0);
    ck_assert_uint_eq(stats(0).used, 0);
}
END_TEST

START_TEST(threshold_and_trim)
{
    boot();
    CUmemoryPool p = default_pool();
    ck_assert_uint_eq(attr(p, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), 0);
    set_threshold(p, 64 * MiB);
    CUdeviceptr a = aa(10 * MiB);
    ck_assert_uint_eq(reserved(p), 32 * MiB);
    fa(a);
    sync0();
    ck_assert_uint_eq(reserved(p), 32 * MiB);   /* under the threshold: kept */
    a = aa(100 * MiB);
    ck_assert_uint_eq(reserved(p), 128 * MiB);  /* grows in place past the free tail */
    fa(a);
    sync0();
    ck_assert_uint_eq(reserved(p), 64 * MiB);   /* down to the threshold */
    a = aa(40 * MiB);
    CUdeviceptr b = aa(40 * MiB);
    ck_assert_uint_eq(reserved(p), 96 * MiB);   /* a released unit backed again */
    ck_assert_uint_eq(used(p), 80 * MiB);
    fa(a);
    fa(b);
    ck_assert_int_eq(cuCtxSynchronize(), CUDA_SUCCESS);
    ck_assert_uint_eq(reserved(p), 64 * MiB);
    set_threshold(p, ~0ULL);                     /* "never release" */
    a = aa(40 * MiB);
    b = aa(40 * MiB);
    fa(a);
    fa(b);
    sync0();
    ck_assert_uint_eq(reserved(p), 96 * MiB);
    ck_assert_int_eq(cuMemPoolTrimTo(p, 50 * MiB), CUDA_SUCCESS);
    ck_assert_uint_eq(reserved(p), 64 * MiB);   /* keeps at least 50 MiB */
    ck_assert_int_eq(cuMemPoolTrimTo(p, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(reserved(p), 0);
    ck_assert_uint_eq(stats(0).used, 0);
    ck_assert_int_eq(cuMemPoolTrimTo((CUmemoryPool)(void *)&a, 0), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

START_TEST(trim_keeps_live_units)
{
    boot();
    CUmemoryPool p = new_pool(0, 0);
    CUdeviceptr a, b, c, e;
    ck_assert_int_eq(cuMemAllocFromPoolAsync(&a, 10 * MiB, p, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAllocFromPoolAsync(&b, 10 * MiB, p, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAllocFromPoolAsync(&c, 10 * MiB, p, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(reserved(p), 32 * MiB);
    fa(b);
    fa(c);
    sync0();
    ck_assert_uint_eq(reserved(p), 32 * MiB);
    ck_assert_uint_eq(used(p), 10 * MiB);
    ck_assert_int_eq(cuMemAllocFromPoolAsync(&b, 10 * MiB, p, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAllocFromPoolAsync(&c, 10 * MiB, p, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAllocFromPoolAsync(&e, 10 * MiB, p, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(reserved(p), 64 * MiB);
    fa(a);
    sync0();
    ck_assert_uint_eq(reserved(p), 64 * MiB);
    ck_assert_int_eq(cuMemPoolTrimTo(p, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(reserved(p), 64 * MiB);   /* both units hold live blocks */
    fa(b);
    fa(c);
    fa(e);
    ck_assert_int_eq(cuMemPoolTrimTo(p, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(reserved(p), 0);
}
END_TEST

START_TEST(reuse_of_reserve)
{
    size_t f0, f1, t;
    boot();
    CUmemoryPool p = default_pool();
    set_threshold(p, ~0ULL);
    CUdeviceptr a = aa(20 * MiB);
    fa(a);
    sync0();
    ck_assert_int_eq(cuMemGetInfo_v2(&f0, &t), CUDA_SUCCESS);
    a = aa(8 * MiB);
    CUdeviceptr b = aa(12 * MiB);
    ck_assert_int_eq(cuMemGetInfo_v2(&f1, &t), CUDA_SUCCESS);
    ck_assert_uint_eq(f0, f1);                  /* served from the reserve */
    ck_assert_uint_eq(reserved(p), 32 * MiB);
    fa(a);
    fa(b);
    /* Device full: the reserve still serves what fits, nothing more. */
    CUdeviceptr big;
    ck_assert_int_eq(cuMemAlloc_v2(&big, f1), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAllocAsync(&a, 30 * MiB, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAllocAsync(&b, 3 * MiB, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(stats(0).used, stats(0).capacity);
}
END_TEST

START_TEST(growth_at_device_edge)
{
    setenv("SIMCUDA_MEMORY", "40M", 1);
    boot();
    CUmemoryPool p = default_pool();
    aa(20 * MiB);
    aa(10 * MiB);
    ck_assert_uint_eq(reserved(p), 32 * MiB);
    aa(6 * MiB);                                /* 32 MiB more cannot fit: 6 MiB */
    ck_assert_uint_eq(reserved(p), 38 * MiB);
    ck_assert_uint_eq(stats(0).used, 38 * MiB);
    CUdeviceptr x;
    ck_assert_int_eq(cuMemAllocAsync(&x, 4 * MiB, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(cuMemAllocAsync(&x, 2 * MiB, NULL), CUDA_SUCCESS);  /* the reserve's tail */
    ck_assert_uint_eq(stats(0).used, 38 * MiB);
    ck_assert_int_eq(cuMemAllocAsync(&x, 2 * MiB, NULL), CUDA_SUCCESS);  /* the last 2 MiB */
    ck_assert_uint_eq(stats(0).used, 40 * MiB);
    ck_assert_uint_eq(reserved(p), 40 * MiB);
}
END_TEST

/* A growth far past any device (2^63 bytes next to a small block, where
 * the newest chunk would be grown in place) is refused before anything
 * is sized for it: it asked malloc for terabytes of unit arrays, which
 * AddressSanitizer aborts on, and the pool is left as it was. */
START_TEST(growth_past_any_device)
{
    boot();
    CUmemoryPool p = default_pool();
    CUdeviceptr a, x;
    ck_assert_int_eq(cuMemAllocAsync(&a, 4 * MiB, NULL), CUDA_SUCCESS);
    uint64_t r = reserved(p), used = stats(0).used;
    ck_assert_int_eq(cuMemAllocAsync(&x, 1ull << 63, NULL),
                     CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(cuMemAllocAsync(&x, UINT64_MAX - 4096, NULL),
                     CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(reserved(p), r);
    ck_assert_uint_eq(stats(0).used, used);
    ck_assert_int_eq(cuMemFreeAsync(a, NULL), CUDA_SUCCESS);
}
END_TEST

START_TEST(max_size)
{
    boot();
    CUmemoryPool p = new_pool(0, 40 * MiB);
    CUdeviceptr a, b, c;
    /* It grows while it holds less than its maximum (a real driver's rule). */
    ck_assert_int_eq(cuMemAllocFromPoolAsync(&a, 30 * MiB, p, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAllocFromPoolAsync(&b, 30 * MiB, p, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(reserved(p), 64 * MiB);
    ck_assert_int_eq(cuMemAllocFromPoolAsync(&c, 5 * MiB, p, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    fa(b);
    ck_assert_int_eq(cuMemAllocFromPoolAsync(&c, 5 * MiB, p, NULL), CUDA_SUCCESS);
}
END_TEST

START_TEST(attributes)
{
    boot();
    CUmemoryPool p = default_pool();
    cuuint64_t v;
    int iv = -1;
    CUdeviceptr a = aa(50 * MiB), b = aa(10 * MiB);
    fa(a);
    sync0();
    ck_assert_uint_eq(attr(p, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 64 * MiB);
    ck_assert_uint_eq(attr(p, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 60 * MiB);
    ck_assert_uint_eq(reserved(p), 32 * MiB);
    v = 5;
    ck_assert_int_eq(cuMemPoolSetAttribute(p, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &v),
                     CUDA_ERROR_INVALID_VALUE);
    v = 0;
    ck_assert_int_eq(cuMemPoolSetAttribute(p, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &v), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemPoolSetAttribute(p, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v), CUDA_SUCCESS);
    ck_assert_uint_eq(attr(p, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 32 * MiB);
    ck_assert_uint_eq(attr(p, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 10 * MiB);
    ck_assert_int_eq(cuMemPoolSetAttribute(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemPoolSetAttribute(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemPoolGetAttribute(p, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &iv),
                     CUDA_SUCCESS);
    ck_assert_int_eq(iv, 1);
    iv = 0;
    ck_assert_int_eq(cuMemPoolSetAttribute(p, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &iv),
                     CUDA_SUCCESS);
    iv = -1;
    ck_assert_int_eq(cuMemPoolGetAttribute(p, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &iv),
                     CUDA_SUCCESS);
    ck_assert_int_eq(iv, 0);
    ck_assert_int_eq(cuMemPoolGetAttribute(p, (CUmemPool_attribute)999, &v), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemPoolGetAttribute(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemPoolGetAttribute(NULL, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v),
                     CUDA_ERROR_INVALID_VALUE);
    fa(b);
}
END_TEST

START_TEST(created_and_destroyed)
{
    CUmemPoolProps pp;
    CUmemoryPool p, q;
    CUdeviceptr a, b;
    boot();
    memset(&pp, 0, sizeof pp);
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pp.location.id = 3;
    ck_assert_int_eq(cuMemPoolCreate(&p, &pp), CUDA_ERROR_INVALID_VALUE);
    pp.location.type = CU_MEM_LOCATION_TYPE_HOST;
    pp.location.id = 0;
    ck_assert_int_eq(cuMemPoolCreate(&p, &pp), CUDA_ERROR_NOT_SUPPORTED);
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pp.allocType = CU_MEM_ALLOCATION_TYPE_INVALID;
    ck_assert_int_eq(cuMemPoolCreate(&p, &pp), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemPoolCreate(&p, NULL), CUDA_ERROR_INVALID_VALUE);

    p = new_pool(0, 0);
    q = new_pool(0, 0);
    ck_assert_int_eq(cuMemAllocFromPoolAsync(&a, 8 * MiB, p, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAllocFromPoolAsync_ptsz(&b, 8 * MiB, q, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(stats(0).used, 64 * MiB);
    /* An idle pool's memory goes back at once. */
    fa(b);
    ck_assert_int_eq(cuMemPoolDestroy(q), CUDA_SUCCESS);
    ck_assert_uint_eq(stats(0).used, 32 * MiB);
    /* A pool destroyed with a live block: unusable now, memory kept until
     * the block is freed. */
    ck_assert_int_eq(cuMemPoolDestroy(p), CUDA_SUCCESS);
    ck_assert_uint_eq(stats(0).used, 32 * MiB);
    ck_assert_int_eq(cuMemAllocFromPoolAsync(&b, 1024, p, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemPoolGetAttribute(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &(cuuint64_t){ 0 }),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemPoolDestroy(p), CUDA_ERROR_INVALID_VALUE);
    fa(a);
    ck_assert_uint_eq(stats(0).used, 0);
    ck_assert_int_eq(cuMemPoolDestroy(default_pool()), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemPoolImportFromShareableHandle(&p, NULL, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                     CUDA_ERROR_NOT_SUPPORTED);
}
END_TEST

START_TEST(async_calls)
{
    CUdeviceptr a = 1, b, plain, base;
    CUstream s;
    size_t size;
    setenv("SIMCUDA_MEMORY", "8G,8G", 1);
    boot();
    CUmemoryPool p = default_pool();
    ck_assert_int_eq(cuMemAllocAsync(&a, 0, NULL), CUDA_SUCCESS);   /* as a real driver */
    ck_assert_uint_eq(a, 0);
    ck_assert_int_eq(cuMemAllocAsync(NULL, 16, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemFreeAsync(0, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemFreeAsync(0x800000001000ULL, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemAllocAsync(&a, 16, (CUstream)(void *)&s), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuMemAllocAsync_ptsz(&a, 4096, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemGetAddressRange_v2(&base, &size, a + 100), CUDA_SUCCESS);
    ck_assert_uint_eq(base, a);
    ck_assert_uint_eq(size, 4096);
    ck_assert_int_eq(cuMemFree_v2(a), CUDA_SUCCESS);            /* plain free of a block */
    ck_assert_uint_eq(used(p), 0);
    ck_assert_int_eq(cuMemAlloc_v2(&plain, 4096), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemFreeAsync_ptsz(plain, NULL), CUDA_SUCCESS);  /* async free of plain */
    ck_assert_uint_eq(stats(0).alloc, 0);
    /* A stream of device 1 allocates from device 1's pool. */
    CUcontext c1;
    ck_assert_int_eq(cuDevicePrimaryCtxRetain(&c1, 1), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxPushCurrent_v2(c1), CUDA_SUCCESS);
    ck_assert_int_eq(cuStreamCreate(&s, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxPopCurrent_v2(NULL), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAllocAsync(&b, 1 * MiB, s), CUDA_SUCCESS);
    ck_assert_uint_eq(stats(1).pool_used, 1 * MiB);
    ck_assert_uint_eq(stats(0).pool_used, 0);
    ck_assert_int_eq(cuMemFreeAsync(b, s), CUDA_SUCCESS);
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_SUCCESS);
    ck_assert_uint_eq(stats(1).pool_reserved, 0);
    /* The legacy stream needs a current context, even with a pool. */
    ck_assert_int_eq(cuCtxPopCurrent_v2(NULL), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAllocAsync(&a, 16, NULL), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(cuMemAllocFromPoolAsync(&a, 16, p, NULL), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(cuMemAllocFromPoolAsync(&a, 16, p, s), CUDA_SUCCESS);  /* pool's device */
    ck_assert_uint_eq(stats(0).pool_used, 16);
}
END_TEST

/* PyTorch with backend:cudaMallocAsync: threshold "never", cycles of
 * varying sizes. The pool's figures and the device's must agree at every
 * step, and USED must be the sum of what is live. */
START_TEST(pytorch_like)
{
    enum { LIVE = 48, STEPS = 3000 };
    CUdeviceptr live[LIVE] = { 0 };
    size_t sizes[LIVE] = { 0 };
    uint64_t rng = 12345, sum = 0;
    boot();
    CUmemoryPool p = default_pool();
    set_threshold(p, ~0ULL);
    for (int step = 0; step < STEPS; step++) {
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        int i = (int)((rng >> 33) % LIVE);
        if (live[i] != 0) {
            fa(live[i]);
            sum -= sizes[i];
            live[i] = 0;
        } else {
            sizes[i] = 512 + (size_t)((rng >> 13) % (24 * MiB));
            live[i] = aa(sizes[i]);
            sum += sizes[i];
        }
        if (step % 97 == 0)
            sync0();
        struct gm_simcuda_stats st = stats(0);
        ck_assert_uint_eq(used(p), sum);
        ck_assert_uint_eq(st.pool_used, sum);
        ck_assert_uint_eq(st.pool_reserved, reserved(p));
        ck_assert_uint_eq(st.used, reserved(p));
        ck_assert_uint_ge(reserved(p), sum);
    }
    for (int i = 0; i < LIVE; i++)
        if (live[i] != 0)
            fa(live[i]);
    sync0();
    ck_assert_uint_eq(used(p), 0);
    ck_assert_uint_gt(reserved(p), 0);          /* never released... */
    ck_assert_int_eq(cuMemPoolTrimTo(p, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(reserved(p), 0);          /* ...until trimmed */
    ck_assert_uint_eq(stats(0).used, 0);
    ck_assert_uint_eq(stats(0).live, 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("simcuda-pool");
    TCase *t = tcase_create("pool");
    tcase_add_checked_fixture(t, clean_env, NULL);
    tcase_add_test(t, default_and_current);
    tcase_add_test(t, reserved_vs_used);
    tcase_add_test(t, release_at_free);
    tcase_add_test(t, threshold_and_trim);
    tcase_add_test(t, trim_keeps_live_units);
    tcase_add_test(t, reuse_of_reserve);
    tcase_add_test(t, growth_at_device_edge);
    tcase_add_test(t, growth_past_any_device);
    tcase_add_test(t, max_size);
    tcase_add_test(t, attributes);
    tcase_add_test(t, created_and_destroyed);
    tcase_add_test(t, async_calls);
    tcase_add_test(t, pytorch_like);
    tcase_set_timeout(t, 30);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_set_fork_status(r, CK_FORK);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
