/*
 * tests/sim/test_sim_proc.c — Check suite for the simulated driver's
 * cuGetProcAddress and cuGetProcAddress_v2.
 *
 * The first table is every (name, cudaVersion, flags) that PyTorch, JAX,
 * CuPy and NCCL asked a real CUDA 13.0 driver for through
 * cuGetProcAddress_v2 (for the names the simulator implements), with the
 * variant that real driver returned; the second adds the version and flag
 * edges around each switch point, also as a real driver answers them. A
 * returned pointer must be the address of that exported variant, found by
 * dlsym on a handle of the library.
 */
#include "tools/sim/simcuda.h"

#include <check.h>
#include <dlfcn.h>
#include <stdlib.h>

struct gpa_row {
    const char *name;
    int version;
    int flags;
    const char *variant;    /* NULL: version not sufficient */
};

/* Seen in real programs' lookups. */
static const struct gpa_row seen[] = {
    { "cuArray3DCreate", 3020, 0, "cuArray3DCreate_v2" },
    { "cuArrayCreate", 3020, 0, "cuArrayCreate_v2" },
    { "cuArrayDestroy", 2000, 0, "cuArrayDestroy" },
    { "cuArrayGetMemoryRequirements", 11060, 0, "cuArrayGetMemoryRequirements" },
    { "cuCtxCreate", 3020, 0, "cuCtxCreate_v2" },
    { "cuCtxCreate", 11040, 0, "cuCtxCreate_v3" },
    { "cuCtxDestroy", 4000, 0, "cuCtxDestroy_v2" },
    { "cuCtxGetCurrent", 4000, 0, "cuCtxGetCurrent" },
    { "cuCtxGetDevice", 2000, 0, "cuCtxGetDevice" },
    { "cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2" },
    { "cuCtxPopCurrent", 4000, 0, "cuCtxPopCurrent_v2" },
    { "cuCtxPushCurrent", 4000, 0, "cuCtxPushCurrent_v2" },
    { "cuCtxSetCurrent", 4000, 0, "cuCtxSetCurrent" },
    { "cuCtxSynchronize", 2000, 0, "cuCtxSynchronize" },
    { "cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2" },
    { "cuDeviceGet", 2000, 0, "cuDeviceGet" },
    { "cuDeviceGet", 13000, 0, "cuDeviceGet" },
    { "cuDeviceGetAttribute", 2000, 0, "cuDeviceGetAttribute" },
    { "cuDeviceGetAttribute", 13000, 0, "cuDeviceGetAttribute" },
    { "cuDeviceGetByPCIBusId", 4010, 0, "cuDeviceGetByPCIBusId" },
    { "cuDeviceGetCount", 2000, 0, "cuDeviceGetCount" },
    { "cuDeviceGetDefaultMemPool", 11020, 0, "cuDeviceGetDefaultMemPool" },
    { "cuDeviceGetMemPool", 11020, 0, "cuDeviceGetMemPool" },
    { "cuDeviceGetName", 2000, 0, "cuDeviceGetName" },
    { "cuDeviceGetName", 13000, 0, "cuDeviceGetName" },
    { "cuDeviceGetPCIBusId", 4010, 0, "cuDeviceGetPCIBusId" },
    { "cuDeviceGetUuid", 9020, 0, "cuDeviceGetUuid" },
    { "cuDevicePrimaryCtxGetState", 7000, 0, "cuDevicePrimaryCtxGetState" },
    { "cuDevicePrimaryCtxRelease", 7000, 0, "cuDevicePrimaryCtxRelease" },
    { "cuDevicePrimaryCtxReset", 7000, 0, "cuDevicePrimaryCtxReset" },
    { "cuDevicePrimaryCtxRetain", 7000, 0, "cuDevicePrimaryCtxRetain" },
    { "cuDevicePrimaryCtxSetFlags", 11000, 0, "cuDevicePrimaryCtxSetFlags_v2" },
    { "cuDeviceSetMemPool", 11020, 0, "cuDeviceSetMemPool" },
    { "cuDeviceTotalMem", 3020, 0, "cuDeviceTotalMem_v2" },
    { "cuDriverGetVersion", 2020, 0, "cuDriverGetVersion" },
    { "cuGetErrorName", 6000, 0, "cuGetErrorName" },
    { "cuGetErrorString", 6000, 0, "cuGetErrorString" },
    { "cuGetProcAddress", 11030, 0, "cuGetProcAddress" },
    { "cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2" },
    { "cuInit", 2000, 0, "cuInit" },
    { "cuMemAddressFree", 10020, 0, "cuMemAddressFree" },
    { "cuMemAddressReserve", 10020, 0, "cuMemAddressReserve" },
    { "cuMemAlloc", 3020, 0, "cuMemAlloc_v2" },
    { "cuMemAllocAsync", 11020, 0, "cuMemAllocAsync" },
    { "cuMemAllocAsync", 11020, 2, "cuMemAllocAsync_ptsz" },
    { "cuMemAllocFromPoolAsync", 11020, 0, "cuMemAllocFromPoolAsync" },
    { "cuMemAllocFromPoolAsync", 11020, 2, "cuMemAllocFromPoolAsync_ptsz" },
    { "cuMemAllocManaged", 6000, 0, "cuMemAllocManaged" },
    { "cuMemAllocPitch", 3020, 0, "cuMemAllocPitch_v2" },
    { "cuMemCreate", 10020, 0, "cuMemCreate" },
    { "cuMemFree", 3020, 0, "cuMemFree_v2" },
    { "cuMemFreeAsync", 11020, 0, "cuMemFreeAsync" },
    { "cuMemFreeAsync", 11020, 2, "cuMemFreeAsync_ptsz" },
    { "cuMemFreeHost", 2000, 0, "cuMemFreeHost" },
    { "cuMemGetAddressRange", 3020, 0, "cuMemGetAddressRange_v2" },
    { "cuMemGetAllocationGranularity", 10020, 0, "cuMemGetAllocationGranularity" },
    { "cuMemGetAllocationPropertiesFromHandle", 10020, 0, "cuMemGetAllocationPropertiesFromHandle" },
    { "cuMemGetInfo", 3020, 0, "cuMemGetInfo_v2" },
    { "cuMemHostAlloc", 2020, 0, "cuMemHostAlloc" },
    { "cuMemMap", 10020, 0, "cuMemMap" },
    { "cuMemPoolCreate", 11020, 0, "cuMemPoolCreate" },
    { "cuMemPoolDestroy", 11020, 0, "cuMemPoolDestroy" },
    { "cuMemPoolGetAttribute", 11020, 0, "cuMemPoolGetAttribute" },
    { "cuMemPoolImportFromShareableHandle", 11020, 0, "cuMemPoolImportFromShareableHandle" },
    { "cuMemPoolSetAttribute", 11020, 0, "cuMemPoolSetAttribute" },
    { "cuMemPoolTrimTo", 11020, 0, "cuMemPoolTrimTo" },
    { "cuMemRelease", 10020, 0, "cuMemRelease" },
    { "cuMemRetainAllocationHandle", 11000, 0, "cuMemRetainAllocationHandle" },
    { "cuMemSetAccess", 10020, 0, "cuMemSetAccess" },
    { "cuMemUnmap", 10020, 0, "cuMemUnmap" },
    { "cuMipmappedArrayCreate", 5000, 0, "cuMipmappedArrayCreate" },
    { "cuMipmappedArrayDestroy", 5000, 0, "cuMipmappedArrayDestroy" },
    { "cuMipmappedArrayGetMemoryRequirements", 11060, 0, "cuMipmappedArrayGetMemoryRequirements" },
    { "cuStreamCreate", 2000, 0, "cuStreamCreate" },
    { "cuStreamDestroy", 4000, 0, "cuStreamDestroy_v2" },
    { "cuStreamSynchronize", 2000, 0, "cuStreamSynchronize" },
    { "cuStreamSynchronize", 7000, 2, "cuStreamSynchronize_ptsz" },
};

/* Version and flag edges. */
static const struct gpa_row edges[] = {
    { "cuMemAlloc", 2000, 0, "cuMemAlloc" },
    { "cuMemAlloc", 3010, 0, "cuMemAlloc" },
    { "cuMemAlloc", 13000, 2, "cuMemAlloc_v2" },
    { "cuMemAllocPitch", 3000, 0, "cuMemAllocPitch" },
    { "cuMemFree", 2000, 0, "cuMemFree" },
    { "cuMemGetInfo", 2000, 0, "cuMemGetInfo" },
    { "cuMemGetAddressRange", 2000, 0, "cuMemGetAddressRange" },
    { "cuMemAllocHost", 2000, 0, "cuMemAllocHost" },
    { "cuMemAllocHost", 3020, 0, "cuMemAllocHost_v2" },
    { "cuDeviceTotalMem", 2000, 0, "cuDeviceTotalMem" },
    { "cuArrayCreate", 2000, 0, "cuArrayCreate" },
    { "cuArray3DCreate", 2000, 0, "cuArray3DCreate" },
    { "cuCtxCreate", 2000, 0, "cuCtxCreate" },
    { "cuCtxCreate", 11030, 0, "cuCtxCreate_v2" },
    { "cuCtxCreate", 12040, 0, "cuCtxCreate_v3" },
    { "cuCtxCreate", 12050, 0, "cuCtxCreate_v4" },
    { "cuCtxCreate", 13000, 0, "cuCtxCreate_v4" },
    { "cuCtxDestroy", 3020, 0, "cuCtxDestroy" },
    { "cuCtxPushCurrent", 3999, 0, "cuCtxPushCurrent" },
    { "cuCtxPopCurrent", 3020, 0, "cuCtxPopCurrent" },
    { "cuStreamDestroy", 3020, 0, "cuStreamDestroy" },
    { "cuDevicePrimaryCtxRelease", 11000, 0, "cuDevicePrimaryCtxRelease_v2" },
    { "cuDevicePrimaryCtxReset", 10020, 0, "cuDevicePrimaryCtxReset" },
    { "cuDevicePrimaryCtxReset", 11000, 0, "cuDevicePrimaryCtxReset_v2" },
    { "cuDeviceGetUuid", 11030, 0, "cuDeviceGetUuid" },
    { "cuDeviceGetUuid", 11040, 0, "cuDeviceGetUuid_v2" },
    { "cuCtxGetDevice", 12090, 0, "cuCtxGetDevice" },
    { "cuGetProcAddress", 11999, 0, "cuGetProcAddress" },
    { "cuGetProcAddress", 13000, 0, "cuGetProcAddress_v2" },
    { "cuMemAllocAsync", 13000, 1, "cuMemAllocAsync" },
    { "cuMemAllocAsync", 13000, 3, "cuMemAllocAsync_ptsz" },
    { "cuMemFreeAsync", 12000, 2, "cuMemFreeAsync_ptsz" },
    { "cuStreamSynchronize", 6050, 0, "cuStreamSynchronize" },
    { "cuStreamGetDevice", 12080, 0, "cuStreamGetDevice" },
    { "cuStreamGetDevice", 13000, 2, "cuStreamGetDevice_ptsz" },
    { "cuStreamGetDevice", 12070, 0, NULL },
    { "cuStreamSynchronize", 13000, 3, "cuStreamSynchronize_ptsz" },
    /* The per-thread flag never falls back to a legacy variant of a name
     * that has per-thread ones. */
    { "cuStreamSynchronize", 6050, 2, NULL },
    { "cuMemAllocAsync", 11010, 0, NULL },
    { "cuMemAllocAsync", 11010, 2, NULL },
    { "cuMemCreate", 10010, 0, NULL },
    { "cuArrayGetMemoryRequirements", 11050, 0, NULL },
    { "cuGetProcAddress", 11020, 0, NULL },
    { "cuInit", 0, 0, NULL },
    /* A negative version stands for the newest. */
    { "cuCtxCreate", -1, 0, "cuCtxCreate_v4" },
    { "cuMemAlloc", -5, 0, "cuMemAlloc_v2" },
};

static void *lib;

static void open_lib(void)
{
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(lib);
}

static void check_row(const struct gpa_row *r)
{
    void *pfn = (void *)1, *pfn4 = (void *)1;
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)99;
    ck_assert_int_eq(cuGetProcAddress_v2(r->name, &pfn, r->version, (cuuint64_t)r->flags, &st),
                     CUDA_SUCCESS);
    ck_assert_int_eq(cuGetProcAddress(r->name, &pfn4, r->version, (cuuint64_t)r->flags),
                     CUDA_SUCCESS);
    ck_assert_ptr_eq(pfn, pfn4);
    if (r->variant == NULL) {
        ck_assert_msg(pfn == NULL, "%s %d %d: a pointer", r->name, r->version, r->flags);
        ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
        return;
    }
    void *want = dlsym(lib, r->variant);
    ck_assert_ptr_nonnull(want);
    ck_assert_msg(pfn == want, "%s %d %d: not %s", r->name, r->version, r->flags, r->variant);
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SUCCESS);
}

START_TEST(seen_lookups)
{
    open_lib();
    check_row(&seen[_i]);
}
END_TEST

START_TEST(edge_lookups)
{
    open_lib();
    check_row(&edges[_i]);
}
END_TEST

START_TEST(unknown_names)
{
    static const char *const names[] = {
        "cuNoSuchThing", "cuMemAlloc_v2", "cuMemAllocAsync_ptsz", "", "cuMemcpy",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *pfn = (void *)1;
        CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)99;
        ck_assert_int_eq(cuGetProcAddress_v2(names[i], &pfn, 13000, 0, &st), CUDA_SUCCESS);
        ck_assert_ptr_null(pfn);
        ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
        pfn = (void *)1;
        ck_assert_int_eq(cuGetProcAddress(names[i], &pfn, 12000, 0), CUDA_SUCCESS);
        ck_assert_ptr_null(pfn);
    }
}
END_TEST

START_TEST(bad_arguments)
{
    void *pfn = (void *)1;
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)99;
    /* Above the driver's version: refused, nothing written. */
    ck_assert_int_eq(cuGetProcAddress_v2("cuMemAlloc", &pfn, 13010, 0, &st),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuGetProcAddress_v2("cuNoSuchThing", &pfn, 13010, 0, &st),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuGetProcAddress("cuMemAlloc", &pfn, 14000, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_ptr_eq(pfn, (void *)1);
    ck_assert_int_eq(st, 99);
    ck_assert_int_eq(cuGetProcAddress_v2("cuMemAlloc", &pfn, 13000, 4, &st),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuGetProcAddress_v2(NULL, &pfn, 13000, 0, &st), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuGetProcAddress_v2("cuInit", NULL, 13000, 0, &st), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuGetProcAddress("cuInit", NULL, 13000, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuGetProcAddress_v2("cuInit", &pfn, 13000, 0, NULL), CUDA_SUCCESS);
    ck_assert_ptr_eq(pfn, dlsym(RTLD_DEFAULT, "cuInit"));
}
END_TEST

/* What a runtime does: find cuGetProcAddress_v2, ask it for itself, then
 * reach the driver through the pointers it hands out. */
START_TEST(runtime_style)
{
    typedef CUresult (*gpa2_t)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);
    typedef CUresult (*init_t)(unsigned int);
    typedef CUresult (*retain_t)(CUcontext *, CUdevice);
    typedef CUresult (*setcur_t)(CUcontext);
    typedef CUresult (*alloc_t)(CUdeviceptr *, size_t);
    typedef CUresult (*free_t)(CUdeviceptr);
    open_lib();
    gpa2_t gpa = (gpa2_t)dlsym(lib, "cuGetProcAddress_v2");
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    ck_assert_int_eq(gpa("cuGetProcAddress", &p, 12000, 0, &st), CUDA_SUCCESS);
    ck_assert_ptr_eq(p, (void *)gpa);
    gpa = (gpa2_t)p;
    init_t init;
    retain_t retain;
    setcur_t setcur;
    alloc_t alloc;
    free_t fr;
    ck_assert_int_eq(gpa("cuInit", (void **)&init, 2000, 0, &st), CUDA_SUCCESS);
    ck_assert_int_eq(gpa("cuDevicePrimaryCtxRetain", (void **)&retain, 7000, 0, &st), CUDA_SUCCESS);
    ck_assert_int_eq(gpa("cuCtxSetCurrent", (void **)&setcur, 4000, 0, &st), CUDA_SUCCESS);
    ck_assert_int_eq(gpa("cuMemAlloc", (void **)&alloc, 3020, 0, &st), CUDA_SUCCESS);
    ck_assert_int_eq(gpa("cuMemFree", (void **)&fr, 3020, 0, &st), CUDA_SUCCESS);
    CUcontext c;
    CUdeviceptr d = 0;
    ck_assert_int_eq(alloc(&d, 16), CUDA_ERROR_NOT_INITIALIZED);
    ck_assert_int_eq(init(0), CUDA_SUCCESS);
    ck_assert_int_eq(retain(&c, 0), CUDA_SUCCESS);
    ck_assert_int_eq(setcur(c), CUDA_SUCCESS);
    ck_assert_int_eq(alloc(&d, 3ULL << 32), CUDA_SUCCESS);   /* a 64-bit size: _v2 */
    struct gm_simcuda_stats s;
    ck_assert_int_eq(gm_simcuda_stats(0, &s), 0);
    ck_assert_uint_eq(s.alloc, 3ULL << 32);
    ck_assert_int_eq(fr(d), CUDA_SUCCESS);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("simcuda-proc");
    TCase *t = tcase_create("lookups");
    tcase_add_loop_test(t, seen_lookups, 0, (int)(sizeof seen / sizeof seen[0]));
    tcase_add_loop_test(t, edge_lookups, 0, (int)(sizeof edges / sizeof edges[0]));
    tcase_add_test(t, unknown_names);
    tcase_add_test(t, bad_arguments);
    tcase_add_test(t, runtime_style);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    unsetenv("SIMCUDA_MEMORY");
    unsetenv("SIMCUDA_DEVICES");
    unsetenv("SIMCUDA_FAIL");
    SRunner *r = srunner_create(suite());
    srunner_set_fork_status(r, CK_FORK);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
