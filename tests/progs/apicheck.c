/*
 * tests/progs/apicheck.c — exercises every allocation API the shim wraps,
 * reached through one lookup path, and checks what the shim must make true.
 * Run by tests/integ/test_shim.c under LD_PRELOAD with a GPUMEM_LIMIT.
 *
 *   apicheck --via link|dlsym|gpa SCENARIO [ARG]
 *
 * link:  functions bound by the dynamic linker (direct_apicheck, linked
 *        against libcuda); dlsym: dlsym on a dlopen handle of libcuda (what
 *        XLA and Triton do); gpa: only cuGetProcAddress_v2 is looked up,
 *        everything else comes from it, the way cudart does.
 * Scenarios print "ok ..." lines and exit 0, or print "FAIL ..." and exit 1.
 * Figures are read back through the (virtualised) cuMemGetInfo, so "used"
 * below means limit - free as the program sees it.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shim/telemetry/abi.h"

#define FNS(X)                                                            \
    X(cuInit) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDevicePrimaryCtxRetain) \
    X(cuCtxSetCurrent) X(cuCtxCreate_v2) X(cuCtxDestroy_v2)               \
    X(cuMemGetInfo_v2) X(cuDeviceTotalMem_v2) X(cuMemAlloc_v2)            \
    X(cuMemFree_v2) X(cuMemAllocPitch_v2) X(cuMemAllocManaged)            \
    X(cuMemAllocAsync) X(cuMemFreeAsync) X(cuMemAllocFromPoolAsync)       \
    X(cuMemPoolCreate) X(cuMemPoolDestroy) X(cuStreamCreate)              \
    X(cuStreamSynchronize) X(cuStreamDestroy_v2) X(cuMemCreate)           \
    X(cuMemRelease) X(cuMemRetainAllocationHandle) X(cuMemAddressReserve) \
    X(cuMemAddressFree) X(cuMemMap) X(cuMemUnmap)                         \
    X(cuMemGetAllocationGranularity) X(cuArrayCreate_v2)                  \
    X(cuArray3DCreate_v2) X(cuArrayDestroy) X(cuArrayGetMemoryRequirements) \
    X(cuMipmappedArrayCreate) X(cuMipmappedArrayDestroy)                  \
    X(cuMipmappedArrayGetMemoryRequirements) X(cuMemHostAlloc)            \
    X(cuMemFreeHost) X(cuMemAllocHost_v2) X(cuMemPoolGetAttribute)      \
    X(cuMemPoolSetAttribute) X(cuDeviceGetMemPool) X(cuMemPoolTrimTo)     \
    X(cuStreamSynchronize_ptsz) X(cuMemAllocAsync_ptsz) X(cuMemFreeAsync_ptsz) \
    X(cuMemGetAddressRange_v2) X(cuDevicePrimaryCtxRelease_v2)          \
    X(cuDevicePrimaryCtxReset_v2) X(cuArray3DCreate)                    \
    X(cuDeviceGetDefaultMemPool)

static struct {
#define FIELD(n) __typeof__(n) *n;
    FNS(FIELD)
#undef FIELD
} F;

static const char *via = "gpa";
static int failures;

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        if (!(cond)) {                                                    \
            printf("FAIL %s:%d: ", __func__, __LINE__);                   \
            printf(__VA_ARGS__);                                          \
            printf("\n");                                                 \
            fflush(stdout);                                               \
            exit(1);                                                      \
        }                                                                 \
    } while (0)

#define CU(call)                                                          \
    do {                                                                  \
        CUresult rc_ = (call);                                            \
        CHECK(rc_ == CUDA_SUCCESS, "%s returned %d", #call, (int)rc_);    \
    } while (0)

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);

static void resolve(void)
{
#ifdef APICHECK_LINK
    if (strcmp(via, "link") == 0) {
#define LINKED(n) F.n = &n;
        FNS(LINKED)
#undef LINKED
        return;
    }
#endif
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL, "dlopen libcuda.so.1: %s", dlerror());
    if (strcmp(via, "dlsym") == 0) {
#define BYDLSYM(n) F.n = (__typeof__(F.n))dlsym(h, #n);
        FNS(BYDLSYM)
#undef BYDLSYM
        return;
    }
    CHECK(strcmp(via, "gpa") == 0, "unknown --via %s", via);
    gpa_fn gpa = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
    CHECK(gpa != NULL, "no cuGetProcAddress_v2");
    void *p = NULL;
    CU(gpa("cuGetProcAddress", &p, 12000, 0, NULL));
    gpa = (gpa_fn)p;
    /* Base names: strip the _v2 suffix the way cudart asks; a _ptsz
     * variant is the base name asked with the per-thread flag. */
#define BYGPA(n)                                                          \
    do {                                                                  \
        char base[64];                                                    \
        snprintf(base, sizeof base, "%s", #n);                            \
        char *v = strstr(base, "_v2");                                    \
        if (v && v[3] == '\0')                                            \
            *v = '\0';                                                    \
        cuuint64_t fl = 0;                                                \
        v = strstr(base, "_ptsz");                                        \
        if (v && v[5] == '\0') {                                          \
            *v = '\0';                                                    \
            fl = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;           \
        }                                                                 \
        void *q = NULL;                                                   \
        CUdriverProcAddressQueryResult st;                                \
        if (gpa(base, &q, 13000, fl, &st) == CUDA_SUCCESS)                \
            F.n = (__typeof__(F.n))q;                                     \
    } while (0);
    FNS(BYGPA)
#undef BYGPA
    /* At 13000 the family cuCtxCreate is _v4 (another signature): ask
     * for the version whose variant is _v2, as a program built for it
     * would. */
    void *q = NULL;
    CU(gpa("cuCtxCreate", &q, 3020, 0, NULL));
    F.cuCtxCreate_v2 = (__typeof__(F.cuCtxCreate_v2))q;
    /* The same for the v1 (32-bit descriptor) cuArray3DCreate. */
    CU(gpa("cuArray3DCreate", &q, 3010, 0, NULL));
    F.cuArray3DCreate = (__typeof__(F.cuArray3DCreate))q;
}

static CUdevice dev0;
static CUcontext ctx0;

static void setup(void)
{
    resolve();
    CU(F.cuInit(0));
    CU(F.cuDeviceGet(&dev0, 0));
    CU(F.cuDevicePrimaryCtxRetain(&ctx0, dev0));
    CU(F.cuCtxSetCurrent(ctx0));
}

static uint64_t free_now(void)
{
    size_t f = 0, t = 0;
    CU(F.cuMemGetInfo_v2(&f, &t));
    return f;
}

static uint64_t total_now(void)
{
    size_t f = 0, t = 0;
    CU(F.cuMemGetInfo_v2(&f, &t));
    return t;
}

/* ---- scenarios ------------------------------------------------------- */

/* limit LIMIT: the program sees LIMIT as the device size; the last byte
 * fits, one more is refused with 2; freeing restores everything. */
static void s_edge(uint64_t limit)
{
    size_t tot = 0;
    CU(F.cuDeviceTotalMem_v2(&tot, dev0));
    CHECK(tot == limit, "cuDeviceTotalMem %zu != limit %llu", tot,
          (unsigned long long)limit);
    CHECK(total_now() == limit, "cuMemGetInfo total %llu != %llu",
          (unsigned long long)total_now(), (unsigned long long)limit);
    uint64_t f0 = free_now();
    CHECK(f0 > 0 && f0 < limit, "free %llu", (unsigned long long)f0);
    CUdeviceptr a = 0, b = 0;
    CU(F.cuMemAlloc_v2(&a, f0));
    CHECK(free_now() == 0, "free after filling: %llu",
          (unsigned long long)free_now());
    CUresult rc = F.cuMemAlloc_v2(&b, 1);
    CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "one byte past the limit: rc %d",
          (int)rc);
    CU(F.cuMemFree_v2(a));
    CHECK(free_now() == f0, "free after release %llu != %llu",
          (unsigned long long)free_now(), (unsigned long long)f0);
    printf("ok edge via %s: %llu bytes fit, 1 more refused\n", via,
           (unsigned long long)f0);
}

/* Properties of a pinned pool, and of a pinned VMM allocation, on dev0. */
static CUmemPoolProps dev0_pool_props(void)
{
    CUmemPoolProps pp;
    memset(&pp, 0, sizeof pp);
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pp.location.id = dev0;
    return pp;
}

static CUmemAllocationProp dev0_alloc_prop(void)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev0;
    return prop;
}

static uint64_t pool_attr(CUmemoryPool p, CUmemPool_attribute a)
{
    cuuint64_t v = 0;
    CU(F.cuMemPoolGetAttribute(p, a, &v));
    return v;
}

static uint64_t reserved(CUmemoryPool p)
{
    return pool_attr(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
}

/* What the simulated driver itself holds for arrays on device 0 (the
 * ground truth an array's charge is compared with). */
struct sim_stats {
    uint64_t capacity, used, context, alloc, pool_reserved, pool_used, vmm,
        arrays, managed, host, live, alloc_calls, pool_attr_calls,
        stream_syncs;
    int contexts, primary_refs;
};

static struct sim_stats sim_stats_of(int dev)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    int (*st)(int, struct sim_stats *) =
        h ? (int (*)(int, struct sim_stats *))dlsym(h, "gm_simcuda_stats")
          : NULL;
    struct sim_stats s;
    CHECK(st != NULL && st(dev, &s) == 0, "not the simulated driver");
    return s;
}

static struct sim_stats sim_stats(void)
{
    return sim_stats_of(0);
}

static uint64_t sim_arrays(void)
{
    return sim_stats().arrays;
}

/* Every wrapped API is charged and released. */
static void expect_used(uint64_t f0, uint64_t bytes, const char *what)
{
    uint64_t f = free_now();
    CHECK(f0 - f == bytes, "%s: charged %llu, expected %llu", what,
          (unsigned long long)(f0 - f), (unsigned long long)bytes);
}

/* A handle released while mapped keeps its memory until its last
 * mapping goes (the driver frees it only then), and so its charge: two
 * handles, one mapped twice, released at once; one cuMemUnmap takes two
 * mappings back to back, another the last. After each step the charge is
 * what the driver holds. */
static void vmm_mapped(uint64_t f0, const CUmemAllocationProp *prop,
                       size_t sz)
{
    CUmemGenericAllocationHandle h, h3;
    CUdeviceptr va;
    CU(F.cuMemCreate(&h, sz, prop, 0));
    CU(F.cuMemCreate(&h3, sz, prop, 0));
    CU(F.cuMemAddressReserve(&va, 3 * sz, 0, 0, 0));
    CU(F.cuMemMap(va, sz, 0, h, 0));
    CU(F.cuMemMap(va + sz, sz, 0, h3, 0));
    CU(F.cuMemMap(va + 2 * sz, sz, 0, h, 0));
    CU(F.cuMemRelease(h));
    CU(F.cuMemRelease(h3));
    CHECK(sim_stats().vmm == 2 * sz, "driver holds %llu",
          (unsigned long long)sim_stats().vmm);
    expect_used(f0, 2 * sz, "released while mapped");
    CU(F.cuMemUnmap(va, 2 * sz));
    CHECK(sim_stats().vmm == sz, "driver holds %llu after the first unmap",
          (unsigned long long)sim_stats().vmm);
    expect_used(f0, sz, "one handle still mapped");
    CHECK(F.cuMemUnmap(va + 2 * sz, 2 * sz) != CUDA_SUCCESS,
          "unmap past the mapping accepted");
    expect_used(f0, sz, "after a refused unmap");
    CU(F.cuMemUnmap(va + 2 * sz, sz));
    CHECK(sim_stats().vmm == 0, "driver holds %llu after the last unmap",
          (unsigned long long)sim_stats().vmm);
    expect_used(f0, 0, "after the last unmap");
    CU(F.cuMemAddressFree(va, 3 * sz));
}

/* Memory of a handle released while mapped still counts against the
 * limit (run under GPUMEM_LIMIT=1G, context 300 MiB): 512 MiB mapped and
 * released leave no room for 600 MiB until the unmap. */
static void s_vmm_held(void)
{
    CUmemAllocationProp prop = dev0_alloc_prop();
    CUmemGenericAllocationHandle h;
    CUdeviceptr va, p = 0;
    size_t sz = 512u << 20;
    CU(F.cuMemCreate(&h, sz, &prop, 0));
    CU(F.cuMemAddressReserve(&va, sz, 0, 0, 0));
    CU(F.cuMemMap(va, sz, 0, h, 0));
    CU(F.cuMemRelease(h));
    CUresult rc = F.cuMemAlloc_v2(&p, 600u << 20);
    CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY,
          "600 MiB next to 512 MiB mapped: rc %d", (int)rc);
    CU(F.cuMemUnmap(va, sz));
    CU(F.cuMemAddressFree(va, sz));
    CU(F.cuMemAlloc_v2(&p, 600u << 20));
    CU(F.cuMemFree_v2(p));
    printf("ok vmm-held via %s\n", via);
}

/* A retained handle keeps its memory past its first release: 600 MiB
 * created, mapped, retained, unmapped and released once still hold, so
 * 500 MiB more is refused (limit 1200M, context 300M); the second
 * release gives the memory back. */
static void s_vmm_retain(void)
{
    CUmemAllocationProp prop = dev0_alloc_prop();
    CUmemGenericAllocationHandle h, h2;
    CUdeviceptr va, p = 0;
    size_t sz = 600u << 20;
    CU(F.cuMemCreate(&h, sz, &prop, 0));
    CU(F.cuMemAddressReserve(&va, sz, 0, 0, 0));
    CU(F.cuMemMap(va, sz, 0, h, 0));
    CU(F.cuMemRetainAllocationHandle(&h2, (void *)(uintptr_t)va));
    CU(F.cuMemUnmap(va, sz));
    CU(F.cuMemAddressFree(va, sz));
    CU(F.cuMemRelease(h));
    CUresult rc = F.cuMemAlloc_v2(&p, 500u << 20);
    CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY,
          "500 MiB next to 600 MiB retained: rc %d", (int)rc);
    CU(F.cuMemRelease(h2));
    CU(F.cuMemAlloc_v2(&p, 500u << 20));
    CU(F.cuMemFree_v2(p));
    printf("ok vmm-retain via %s\n", via);
}

/* Two devices' primary contexts, `size` bytes allocated on each and
 * left live (each device has its own limit). */
static void s_two_alloc(uint64_t size)
{
    CUcontext c1;
    CUdeviceptr p0, p1;
    CU(F.cuDevicePrimaryCtxRetain(&c1, 1));
    CU(F.cuMemAlloc_v2(&p0, size));
    CU(F.cuCtxSetCurrent(c1));
    CU(F.cuMemAlloc_v2(&p1, size));
    CU(F.cuCtxSetCurrent(ctx0));
    printf("ok two-alloc %llu on each device via %s\n",
           (unsigned long long)size, via);
}

static struct gm_abi_header *own_segment(size_t *len);
static void expect_published(const char *what);

/* Stream-ordered allocations until the pool's growth passes the limit
 * and is undone: the device's published peak is the accounting's (the
 * growth was held for a moment), as gpumem_peak says, before the exit. */
static void s_async_peak(void)
{
    long long (*peak)(int) =
        (long long (*)(int))dlsym(RTLD_DEFAULT, "gpumem_peak");
    CHECK(peak != NULL, "gpumem_peak not found (not under the shim?)");
    CUstream s;
    CU(F.cuStreamCreate(&s, 0));
    static CUdeviceptr p[4096];
    int n = 0;
    CUresult rc = CUDA_SUCCESS;
    while (n < 4096 && (rc = F.cuMemAllocAsync(&p[n], 3u << 20, s)) ==
                           CUDA_SUCCESS)
        n++;
    CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "never refused: rc %d", (int)rc);
    size_t len;
    struct gm_abi_header *h = own_segment(&len);
    if (h != NULL && peak != NULL) {
        const struct gm_abi_dev *d0 = (const struct gm_abi_dev *)(h + 1);
        CHECK(d0->peak == (uint64_t)peak(0),
              "published peak %llu, the accounting's %lld",
              (unsigned long long)d0->peak, peak(0));
        munmap(h, len);
    }
    for (int i = 0; i < n; i++)
        CU(F.cuMemFreeAsync(p[i], s));
    CU(F.cuStreamSynchronize(s));
    CU(F.cuStreamDestroy_v2(s));
    printf("ok async-peak via %s\n", via);
}

static void s_apis(void)
{
    uint64_t f0 = free_now();
    CUdeviceptr p = 0;
    /* plain */
    CU(F.cuMemAlloc_v2(&p, 1000000));
    expect_used(f0, 1000000, "cuMemAlloc_v2");
    CU(F.cuMemFree_v2(p));
    expect_used(f0, 0, "cuMemFree_v2");
    /* pitch: pitch x height */
    size_t pitch = 0;
    CU(F.cuMemAllocPitch_v2(&p, &pitch, 1000, 300, 4));
    CHECK(pitch >= 1000, "pitch %zu", pitch);
    expect_used(f0, (uint64_t)pitch * 300, "cuMemAllocPitch_v2");
    CU(F.cuMemFree_v2(p));
    expect_used(f0, 0, "pitch free");
    /* managed */
    CU(F.cuMemAllocManaged(&p, 3 << 20, CU_MEM_ATTACH_GLOBAL));
    expect_used(f0, 3 << 20, "cuMemAllocManaged");
    CU(F.cuMemFree_v2(p));
    expect_used(f0, 0, "managed free");
    /* async on the default pool and on a created pool: charged what the
     * pool holds */
    CUstream s;
    CU(F.cuStreamCreate(&s, 0));
    CUmemoryPool dpool;
    CU(F.cuDeviceGetMemPool(&dpool, dev0));
    CU(F.cuMemAllocAsync(&p, 5 << 20, s));
    CHECK(reserved(dpool) >= (5u << 20), "pool reserve %llu",
          (unsigned long long)reserved(dpool));
    expect_used(f0, reserved(dpool), "cuMemAllocAsync");
    CU(F.cuMemFreeAsync(p, s));
    CU(F.cuStreamSynchronize(s));
    expect_used(f0, reserved(dpool), "cuMemFreeAsync");
    CHECK(reserved(dpool) == 0, "threshold 0 keeps %llu",
          (unsigned long long)reserved(dpool));
    CUmemPoolProps pp = dev0_pool_props();
    CUmemoryPool pool;
    CU(F.cuMemPoolCreate(&pool, &pp));
    CU(F.cuMemAllocFromPoolAsync(&p, 7 << 20, pool, s));
    expect_used(f0, reserved(pool), "cuMemAllocFromPoolAsync");
    CU(F.cuMemFreeAsync(p, s));
    CU(F.cuStreamSynchronize(s));
    CU(F.cuMemPoolDestroy(pool));
    expect_used(f0, 0, "pool free");
    CU(F.cuStreamDestroy_v2(s));
    /* VMM with reference counts */
    CUmemAllocationProp prop = dev0_alloc_prop();
    size_t gran = 0;
    CU(F.cuMemGetAllocationGranularity(&gran, &prop,
                                       CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    size_t sz = gran * 4;
    CUmemGenericAllocationHandle h, h2;
    CU(F.cuMemCreate(&h, sz, &prop, 0));
    expect_used(f0, sz, "cuMemCreate");
    CUdeviceptr va;
    CU(F.cuMemAddressReserve(&va, sz, 0, 0, 0));
    CU(F.cuMemMap(va, sz, 0, h, 0));
    CU(F.cuMemRetainAllocationHandle(&h2, (void *)(uintptr_t)va));
    CHECK(h2 == h, "retained handle differs");
    CU(F.cuMemRelease(h));
    expect_used(f0, sz, "after first release (one reference left)");
    CU(F.cuMemUnmap(va, sz));
    CU(F.cuMemRelease(h2));
    expect_used(f0, 0, "after last release");
    CU(F.cuMemAddressFree(va, sz));
    vmm_mapped(f0, &prop, sz);
    /* arrays: charged what the driver's memory requirements say */
    CUDA_ARRAY_DESCRIPTOR ad = { 1000, 512, CU_AD_FORMAT_FLOAT, 4 };
    CUarray arr;
    CU(F.cuArrayCreate_v2(&arr, &ad));
    CHECK(sim_arrays() > 0, "array took nothing");
    expect_used(f0, sim_arrays(), "cuArrayCreate_v2");
    CU(F.cuArrayDestroy(arr));
    expect_used(f0, 0, "cuArrayDestroy");
    CUDA_ARRAY3D_DESCRIPTOR a3 = { 60, 64, 32, CU_AD_FORMAT_HALF, 2, 0 };
    CU(F.cuArray3DCreate_v2(&arr, &a3));
    expect_used(f0, sim_arrays(), "cuArray3DCreate_v2");
    CU(F.cuArrayDestroy(arr));
    CUmipmappedArray mm;
    CU(F.cuMipmappedArrayCreate(&mm, &a3, 4));
    expect_used(f0, sim_arrays(), "cuMipmappedArrayCreate");
    CU(F.cuMipmappedArrayDestroy(mm));
    expect_used(f0, 0, "cuMipmappedArrayDestroy");
    /* Deferred mapping: no memory until VMM memory is mapped into it. */
    CUDA_ARRAY3D_DESCRIPTOR dd = { 256, 256, 0, CU_AD_FORMAT_FLOAT, 1,
                                   CUDA_ARRAY3D_DEFERRED_MAPPING };
    CU(F.cuArray3DCreate_v2(&arr, &dd));
    CUDA_ARRAY_MEMORY_REQUIREMENTS req;
    CU(F.cuArrayGetMemoryRequirements(&req, arr, dev0));
    CHECK(req.size > 0, "no requirement");
    expect_used(f0, sim_arrays(), "deferred-mapping array");
    expect_used(f0, 0, "deferred-mapping array");
    CU(F.cuArrayDestroy(arr));
    expect_used(f0, 0, "deferred array destroyed");
    CUDA_ARRAY3D_DESCRIPTOR_v1 d1 = { 4096, 4096, 0, CU_AD_FORMAT_FLOAT, 4,
                                      CUDA_ARRAY3D_DEFERRED_MAPPING };
    CU(F.cuArray3DCreate(&arr, &d1)); /* v1: no memory either */
    CHECK(sim_arrays() == 0, "the driver holds %llu bytes of arrays",
          (unsigned long long)sim_arrays());
    expect_used(f0, 0, "v1 deferred-mapping array");
    CU(F.cuArrayDestroy(arr));
    d1.Flags = 0;
    CU(F.cuArray3DCreate(&arr, &d1)); /* v1 without the flag: charged */
    CHECK(sim_arrays() > 0, "the v1 array took nothing");
    expect_used(f0, sim_arrays(), "cuArray3DCreate (v1)");
    CU(F.cuArrayDestroy(arr));
    expect_used(f0, 0, "v1 array destroyed");
    /* pinned host memory is never charged to the device */
    void *hp;
    CU(F.cuMemHostAlloc(&hp, 8 << 20, 0));
    expect_used(f0, 0, "cuMemHostAlloc");
    CU(F.cuMemFreeHost(hp));
    CU(F.cuMemAllocHost_v2(&hp, 1 << 20));
    expect_used(f0, 0, "cuMemAllocHost_v2");
    CU(F.cuMemFreeHost(hp));
    /* unknown pointers go to the driver and change nothing */
    CUresult rc = F.cuMemFree_v2((CUdeviceptr)0x1234);
    CHECK(rc != CUDA_SUCCESS, "free of an unknown pointer succeeded");
    expect_used(f0, 0, "unknown free");
    /* NULL output pointers: the driver's answer, no crash */
    rc = F.cuMemAlloc_v2(NULL, 100);
    CHECK(rc != CUDA_SUCCESS, "NULL dptr accepted");
    rc = F.cuMemGetInfo_v2(NULL, NULL);
    (void)rc;
    printf("ok apis via %s\n", via);
}

/* Mipmapped arrays are charged the levels the driver makes: the count
 * clamped to [1, the full chain] (0 levels are one level). Run with
 * GPUMEM_LIMIT=2G: one 8192 x 8192 float4 level is 1 GiB, so only one of
 * four such arrays fits. */
static void s_mipmap_levels(void)
{
    uint64_t f0 = free_now();
    CUDA_ARRAY3D_DESCRIPTOR big = { 8192, 8192, 0, CU_AD_FORMAT_FLOAT, 4, 0 };
    CUmipmappedArray m[4];
    int made = 0;
    for (int i = 0; i < 4; i++) {
        CUresult rc = F.cuMipmappedArrayCreate(&m[made], &big, 0);
        CHECK(rc == CUDA_SUCCESS || rc == CUDA_ERROR_OUT_OF_MEMORY,
              "0 levels: rc %d", (int)rc);
        if (rc == CUDA_SUCCESS)
            made++;
    }
    CHECK(made == 1, "%d of four 1 GiB mipmaps under 2G", made);
    expect_used(f0, sim_arrays(), "a mipmap of 0 levels");
    CU(F.cuMipmappedArrayDestroy(m[0]));
    const CUDA_ARRAY3D_DESCRIPTOR more[] = {
        { 1000, 512, 0, CU_AD_FORMAT_HALF, 2, 0 },
        { 64, 64, 300, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED },
        { 16, 16, 1024, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0 },
    };
    for (unsigned i = 0; i < sizeof more / sizeof more[0]; i++) {
        CU(F.cuMipmappedArrayCreate(&m[0], &more[i], 100));
        expect_used(f0, sim_arrays(), "a mipmap of more than its chain");
        CU(F.cuMipmappedArrayDestroy(m[0]));
    }
    expect_used(f0, 0, "mipmaps destroyed");
    printf("ok mipmap-levels\n");
}

/* Each API is refused at the limit: fill, then try each kind. */
static void s_limit_all(void)
{
    uint64_t f0 = free_now();
    CUdeviceptr fill = 0, p = 0;
    CU(F.cuMemAlloc_v2(&fill, f0 - (1 << 20))); /* 1 MiB left */
    CUresult rc;
    size_t pitch;
    rc = F.cuMemAlloc_v2(&p, 2 << 20);
    CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "alloc rc %d", rc);
    rc = F.cuMemAllocPitch_v2(&p, &pitch, 4096, 1024, 4);
    CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "pitch rc %d", rc);
    rc = F.cuMemAllocManaged(&p, 2 << 20, CU_MEM_ATTACH_GLOBAL);
    CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "managed rc %d", rc);
    rc = F.cuMemAllocAsync(&p, 2 << 20, NULL);
    CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "async rc %d", rc);
    CUmemAllocationProp prop = dev0_alloc_prop();
    CUmemGenericAllocationHandle h;
    rc = F.cuMemCreate(&h, 2 << 20, &prop, 0);
    CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "cuMemCreate rc %d", rc);
    CUDA_ARRAY_DESCRIPTOR ad = { 1024, 1024, CU_AD_FORMAT_FLOAT, 4 };
    CUarray arr;
    rc = F.cuArrayCreate_v2(&arr, &ad);
    CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "array rc %d", rc);
    expect_used(f0, f0 - (1 << 20), "after refusals");
    CU(F.cuMemFree_v2(fill));
    expect_used(f0, 0, "after free");
    printf("ok every API refused at the limit via %s\n", via);
}

/* Stream-ordered pools (limit LIMIT): the device is charged what the
 * pools hold, never more than the limit, trims reclaim, destroy releases,
 * threads leave no drift. */
/* Device 0's default pool, made to keep what it holds (release threshold
 * "never", as PyTorch and TensorFlow set it), and a stream. */
static CUmemoryPool keeping_pool(CUstream *s)
{
    CUmemoryPool dp;
    CU(F.cuDeviceGetMemPool(&dp, dev0));
    cuuint64_t never = ~0ull;
    CU(F.cuMemPoolSetAttribute(dp, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &never));
    CU(F.cuStreamCreate(s, 0));
    return dp;
}

static void s_pools(uint64_t limit)
{
    uint64_t f0 = free_now(), ctx = limit - f0;
    CUstream s;
    CUmemoryPool dp = keeping_pool(&s);
    cuuint64_t never = ~0ull;
    /* A PyTorch-like pattern: cycles of varying sizes, threshold = max. */
    CUdeviceptr p[8];
    unsigned seed = 7;
    for (int step = 0; step < 200; step++) {
        int n = 1 + step % 8;
        for (int i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            size_t sz = ((size_t)1 << 20) * (1 + (seed >> 16) % 24);
            CUresult rc = F.cuMemAllocAsync(&p[i], sz, s);
            CHECK(rc == CUDA_SUCCESS, "step %d alloc %zu: %d", step, sz, rc);
            expect_used(f0, reserved(dp), "pool reserve after alloc");
        }
        for (int i = 0; i < n; i++)
            CU(F.cuMemFreeAsync(p[i], s));
        CU(F.cuStreamSynchronize(s));
        expect_used(f0, reserved(dp), "pool reserve after free");
    }
    CHECK(reserved(dp) > 0, "threshold max keeps memory");
    /* The limit is never passed by pool growth. */
    int n = 0;
    CUdeviceptr q[4096];
    for (; n < 4096; n++) {
        if (F.cuMemAllocAsync(&q[n], 64u << 20, s) != CUDA_SUCCESS)
            break;
        CHECK(limit - free_now() <= limit, "over the limit");
        CHECK(reserved(dp) + ctx <= limit, "pool %llu + ctx %llu > limit",
              (unsigned long long)reserved(dp), (unsigned long long)ctx);
    }
    CHECK(n > 0 && n < 4096, "filled with %d", n);
    for (int i = 0; i < n; i++)
        CU(F.cuMemFreeAsync(q[i], s));
    CU(F.cuStreamSynchronize(s));
    uint64_t held = reserved(dp);
    CHECK(held > (limit - ctx) / 2, "pool keeps %llu", (unsigned long long)held);
    expect_used(f0, held, "pool holds its memory after frees");
    /* A refused allocation that trimming can satisfy succeeds. */
    CUdeviceptr big;
    CU(F.cuMemAlloc_v2(&big, held));
    CHECK(reserved(dp) < held, "trimmed: %llu", (unsigned long long)reserved(dp));
    CU(F.cuMemFree_v2(big));
    /* Created pool: destroy releases its charge. */
    CUmemPoolProps pp = dev0_pool_props();
    CUmemoryPool cp;
    CU(F.cuMemPoolCreate(&cp, &pp));
    CU(F.cuMemPoolSetAttribute(cp, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &never));
    CUdeviceptr c;
    CU(F.cuMemAllocFromPoolAsync(&c, 40u << 20, cp, s));
    CU(F.cuMemFreeAsync(c, s));
    CU(F.cuStreamSynchronize(s));
    uint64_t before = free_now();
    CHECK(reserved(cp) >= (40u << 20), "created pool keeps its memory");
    CU(F.cuMemPoolDestroy(cp));
    CHECK(free_now() > before, "destroy released nothing");
    CU(F.cuMemPoolTrimTo(dp, 0));
    expect_used(f0, reserved(dp), "after trim");
    expect_published("after trim");
    printf("ok pools\n");
}

/* A block the pool served before is served again without a query of the
 * pool's reserve (the driver's count of cuMemPoolGetAttribute calls, less
 * this program's own, stays flat over 200 pairs), and the charge stays
 * the reserve; a synchronisation after frees, a trim and a larger block
 * each make the next allocation query again. */
static void s_pool_queries(void)
{
    uint64_t f0 = free_now();
    CUstream s;
    CUmemoryPool dp = keeping_pool(&s);
    CUdeviceptr p;
    CU(F.cuMemAllocAsync(&p, 1u << 20, s)); /* the pool grows: a query */
    CU(F.cuMemFreeAsync(p, s));
    uint64_t q0 = sim_stats().pool_attr_calls;
    for (int i = 0; i < 200; i++) {
        CU(F.cuMemAllocAsync(&p, 1u << 20, s));
        CU(F.cuMemFreeAsync(p, s));
    }
    uint64_t q1 = sim_stats().pool_attr_calls;
    CHECK(q1 - q0 <= 2, "%llu reserve queries for 200 repeated blocks",
          (unsigned long long)(q1 - q0));
    expect_used(f0, reserved(dp), "pool reserve after repeated blocks");
    uint64_t q2 = sim_stats().pool_attr_calls; /* reserved() above: 1 */
    CU(F.cuMemAllocAsync(&p, 4u << 20, s)); /* larger: asks again */
    CHECK(sim_stats().pool_attr_calls > q2, "a larger block was not queried");
    expect_used(f0, reserved(dp), "pool reserve after a larger block");
    CU(F.cuMemFreeAsync(p, s));
    CU(F.cuStreamSynchronize(s));
    uint64_t q3 = sim_stats().pool_attr_calls;
    CU(F.cuMemAllocAsync(&p, 1u << 20, s)); /* after a sync: asks again */
    CHECK(sim_stats().pool_attr_calls > q3, "no query after a sync");
    CU(F.cuMemFreeAsync(p, s));
    CU(F.cuStreamSynchronize(s));
    CU(F.cuMemPoolTrimTo(dp, 0));
    expect_used(f0, reserved(dp), "after trim");
    uint64_t q4 = sim_stats().pool_attr_calls;
    CU(F.cuMemAllocAsync(&p, 1u << 20, s)); /* after a trim: asks again */
    CHECK(sim_stats().pool_attr_calls > q4, "no query after a trim");
    expect_used(f0, reserved(dp), "pool reserve after the trim");
    CU(F.cuMemFreeAsync(p, s));
    CU(F.cuStreamSynchronize(s));
    CU(F.cuMemPoolTrimTo(dp, 0));
    expect_published("after a trim");
    /* A pool that keeps nothing gives its memory back at a sync: that
     * charge's end is published too, with no allocation after it. */
    uint64_t keep_none = 0;
    CU(F.cuMemPoolSetAttribute(dp, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                               &keep_none));
    CU(F.cuMemAllocAsync(&p, 8u << 20, s));
    CU(F.cuMemFreeAsync(p, s));
    CU(F.cuStreamSynchronize(s));
    expect_used(f0, reserved(dp), "after a sync released the pool");
    expect_published("after a sync released the pool");
    printf("ok pool-queries %llu\n", (unsigned long long)(q1 - q0));
}

/* Requests no driver can serve: the answers are printed for the caller to
 * compare with the driver's own. */
/* Every context is charged while it lives: a created one next to the
 * primary one, the primary one again after its last release. A created
 * context that would pass the limit is refused. Run with a limit and
 * SIMCUDA_CONTEXT; the report's context figure is the most at once. */
static void s_contexts(void)
{
    uint64_t limit = total_now(), ctx = limit - free_now();
    CHECK(ctx > 0 && 3 * ctx < limit, "context %llu of %llu",
          (unsigned long long)ctx, (unsigned long long)limit);
    CUcontext c = NULL;
    CU(F.cuCtxCreate_v2(&c, 0, dev0)); /* current now */
    CHECK(limit - free_now() == 2 * ctx, "two contexts: used %llu",
          (unsigned long long)(limit - free_now()));
    CUdeviceptr p = 0, q = 0;
    CU(F.cuMemAlloc_v2(&p, free_now()));
    CHECK(F.cuMemAlloc_v2(&q, 1) == CUDA_ERROR_OUT_OF_MEMORY,
          "one byte past the limit with two contexts");
    CU(F.cuMemFree_v2(p));
    /* The primary context's last release ends it; a retain makes it again. */
    CU(F.cuDevicePrimaryCtxRelease_v2(dev0));
    CHECK(limit - free_now() == ctx, "primary released: used %llu",
          (unsigned long long)(limit - free_now()));
    CU(F.cuDevicePrimaryCtxRetain(&ctx0, dev0));
    CHECK(limit - free_now() == 2 * ctx, "primary made again: used %llu",
          (unsigned long long)(limit - free_now()));
    CU(F.cuCtxDestroy_v2(c));
    CU(F.cuCtxSetCurrent(ctx0));
    CHECK(limit - free_now() == ctx, "created one destroyed: used %llu",
          (unsigned long long)(limit - free_now()));
    /* A destroy the driver refuses (a primary context is released, not
     * destroyed) leaves the context listed and charged: the reset below
     * still gives its charge back. */
    CHECK(F.cuCtxDestroy_v2(ctx0) != CUDA_SUCCESS, "the primary destroyed");
    CHECK(limit - free_now() == ctx, "after a refused destroy: used %llu",
          (unsigned long long)(limit - free_now()));
    /* A reset ends the primary context too (its reference stays). */
    CU(F.cuDevicePrimaryCtxReset_v2(dev0));
    CU(F.cuDevicePrimaryCtxRetain(&ctx0, dev0));
    CU(F.cuDevicePrimaryCtxRelease_v2(dev0));
    CU(F.cuCtxSetCurrent(ctx0));
    CHECK(limit - free_now() == ctx, "after a reset: used %llu",
          (unsigned long long)(limit - free_now()));
    /* Room for less than a context: a new one is refused, nothing moves. */
    uint64_t fill = limit - 2 * ctx + (1u << 20);
    CU(F.cuMemAlloc_v2(&p, fill));
    c = (CUcontext)(uintptr_t)1;
    CHECK(F.cuCtxCreate_v2(&c, 0, dev0) == CUDA_ERROR_OUT_OF_MEMORY,
          "a context past the limit was made");
    CHECK(c == NULL, "refused, yet a context came back");
    CU(F.cuCtxSetCurrent(ctx0));
    CHECK(limit - free_now() == ctx + fill, "after the refusal: used %llu",
          (unsigned long long)(limit - free_now()));
    CU(F.cuMemFree_v2(p));
    printf("ok contexts\n");
}

/* gpumem_used(dev) of the preloaded shim: what it charges the device now. */
static long long shim_used_on(int dev)
{
    long long (*f)(int) = (long long (*)(int))dlsym(RTLD_DEFAULT, "gpumem_used");
    CHECK(f != NULL, "gpumem_used is not exported (run under the shim)");
    return f(dev);
}

static long long shim_used(void)
{
    return shim_used_on(0);
}

/* The used figure this process's segment publishes for device 0 is what
 * the shim charges it (the program is quiet: no call in flight). */
static void expect_published(const char *what)
{
    size_t len = 0;
    struct gm_abi_header *h = own_segment(&len);
    if (h == NULL)
        exit(1);
    const struct gm_abi_dev *d0 = (const struct gm_abi_dev *)(h + 1);
    uint64_t pub = __atomic_load_n(&d0->used, __ATOMIC_ACQUIRE);
    long long charged = shim_used();
    munmap(h, len);
    CHECK(charged >= 0 && pub == (uint64_t)charged,
          "%s: the segment says used %llu, the shim charges %lld", what,
          (unsigned long long)pub, charged);
}

/* A context's end frees what was made in it, and the shim gives the
 * charge back at once: a created context destroyed next to the live
 * primary one (the driver is asked pointer by pointer, so what the primary
 * context holds stays charged), then the primary context reset as the
 * device's only one (its pointers and arrays). The room is usable at once.
 * Run with GPUMEM_LIMIT=1G SIMCUDA_CONTEXT=200M. */
static void s_ctx_frees(void)
{
    long long ctx = shim_used();
    CHECK(ctx > 0, "the primary context is charged (%lld)", ctx);
    CUcontext c = NULL;
    CUdeviceptr a = 0, m = 0, b = 0, p = 0;
    CUDA_ARRAY_DESCRIPTOR ad = { 1000, 512, CU_AD_FORMAT_FLOAT, 4 };
    CUarray arr, arr_c;
    CU(F.cuCtxCreate_v2(&c, 0, dev0)); /* current now */
    CU(F.cuMemAlloc_v2(&a, 64u << 20));
    CU(F.cuMemAllocManaged(&m, 16u << 20, CU_MEM_ATTACH_GLOBAL));
    long long before_arr = shim_used();
    CU(F.cuArrayCreate_v2(&arr_c, &ad));
    long long arr_bytes = shim_used() - before_arr;
    CHECK(arr_bytes > 0, "the array is charged");
    CU(F.cuCtxSetCurrent(ctx0));
    CU(F.cuMemAlloc_v2(&b, 32u << 20));
    CHECK(shim_used() == 2 * ctx + (112ll << 20) + arr_bytes, "two contexts, "
          "three blocks, an array: used %lld", shim_used());
    CU(F.cuCtxDestroy_v2(c));
    /* Its blocks are back; its array, which the driver cannot be asked
     * about with another context alive, stays charged (the safe side). */
    CHECK(shim_used() == ctx + (32ll << 20) + arr_bytes, "after the created "
          "context's end: used %lld (its 80 MiB not given back?)",
          shim_used());
    CU(F.cuArrayCreate_v2(&arr, &ad));
    CHECK(shim_used() == ctx + (32ll << 20) + 2 * arr_bytes,
          "the primary's array is charged");
    /* The device's only context: everything of the device is gone. */
    CU(F.cuDevicePrimaryCtxReset_v2(dev0));
    CHECK(shim_used() == 0, "after the reset: used %lld", shim_used());
    CU(F.cuDevicePrimaryCtxRetain(&ctx0, dev0));
    CU(F.cuDevicePrimaryCtxRelease_v2(dev0)); /* the reset kept a reference */
    CU(F.cuCtxSetCurrent(ctx0));
    CHECK(shim_used() == ctx, "the primary made again: used %lld", shim_used());
    CU(F.cuMemAlloc_v2(&p, (size_t)(total_now() - (uint64_t)ctx)));
    CHECK(shim_used() == (long long)total_now(), "filled to the limit");
    CU(F.cuMemFree_v2(p));
    CHECK(F.cuMemFree_v2(b) != CUDA_SUCCESS, "b outlived its context");
    CHECK(shim_used() == ctx, "a free of a freed block moved the charge: %lld",
          shim_used());
    printf("ok ctx-frees\n");
}

/* Static mode: the arena ends with the primary context it was made in
 * (its charge given back); the primary context made again is charged and
 * allocations go to the driver. */
static void s_static_ctx(void)
{
    CUdeviceptr p = 0, q = 0, base = 0;
    CU(F.cuMemAlloc_v2(&p, 64u << 20)); /* from the arena */
    CU(F.cuDevicePrimaryCtxRelease_v2(dev0));
    CHECK(shim_used() == 0, "after the context's end: used %lld", shim_used());
    CU(F.cuDevicePrimaryCtxRetain(&ctx0, dev0));
    CU(F.cuCtxSetCurrent(ctx0));
    long long ctx = shim_used();
    CHECK(ctx > 0, "the primary context made again is charged (%lld)", ctx);
    CU(F.cuMemAlloc_v2(&q, 64u << 20));
    CHECK(shim_used() == ctx + (64ll << 20), "a driver allocation: used %lld",
          shim_used());
    size_t sz = 0;
    CU(F.cuMemGetAddressRange_v2(&base, &sz, q));
    CHECK(base == q && sz == (64u << 20), "q is the driver's own block");
    CU(F.cuMemFree_v2(q));
    CHECK(shim_used() == ctx, "after its free: used %lld", shim_used());
    (void)p; /* freed with the arena's context */
    printf("ok static-ctx\n");
}

/* A created context as the device's first one, past the limit: refused. */
static void s_first_create(void)
{
    resolve();
    CU(F.cuInit(0));
    CU(F.cuDeviceGet(&dev0, 0));
    CUcontext c = (CUcontext)(uintptr_t)1;
    CUresult rc = F.cuCtxCreate_v2(&c, 0, dev0);
    CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY && c == NULL,
          "the first context past the limit: rc %d", (int)rc);
    CHECK(shim_used() == 0, "nothing charged: used %lld", shim_used());
    printf("ok first-create\n");
}

/* In a group with room for one context only: a second is refused, and
 * nothing of it stays charged. */
static void s_ctx_group(void)
{
    long long before = shim_used();
    CUcontext c = (CUcontext)(uintptr_t)1;
    CUresult rc = F.cuCtxCreate_v2(&c, 0, dev0);
    CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY && c == NULL,
          "a context past the group's limit: rc %d", (int)rc);
    CU(F.cuCtxSetCurrent(ctx0));
    CHECK(shim_used() == before, "used %lld, was %lld", shim_used(), before);
    printf("ok ctx-group\n");
}

/* Threads retaining and releasing the primary context at once: while a
 * thread holds a reference, the context is charged. */
static long long churn_ctx;

static void *primary_churn(void *arg)
{
    (void)arg;
    for (int i = 0; i < 300; i++) {
        CUcontext c;
        CU(F.cuDevicePrimaryCtxRetain(&c, dev0));
        long long u = shim_used();
        CHECK(u >= churn_ctx, "a held primary context uncharged: used %lld", u);
        CU(F.cuDevicePrimaryCtxRelease_v2(dev0));
    }
    return NULL;
}

static void s_primary_race(void)
{
    churn_ctx = shim_used();
    CHECK(churn_ctx > 0, "the primary context is charged (%lld)", churn_ctx);
    CU(F.cuDevicePrimaryCtxRelease_v2(dev0));
    CHECK(shim_used() == 0, "released: used %lld", shim_used());
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, primary_churn, NULL) == 0, "thread");
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK(shim_used() == 0, "all released: used %lld", shim_used());
    CU(F.cuDevicePrimaryCtxRetain(&ctx0, dev0));
    CHECK(shim_used() == churn_ctx, "retained once: used %lld", shim_used());
    printf("ok primary-race\n");
}

/* Contexts ending while another thread allocates: a thread frees and
 * allocates blocks of 1 MiB in the primary context (the simulated driver
 * hands the freed addresses out again at once) while the main thread
 * makes a context, allocates in it and destroys it, 40 times. Each end is
 * judged pointer by pointer (the primary context lives): the other
 * thread's blocks, some at addresses the ended context had, must never be
 * taken for the dead ones, and no dead one left. */
static atomic_int race_stop;

static void *primary_churn_allocs(void *arg)
{
    (void)arg;
    CU(F.cuCtxSetCurrent(ctx0));
    CUdeviceptr held[8] = {0};
    for (unsigned i = 0; !atomic_load(&race_stop) || i < 4000; i++) {
        unsigned k = i % 8;
        if (held[k] != 0)
            CU(F.cuMemFree_v2(held[k]));
        CU(F.cuMemAlloc_v2(&held[k], 1u << 20));
    }
    for (unsigned k = 0; k < 8; k++)
        CU(F.cuMemFree_v2(held[k]));
    return NULL;
}

static void s_ctx_frees_race(void)
{
    long long ctx = shim_used();
    pthread_t t;
    CHECK(pthread_create(&t, NULL, primary_churn_allocs, NULL) == 0, "thread");
    for (int round = 0; round < 40; round++) {
        CUcontext c = NULL;
        CUdeviceptr p[3];
        CU(F.cuCtxCreate_v2(&c, 0, dev0));
        for (int i = 0; i < 3; i++)
            CU(F.cuMemAlloc_v2(&p[i], 1u << 20));
        CU(F.cuCtxDestroy_v2(c));
    }
    atomic_store(&race_stop, 1);
    pthread_join(t, NULL);
    CU(F.cuCtxSetCurrent(ctx0));
    CHECK(shim_used() == ctx, "after the race: used %lld, the context alone "
          "%lld", shim_used(), ctx);
    CHECK(sim_stats().live == 0, "the driver still holds %llu blocks",
          (unsigned long long)sim_stats().live);
    printf("ok ctx-frees-race\n");
}

static void s_invalid(void)
{
    CUmemAllocationProp prop = dev0_alloc_prop();
    CUmemGenericAllocationHandle h;
    printf("create-max rc %d\n", (int)F.cuMemCreate(&h, SIZE_MAX, &prop, 0));
    prop.location.id = 63;
    printf("create-dev63 rc %d\n",
           (int)F.cuMemCreate(&h, 2u << 20, &prop, 0));
    CUDA_ARRAY_DESCRIPTOR ad;
    memset(&ad, 0, sizeof ad);
    ad.Width = SIZE_MAX / 2;
    ad.Height = SIZE_MAX / 2;
    ad.Format = CU_AD_FORMAT_FLOAT;
    ad.NumChannels = 4;
    CUarray arr;
    printf("array-huge rc %d\n", (int)F.cuArrayCreate_v2(&arr, &ad));
    CUdeviceptr p;
    printf("alloc-max rc %d\n", (int)F.cuMemAlloc_v2(&p, SIZE_MAX));
}

/* group-pool GROUP_LIMIT: memory a stream-ordered pool keeps after a free
 * (threshold "never", as PyTorch and TensorFlow set) counts against the
 * group as it does against the process: the driver never holds more for
 * this member than the group limit. */
static void s_group_pool(uint64_t glimit)
{
    CUstream s;
    CUmemoryPool dp = keeping_pool(&s);
    CUdeviceptr a, b;
    CU(F.cuMemAllocAsync(&a, 600u << 20, s));
    CU(F.cuMemFreeAsync(a, s));
    CU(F.cuStreamSynchronize(s));
    CHECK(reserved(dp) >= (600u << 20), "the pool keeps its memory");
    CUresult rc = F.cuMemAlloc_v2(&b, 600u << 20);
    struct sim_stats st = sim_stats();
    CHECK(st.used <= glimit, "the driver holds %llu for this member under "
          "a group limit of %llu (pool %llu)", (unsigned long long)st.used,
          (unsigned long long)glimit, (unsigned long long)reserved(dp));
    if (rc == CUDA_SUCCESS)
        CU(F.cuMemFree_v2(b));
    printf("ok group-pool\n");
}

/* A pool destroyed while a block of it is live: the driver keeps the
 * memory until the block is freed, and so must the charge. */
static void s_pool_destroy_live(void)
{
    uint64_t f0 = free_now();
    CUstream s;
    CU(F.cuStreamCreate(&s, 0));
    CUmemPoolProps pp = dev0_pool_props();
    CUmemoryPool cp;
    CU(F.cuMemPoolCreate(&cp, &pp));
    CUdeviceptr c, big;
    CU(F.cuMemAllocFromPoolAsync(&c, 512u << 20, cp, s));
    CU(F.cuStreamSynchronize(s));
    CU(F.cuMemPoolDestroy(cp));
    CHECK(f0 - free_now() >= (512u << 20),
          "charge dropped at destroy: %llu charged",
          (unsigned long long)(f0 - free_now()));
    CUresult rc = F.cuMemAlloc_v2(&big, f0 - (256u << 20));
    CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY,
          "a live block of a destroyed pool is not charged: rc %d", (int)rc);
    if (rc == CUDA_SUCCESS)
        CU(F.cuMemFree_v2(big));
    CU(F.cuMemFreeAsync(c, s));
    CU(F.cuStreamSynchronize(s));
    CHECK(free_now() == f0, "after the last block: %llu still charged",
          (unsigned long long)(f0 - free_now()));
    CU(F.cuMemAlloc_v2(&big, f0 - (256u << 20)));
    CU(F.cuMemFree_v2(big));
    printf("ok pool-destroy-live\n");
}

/* The peak under a stream-ordered pool: what the pool held at most plus
 * the context (printed for the caller to compare with the segment), never
 * a provisional reservation on top of the pool's growth. */
static void s_pool_peak(uint64_t limit)
{
    uint64_t ctx = limit - free_now();
    CUstream s;
    CUmemoryPool dp = keeping_pool(&s);
    CUdeviceptr a, b, d;
    CU(F.cuMemAllocAsync(&a, 300u << 20, s));
    CU(F.cuMemAllocAsync(&b, 100u << 20, s));
    CU(F.cuMemFreeAsync(a, s));
    CU(F.cuStreamSynchronize(s));
    CU(F.cuMemPoolTrimTo(dp, 0));
    CU(F.cuMemAllocAsync(&d, 50u << 20, s));
    CU(F.cuMemFreeAsync(b, s));
    CU(F.cuMemFreeAsync(d, s));
    CU(F.cuStreamSynchronize(s));
    uint64_t high = pool_attr(dp, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH);
    CHECK(high >= (400u << 20), "pool high %llu", (unsigned long long)high);
    printf("expect peak %llu\n", (unsigned long long)(ctx + high));
}

struct athr {
    unsigned seed;
    CUstream s;
};

static void *async_main(void *arg)
{
    struct athr *t = arg;
    CU(F.cuCtxSetCurrent(ctx0));
    CUdeviceptr live[32] = { 0 };
    unsigned s = t->seed;
    for (int i = 0; i < 20000; i++) {
        s = s * 1103515245u + 12345u;
        unsigned k = (s >> 16) % 32;
        if (live[k]) {
            CU(F.cuMemFreeAsync(live[k], t->s));
            live[k] = 0;
        } else if (F.cuMemAllocAsync(&live[k], 4096 + (s >> 8) % (4u << 20),
                                     t->s) != CUDA_SUCCESS) {
            live[k] = 0;
        }
    }
    for (int k = 0; k < 32; k++)
        if (live[k])
            CU(F.cuMemFreeAsync(live[k], t->s));
    CU(F.cuStreamSynchronize(t->s));
    return NULL;
}

/* 4 threads on 2 streams: at the end, with the pool trimmed, no drift. */
static void s_pool_threads(void)
{
    uint64_t f0 = free_now();
    CUstream st[2];
    CU(F.cuStreamCreate(&st[0], 0));
    CU(F.cuStreamCreate(&st[1], 0));
    pthread_t th[4];
    struct athr a[4];
    for (int i = 0; i < 4; i++) {
        a[i].seed = 99u + (unsigned)i;
        a[i].s = st[i % 2];
        pthread_create(&th[i], NULL, async_main, &a[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    CUmemoryPool dp;
    CU(F.cuDeviceGetMemPool(&dp, dev0));
    CU(F.cuMemPoolTrimTo(dp, 0));
    expect_used(f0, 0, "after 4 threads and a trim");
    printf("ok pool threads\n");
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* GPUMEM_MODE=staged, GPUMEM_WARMUP=200ms, GPUMEM_HEADROOM=10%, no limit:
 * after the warm-up the limit is peak x 1.1 rounded up to 2 MiB. */
static void s_staged(void)
{
    size_t f = 0, t = 0;
    CU(F.cuMemGetInfo_v2(&f, &t));
    uint64_t ctx = t - f; /* alone on the simulated device */
    CUdeviceptr p;
    CU(F.cuMemAlloc_v2(&p, 100u << 20));
    CU(F.cuMemFree_v2(p));
    CU(F.cuMemAlloc_v2(&p, 1u << 20)); /* still in the warm-up: no limit */
    CU(F.cuMemFree_v2(p));
    sleep_ms(300);
    uint64_t peak = ctx + (100u << 20);
    uint64_t want = (uint64_t)((double)peak * 1.1);
    want = (want + (2u << 20) - 1) / (2u << 20) * (2u << 20);
    CHECK(total_now() == want, "frozen limit %llu, expected %llu",
          (unsigned long long)total_now(), (unsigned long long)want);
    uint64_t room = free_now();
    CHECK(room == want - ctx, "room %llu", (unsigned long long)room);
    CHECK(F.cuMemAlloc_v2(&p, room + 1) == CUDA_ERROR_OUT_OF_MEMORY,
          "past the frozen limit");
    CU(F.cuMemAlloc_v2(&p, room));
    CU(F.cuMemFree_v2(p));
    printf("ok staged: limit frozen at %llu\n", (unsigned long long)want);
}

struct waiter {
    uint64_t size;
    CUresult rc;
    double waited_ms;
};

static void *wait_main(void *arg)
{
    struct waiter *w = arg;
    CU(F.cuCtxSetCurrent(ctx0));
    double t0 = mono_ms();
    CUdeviceptr p = 0;
    w->rc = F.cuMemAlloc_v2(&p, w->size);
    w->waited_ms = mono_ms() - t0;
    if (w->rc == CUDA_SUCCESS)
        CU(F.cuMemFree_v2(p));
    return NULL;
}

/* GPUMEM_ON_OOM=wait:D. Mode "release": another thread frees after 200 ms
 * and the waiter proceeds; mode "timeout": nobody frees, the waiter fails
 * after about D (expected milliseconds in arg). */
static void s_wait(const char *how, uint64_t d_ms)
{
    uint64_t f0 = free_now();
    CUdeviceptr fill;
    CU(F.cuMemAlloc_v2(&fill, f0));
    struct waiter w = { 1u << 20, CUDA_ERROR_UNKNOWN, 0 };
    pthread_t th;
    pthread_create(&th, NULL, wait_main, &w);
    if (strcmp(how, "release") == 0) {
        sleep_ms(200);
        CU(F.cuMemFree_v2(fill));
        pthread_join(th, NULL);
        CHECK(w.rc == CUDA_SUCCESS, "waiter got %d", w.rc);
        CHECK(w.waited_ms >= 150, "waited only %.0f ms", w.waited_ms);
        CHECK(w.waited_ms < (double)d_ms, "waited %.0f ms", w.waited_ms);
    } else {
        pthread_join(th, NULL);
        CHECK(w.rc == CUDA_ERROR_OUT_OF_MEMORY, "waiter got %d", w.rc);
        CHECK(w.waited_ms >= (double)d_ms * 0.9 &&
                  w.waited_ms < (double)d_ms + 1000,
              "gave up after %.0f ms, expected %llu", w.waited_ms,
              (unsigned long long)d_ms);
        CU(F.cuMemFree_v2(fill));
    }
    expect_used(f0, 0, "after the wait");
    printf("ok wait %s after %.0f ms\n", how, w.waited_ms);
}

/* GPUMEM_ON_OOM=spill: past the limit cuMemAlloc is served as managed
 * memory, freed by cuMemFree. */
static struct gm_abi_header *own_segment(size_t *len);

static void s_spill(void)
{
    uint64_t f0 = free_now();
    CUdeviceptr fill, p;
    CU(F.cuMemAlloc_v2(&fill, f0));
    uint64_t m0 = sim_stats().managed;
    CU(F.cuMemAlloc_v2(&p, 10u << 20));
    CHECK(sim_stats().managed == m0 + (10u << 20), "not served as managed");
    CHECK(free_now() == 0, "spilled bytes must not be charged");
    CU(F.cuMemFree_v2(p));
    CHECK(sim_stats().managed == m0, "spill not freed");
    /* cuMemAllocPitch spills too, rows padded to 512 bytes. */
    size_t pitch = 0;
    CU(F.cuMemAllocPitch_v2(&p, &pitch, 1000, 1024, 4));
    CHECK(pitch == 1024, "spilled pitch %zu", pitch);
    CHECK(sim_stats().managed == m0 + 1024u * 1024u, "pitch not spilled");
    CU(F.cuMemFree_v2(p));
    CHECK(sim_stats().managed == m0, "pitch spill not freed");
    /* VMM and async requests are never spilled. */
    CHECK(F.cuMemAllocAsync(&p, 1u << 20, NULL) == CUDA_ERROR_OUT_OF_MEMORY,
          "async spilled");
    CU(F.cuMemFree_v2(fill));
    expect_used(f0, 0, "after spill");
    /* The spills are no allocations of the device: the figures count the
     * fill alone (one allocation, one free, its bytes). */
    size_t len;
    struct gm_abi_header *h = own_segment(&len);
    if (h != NULL) {
        const struct gm_abi_dev *d0 = (const struct gm_abi_dev *)(h + 1);
        uint64_t timed = 0;
        for (unsigned b = 0; b < GM_ABI_LAT_BUCKETS; b++)
            timed += d0->lat_hist[b];
        CHECK(d0->allocs == 1 && d0->frees == 1 && d0->spills == 2 &&
                  d0->live_allocs == 0 && d0->total_bytes == f0 && timed == 1,
              "figures: %llu allocs, %llu frees, %llu spills, %llu live, "
              "%llu bytes (fill %llu), %llu timed",
              (unsigned long long)d0->allocs, (unsigned long long)d0->frees,
              (unsigned long long)d0->spills,
              (unsigned long long)d0->live_allocs,
              (unsigned long long)d0->total_bytes, (unsigned long long)f0,
              (unsigned long long)timed);
        munmap(h, len);
    }
    printf("ok spill\n");
}

/* GPUMEM_ON_OOM=warn: allowed past the limit, counted. */
static void s_warn(void)
{
    uint64_t f0 = free_now();
    CUdeviceptr fill, p;
    CU(F.cuMemAlloc_v2(&fill, f0));
    CU(F.cuMemAlloc_v2(&p, 5u << 20));
    CHECK(free_now() == 0, "free %llu", (unsigned long long)free_now());
    CU(F.cuMemFree_v2(p));
    CU(F.cuMemFree_v2(fill));
    expect_used(f0, 0, "after warn");
    printf("ok warn\n");
}

/* GPUMEM_MODE=static: one driver allocation, pieces served from it. */
static void s_static(void)
{
    struct sim_stats s0 = sim_stats();
    CHECK(s0.live == 1, "driver allocations: %llu (want the arena only)",
          (unsigned long long)s0.live);
    uint64_t arena = s0.alloc;
    /* Free memory is what the arena can still hand out: all of it. */
    CHECK(arena > 0 && free_now() == arena, "arena %llu, free %llu",
          (unsigned long long)arena, (unsigned long long)free_now());
    CUdeviceptr live[256] = { 0 }, base = 0;
    unsigned seed = 5;
    for (int i = 0; i < 20000; i++) {
        seed = seed * 1103515245u + 12345u;
        unsigned k = (seed >> 16) % 256;
        if (live[k]) {
            CU(F.cuMemFree_v2(live[k]));
            live[k] = 0;
            continue;
        }
        size_t sz = 1 + (seed >> 4) % (1u << 20);
        CU(F.cuMemAlloc_v2(&live[k], sz));
        CHECK(live[k] % 512 == 0, "alignment");
        CUdeviceptr b;
        size_t len;
        CU(F.cuMemGetAddressRange_v2(&b, &len, live[k]));
        if (base == 0)
            base = b;
        CHECK(b == base && len == arena, "piece outside the arena");
    }
    CHECK(sim_stats().live == 1, "the driver saw other allocations");
    size_t pitch;
    CUdeviceptr pp;
    CU(F.cuMemAllocPitch_v2(&pp, &pitch, 1000, 100, 4));
    CHECK(sim_stats().live == 1, "pitch not served from the arena");
    CU(F.cuMemFree_v2(pp));
    for (int k = 0; k < 256; k++)
        if (live[k])
            CU(F.cuMemFree_v2(live[k]));
    CUdeviceptr p;
    /* A refusal by the arena changes no figure of the device: its used
     * stays what the budget holds (context and arena). */
    size_t len;
    struct gm_abi_header *h = own_segment(&len);
    const struct gm_abi_dev *d0 = h ? (const struct gm_abi_dev *)(h + 1) : NULL;
    uint64_t used0 = d0 ? d0->used : 0;
    CHECK(F.cuMemAlloc_v2(&p, arena + 1) == CUDA_ERROR_OUT_OF_MEMORY,
          "past the arena");
    if (d0 != NULL) {
        CHECK(d0->used == used0 && d0->refusals == 1,
              "after the arena's refusal: used %llu (was %llu), %llu refused",
              (unsigned long long)d0->used, (unsigned long long)used0,
              (unsigned long long)d0->refusals);
        munmap(h, len);
    }
    CU(F.cuMemAlloc_v2(&p, arena)); /* whole again after coalescing */
    CU(F.cuMemFree_v2(p));
    printf("ok static: arena of %llu bytes\n", (unsigned long long)arena);
}

/* GPUMEM_MODE=static: a stream-ordered free of an arena block returns it
 * to the arena (the driver still holds the whole arena, the room is back)
 * after its stream was synchronised; a second free of it is refused and
 * changes nothing. */
static void s_static_free_async(void)
{
    uint64_t arena = sim_stats().alloc, f0 = free_now();
    CUstream s;
    CU(F.cuStreamCreate(&s, 0));
    CUdeviceptr a = 0, b = 0, p = 0;
    CU(F.cuMemAlloc_v2(&a, 64u << 20));
    CU(F.cuMemAlloc_v2(&b, 64u << 20));
    uint64_t syncs = sim_stats().stream_syncs;
    CU(F.cuMemFreeAsync(b, s));
    CHECK(sim_stats().stream_syncs == syncs + 1, "the stream was not "
          "synchronised before the block went back");
    CU(F.cuMemFreeAsync_ptsz(a, NULL));
    CHECK(sim_stats().live == 1 && sim_stats().alloc == arena,
          "the driver holds %llu bytes in %llu allocations (the arena: %llu)",
          (unsigned long long)sim_stats().alloc,
          (unsigned long long)sim_stats().live, (unsigned long long)arena);
    CHECK(free_now() == f0, "free %llu, was %llu",
          (unsigned long long)free_now(), (unsigned long long)f0);
    CHECK(F.cuMemFreeAsync(a, s) == CUDA_ERROR_INVALID_VALUE,
          "a second free of an arena block");
    CU(F.cuMemAlloc_v2(&p, f0)); /* the arena whole again */
    CU(F.cuMemFreeAsync(p, s));
    CHECK(free_now() == f0 && sim_stats().live == 1, "after the last free");
    CU(F.cuStreamDestroy_v2(s));
    printf("ok static-free-async\n");
}

/* GPUMEM_MODE=static with GPUMEM_ON_OOM (how: spill, warn, wait):
 * a request the arena has no block for goes by the policy, and its free
 * goes where it came from; the figures end where they began. */
static const struct gm_abi_dev *own_dev0(struct gm_abi_header **h,
                                         size_t *len)
{
    *h = own_segment(len);
    return *h ? (const struct gm_abi_dev *)(*h + 1) : NULL;
}

/* spill: managed memory, not charged, freed by the driver. */
static void static_oom_spill(const struct gm_abi_dev *d0, uint64_t used0)
{
    uint64_t m0 = sim_stats().managed, a0 = sim_stats().alloc;
    CUdeviceptr p = 0, q = 0;
    size_t pitch = 0;
    CU(F.cuMemAlloc_v2(&p, 10u << 20));
    CU(F.cuMemAllocPitch_v2(&q, &pitch, 1000, 1024, 4));
    CHECK(pitch == 1024, "spilled pitch %zu", pitch);
    CHECK(sim_stats().managed == m0 + (11u << 20) && sim_stats().alloc == a0,
          "not served as managed memory: managed %llu (was %llu)",
          (unsigned long long)sim_stats().managed, (unsigned long long)m0);
    CHECK(d0->used == used0 && d0->spills == 2 && d0->refusals == 0,
          "used %llu (was %llu), %llu spills, %llu refused",
          (unsigned long long)d0->used, (unsigned long long)used0,
          (unsigned long long)d0->spills, (unsigned long long)d0->refusals);
    CU(F.cuMemFree_v2(p));
    CU(F.cuMemFreeAsync(q, NULL));
    CHECK(sim_stats().managed == m0, "spills not freed by the driver");
}

/* warn: from the driver outside the arena, charged past the limit. */
static void static_oom_warn(const struct gm_abi_dev *d0, uint64_t used0,
                            uint64_t arena)
{
    CUdeviceptr p = 0, q = 0, b = 0;
    size_t pitch = 0, len = 0;
    CU(F.cuMemAlloc_v2(&p, 10u << 20));
    CU(F.cuMemAllocPitch_v2(&q, &pitch, 1000, 1024, 4));
    CHECK(sim_stats().alloc == arena + (10u << 20) + pitch * 1024u &&
              sim_stats().live == 3,
          "not from the driver: %llu bytes in %llu allocations",
          (unsigned long long)sim_stats().alloc,
          (unsigned long long)sim_stats().live);
    CU(F.cuMemGetAddressRange_v2(&b, &len, p));
    CHECK(b == p && len == 10u << 20, "inside the arena");
    CHECK(d0->used == used0 + (10u << 20) + pitch * 1024u &&
              d0->over_limit == 2 && d0->refusals == 0,
          "used %llu (was %llu), %llu over the limit, %llu refused",
          (unsigned long long)d0->used, (unsigned long long)used0,
          (unsigned long long)d0->over_limit,
          (unsigned long long)d0->refusals);
    CHECK(free_now() == 0, "free %llu past the limit",
          (unsigned long long)free_now());
    CU(F.cuMemFree_v2(p));
    CU(F.cuMemFreeAsync(q, NULL));
    CHECK(sim_stats().alloc == arena && sim_stats().live == 1,
          "not freed by the driver");
}

/* wait: served from the arena once a thread frees; refused after the
 * bound; at once when larger than the whole arena. */
static void static_oom_wait(CUdeviceptr *fill, uint64_t arena,
                            uint64_t d_ms)
{
    struct waiter w = { 1u << 20, CUDA_ERROR_UNKNOWN, 0 };
    pthread_t th;
    pthread_create(&th, NULL, wait_main, &w);
    sleep_ms(200);
    CU(F.cuMemFree_v2(*fill));
    pthread_join(th, NULL);
    CHECK(w.rc == CUDA_SUCCESS && w.waited_ms >= 150 &&
              w.waited_ms < (double)d_ms,
          "waiter got %d after %.0f ms", w.rc, w.waited_ms);
    CHECK(sim_stats().live == 1, "the waiter was not served by the arena");
    CU(F.cuMemAlloc_v2(fill, arena));
    w.rc = CUDA_ERROR_UNKNOWN;
    pthread_create(&th, NULL, wait_main, &w);
    pthread_join(th, NULL);
    CHECK(w.rc == CUDA_ERROR_OUT_OF_MEMORY &&
              w.waited_ms >= (double)d_ms * 0.9 &&
              w.waited_ms < (double)d_ms + 1000,
          "waiter got %d after %.0f ms (bound %llu)", w.rc, w.waited_ms,
          (unsigned long long)d_ms);
    double t0 = mono_ms();
    CUdeviceptr p = 0;
    CHECK(F.cuMemAlloc_v2(&p, arena + (1u << 20)) == CUDA_ERROR_OUT_OF_MEMORY
              && mono_ms() - t0 < (double)d_ms / 2,
          "a request larger than the arena waited");
}

static void s_static_oom(const char *how, uint64_t d_ms)
{
    uint64_t arena = sim_stats().alloc;
    CHECK(sim_stats().live == 1 && arena == free_now(),
          "arena %llu, free %llu", (unsigned long long)arena,
          (unsigned long long)free_now());
    struct gm_abi_header *h;
    size_t len;
    const struct gm_abi_dev *d0 = own_dev0(&h, &len);
    if (d0 == NULL)
        return;
    uint64_t used0 = d0->used;
    CUdeviceptr fill = 0;
    CU(F.cuMemAlloc_v2(&fill, arena));
    if (strcmp(how, "spill") == 0)
        static_oom_spill(d0, used0);
    else if (strcmp(how, "warn") == 0)
        static_oom_warn(d0, used0, arena);
    else
        static_oom_wait(&fill, arena, d_ms);
    CHECK(free_now() == 0, "the arena's frees went astray: free %llu",
          (unsigned long long)free_now());
    CU(F.cuMemFree_v2(fill));
    CHECK(d0->used == used0 && free_now() == arena && sim_stats().live == 1,
          "after: used %llu (was %llu), free %llu of the arena's %llu",
          (unsigned long long)d0->used, (unsigned long long)used0,
          (unsigned long long)free_now(), (unsigned long long)arena);
    CU(F.cuMemAlloc_v2(&fill, arena)); /* the arena whole again */
    CU(F.cuMemFree_v2(fill));
    munmap(h, len);
    printf("ok static-oom %s\n", how);
}

/* Group scenarios (run several at once under one GPUMEM_GROUP). */

/* hold SIZE MS: allocate SIZE, say so, keep it MS milliseconds, free. */
static void s_hold(uint64_t size, uint64_t ms)
{
    CUdeviceptr p;
    CU(F.cuMemAlloc_v2(&p, size));
    printf("holding %llu\n", (unsigned long long)size);
    fflush(stdout);
    sleep_ms((unsigned)ms);
    CU(F.cuMemFree_v2(p));
    printf("released\n");
}

/* try SIZE...: one cuMemAlloc_v2 of each size (freed at once); prints
 * "try SIZE rc N" for each. An argument sleep:MS sleeps instead, and
 * "info" prints cuMemGetInfo's figures. */
static void s_try(int n, char **sizes)
{
    for (int k = 0; k < n; k++) {
        if (strncmp(sizes[k], "sleep:", 6) == 0) {
            sleep_ms((unsigned)strtoul(sizes[k] + 6, NULL, 10));
            continue;
        }
        if (strcmp(sizes[k], "info") == 0) {
            size_t f = 0, t = 0;
            CU(F.cuMemGetInfo_v2(&f, &t));
            printf("free %zu total %zu\n", f, t);
            continue;
        }
        CUdeviceptr p = 0;
        unsigned long long size = strtoull(sizes[k], NULL, 0);
        CUresult rc = F.cuMemAlloc_v2(&p, (size_t)size);
        printf("try %llu rc %d\n", size, (int)rc);
        fflush(stdout); /* read while the process lives on */
        if (rc == CUDA_SUCCESS)
            CU(F.cuMemFree_v2(p));
    }
}

/* grab SIZE MS: retry allocating SIZE until it works or MS pass. */
static void s_grab(uint64_t size, uint64_t ms)
{
    double t0 = mono_ms();
    CUdeviceptr p;
    CUresult rc;
    while ((rc = F.cuMemAlloc_v2(&p, size)) != CUDA_SUCCESS) {
        CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "rc %d", rc);
        CHECK(mono_ms() - t0 < (double)ms, "not granted within %llu ms",
              (unsigned long long)ms);
        sleep_ms(20);
    }
    printf("granted after %.0f ms\n", mono_ms() - t0);
    CU(F.cuMemFree_v2(p));
}

/* churn MS: random allocations and frees for MS milliseconds. With
 * APICHECK_GO=FILE set, it says "ready" once its context is made and
 * starts when FILE exists (at most 10 s later), so that processes
 * started one after another contend from the same moment. */
static void s_churn(uint64_t ms)
{
    const char *go = getenv("APICHECK_GO");
    if (go != NULL) {
        printf("ready\n");
        fflush(stdout);
        double w0 = mono_ms();
        while (access(go, F_OK) != 0 && mono_ms() - w0 < 10000) {
            struct timespec ts = { 0, 1000000 };
            nanosleep(&ts, NULL);
        }
    }
    double t0 = mono_ms();
    CUdeviceptr live[32] = { 0 };
    unsigned seed = (unsigned)getpid(), granted = 0, refused = 0;
    while (mono_ms() - t0 < (double)ms) {
        seed = seed * 1103515245u + 12345u;
        unsigned k = (seed >> 16) % 32;
        if (live[k]) {
            CU(F.cuMemFree_v2(live[k]));
            live[k] = 0;
            continue;
        }
        size_t sz = (1u << 20) * (1 + (seed >> 8) % 64);
        CUresult rc = F.cuMemAlloc_v2(&live[k], sz);
        CHECK(rc == CUDA_SUCCESS || rc == CUDA_ERROR_OUT_OF_MEMORY, "rc %d",
              rc);
        if (rc == CUDA_SUCCESS)
            granted++;
        else
            refused++, live[k] = 0;
    }
    for (int k = 0; k < 32; k++)
        if (live[k])
            CU(F.cuMemFree_v2(live[k]));
    printf("churn: %u granted, %u refused\n", granted, refused);
}

struct thr {
    unsigned seed;
    int iters;
};

static void *thread_main(void *arg)
{
    struct thr *t = arg;
    CU(F.cuCtxSetCurrent(ctx0));
    CUdeviceptr live[64] = { 0 };
    unsigned s = t->seed;
    for (int i = 0; i < t->iters; i++) {
        s = s * 1103515245u + 12345u;
        unsigned k = (s >> 16) % 64;
        if (live[k]) {
            CU(F.cuMemFree_v2(live[k]));
            live[k] = 0;
        } else {
            size_t sz = 512 + ((s >> 8) % 65536);
            CUresult rc = F.cuMemAlloc_v2(&live[k], sz);
            CHECK(rc == CUDA_SUCCESS || rc == CUDA_ERROR_OUT_OF_MEMORY,
                  "alloc rc %d", rc);
            if (rc != CUDA_SUCCESS)
                live[k] = 0;
        }
    }
    for (int k = 0; k < 64; k++)
        if (live[k])
            CU(F.cuMemFree_v2(live[k]));
    return NULL;
}

static void s_threads(int iters)
{
    uint64_t f0 = free_now();
    pthread_t th[8];
    struct thr a[8];
    for (int i = 0; i < 8; i++) {
        a[i].seed = 1234u + (unsigned)i;
        a[i].iters = iters;
        pthread_create(&th[i], NULL, thread_main, &a[i]);
    }
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
    expect_used(f0, 0, "after 8 threads");
    printf("ok 8 threads x %d alloc/free, no drift via %s\n", iters, via);
}

/* Two devices: each sees its own limit. */
static void s_two(uint64_t l0, uint64_t l1)
{
    CUdevice d1;
    CUcontext c1;
    CU(F.cuDeviceGet(&d1, 1));
    CU(F.cuDevicePrimaryCtxRetain(&c1, d1));
    CHECK(total_now() == l0, "dev0 total %llu", (unsigned long long)total_now());
    CU(F.cuCtxSetCurrent(c1));
    CHECK(total_now() == l1, "dev1 total %llu", (unsigned long long)total_now());
    uint64_t f1 = free_now();
    CUdeviceptr p;
    CU(F.cuMemAlloc_v2(&p, f1));
    CHECK(F.cuMemAlloc_v2(&p, 1) == CUDA_ERROR_OUT_OF_MEMORY, "dev1 edge");
    CU(F.cuCtxSetCurrent(ctx0));
    CHECK(free_now() > 0, "dev0 unaffected");
    printf("ok two devices: %llu and %llu\n", (unsigned long long)l0,
           (unsigned long long)l1);
}

/* Stream-ordered allocations of 1 GiB, four times: how many were served
 * (each refusal must be an out-of-memory one). pool NULL: cuMemAllocAsync
 * on `s`, else cuMemAllocFromPoolAsync from `pool` on `s`. */
static int async_fill(CUdeviceptr *p, CUmemoryPool pool, CUstream s)
{
    int made = 0;
    for (int i = 0; i < 4; i++) {
        CUresult rc = pool == NULL
                          ? F.cuMemAllocAsync(&p[made], 1u << 30, s)
                          : F.cuMemAllocFromPoolAsync(&p[made], 1u << 30,
                                                      pool, s);
        CHECK(rc == CUDA_SUCCESS || rc == CUDA_ERROR_OUT_OF_MEMORY,
              "rc %d", (int)rc);
        made += rc == CUDA_SUCCESS;
    }
    return made;
}

/* Device 1 is charged what its pool holds (and nothing else of device 0
 * moves): the driver's figure, the shim's, and the pool's reserve agree. */
static void expect_dev1_pool(long long u0, long long u1, CUmemoryPool pool,
                             const char *what)
{
    CHECK(shim_used_on(0) == u0, "%s: device 0 charged %lld, was %lld", what,
          shim_used_on(0), u0);
    CHECK(shim_used_on(1) == u1 + (long long)reserved(pool) &&
              sim_stats_of(1).pool_reserved == reserved(pool),
          "%s: device 1 charged %lld, was %lld; the pool holds %llu, the "
          "driver's pools %llu", what, shim_used_on(1), u1,
          (unsigned long long)reserved(pool),
          (unsigned long long)sim_stats_of(1).pool_reserved);
}

/* Free four blocks on `s` and give the pool's memory back. */
static void async_empty(CUdeviceptr *p, int n, CUmemoryPool pool, CUstream s)
{
    for (int i = 0; i < n; i++)
        CU(F.cuMemFreeAsync(p[i], s));
    CU(F.cuMemPoolTrimTo(pool, 0));
}

/* Two devices, device 1 limited to 2G (device 0 to more): stream-ordered
 * memory is charged to the device that serves it, and refused against
 * that device's limit. cuMemAllocAsync is served from the current pool
 * of the stream's device, whatever context is current (none included);
 * cuMemAllocFromPoolAsync from the pool's device, whatever the stream's,
 * also for a pool the shim never saw made (a device's default pool).
 * Each time only one of four 1 GiB blocks fits. */
static void s_async_other_device(void)
{
    CUcontext c1;
    CUstream s0, s1;
    CUdeviceptr p[4];
    CU(F.cuDevicePrimaryCtxRetain(&c1, 1));
    CU(F.cuCtxSetCurrent(c1));
    CU(F.cuStreamCreate(&s1, 0));
    CU(F.cuCtxSetCurrent(ctx0));
    CU(F.cuStreamCreate(&s0, 0));
    long long u0 = shim_used_on(0), u1 = shim_used_on(1);
    CUmemoryPool dp1, cp1;
    CU(F.cuDeviceGetDefaultMemPool(&dp1, 1));
    int n = async_fill(p, dp1, s0);
    CHECK(n == 1, "%d GiB from device 1's default pool", n);
    expect_dev1_pool(u0, u1, dp1, "device 1's default pool, stream of 0");
    async_empty(p, n, dp1, s0);
    n = async_fill(p, NULL, s1);
    CHECK(n == 1, "%d GiB on a stream of device 1", n);
    expect_dev1_pool(u0, u1, dp1, "stream of device 1, context of 0");
    async_empty(p, n, dp1, s1);
    CU(F.cuCtxSetCurrent(NULL));
    n = async_fill(p, NULL, s1);
    CHECK(n == 1, "%d GiB on a stream of device 1 without a context", n);
    expect_dev1_pool(u0, u1, dp1, "stream of device 1, no context");
    async_empty(p, n, dp1, s1);
    CHECK(F.cuMemAllocAsync(&p[0], 1u << 20, NULL) ==
              CUDA_ERROR_INVALID_CONTEXT,
          "the default stream without a context");
    CU(F.cuCtxSetCurrent(ctx0));
    CUmemPoolProps pp = dev0_pool_props();
    pp.location.id = 1;
    CU(F.cuMemPoolCreate(&cp1, &pp));
    n = async_fill(p, cp1, s0);
    CHECK(n == 1, "%d GiB from a pool of device 1 on a stream of 0", n);
    expect_dev1_pool(u0, u1, cp1, "a pool of device 1, stream of 0");
    async_empty(p, n, cp1, s0);
    CU(F.cuMemPoolDestroy(cp1));
    CHECK(shim_used_on(1) == u1, "device 1 at the end: %lld, was %lld",
          shim_used_on(1), u1);
    printf("ok async-other-device\n");
}

/* Device 1 has no context yet (device 1 limited to 2G): its default pool,
 * which the program asks for by device, serves blocks on a stream of
 * device 0, and they are device 1's, refused against its limit (they
 * were charged to device 0 when no context named the pool's device).
 * Device 1's context, made while that pool holds 1 GiB, is charged its
 * own size only: the memory held before it is not taken for the
 * context's. */
static void s_pool_before_context(void)
{
    CUstream s0;
    CUdeviceptr p[4];
    CU(F.cuStreamCreate(&s0, 0));
    long long u0 = shim_used_on(0);
    CUmemoryPool dp1;
    CU(F.cuDeviceGetDefaultMemPool(&dp1, 1));
    int n = async_fill(p, dp1, s0);
    CHECK(n == 2, "%d GiB from device 1's default pool under its 2 GiB", n);
    expect_dev1_pool(u0, 0, dp1, "device 1's default pool, no context there");
    CU(F.cuMemFreeAsync(p[1], s0));
    CU(F.cuStreamSynchronize(s0));
    CU(F.cuMemPoolTrimTo(dp1, 1u << 30));
    CHECK(reserved(dp1) == 1u << 30, "the pool keeps %llu",
          (unsigned long long)reserved(dp1));
    expect_dev1_pool(u0, 0, dp1, "one block kept");
    CUcontext c1;
    CU(F.cuDevicePrimaryCtxRetain(&c1, 1));
    uint64_t ctx1 = sim_stats_of(1).context;
    CHECK(ctx1 > 0, "device 1's context holds nothing in the driver");
    expect_dev1_pool(u0, (long long)ctx1, dp1, "device 1's context made");
    CU(F.cuMemFreeAsync(p[0], s0));
    CU(F.cuStreamSynchronize(s0));
    CU(F.cuMemPoolTrimTo(dp1, 0));
    expect_dev1_pool(u0, (long long)ctx1, dp1, "the pool emptied");
    CU(F.cuDevicePrimaryCtxRelease_v2(1));
    CHECK(shim_used_on(1) == 0, "device 1 at the end: %lld", shim_used_on(1));
    printf("ok pool-before-context\n");
}

/* This process's telemetry segment, mapped read-write (*len: its size);
 * NULL after a FAIL line when it cannot be had. */
static struct gm_abi_header *own_segment(size_t *len)
{
    const char *dir = getenv("GPUMEM_SHM_DIR");
    const char *prefix = getenv("GPUMEM_SHM_PREFIX");
    char path[512];
    snprintf(path, sizeof path, "%s/%s.%d", dir && *dir ? dir : "/dev/shm",
             prefix && *prefix ? prefix : "gpumem", (int)getpid());
    int fd = open(path, O_RDWR | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 ||
        st.st_size < (off_t)sizeof(struct gm_abi_header)) {
        printf("FAIL no segment %s\n", path);
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
                   MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        printf("FAIL mmap %s\n", path);
        return NULL;
    }
    *len = (size_t)st.st_size;
    return m;
}

/* Fork: the child's accounting starts empty and its segment is its own. */
static void s_fork(void)
{
    uint64_t f0 = free_now();
    size_t pf = 0, limit = 0;
    CU(F.cuMemGetInfo_v2(&pf, &limit)); /* the device size seen: the limit */
    CUdeviceptr p;
    CU(F.cuMemAlloc_v2(&p, 100 << 20));
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        /* The child's limit holds from its first call: a request of more
         * than the limit is refused. */
        CUdeviceptr q, big = 0;
        CUresult brc = F.cuMemAlloc_v2(&big, limit + (1u << 20));
        if (brc != CUDA_ERROR_OUT_OF_MEMORY) {
            printf("FAIL child: %zu bytes, past its limit, gave %d\n",
                   limit + (1u << 20), (int)brc);
            _exit(1);
        }
        CU(F.cuMemAlloc_v2(&q, 10 << 20));
        size_t f = 0, t = 0;
        CU(F.cuMemGetInfo_v2(&f, &t));
        /* No context and none of the parent's 100 MiB in the child. */
        if (t - f != (10u << 20)) {
            printf("FAIL child sees %llu used\n", (unsigned long long)(t - f));
            _exit(1);
        }
        /* Its own segment counts its calls from the first one: the refusal
         * and the allocation (the plain path opens only once the child
         * has initialised again). */
        size_t len = 0;
        struct gm_abi_header *h = own_segment(&len);
        if (h == NULL)
            _exit(1);
        const struct gm_abi_dev *d0 = (const struct gm_abi_dev *)(h + 1);
        if (d0->allocs != 1 || d0->refusals != 1) {
            printf("FAIL child's segment: %llu allocs, %llu refused\n",
                   (unsigned long long)d0->allocs,
                   (unsigned long long)d0->refusals);
            _exit(1);
        }
        munmap(h, len);
        CU(F.cuMemFree_v2(q));
        printf("ok child: own accounting (pid %d)\n", (int)getpid());
        fflush(stdout);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed");
    expect_used(f0, 100 << 20, "parent after child");
    CU(F.cuMemFree_v2(p));
    printf("ok fork\n");
}

/* A peer with the same uid scribbles over the layout fields of this
 * process's segment (where its device blocks, ring and history lie): the
 * writer keeps to what it laid out, so allocations, frees, the figures
 * the program sees and the exit report go on without a stray write. */
static void s_scribble(void)
{
    CUdeviceptr p, q;
    CU(F.cuMemAlloc_v2(&p, 1 << 20)); /* the segment is open from here */
    size_t len = 0;
    struct gm_abi_header *h = own_segment(&len);
    CHECK(h != NULL, "the segment");
    h->dev_slots = UINT32_MAX;
    h->ring_capacity = 1u << 31;
    h->dev_offset = 1ull << 46;
    h->ring_offset = 1ull << 46;
    h->hist_offset = 1ull << 46;
    h->hist_slots = UINT32_MAX;
    h->hist_size = 1ull << 46;
    h->total_size = 1ull << 46;
    h->marks_capacity = UINT32_MAX;
    uint64_t f0 = free_now();
    for (int i = 0; i < 1000; i++) {
        CU(F.cuMemAlloc_v2(&q, 2 << 20));
        CU(F.cuMemFree_v2(q));
    }
    expect_used(f0, 0, "after the scribble");
    /* The other writers: a refusal (its event and the OOM snapshot), a
     * step and a mark (the shim's own API, when preloaded). */
    size_t sf = 0, limit = 0;
    CU(F.cuMemGetInfo_v2(&sf, &limit));
    CUresult brc = F.cuMemAlloc_v2(&q, limit + (1u << 20));
    CHECK(brc == CUDA_ERROR_OUT_OF_MEMORY, "past the limit: %d", (int)brc);
    void (*step)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gpumem_step");
    void (*mark)(const char *) =
        (void (*)(const char *))dlsym(RTLD_DEFAULT, "gpumem_mark");
    CHECK(step != NULL && mark != NULL, "no gpumem_step/gpumem_mark");
    step();
    mark("after the scribble");
    CU(F.cuMemFree_v2(p));
    munmap(h, len);
    printf("ok scribble\n");
}

/* Print the pointer a cuGetProcAddress_v2 lookup returns next to the one
 * RTLD_DEFAULT finds for an exported variant name. */
static void s_gpa(int argc, char **argv)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    CHECK(h != NULL, "dlopen");
    gpa_fn gpa = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
    CHECK(gpa != NULL, "no gpa");
    /* argv: triples name version flags expected_variant */
    for (int i = 0; i + 3 < argc; i += 4) {
        void *p = NULL;
        CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        CUresult rc = gpa(argv[i], &p, atoi(argv[i + 1]),
                          strtoull(argv[i + 2], NULL, 0), &st);
        void *want = dlsym(RTLD_DEFAULT, argv[i + 3]);
        CHECK(rc == CUDA_SUCCESS && st == CU_GET_PROC_ADDRESS_SUCCESS,
              "%s@%s: rc %d status %d", argv[i], argv[i + 1], rc, (int)st);
        CHECK(want != NULL && p == want, "%s@%s flags %s: got %p, %s is %p",
              argv[i], argv[i + 1], argv[i + 2], p, argv[i + 3], want);
    }
    /* Unknown names keep the driver's status. */
    void *p = (void *)1;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult rc = gpa("cuNoSuchFunction", &p, 13000, 0, &st);
    CHECK(rc == CUDA_SUCCESS && p == NULL &&
              st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
          "unknown name: rc %d p %p st %d", rc, p, (int)st);
    printf("ok %d cuGetProcAddress variants\n", argc / 4);
}

int main(int argc, char **argv)
{
    int i = 1;
    if (i + 1 < argc && strcmp(argv[i], "--via") == 0) {
        via = argv[i + 1];
        i += 2;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: apicheck [--via link|dlsym|gpa] SCENARIO\n");
        return 2;
    }
    const char *sc = argv[i++];
    if (strcmp(sc, "gpa") == 0) {
        s_gpa(argc - i, argv + i);
        return 0;
    }
    if (strcmp(sc, "first-create") == 0) {
        s_first_create();
        return failures ? 1 : 0;
    }
    setup();
    uint64_t a1 = i < argc ? strtoull(argv[i], NULL, 0) : 0;
    uint64_t a2 = i + 1 < argc ? strtoull(argv[i + 1], NULL, 0) : 0;
    if (strcmp(sc, "edge") == 0)
        s_edge(a1);
    else if (strcmp(sc, "apis") == 0)
        s_apis();
    else if (strcmp(sc, "vmm-held") == 0)
        s_vmm_held();
    else if (strcmp(sc, "vmm-retain") == 0)
        s_vmm_retain();
    else if (strcmp(sc, "two-alloc") == 0)
        s_two_alloc(a1);
    else if (strcmp(sc, "async-peak") == 0)
        s_async_peak();
    else if (strcmp(sc, "limit-all") == 0)
        s_limit_all();
    else if (strcmp(sc, "mipmap-levels") == 0)
        s_mipmap_levels();
    else if (strcmp(sc, "threads") == 0)
        s_threads(a1 ? (int)a1 : 100000);
    else if (strcmp(sc, "two") == 0)
        s_two(a1, a2);
    else if (strcmp(sc, "pool-before-context") == 0)
        s_pool_before_context();
    else if (strcmp(sc, "async-other-device") == 0)
        s_async_other_device();
    else if (strcmp(sc, "staged") == 0)
        s_staged();
    else if (strcmp(sc, "wait") == 0)
        s_wait(i < argc ? argv[i] : "release",
               i + 1 < argc ? strtoull(argv[i + 1], NULL, 0) : 2000);
    else if (strcmp(sc, "spill") == 0)
        s_spill();
    else if (strcmp(sc, "warn") == 0)
        s_warn();
    else if (strcmp(sc, "static") == 0)
        s_static();
    else if (strcmp(sc, "static-free-async") == 0)
        s_static_free_async();
    else if (strcmp(sc, "static-oom") == 0)
        s_static_oom(i < argc ? argv[i] : "spill",
                     i + 1 < argc ? strtoull(argv[i + 1], NULL, 0) : 2000);
    else if (strcmp(sc, "hold") == 0)
        s_hold(a1, a2);
    else if (strcmp(sc, "try") == 0)
        s_try(argc - i, argv + i);
    else if (strcmp(sc, "grab") == 0)
        s_grab(a1, a2);
    else if (strcmp(sc, "churn") == 0)
        s_churn(a1);
    else if (strcmp(sc, "pools") == 0)
        s_pools(a1);
    else if (strcmp(sc, "pool-peak") == 0)
        s_pool_peak(a1);
    else if (strcmp(sc, "group-pool") == 0)
        s_group_pool(a1);
    else if (strcmp(sc, "contexts") == 0)
        s_contexts();
    else if (strcmp(sc, "ctx-group") == 0)
        s_ctx_group();
    else if (strcmp(sc, "static-ctx") == 0)
        s_static_ctx();
    else if (strcmp(sc, "ctx-frees") == 0)
        s_ctx_frees();
    else if (strcmp(sc, "ctx-frees-race") == 0)
        s_ctx_frees_race();
    else if (strcmp(sc, "primary-race") == 0)
        s_primary_race();
    else if (strcmp(sc, "invalid") == 0)
        s_invalid();
    else if (strcmp(sc, "pool-destroy-live") == 0)
        s_pool_destroy_live();
    else if (strcmp(sc, "pool-threads") == 0)
        s_pool_threads();
    else if (strcmp(sc, "pool-queries") == 0)
        s_pool_queries();
    else if (strcmp(sc, "fork") == 0)
        s_fork();
    else if (strcmp(sc, "scribble") == 0)
        s_scribble();
    else if (strcmp(sc, "info") == 0) {
        size_t f = 0, t = 0;
        CU(F.cuMemGetInfo_v2(&f, &t));
        printf("free %zu total %zu\n", f, t);
    } else {
        fprintf(stderr, "unknown scenario %s\n", sc);
        return 2;
    }
    return failures ? 1 : 0;
}
