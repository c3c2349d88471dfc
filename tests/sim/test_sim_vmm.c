/*
 * tests/sim/test_sim_vmm.c — Check suite for the simulated driver's virtual
 * memory management (cuMemCreate/Release/RetainAllocationHandle, address
 * reservations, map/unmap/access) and CUDA arrays (sizes, charges,
 * requirements, mipmaps).
 *
 * The reference-count and error cases follow what a real CUDA 13.0 driver
 * answered on an H200. One process per test (Check's fork mode).
 */
#include "tools/sim/simcuda.h"
#include "tests/sim/sim_boot.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1ULL << 20)

static void clean_env(void)
{
    gm_simt_env("1G,256M");
}

static void boot(void)
{
    gm_simt_boot();
}

static uint64_t used(int dev)
{
    struct gm_simcuda_stats s;
    ck_assert_int_eq(gm_simcuda_stats(dev, &s), 0);
    return s.used;
}

static CUmemAllocationProp prop(int dev)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    return p;
}

/* ---- VMM ------------------------------------------------------------------ */

START_TEST(granularity_and_create)
{
    size_t g = 0;
    CUmemGenericAllocationHandle h, h1;
    CUmemAllocationProp p = prop(0), q;
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);    /* no context needed */
    ck_assert_int_eq(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                     CUDA_SUCCESS);
    ck_assert_uint_eq(g, 2 * MiB);
    ck_assert_int_eq(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
                     CUDA_SUCCESS);
    ck_assert_uint_eq(g, 2 * MiB);
    ck_assert_int_eq(cuMemGetAllocationGranularity(&g, &p, (CUmemAllocationGranularity_flags)7),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemGetAllocationGranularity(&g, NULL, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemCreate(&h, 1 * MiB, &p, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemCreate(&h, 3 * MiB, &p, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemCreate(&h, 0, &p, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemCreate(&h, 2 * MiB, &p, 1), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemCreate(NULL, 2 * MiB, &p, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemCreate(&h, 4 * MiB, &p, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(used(0), 4 * MiB);
    p = prop(1);                                  /* charged to prop's device */
    ck_assert_int_eq(cuMemCreate(&h1, 256 * MiB, &p, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(used(1), 256 * MiB);
    ck_assert_int_eq(cuMemCreate(&h1, 2 * MiB, &p, 0), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(cuMemGetAllocationPropertiesFromHandle(&q, h), CUDA_SUCCESS);
    ck_assert_int_eq(q.location.id, 0);
    ck_assert_int_eq(q.type, CU_MEM_ALLOCATION_TYPE_PINNED);
    p = prop(7);
    ck_assert_int_eq(cuMemCreate(&h1, 2 * MiB, &p, 0), CUDA_ERROR_INVALID_DEVICE);
    ck_assert_int_eq(cuMemRelease(h), CUDA_SUCCESS);
    ck_assert_uint_eq(used(0), 0);
    ck_assert_int_eq(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemRelease(0x12345), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

/* create = 1 reference, retain + 1, release - 1; mappings also hold the
 * memory; it goes back when both are gone. */
START_TEST(refcount)
{
    CUmemGenericAllocationHandle h, h2, h3;
    CUmemAllocationProp p = prop(0), q;
    CUdeviceptr va, base;
    size_t size;
    boot();
    ck_assert_int_eq(cuMemCreate(&h, 4 * MiB, &p, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAddressReserve(&va, 8 * MiB, 0, 0, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemMap(va, 4 * MiB, 0, h, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemMap(va + 4 * MiB, 4 * MiB, 0, h, 0), CUDA_SUCCESS);  /* twice */
    ck_assert_int_eq(cuMemRetainAllocationHandle(&h2, (void *)(uintptr_t)(va + 4096)), CUDA_SUCCESS);
    ck_assert_uint_eq(h2, h);
    ck_assert_int_eq(cuMemRelease(h), CUDA_SUCCESS);    /* 2 -> 1 */
    ck_assert_int_eq(cuMemRelease(h), CUDA_SUCCESS);    /* 1 -> 0, still mapped */
    ck_assert_int_eq(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    ck_assert_uint_eq(used(0), 4 * MiB);
    ck_assert_int_eq(cuMemGetAllocationPropertiesFromHandle(&q, h), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemGetAddressRange_v2(&base, &size, va + 5 * MiB), CUDA_SUCCESS);
    ck_assert_uint_eq(base, va + 4 * MiB);
    ck_assert_uint_eq(size, 4 * MiB);
    /* Retaining through a mapped address revives the handle. */
    ck_assert_int_eq(cuMemRetainAllocationHandle(&h3, (void *)(uintptr_t)va), CUDA_SUCCESS);
    ck_assert_uint_eq(h3, h);
    ck_assert_int_eq(cuMemUnmap(va, 4 * MiB), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemUnmap(va + 4 * MiB, 4 * MiB), CUDA_SUCCESS);
    ck_assert_uint_eq(used(0), 4 * MiB);                /* one reference left */
    ck_assert_int_eq(cuMemRetainAllocationHandle(&h3, (void *)(uintptr_t)va), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemRelease(h), CUDA_SUCCESS);
    ck_assert_uint_eq(used(0), 0);
    ck_assert_int_eq(cuMemGetAllocationPropertiesFromHandle(&q, h), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemAddressFree(va, 8 * MiB), CUDA_SUCCESS);
}
END_TEST

START_TEST(mapping_rules)
{
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp p = prop(0);
    CUmemAccessDesc ad;
    CUdeviceptr va, va2;
    boot();
    ck_assert_int_eq(cuMemCreate(&h, 4 * MiB, &p, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAddressReserve(&va, 1 * MiB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemAddressReserve(&va, 8 * MiB, 3, 0, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemAddressReserve(NULL, 8 * MiB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemAddressReserve(&va, 8 * MiB, 0, 0, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(va % (2 * MiB), 0);
    ck_assert_int_eq(cuMemAddressReserve(&va2, 2 * MiB, 0, va + 16 * MiB, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(va2, va + 16 * MiB);              /* a free hint is honoured */
    ck_assert_int_eq(cuMemAddressReserve(&va2, 2 * MiB, 0, va, 0), CUDA_SUCCESS);
    ck_assert_uint_ne(va2, va);                         /* a taken one is not */
    ck_assert_int_eq(cuMemMap(va, 2 * MiB, 2 * MiB, h, 0), CUDA_ERROR_NOT_SUPPORTED);
    ck_assert_int_eq(cuMemMap(va, 1 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemMap(va, 6 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);   /* > handle */
    ck_assert_int_eq(cuMemMap(va + 6 * MiB, 4 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemMap(0x900000000000ULL + (1ULL << 43), 2 * MiB, 0, h, 0),
                     CUDA_ERROR_INVALID_VALUE);                            /* unreserved */
    ck_assert_int_eq(cuMemMap(va, 4 * MiB, 0, 0x777, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemMap(va, 4 * MiB, 0, h, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemMap(va + 2 * MiB, 4 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);  /* overlap */
    ad.location = p.location;
    ad.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ck_assert_int_eq(cuMemSetAccess(va, 4 * MiB, &ad, 1), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemSetAccess(va + 2 * MiB, 2 * MiB, &ad, 1), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemSetAccess(va, 8 * MiB, &ad, 1), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemSetAccess(va, 4 * MiB, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemSetAccess(va, 4 * MiB, &ad, 0), CUDA_ERROR_INVALID_VALUE);
    ad.location.id = 9;
    ck_assert_int_eq(cuMemSetAccess(va, 4 * MiB, &ad, 1), CUDA_ERROR_INVALID_DEVICE);
    ad.location.id = 0;
    ad.flags = (CUmemAccess_flags)2;
    ck_assert_int_eq(cuMemSetAccess(va, 4 * MiB, &ad, 1), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemUnmap(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE);  /* part of a mapping */
    ck_assert_int_eq(cuMemAddressFree(va, 8 * MiB), CUDA_ERROR_INVALID_VALUE);  /* still mapped */
    ck_assert_int_eq(cuMemAddressFree(va, 4 * MiB), CUDA_ERROR_INVALID_VALUE);  /* wrong size */
    ck_assert_int_eq(cuMemUnmap(va, 4 * MiB), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemUnmap(va, 4 * MiB), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemAddressFree(va, 8 * MiB), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAddressFree(va, 8 * MiB), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemRelease(h), CUDA_SUCCESS);
    ck_assert_uint_eq(used(0), 0);
}
END_TEST

START_TEST(unmap_spans_mappings)
{
    CUmemGenericAllocationHandle a, b;
    CUmemAllocationProp p = prop(0);
    CUdeviceptr va;
    boot();
    ck_assert_int_eq(cuMemCreate(&a, 2 * MiB, &p, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemCreate(&b, 2 * MiB, &p, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAddressReserve(&va, 4 * MiB, 0, 0, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemMap(va, 2 * MiB, 0, a, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemMap(va + 2 * MiB, 2 * MiB, 0, b, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemRelease(a), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemRelease(b), CUDA_SUCCESS);
    ck_assert_uint_eq(used(0), 4 * MiB);
    ck_assert_int_eq(cuMemUnmap(va, 4 * MiB), CUDA_SUCCESS);  /* both at once */
    ck_assert_uint_eq(used(0), 0);
    ck_assert_int_eq(cuMemAddressFree(va, 4 * MiB), CUDA_SUCCESS);
}
END_TEST

/* ---- arrays ----------------------------------------------------------------- */

START_TEST(array_sizes)
{
    CUarray a, b;
    CUDA_ARRAY_DESCRIPTOR ad = { 1000, 1000, CU_AD_FORMAT_FLOAT, 4 };
    CUDA_ARRAY_DESCRIPTOR_v1 ad1 = { 100, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1 };
    boot();
    /* rows of 16000 bytes -> 16384; x 1000 rows; rounded to 64 KiB */
    ck_assert_int_eq(cuArrayCreate_v2(&a, &ad), CUDA_SUCCESS);
    ck_assert_uint_eq(used(0), 16384000);
    ck_assert_int_eq(cuArrayCreate(&b, &ad1), CUDA_SUCCESS);       /* 1D, v1 descriptor */
    ck_assert_uint_eq(used(0), 16384000 + 65536);
    ck_assert_int_eq(cuArrayDestroy(b), CUDA_SUCCESS);
    ck_assert_int_eq(cuArrayDestroy(b), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuArrayDestroy((CUarray)(void *)&ad), CUDA_ERROR_INVALID_VALUE);
    ad.NumChannels = 3;
    ck_assert_int_eq(cuArrayCreate_v2(&b, &ad), CUDA_ERROR_INVALID_VALUE);
    ad.NumChannels = 1;
    ad.Format = (CUarray_format)0x55;
    ck_assert_int_eq(cuArrayCreate_v2(&b, &ad), CUDA_ERROR_INVALID_VALUE);
    ad.Format = CU_AD_FORMAT_HALF;
    ad.Width = 0;
    ck_assert_int_eq(cuArrayCreate_v2(&b, &ad), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuArrayCreate_v2(&b, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuArrayCreate_v2(NULL, &ad), CUDA_ERROR_INVALID_VALUE);
    /* Requirements: only arrays with deferred mapping answer. */
    CUDA_ARRAY_MEMORY_REQUIREMENTS rq;
    ck_assert_int_eq(cuArrayGetMemoryRequirements(&rq, a, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuArrayDestroy(a), CUDA_SUCCESS);
    ck_assert_uint_eq(used(0), 0);
}
END_TEST

START_TEST(array_3d_and_deferred)
{
    CUarray a, d;
    CUDA_ARRAY3D_DESCRIPTOR ad;
    CUDA_ARRAY_MEMORY_REQUIREMENTS rq;
    boot();
    memset(&ad, 0, sizeof ad);
    ad.Width = 64;
    ad.Height = 64;
    ad.Depth = 64;
    ad.Format = CU_AD_FORMAT_SIGNED_INT16;
    ad.NumChannels = 2;
    ck_assert_int_eq(cuArray3DCreate_v2(&a, &ad), CUDA_SUCCESS);
    ck_assert_uint_eq(used(0), 512 * 64 * 64);
    ad.Height = 0;                                  /* depth without height */
    ck_assert_int_eq(cuArray3DCreate_v2(&d, &ad), CUDA_ERROR_INVALID_VALUE);
    ad.Width = 1000;
    ad.Height = 1000;
    ad.Depth = 0;
    ad.Format = CU_AD_FORMAT_FLOAT;
    ad.NumChannels = 4;
    ad.Flags = CUDA_ARRAY3D_DEFERRED_MAPPING;
    ck_assert_int_eq(cuArray3DCreate_v2(&d, &ad), CUDA_SUCCESS);
    ck_assert_uint_eq(used(0), 512 * 64 * 64);      /* deferred: nothing yet */
    memset(&rq, 0xff, sizeof rq);
    ck_assert_int_eq(cuArrayGetMemoryRequirements(&rq, d, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(rq.size, 16384000);           /* a real driver's figure */
    ck_assert_uint_eq(rq.alignment, 65536);
    ck_assert_int_eq(cuArrayGetMemoryRequirements(&rq, d, 4), CUDA_ERROR_INVALID_DEVICE);
    ck_assert_int_eq(cuArrayGetMemoryRequirements(NULL, d, 0), CUDA_ERROR_INVALID_VALUE);
    CUDA_ARRAY3D_DESCRIPTOR_v1 a1;
    memset(&a1, 0, sizeof a1);
    a1.Width = 1;
    a1.Format = CU_AD_FORMAT_FLOAT;
    a1.NumChannels = 1;
    a1.Flags = CUDA_ARRAY3D_DEFERRED_MAPPING;
    ck_assert_int_eq(cuArray3DCreate(&d, &a1), CUDA_SUCCESS);
    ck_assert_int_eq(cuArrayGetMemoryRequirements(&rq, d, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(rq.size, 65536);
    ck_assert_int_eq(cuArrayDestroy(a), CUDA_SUCCESS);
    ck_assert_uint_eq(used(0), 0);
}
END_TEST

START_TEST(mipmaps)
{
    CUmipmappedArray m, d;
    CUDA_ARRAY3D_DESCRIPTOR ad;
    CUDA_ARRAY_MEMORY_REQUIREMENTS rq;
    boot();
    memset(&ad, 0, sizeof ad);
    ad.Width = 1024;
    ad.Height = 1024;
    ad.Format = CU_AD_FORMAT_FLOAT;
    ad.NumChannels = 1;
    ck_assert_int_eq(cuMipmappedArrayCreate(&m, &ad, 11), CUDA_SUCCESS);
    ck_assert_uint_eq(used(0), 5636096);            /* the full chain, as a real driver */
    ck_assert_int_eq(cuMipmappedArrayGetMemoryRequirements(&rq, m, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMipmappedArrayDestroy(m), CUDA_SUCCESS);
    ck_assert_int_eq(cuMipmappedArrayCreate(&m, &ad, 30), CUDA_SUCCESS);  /* clamped to 11 */
    ck_assert_uint_eq(used(0), 5636096);
    ck_assert_int_eq(cuMipmappedArrayDestroy(m), CUDA_SUCCESS);
    ck_assert_int_eq(cuMipmappedArrayCreate(&m, &ad, 0), CUDA_SUCCESS);   /* 0 counts as 1 */
    ck_assert_uint_eq(used(0), 4 * MiB);
    ad.Flags = CUDA_ARRAY3D_DEFERRED_MAPPING;
    ck_assert_int_eq(cuMipmappedArrayCreate(&d, &ad, 11), CUDA_SUCCESS);
    ck_assert_uint_eq(used(0), 4 * MiB);
    ck_assert_int_eq(cuMipmappedArrayGetMemoryRequirements(&rq, d, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(rq.size, 5636096);
    ck_assert_uint_eq(rq.alignment, 65536);
    ck_assert_int_eq(cuArrayDestroy((CUarray)(void *)m), CUDA_ERROR_INVALID_VALUE);  /* wrong kind */
    ck_assert_int_eq(cuMipmappedArrayDestroy(m), CUDA_SUCCESS);
    ck_assert_int_eq(cuMipmappedArrayDestroy(d), CUDA_SUCCESS);
    ck_assert_int_eq(cuMipmappedArrayDestroy(d), CUDA_ERROR_INVALID_VALUE);
    ck_assert_uint_eq(used(0), 0);
    /* Arrays consume capacity: 256 MiB device, 300 MiB array. */
    CUcontext c1;
    CUarray big;
    CUDA_ARRAY_DESCRIPTOR bd = { 10000, 7865, CU_AD_FORMAT_FLOAT, 1 };
    ck_assert_int_eq(cuDevicePrimaryCtxRetain(&c1, 1), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxPushCurrent_v2(c1), CUDA_SUCCESS);
    ck_assert_int_eq(cuArrayCreate_v2(&big, &bd), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(used(1), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("simcuda-vmm");
    TCase *t = tcase_create("vmm");
    tcase_add_checked_fixture(t, clean_env, NULL);
    tcase_add_test(t, granularity_and_create);
    tcase_add_test(t, refcount);
    tcase_add_test(t, mapping_rules);
    tcase_add_test(t, unmap_spans_mappings);
    suite_add_tcase(s, t);
    t = tcase_create("arrays");
    tcase_add_checked_fixture(t, clean_env, NULL);
    tcase_add_test(t, array_sizes);
    tcase_add_test(t, array_3d_and_deferred);
    tcase_add_test(t, mipmaps);
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
