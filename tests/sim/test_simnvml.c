/*
 * tests/sim/test_simnvml.c — the simulated NVML against the simulated
 * driver: the same devices and UUIDs (NVML in physical order whatever
 * CUDA_VISIBLE_DEVICES says), memory used summed over every simulated
 * process (this one and a forked child), the compute-process list, a
 * dead process's board dropped, and NVML's answers to misuse.
 */
#include <check.h>
#include <cuda.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim/driver/nvml_api.h"
#include "sim_boot.h"

typedef int (*procs_fn)(gm_nvml_dev, unsigned int *, void *);

static struct {
    int (*init)(void);
    int (*shutdown)(void);
    int (*count)(unsigned int *);
    int (*by_index)(unsigned int, gm_nvml_dev *);
    int (*by_uuid)(const char *, gm_nvml_dev *);
    int (*uuid)(gm_nvml_dev, char *, unsigned int);
    int (*mem)(gm_nvml_dev, struct gm_nvml_memory *);
    int (*mem2)(gm_nvml_dev, struct gm_nvml_memory_v2 *);
    procs_fn cp1, cp3, gp3;
} N;

#define MIB (1ull << 20)

/* The simulated NVML beside the simulated driver this suite links
 * (BUILD/sim), by path: under a sanitizer the dlopen caller is the
 * sanitizer's runtime, whose search path is not ours. */
static void load(void)
{
    char exe[4096], path[4200];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ck_assert_int_gt(n, 0);
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    ck_assert_ptr_nonnull(slash);
    *slash = '\0';
    snprintf(path, sizeof path, "%s/../../sim/libnvidia-ml.so.1", exe);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "%s", dlerror());
#define SYM(f, n) ck_assert_ptr_nonnull(*(void **)&N.f = dlsym(h, n))
    SYM(init, "nvmlInit_v2");
    SYM(shutdown, "nvmlShutdown");
    SYM(count, "nvmlDeviceGetCount_v2");
    SYM(by_index, "nvmlDeviceGetHandleByIndex_v2");
    SYM(by_uuid, "nvmlDeviceGetHandleByUUID");
    SYM(uuid, "nvmlDeviceGetUUID");
    SYM(mem, "nvmlDeviceGetMemoryInfo");
    SYM(mem2, "nvmlDeviceGetMemoryInfo_v2");
    SYM(cp1, "nvmlDeviceGetComputeRunningProcesses");
    SYM(cp3, "nvmlDeviceGetComputeRunningProcesses_v3");
    SYM(gp3, "nvmlDeviceGetGraphicsRunningProcesses_v3");
#undef SYM
}

static void cuda_uuid(int ord, char *out, size_t cap)
{
    CUuuid u;
    ck_assert_int_eq(cuDeviceGetUuid_v2(&u, ord), CUDA_SUCCESS);
    const unsigned char *b = (const unsigned char *)u.bytes;
    snprintf(out, cap,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
             "%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
             b[10], b[11], b[12], b[13], b[14], b[15]);
}

static gm_nvml_dev dev_of(int ord)
{
    char u[96];
    gm_nvml_dev h = NULL;
    cuda_uuid(ord, u, sizeof u);
    ck_assert_int_eq(N.by_uuid(u, &h), GM_NVML_SUCCESS);
    return h;
}

static uint64_t used_of(gm_nvml_dev h)
{
    struct gm_nvml_memory m;
    ck_assert_int_eq(N.mem(h, &m), GM_NVML_SUCCESS);
    ck_assert_uint_eq(m.total, m.free + m.used);
    return m.used;
}

/* usedGpuMemory of `pid` in the v3 list, or -1 when it is not listed. */
static long long entry_of(gm_nvml_dev h, int pid)
{
    struct gm_nvml_proc_v2 p[64];
    unsigned int n = 64;
    ck_assert_int_eq(N.cp3(h, &n, p), GM_NVML_SUCCESS);
    for (unsigned int i = 0; i < n; i++)
        if (p[i].pid == (unsigned int)pid)
            return (long long)p[i].usedGpuMemory;
    return -1;
}

START_TEST(same_devices_and_uuids_physical_order)
{
    gm_simt_env("1G,2G,4G");
    setenv("CUDA_VISIBLE_DEVICES", "2,0", 1);
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    load();
    ck_assert_int_eq(N.init(), GM_NVML_SUCCESS);
    int nc = 0;
    unsigned int nn = 0;
    ck_assert_int_eq(cuDeviceGetCount(&nc), CUDA_SUCCESS);
    ck_assert_int_eq(N.count(&nn), GM_NVML_SUCCESS);
    ck_assert_int_eq(nc, 2);
    ck_assert_uint_eq(nn, 3);
    /* CUDA 0 is physical 2 (4 GiB), CUDA 1 physical 0 (1 GiB). */
    static const unsigned phys[] = { 2, 0 };
    for (int ord = 0; ord < 2; ord++) {
        char cu[96], nv[96];
        gm_nvml_dev h;
        size_t total;
        struct gm_nvml_memory m;
        cuda_uuid(ord, cu, sizeof cu);
        ck_assert_int_eq(N.by_index(phys[ord], &h), GM_NVML_SUCCESS);
        ck_assert_int_eq(N.uuid(h, nv, sizeof nv), GM_NVML_SUCCESS);
        ck_assert_str_eq(cu, nv);
        ck_assert_int_eq(cuDeviceTotalMem_v2(&total, ord), CUDA_SUCCESS);
        ck_assert_int_eq(N.mem(h, &m), GM_NVML_SUCCESS);
        ck_assert_uint_eq(m.total, total);
    }
    unsetenv("CUDA_VISIBLE_DEVICES");
}
END_TEST

START_TEST(used_counts_contexts_and_allocations)
{
    gm_simt_env("8G");
    setenv("SIMCUDA_CONTEXT", "100M", 1);
    load();
    ck_assert_int_eq(N.init(), GM_NVML_SUCCESS);
    gm_simt_boot();
    gm_nvml_dev h = dev_of(0);
    ck_assert_uint_eq(used_of(h), 100 * MIB);
    CUdeviceptr p, m;
    ck_assert_int_eq(cuMemAlloc_v2(&p, 300 * MIB), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAllocManaged(&m, 50 * MIB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    ck_assert_uint_eq(used_of(h), 400 * MIB);   /* managed takes no device memory */
    ck_assert_int_eq(entry_of(h, getpid()), (long long)(400 * MIB));
    struct gm_nvml_memory_v2 m2 = { .version = GM_NVML_MEMORY_V2 };
    ck_assert_int_eq(N.mem2(h, &m2), GM_NVML_SUCCESS);
    ck_assert_uint_eq(m2.used, 400 * MIB);
    ck_assert_uint_eq(m2.reserved, 0);
    ck_assert_uint_eq(m2.free, (8ull << 30) - 400 * MIB);
    ck_assert_int_eq(cuMemFree_v2(p), CUDA_SUCCESS);
    ck_assert_uint_eq(used_of(h), 100 * MIB);
}
END_TEST

/* A forked child is another simulated process: its memory is in NVML's
 * used and in this process's cuMemGetInfo free, it is listed while it
 * lives, and it is gone once it exits. */
START_TEST(other_processes_are_visible)
{
    gm_simt_env("8G");
    setenv("SIMCUDA_CONTEXT", "100M", 1);
    load();
    ck_assert_int_eq(N.init(), GM_NVML_SUCCESS);
    gm_simt_boot();
    gm_nvml_dev h = dev_of(0);
    int go[2], ready[2];
    ck_assert_int_eq(pipe(go), 0);
    ck_assert_int_eq(pipe(ready), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        CUdeviceptr p;
        char c = 'x';
        if (cuMemAlloc_v2(&p, 1ull << 30) != CUDA_SUCCESS)
            _exit(3);
        if (write(ready[1], &c, 1) != 1)
            _exit(4);
        if (read(go[0], &c, 1) < 0)
            _exit(5);
        exit(0); /* exit, not _exit: the board goes at exit */
    }
    char c;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    /* The child inherited the 100 MiB context and took 1 GiB. */
    ck_assert_uint_eq(used_of(h), 100 * MIB + 100 * MIB + (1ull << 30));
    ck_assert_int_eq(entry_of(h, child), (long long)(100 * MIB + (1ull << 30)));
    ck_assert_int_eq(entry_of(h, getpid()), (long long)(100 * MIB));
    size_t f, t;
    ck_assert_int_eq(cuMemGetInfo_v2(&f, &t), CUDA_SUCCESS);
    ck_assert_uint_eq(f, (8ull << 30) - 200 * MIB - (1ull << 30));
    ck_assert_int_eq(write(go[1], "g", 1), 1);
    int st;
    ck_assert_int_eq(waitpid(child, &st, 0), child);
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    ck_assert_int_eq(entry_of(h, child), -1);
    ck_assert_uint_eq(used_of(h), 100 * MIB);
}
END_TEST

/* A process killed without running its exit handlers leaves its board;
 * readers skip it (and remove it). */
START_TEST(dead_process_not_counted)
{
    gm_simt_env("8G");
    load();
    ck_assert_int_eq(N.init(), GM_NVML_SUCCESS);
    gm_simt_boot();
    gm_nvml_dev h = dev_of(0);
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        CUdeviceptr p;
        if (cuMemAlloc_v2(&p, 1ull << 30) != CUDA_SUCCESS || write(ready[1], "r", 1) != 1)
            _exit(3);
        pause();
        _exit(0);
    }
    char c;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    ck_assert_uint_eq(used_of(h), 1ull << 30);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    ck_assert_uint_eq(used_of(h), 0);
    ck_assert_int_eq(entry_of(h, child), -1);
    char path[128];
    snprintf(path, sizeof path, "/dev/shm/%s.%d",
             getenv("SIMCUDA_SHM") ? getenv("SIMCUDA_SHM") : "simcuda", (int)child);
    ck_assert_int_ne(access(path, F_OK), 0);
}
END_TEST

/* Files under the board prefix that are not boards — garbage of a live
 * pid, a symlink, a name that is no pid — are ignored and left alone. */
START_TEST(foreign_files_ignored)
{
    gm_simt_env("8G");
    load();
    ck_assert_int_eq(N.init(), GM_NVML_SUCCESS);
    gm_simt_boot();
    gm_nvml_dev h = dev_of(0);
    const char *prefix = getenv("SIMCUDA_SHM") ? getenv("SIMCUDA_SHM") : "simcuda";
    char junk[128], link[128], word[128];
    snprintf(junk, sizeof junk, "/dev/shm/%s.%d", prefix, (int)getppid());
    snprintf(link, sizeof link, "/dev/shm/%s.1", prefix);
    snprintf(word, sizeof word, "/dev/shm/%s.x1", prefix);
    FILE *f = fopen(junk, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 300; i++)
        fputc(0xff, f);
    fclose(f);
    unlink(link);
    ck_assert_int_eq(symlink(junk, link), 0);
    f = fopen(word, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    CUdeviceptr p;
    ck_assert_int_eq(cuMemAlloc_v2(&p, 64 * MIB), CUDA_SUCCESS);
    ck_assert_uint_eq(used_of(h), 64 * MIB);
    ck_assert_int_eq(entry_of(h, getppid()), -1);
    ck_assert_int_eq(entry_of(h, 1), -1);
    size_t fr, t;
    ck_assert_int_eq(cuMemGetInfo_v2(&fr, &t), CUDA_SUCCESS);
    ck_assert_uint_eq(fr, (8ull << 30) - 64 * MIB);
    ck_assert_int_eq(access(junk, F_OK), 0);
    unlink(junk);
    unlink(link);
    unlink(word);
}
END_TEST

START_TEST(misuse_gets_nvmls_codes)
{
    gm_simt_env("8G");
    load();
    struct gm_nvml_memory m;
    unsigned int n = 0;
    gm_nvml_dev h = NULL;
    ck_assert_int_eq(N.count(&n), GM_NVML_ERROR_UNINITIALIZED);
    ck_assert_int_eq(N.shutdown(), GM_NVML_ERROR_UNINITIALIZED);
    ck_assert_int_eq(N.init(), GM_NVML_SUCCESS);
    ck_assert_int_eq(N.by_index(0, &h), GM_NVML_SUCCESS);
    ck_assert_int_eq(N.by_index(1, &h), GM_NVML_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(N.by_index(0, NULL), GM_NVML_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(N.by_uuid("GPU-00000000-0000-0000-0000-000000000000", &h),
                     GM_NVML_ERROR_NOT_FOUND);
    ck_assert_int_eq(N.by_index(0, &h), GM_NVML_SUCCESS);
    ck_assert_int_eq(N.mem(h, NULL), GM_NVML_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(N.mem((gm_nvml_dev)(void *)&m, &m), GM_NVML_ERROR_INVALID_ARGUMENT);
    struct gm_nvml_memory_v2 m2 = { .version = 1 };
    ck_assert_int_eq(N.mem2(h, &m2), GM_NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    char small[8];
    ck_assert_int_eq(N.uuid(h, small, sizeof small), GM_NVML_ERROR_INSUFFICIENT_SIZE);
    /* One process (this one) with a context: a 0-entry buffer is too small
     * and says how many are needed. */
    gm_simt_boot();
    n = 0;
    ck_assert_int_eq(N.cp3(h, &n, NULL), GM_NVML_ERROR_INSUFFICIENT_SIZE);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(N.cp3(h, NULL, NULL), GM_NVML_ERROR_INVALID_ARGUMENT);
    struct gm_nvml_proc_v1 p1[4];
    n = 4;
    ck_assert_int_eq(N.cp1(h, &n, p1), GM_NVML_SUCCESS);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(p1[0].pid, (unsigned int)getpid());
    n = 4;
    ck_assert_int_eq(N.gp3(h, &n, NULL), GM_NVML_SUCCESS);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(N.shutdown(), GM_NVML_SUCCESS);
    ck_assert_int_eq(N.mem(h, &m), GM_NVML_ERROR_UNINITIALIZED);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("simnvml");
    TCase *t = tcase_create("nvml");
    tcase_add_test(t, same_devices_and_uuids_physical_order);
    tcase_add_test(t, used_counts_contexts_and_allocations);
    tcase_add_test(t, other_processes_are_visible);
    tcase_add_test(t, dead_process_not_counted);
    tcase_add_test(t, foreign_files_ignored);
    tcase_add_test(t, misuse_gets_nvmls_codes);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_set_fork_status(r, CK_FORK);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
