/*
 * tests/sim/test_simcuda.c — Check suite for the simulated driver's core:
 * initialisation and SIMCUDA_* configuration, device queries, contexts and
 * the context stack, plain/pitch/managed/v1 allocations, capacity edges,
 * pinned host memory, address ranges, fault injection, latency, error
 * strings and streams.
 *
 * The driver reads its configuration once, at cuInit, so every test runs in
 * its own forked process (Check's fork mode, forced in main) and sets its
 * variables before calling cuInit.
 */
#include "tools/sim/simcuda.h"
#include "tests/sim/sim_boot.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

static void clean_env(void)
{
    gm_simt_clear_env();
}

/* cuInit with `memory` per device and `context` bytes of context memory,
 * then the primary context of device 0 made current. */
static CUcontext boot(const char *memory, const char *context)
{
    if (memory != NULL)
        setenv("SIMCUDA_MEMORY", memory, 1);
    if (context != NULL)
        setenv("SIMCUDA_CONTEXT", context, 1);
    return gm_simt_boot();
}

static struct gm_simcuda_stats stats(int dev)
{
    struct gm_simcuda_stats s;
    ck_assert_int_eq(gm_simcuda_stats(dev, &s), 0);
    return s;
}

static uint64_t free_now(void)
{
    size_t f = 0, t = 0;
    ck_assert_int_eq(cuMemGetInfo_v2(&f, &t), CUDA_SUCCESS);
    return f;
}

/* ---- initialisation and configuration -------------------------------- */

START_TEST(init_required)
{
    int n = -1, v = 0;
    CUdeviceptr p;
    const char *s = NULL;
    ck_assert_int_eq(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    ck_assert_int_eq(cuMemAlloc_v2(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
    ck_assert_int_eq(cuDevicePrimaryCtxRetain(&(CUcontext){ 0 }, 0), CUDA_ERROR_NOT_INITIALIZED);
    ck_assert_int_eq(gm_simcuda_stats(0, &(struct gm_simcuda_stats){ 0 }), -1);
    /* These answer before cuInit, like the real driver. */
    ck_assert_int_eq(cuDriverGetVersion(&v), CUDA_SUCCESS);
    ck_assert_int_eq(v, 13000);
    ck_assert_int_eq(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
    ck_assert_str_eq(s, "CUDA_ERROR_OUT_OF_MEMORY");
    ck_assert_int_eq(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuDeviceGetCount(&n), CUDA_SUCCESS);
    ck_assert_int_eq(n, 1);
}
END_TEST

START_TEST(config_defaults)
{
    size_t total = 0;
    boot(NULL, NULL);
    ck_assert_int_eq(cuDeviceTotalMem_v2(&total, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(total, 80 * GiB);
    ck_assert_uint_eq(free_now(), 80 * GiB - 300 * MiB);
    ck_assert_uint_eq(stats(0).context, 300 * MiB);
}
END_TEST

START_TEST(config_memory_list)
{
    int n = 0;
    size_t t0 = 0, t1 = 0, t2 = 0;
    setenv("SIMCUDA_MEMORY", "1.5G,512M", 1);
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuDeviceGetCount(&n), CUDA_SUCCESS);
    ck_assert_int_eq(n, 2);     /* the list sets the device count */
    ck_assert_int_eq(cuDeviceTotalMem_v2(&t0, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuDeviceTotalMem_v2(&t1, 1), CUDA_SUCCESS);
    ck_assert_uint_eq(t0, 3 * GiB / 2);
    ck_assert_uint_eq(t1, 512 * MiB);
    ck_assert_int_eq(cuDeviceTotalMem_v2(&t2, 2), CUDA_ERROR_INVALID_DEVICE);
}
END_TEST

START_TEST(config_devices_repeat_last)
{
    int n = 0;
    size_t t = 0;
    setenv("SIMCUDA_DEVICES", "3", 1);
    setenv("SIMCUDA_MEMORY", "1G,2G", 1);
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuDeviceGetCount(&n), CUDA_SUCCESS);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(cuDeviceTotalMem_v2(&t, 2), CUDA_SUCCESS);
    ck_assert_uint_eq(t, 2 * GiB);
}
END_TEST

START_TEST(config_no_devices)
{
    int n = -1;
    setenv("SIMCUDA_DEVICES", "0", 1);
    ck_assert_int_eq(cuInit(0), CUDA_ERROR_NO_DEVICE);
    ck_assert_int_eq(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
}
END_TEST

/* Bad values: cuInit fails with INVALID_VALUE and names the variable. */
static const struct { const char *var, *val; } bad_cfg[] = {
    { "SIMCUDA_MEMORY", "x" },
    { "SIMCUDA_MEMORY", "" },
    { "SIMCUDA_MEMORY", "0" },
    { "SIMCUDA_MEMORY", "-1G" },
    { "SIMCUDA_MEMORY", "4 gigs" },
    { "SIMCUDA_MEMORY", "1G,,2G" },
    { "SIMCUDA_MEMORY", "99999999T" },
    { "SIMCUDA_DEVICES", "17" },
    { "SIMCUDA_DEVICES", "two" },
    { "SIMCUDA_CONTEXT", "300 megs" },
    { "SIMCUDA_LATENCY", "60" },
    { "SIMCUDA_LATENCY", "fast" },
    { "SIMCUDA_FAIL", "3" },
    { "SIMCUDA_FAIL", "0:2" },
    { "SIMCUDA_FAIL", "3:0" },
    { "SIMCUDA_FAIL", "3:NOPE" },
    { "SIMCUDA_FAIL", "x+:2" },
    { "SIMCUDA_UUID_SEED", "-4" },
    { "SIMCUDA_POOL_RELEASE", "never" },
};

START_TEST(config_bad_value)
{
    char buf[512] = "", want[128];
    FILE *tmp = tmpfile();
    ck_assert_ptr_nonnull(tmp);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    setenv(bad_cfg[_i].var, bad_cfg[_i].val, 1);
    CUresult rc = cuInit(0);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(buf, 1, sizeof buf - 1, tmp);
    buf[n] = '\0';
    fclose(tmp);
    ck_assert_int_eq(rc, CUDA_ERROR_INVALID_VALUE);
    snprintf(want, sizeof want, "simcuda: %s='%s' ", bad_cfg[_i].var, bad_cfg[_i].val);
    ck_assert_msg(strstr(buf, want) != NULL, "stderr was: %s", buf);
    ck_assert_int_eq(cuDeviceGetCount(&(int){ 0 }), CUDA_ERROR_NOT_INITIALIZED);
    ck_assert_int_eq(cuInit(0), CUDA_ERROR_INVALID_VALUE);  /* stays failed */
}
END_TEST

START_TEST(config_too_many_sizes)
{
    setenv("SIMCUDA_DEVICES", "1", 1);
    setenv("SIMCUDA_MEMORY", "1G,2G", 1);
    ck_assert_int_eq(cuInit(0), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

/* ---- devices ------------------------------------------------------------ */

START_TEST(device_queries)
{
    CUdevice d = -1;
    char name[64], bus[32];
    int v = -1;
    unsigned int t32 = 0;
    setenv("SIMCUDA_MEMORY", "8G,1G", 1);
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuDeviceGet(&d, 1), CUDA_SUCCESS);
    ck_assert_int_eq(d, 1);
    ck_assert_int_eq(cuDeviceGet(&d, 2), CUDA_ERROR_INVALID_DEVICE);
    ck_assert_int_eq(cuDeviceGet(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuDeviceGetName(name, sizeof name, 0), CUDA_SUCCESS);
    ck_assert_str_eq(name, "gpumem simulated GPU");
    ck_assert_int_eq(cuDeviceGetName(name, 7, 0), CUDA_SUCCESS);
    ck_assert_str_eq(name, "gpumem");
    ck_assert_int_eq(cuDeviceGetName(name, sizeof name, 5), CUDA_ERROR_INVALID_DEVICE);

    static const struct { CUdevice_attribute a; int v; } attrs[] = {
        { CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9 },
        { CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0 },
        { CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1 },
        { CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1 },
        { CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1 },
        { CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32 },
        { CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132 },
        { CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 65536 },
        { CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1 },
        { CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 32 },
        { CU_DEVICE_ATTRIBUTE_TCC_DRIVER, 0 },  /* unmodelled: 0 */
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        ck_assert_int_eq(cuDeviceGetAttribute(&v, attrs[i].a, 1), CUDA_SUCCESS);
        ck_assert_int_eq(v, attrs[i].v);
    }
    ck_assert_int_eq(cuDeviceGetAttribute(&v, (CUdevice_attribute)0, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuDeviceGetAttribute(NULL, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0),
                     CUDA_ERROR_INVALID_VALUE);

    /* v1 total: 32 bits, clamped; v2 exact. */
    ck_assert_int_eq(cuDeviceTotalMem(&t32, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(t32, 0xffffffffU);
    ck_assert_int_eq(cuDeviceTotalMem(&t32, 1), CUDA_SUCCESS);
    ck_assert_uint_eq(t32, (unsigned)GiB);

    ck_assert_int_eq(cuDeviceGetPCIBusId(bus, sizeof bus, 1), CUDA_SUCCESS);
    ck_assert_int_eq(cuDeviceGetByPCIBusId(&d, bus), CUDA_SUCCESS);
    ck_assert_int_eq(d, 1);
    ck_assert_int_eq(cuDeviceGetByPCIBusId(&d, "0000:99:00.0"), CUDA_ERROR_INVALID_DEVICE);
}
END_TEST

/* The UUID of `dev` in a fresh process configured with `devices` and
 * `seed` (NULL: unset). */
static CUuuid uuid_elsewhere(const char *devices, const char *seed, int dev)
{
    CUuuid u;
    int fd[2];
    memset(&u, 0, sizeof u);
    ck_assert_int_eq(pipe(fd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setenv("SIMCUDA_DEVICES", devices, 1);
        if (seed != NULL)
            setenv("SIMCUDA_UUID_SEED", seed, 1);
        if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetUuid_v2(&u, dev) != CUDA_SUCCESS)
            _exit(3);
        _exit(write(fd[1], &u, sizeof u) == (ssize_t)sizeof u ? 0 : 4);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    ck_assert_int_eq(read(fd[0], &u, sizeof u), (ssize_t)sizeof u);
    close(fd[0]);
    close(fd[1]);
    return u;
}

START_TEST(device_uuid)
{
    CUuuid a, b;
    CUuuid d0 = uuid_elsewhere("2", NULL, 0), d1 = uuid_elsewhere("2", NULL, 1);
    CUuuid again = uuid_elsewhere("1", NULL, 0), seeded = uuid_elsewhere("1", "7", 0);
    ck_assert_mem_eq(d0.bytes, again.bytes, 16);        /* deterministic per ordinal */
    ck_assert(memcmp(d0.bytes, d1.bytes, 16) != 0);
    ck_assert(memcmp(d0.bytes, seeded.bytes, 16) != 0);
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuDeviceGetUuid(&a, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuDeviceGetUuid_v2(&b, 0), CUDA_SUCCESS);
    ck_assert_mem_eq(a.bytes, b.bytes, 16);
    ck_assert_mem_eq(a.bytes, d0.bytes, 16);
    ck_assert_int_eq(cuDeviceGetUuid_v2(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuDeviceGetUuid_v2(&b, 1), CUDA_ERROR_INVALID_DEVICE);
}
END_TEST

/* ---- contexts ------------------------------------------------------------- */

START_TEST(context_needed)
{
    size_t f, t;
    CUdeviceptr p;
    void *h;
    CUstream s;
    CUdevice d;
    setenv("SIMCUDA_MEMORY", "1G", 1);
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemGetInfo_v2(&f, &t), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(cuMemAlloc_v2(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(cuMemAllocManaged(&p, 16, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(cuMemHostAlloc(&h, 16, 0), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(cuStreamCreate(&s, 0), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(cuCtxGetDevice(&d), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(cuCtxPopCurrent_v2(NULL), CUDA_ERROR_INVALID_CONTEXT);
    /* Frees and device queries need none. */
    ck_assert_int_eq(cuMemFree_v2(0x800000001000ULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemFree_v2(0), CUDA_SUCCESS);
    ck_assert_uint_eq(stats(0).used, 0);    /* no context, no context memory */
}
END_TEST

START_TEST(context_memory)
{
    CUcontext p1, p2, c;
    setenv("SIMCUDA_MEMORY", "1G", 1);
    setenv("SIMCUDA_CONTEXT", "100M", 1);
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuDevicePrimaryCtxRetain(&p1, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxSetCurrent(p1), CUDA_SUCCESS);
    ck_assert_uint_eq(free_now(), GiB - 100 * MiB);
    ck_assert_int_eq(cuDevicePrimaryCtxRetain(&p2, 0), CUDA_SUCCESS);
    ck_assert_ptr_eq(p1, p2);
    ck_assert_uint_eq(free_now(), GiB - 100 * MiB);     /* a retain costs nothing */
    ck_assert_int_eq(cuCtxCreate_v2(&c, 0, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(free_now(), GiB - 200 * MiB);     /* each context costs */
    ck_assert_int_eq(stats(0).contexts, 2);
    ck_assert_uint_eq(stats(0).context, 200 * MiB);
    ck_assert_int_eq(cuCtxDestroy_v2(c), CUDA_SUCCESS);
    ck_assert_uint_eq(stats(0).used, 100 * MiB);
    ck_assert_int_eq(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    ck_assert_uint_eq(stats(0).used, 100 * MiB);
    ck_assert_int_eq(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    ck_assert_uint_eq(stats(0).used, 0);
    ck_assert_int_eq(stats(0).contexts, 0);
    ck_assert_int_eq(cuDevicePrimaryCtxRelease_v2(0), CUDA_ERROR_INVALID_CONTEXT);
}
END_TEST

START_TEST(context_oom)
{
    CUcontext c;
    setenv("SIMCUDA_MEMORY", "100M", 1);
    setenv("SIMCUDA_CONTEXT", "300M", 1);
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuDevicePrimaryCtxRetain(&c, 0), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(cuCtxCreate_v4(&c, NULL, 0, 0), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(stats(0).used, 0);
}
END_TEST

START_TEST(primary_lifecycle)
{
    CUcontext p, cur;
    CUdeviceptr a;
    unsigned flags;
    int active;
    CUdevice d = -1;
    setenv("SIMCUDA_MEMORY", "1G", 1);
    setenv("SIMCUDA_CONTEXT", "64M", 1);
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
    ck_assert_int_eq(active, 0);
    ck_assert_int_eq(cuDevicePrimaryCtxReset_v2(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuDevicePrimaryCtxRetain(&p, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuDevicePrimaryCtxRetain(&p, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxSetCurrent(p), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAlloc_v2(&a, 10 * MiB), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxDestroy_v2(p), CUDA_ERROR_INVALID_CONTEXT);  /* not destroyable */
    ck_assert_int_eq(cuDevicePrimaryCtxSetFlags_v2(0, CU_CTX_SCHED_BLOCKING_SYNC), CUDA_SUCCESS);
    ck_assert_int_eq(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
    ck_assert_int_eq(active, 1);
    ck_assert_uint_eq(flags, CU_CTX_SCHED_BLOCKING_SYNC);

    /* Reset ends the context and frees its memory; references stay. */
    ck_assert_int_eq(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
    ck_assert_int_eq(active, 0);
    ck_assert_uint_eq(flags, 0);
    ck_assert_uint_eq(stats(0).used, 0);
    ck_assert_int_eq(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    ck_assert_ptr_eq(cur, p);                               /* stale but current */
    ck_assert_int_eq(cuMemAlloc_v2(&a, 16), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    ck_assert_int_eq(cuCtxGetDevice(&d), CUDA_SUCCESS);     /* not validated */
    ck_assert_int_eq(d, 0);
    ck_assert_int_eq(cuMemFree_v2(a), CUDA_ERROR_INVALID_VALUE);  /* already gone */
    ck_assert_int_eq(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuDevicePrimaryCtxRelease_v2(0), CUDA_ERROR_INVALID_CONTEXT);

    /* Release to zero frees the context's allocations too. */
    ck_assert_int_eq(cuDevicePrimaryCtxRetain(&p, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAlloc_v2(&a, 10 * MiB), CUDA_SUCCESS);
    ck_assert_uint_eq(stats(0).used, 74 * MiB);
    ck_assert_int_eq(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    ck_assert_uint_eq(stats(0).used, 0);
    ck_assert_uint_eq(stats(0).live, 0);
}
END_TEST

START_TEST(context_stack)
{
    CUcontext p, a, b, cur, popped;
    CUdevice d = -1;
    setenv("SIMCUDA_MEMORY", "1G,1G", 1);
    setenv("SIMCUDA_CONTEXT", "0", 1);
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    ck_assert_ptr_null(cur);
    ck_assert_int_eq(cuCtxSetCurrent(NULL), CUDA_SUCCESS);     /* empty: no-op */
    ck_assert_int_eq(cuCtxPushCurrent_v2(NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuDevicePrimaryCtxRetain(&p, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxPushCurrent_v2(p), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxCreate_v3(&a, NULL, 0, 0, 1), CUDA_SUCCESS);  /* pushed */
    ck_assert_int_eq(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    ck_assert_ptr_eq(cur, a);
    ck_assert_int_eq(cuCtxGetDevice(&d), CUDA_SUCCESS);
    ck_assert_int_eq(d, 1);
    ck_assert_int_eq(cuCtxGetDevice_v2(&d, p), CUDA_SUCCESS);
    ck_assert_int_eq(d, 0);
    ck_assert_int_eq(cuCtxCreate_v4(&b, NULL, 0, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxPopCurrent_v2(&popped), CUDA_SUCCESS);
    ck_assert_ptr_eq(popped, b);
    ck_assert_int_eq(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
    ck_assert_ptr_eq(popped, a);
    ck_assert_int_eq(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    ck_assert_ptr_eq(cur, p);
    /* A context destroyed below the top stays on the stack, stale. */
    ck_assert_int_eq(cuCtxPushCurrent_v2(b), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxPushCurrent_v2(a), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxDestroy_v2(b), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    ck_assert_ptr_eq(cur, a);
    ck_assert_int_eq(cuCtxPopCurrent_v2(NULL), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    ck_assert_ptr_eq(cur, b);
    ck_assert_int_eq(cuMemAlloc_v2(&(CUdeviceptr){ 0 }, 16), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    ck_assert_int_eq(cuCtxPopCurrent_v2(NULL), CUDA_SUCCESS);
    /* Destroying the current context pops it. */
    ck_assert_int_eq(cuCtxSetCurrent(a), CUDA_SUCCESS);        /* replaces the top (p) */
    ck_assert_int_eq(cuCtxPushCurrent_v2(p), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxPushCurrent_v2(a), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxDestroy_v2(a), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    ck_assert_ptr_eq(cur, p);
    ck_assert_int_eq(cuCtxDestroy(a), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    ck_assert_int_eq(cuCtxSetCurrent(a), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(cuCtxDestroy_v2(NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuCtxSynchronize(), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxSynchronize_v2(p), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxPopCurrent_v2(NULL), CUDA_SUCCESS);  /* p */
    ck_assert_int_eq(cuCtxPopCurrent_v2(NULL), CUDA_SUCCESS);  /* the stale a */
    ck_assert_int_eq(cuCtxPopCurrent_v2(NULL), CUDA_ERROR_INVALID_CONTEXT);
}
END_TEST

START_TEST(context_destroy_frees)
{
    CUcontext c;
    CUdeviceptr a, m;
    CUarray arr;
    CUstream s;
    CUDA_ARRAY_DESCRIPTOR ad = { 256, 256, CU_AD_FORMAT_FLOAT, 1 };
    setenv("SIMCUDA_MEMORY", "1G", 1);
    setenv("SIMCUDA_CONTEXT", "10M", 1);
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxCreate_v2(&c, 0, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAlloc_v2(&a, 5 * MiB), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAllocManaged(&m, 5 * MiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    ck_assert_int_eq(cuArrayCreate_v2(&arr, &ad), CUDA_SUCCESS);
    ck_assert_int_eq(cuStreamCreate(&s, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(stats(0).used, 15 * MiB + 256 * 1024);
    ck_assert_int_eq(cuCtxDestroy_v2(c), CUDA_SUCCESS);
    struct gm_simcuda_stats st = stats(0);
    ck_assert_uint_eq(st.used, 0);
    ck_assert_uint_eq(st.managed, 0);
    ck_assert_uint_eq(st.live, 0);
    ck_assert_int_eq(cuStreamDestroy_v2(s), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuArrayDestroy(arr), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemFree_v2(a), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

/* ---- device memory -------------------------------------------------------- */

START_TEST(capacity_edge)
{
    CUdeviceptr a, b;
    boot("1G", "300M");
    uint64_t f = free_now();
    ck_assert_uint_eq(f, 724 * MiB);
    ck_assert_int_eq(cuMemAlloc_v2(&a, f + 1), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(cuMemAlloc_v2(&a, f), CUDA_SUCCESS);
    ck_assert_uint_eq(free_now(), 0);
    ck_assert_int_eq(cuMemAlloc_v2(&b, 1), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(cuMemFree_v2(a), CUDA_SUCCESS);
    ck_assert_uint_eq(free_now(), f);
    /* Exact bytes: two halves and one byte more. */
    ck_assert_int_eq(cuMemAlloc_v2(&a, f / 2), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAlloc_v2(&b, f - f / 2), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAllocManaged(&(CUdeviceptr){ 0 }, 1, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAlloc_v2(&(CUdeviceptr){ 0 }, 1), CUDA_ERROR_OUT_OF_MEMORY);
}
END_TEST

START_TEST(alloc_errors_and_addresses)
{
    CUdeviceptr a, b, c, d1;
    boot("4G,4G", "0");
    ck_assert_int_eq(cuMemAlloc_v2(&a, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemAlloc_v2(NULL, 16), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemAlloc_v2(&a, 100), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAlloc_v2(&b, 100), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAlloc_v2(&c, 3 * MiB), CUDA_SUCCESS);
    ck_assert_uint_eq(a % 512, 0);
    ck_assert_uint_eq(b % 512, 0);
    ck_assert_uint_eq(c % (2 * MiB), 0);
    ck_assert(b >= a + 100 || a >= b + 100);
    ck_assert(a >= 0x800000000000ULL);        /* never a host address */
    ck_assert_uint_eq(stats(0).alloc, 3 * MiB + 200);
    /* Device 1's allocations come from its own range. */
    CUcontext c1;
    ck_assert_int_eq(cuDevicePrimaryCtxRetain(&c1, 1), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxPushCurrent_v2(c1), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAlloc_v2(&d1, 100), CUDA_SUCCESS);
    ck_assert(d1 >= a + (1ULL << 40));
    ck_assert_uint_eq(stats(1).alloc, 100);
    ck_assert_uint_eq(stats(0).alloc, 3 * MiB + 200);
    ck_assert_int_eq(cuCtxPopCurrent_v2(NULL), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemFree_v2(d1), CUDA_SUCCESS);      /* any context frees */
    ck_assert_uint_eq(stats(1).alloc, 0);
    ck_assert_int_eq(cuMemFree_v2(a + 16), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemFree_v2(a), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemFree_v2(a), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemFree_v2(0xdeadbeef000ULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemFree_v2(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemFree_v2(b), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemFree_v2(c), CUDA_SUCCESS);
    ck_assert_uint_eq(stats(0).used, 0);
    ck_assert_uint_eq(stats(0).live, 0);
}
END_TEST

START_TEST(pitch_alloc)
{
    CUdeviceptr p;
    size_t pitch = 0;
    boot("1G", "0");
    ck_assert_int_eq(cuMemAllocPitch_v2(&p, &pitch, 1000, 10, 4), CUDA_SUCCESS);
    ck_assert_uint_eq(pitch, 1024);
    ck_assert_uint_eq(stats(0).alloc, 10240);
    ck_assert_int_eq(cuMemAllocPitch_v2(&p, &pitch, 1, 3, 16), CUDA_SUCCESS);
    ck_assert_uint_eq(pitch, 512);
    ck_assert_uint_eq(stats(0).alloc, 10240 + 1536);
    ck_assert_int_eq(cuMemAllocPitch_v2(&p, &pitch, 1000, 10, 2), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemAllocPitch_v2(&p, &pitch, 0, 10, 4), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemAllocPitch_v2(&p, &pitch, 100, 0, 4), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemAllocPitch_v2(&p, NULL, 100, 1, 4), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemAllocPitch_v2(&p, &pitch, 1 << 20, 1 << 20, 4), CUDA_ERROR_OUT_OF_MEMORY);
}
END_TEST

/* v1 calls: 32-bit sizes and pointers, only in a v1 (cuCtxCreate) context;
 * the _v2 calls refuse such a context (as a real 64-bit driver does). */
START_TEST(v1_calls)
{
    CUcontext c1, c2;
    CUdeviceptr_v1 p = 0, base = 0;
    unsigned int pitch = 0, f = 0, t = 0, size = 0;
    CUdeviceptr p2;
    void *h = NULL;
    setenv("SIMCUDA_MEMORY", "80G", 1);
    setenv("SIMCUDA_CONTEXT", "0", 1);
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxCreate(&c1, 0, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAlloc(&p, 4096), CUDA_SUCCESS);
    ck_assert_uint_ne(p, 0);
    ck_assert_uint_eq(stats(0).alloc, 4096);
    ck_assert_int_eq(cuMemGetAddressRange(&base, &size, p + 10), CUDA_SUCCESS);
    ck_assert_uint_eq(base, p);
    ck_assert_uint_eq(size, 4096);
    ck_assert_int_eq(cuMemGetInfo(&f, &t), CUDA_SUCCESS);
    ck_assert_uint_eq(t, 0xffffffffU);              /* clamped */
    ck_assert_int_eq(cuMemAllocPitch(&p, &pitch, 100, 2, 4), CUDA_SUCCESS);
    ck_assert_uint_eq(pitch, 512);
    ck_assert_int_eq(cuMemAllocHost(&h, 100), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemFreeHost(h), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAlloc_v2(&p2, 16), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(cuMemGetInfo_v2(&(size_t){ 0 }, &(size_t){ 0 }), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(cuMemFree(p), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemFree_v2(base), CUDA_SUCCESS);    /* frees take any pointer */
    ck_assert_uint_eq(stats(0).alloc, 0);
    ck_assert_int_eq(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuCtxCreate_v2(&c2, 0, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(cuMemGetInfo(&f, &t), CUDA_ERROR_INVALID_CONTEXT);
}
END_TEST

START_TEST(managed)
{
    CUdeviceptr m1, m2;
    boot("1G", "0");
    ck_assert_int_eq(cuMemAllocManaged(&m1, 16, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemAllocManaged(&m1, 16, 3), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemAllocManaged(&m1, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
    /* Oversubscription: twice the device, no free memory used. */
    ck_assert_int_eq(cuMemAllocManaged(&m1, GiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAllocManaged(&m2, GiB, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
    ck_assert_uint_eq(free_now(), GiB);
    ck_assert_uint_eq(stats(0).managed, 2 * GiB);
    ck_assert_uint_eq(stats(0).used, 0);
    ck_assert_int_eq(cuMemFree_v2(m1), CUDA_SUCCESS);
    ck_assert_uint_eq(stats(0).managed, GiB);
    ck_assert_int_eq(cuMemFree_v2(m2), CUDA_SUCCESS);
    ck_assert_uint_eq(stats(0).managed, 0);
}
END_TEST

START_TEST(host_memory)
{
    void *h = NULL, *h2 = NULL;
    CUdeviceptr base;
    size_t size;
    boot("1G", "0");
    ck_assert_int_eq(cuMemHostAlloc(&h, 10000, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
                     CUDA_SUCCESS);
    memset(h, 0xab, 10000);                     /* real, writable memory */
    ck_assert_uint_eq((uintptr_t)h % 4096, 0);
    ck_assert_int_eq(cuMemAllocHost_v2(&h2, 64), CUDA_SUCCESS);
    ((char *)h2)[63] = 1;
    ck_assert_uint_eq(stats(0).host, 10064);
    ck_assert_uint_eq(free_now(), GiB);          /* never charged to a device */
    ck_assert_int_eq(cuMemGetAddressRange_v2(&base, &size, (uintptr_t)h + 5000), CUDA_SUCCESS);
    ck_assert_uint_eq(base, (uintptr_t)h);
    ck_assert_uint_eq(size, 10000);
    ck_assert_int_eq(cuMemHostAlloc(&h, 16, 8), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemHostAlloc(NULL, 16, 0), CUDA_ERROR_INVALID_VALUE);
    void *z = (void *)1;
    ck_assert_int_eq(cuMemHostAlloc(&z, 0, 0), CUDA_SUCCESS);  /* as a real driver */
    ck_assert_ptr_null(z);
    ck_assert_int_eq(cuMemFreeHost((char *)h + 16), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemFreeHost(h), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemFreeHost(h2), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemFreeHost(NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(stats(0).host, 0);
}
END_TEST

START_TEST(address_range)
{
    CUdeviceptr a, m, base = 0;
    size_t size = 0;
    boot("1G", "0");
    ck_assert_int_eq(cuMemAlloc_v2(&a, 1000), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAllocManaged(&m, 3 * MiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemGetAddressRange_v2(&base, &size, a), CUDA_SUCCESS);
    ck_assert_uint_eq(base, a);
    ck_assert_uint_eq(size, 1000);
    ck_assert_int_eq(cuMemGetAddressRange_v2(&base, &size, a + 999), CUDA_SUCCESS);
    ck_assert_uint_eq(base, a);
    ck_assert_int_eq(cuMemGetAddressRange_v2(&base, &size, a + 1000), CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(cuMemGetAddressRange_v2(&base, &size, m + MiB), CUDA_SUCCESS);
    ck_assert_uint_eq(base, m);
    ck_assert_uint_eq(size, 3 * MiB);
    ck_assert_int_eq(cuMemGetAddressRange_v2(NULL, &size, a + 1), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemGetAddressRange_v2(&base, NULL, a + 1), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemGetAddressRange_v2(&base, &size, 0x10), CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(cuMemFree_v2(a), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemGetAddressRange_v2(&base, &size, a), CUDA_ERROR_NOT_FOUND);
}
END_TEST

/* ---- fault injection and latency ------------------------------------------ */

START_TEST(fail_nth)
{
    CUdeviceptr a;
    setenv("SIMCUDA_FAIL", "3:2", 1);
    boot("1G", "0");
    ck_assert_int_eq(cuMemAlloc_v2(&a, 16), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAllocManaged(&a, 16, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAllocAsync(&a, 16, NULL), CUDA_ERROR_OUT_OF_MEMORY);  /* 3rd */
    ck_assert_int_eq(cuMemAlloc_v2(&a, 16), CUDA_SUCCESS);
    ck_assert_uint_eq(stats(0).alloc_calls, 4);
}
END_TEST

START_TEST(fail_from)
{
    CUdeviceptr a;
    void *h;
    setenv("SIMCUDA_FAIL", "2+:CUDA_ERROR_UNKNOWN", 1);
    boot("1G", "0");
    ck_assert_int_eq(cuMemAlloc_v2(&a, 16), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAlloc_v2(&a, 16), CUDA_ERROR_UNKNOWN);
    ck_assert_int_eq(cuMemHostAlloc(&h, 16, 0), CUDA_ERROR_UNKNOWN);
    ck_assert_int_eq(cuMemAllocPitch_v2(&a, &(size_t){ 0 }, 16, 16, 4), CUDA_ERROR_UNKNOWN);
    ck_assert_uint_eq(stats(0).alloc, 16);      /* failed calls allocate nothing */
}
END_TEST

START_TEST(latency)
{
    CUdeviceptr a;
    struct timespec t0, t1;
    setenv("SIMCUDA_LATENCY", "3ms", 1);
    boot("1G", "0");
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_assert_int_eq(cuMemAlloc_v2(&a, 16), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemFree_v2(a), CUDA_SUCCESS);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long long ns = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
    ck_assert_int_ge(ns, 6000000);
}
END_TEST

/* ---- errors and streams ----------------------------------------------------- */

START_TEST(error_strings)
{
    const char *s = NULL;
    ck_assert_int_eq(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
    ck_assert_str_eq(s, "out of memory");
    ck_assert_int_eq(cuGetErrorName(CUDA_SUCCESS, &s), CUDA_SUCCESS);
    ck_assert_str_eq(s, "CUDA_SUCCESS");
    ck_assert_int_eq(cuGetErrorName(CUDA_ERROR_NOT_FOUND, &s), CUDA_SUCCESS);
    ck_assert_str_eq(s, "CUDA_ERROR_NOT_FOUND");
    ck_assert_int_eq(cuGetErrorName(CUDA_ERROR_UNKNOWN, &s), CUDA_SUCCESS);
    ck_assert_str_eq(s, "CUDA_ERROR_UNKNOWN");
    ck_assert_int_eq(cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(cuGetErrorString((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuGetErrorString(CUDA_SUCCESS, NULL), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

START_TEST(streams)
{
    CUstream s, s2;
    boot("1G", "0");
    ck_assert_int_eq(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ck_assert_int_eq(cuStreamCreate(&s2, 2), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuStreamCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_SUCCESS);
    ck_assert_int_eq(cuStreamSynchronize_ptsz(NULL), CUDA_SUCCESS);
    ck_assert_int_eq(cuStreamSynchronize(CU_STREAM_LEGACY), CUDA_SUCCESS);
    CUdevice d = -1;
    ck_assert_int_eq(cuStreamGetDevice(s, &d), CUDA_SUCCESS);
    ck_assert_int_eq(d, 0);
    ck_assert_int_eq(cuStreamGetDevice_ptsz(NULL, &d), CUDA_SUCCESS);
    ck_assert_int_eq(cuStreamGetDevice(s, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuStreamDestroy_v2(s), CUDA_SUCCESS);
    ck_assert_int_eq(cuStreamGetDevice(s, &d), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuCtxPopCurrent_v2(NULL), CUDA_SUCCESS);
    ck_assert_int_eq(cuStreamSynchronize(NULL), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(cuStreamGetDevice(CU_STREAM_LEGACY, &d),
                     CUDA_ERROR_INVALID_CONTEXT);
}
END_TEST

/* A stream belongs to the device of the context it was made in, whatever
 * context is current when it is asked about. */
START_TEST(stream_device)
{
    CUcontext c1;
    CUstream s1;
    CUdevice d = -1;
    setenv("SIMCUDA_DEVICES", "2", 1);
    CUcontext c0 = boot("1G", "0");
    ck_assert_int_eq(cuDevicePrimaryCtxRetain(&c1, 1), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxSetCurrent(c1), CUDA_SUCCESS);
    ck_assert_int_eq(cuStreamCreate(&s1, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxSetCurrent(c0), CUDA_SUCCESS);
    ck_assert_int_eq(cuStreamGetDevice(s1, &d), CUDA_SUCCESS);
    ck_assert_int_eq(d, 1);
    ck_assert_int_eq(cuStreamGetDevice(NULL, &d), CUDA_SUCCESS);
    ck_assert_int_eq(d, 0);
    ck_assert_int_eq(cuCtxSetCurrent(NULL), CUDA_SUCCESS);
    ck_assert_int_eq(cuStreamGetDevice(s1, &d), CUDA_SUCCESS);
    ck_assert_int_eq(d, 1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("simcuda");
    TCase *t = tcase_create("init");
    tcase_add_checked_fixture(t, clean_env, NULL);
    tcase_add_test(t, init_required);
    tcase_add_test(t, config_defaults);
    tcase_add_test(t, config_memory_list);
    tcase_add_test(t, config_devices_repeat_last);
    tcase_add_test(t, config_no_devices);
    tcase_add_loop_test(t, config_bad_value, 0, (int)(sizeof bad_cfg / sizeof bad_cfg[0]));
    tcase_add_test(t, config_too_many_sizes);
    suite_add_tcase(s, t);

    t = tcase_create("device");
    tcase_add_checked_fixture(t, clean_env, NULL);
    tcase_add_test(t, device_queries);
    tcase_add_test(t, device_uuid);
    suite_add_tcase(s, t);

    t = tcase_create("context");
    tcase_add_checked_fixture(t, clean_env, NULL);
    tcase_add_test(t, context_needed);
    tcase_add_test(t, context_memory);
    tcase_add_test(t, context_oom);
    tcase_add_test(t, primary_lifecycle);
    tcase_add_test(t, context_stack);
    tcase_add_test(t, context_destroy_frees);
    suite_add_tcase(s, t);

    t = tcase_create("memory");
    tcase_add_checked_fixture(t, clean_env, NULL);
    tcase_add_test(t, capacity_edge);
    tcase_add_test(t, alloc_errors_and_addresses);
    tcase_add_test(t, pitch_alloc);
    tcase_add_test(t, v1_calls);
    tcase_add_test(t, managed);
    tcase_add_test(t, host_memory);
    tcase_add_test(t, address_range);
    suite_add_tcase(s, t);

    t = tcase_create("faults");
    tcase_add_checked_fixture(t, clean_env, NULL);
    tcase_add_test(t, fail_nth);
    tcase_add_test(t, fail_from);
    tcase_add_test(t, latency);
    tcase_add_test(t, error_strings);
    tcase_add_test(t, streams);
    tcase_add_test(t, stream_device);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_set_fork_status(r, CK_FORK);    /* one process (one cuInit) per test */
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
