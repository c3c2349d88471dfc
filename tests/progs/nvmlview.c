/*
 * tests/progs/nvmlview.c — what a program sees of the device through NVML
 * next to what it sees through CUDA, for the NVML-view tests. NVML is
 * reached by dlopen + dlsym on its handle (--via dlsym, gpa) or, in
 * direct_nvmlview, by plain symbol binding (--via link); CUDA the same
 * way, or through cuGetProcAddress_v2 (--via gpa).
 *
 *   nvmlview [--via P] loop N SIZE   allocate N blocks (every third one
 *            managed), then free them; after each step NVML's memory
 *            figures (v1 and _v2) must equal cuMemGetInfo's; prints the
 *            steps, this process's process-list entries (v1, v2, v3)
 *            and NVML's used, with all blocks held and after the frees
 *   nvmlview [--via P] map           every CUDA device (ordinal, UUID,
 *            cuMemGetInfo total) and every NVML device (index, UUID, total)
 *   nvmlview [--via P] early          NVML's total after a CUDA call made
 *            before cuInit, a primary retain's answer before cuInit, then
 *            CUDA's and NVML's totals once initialised
 *   nvmlview [--via P] info          NVML only: every device's figures and
 *            process count, whether libcuda is loaded, the thread count
 *   nvmlview [--via P] errors        NVML's answers to a NULL output, an
 *            unknown handle, a NULL count and a wrong struct version
 *   nvmlview [--via P] hold SIZE     holds SIZE bytes on device 0 (prints
 *            "holding") until stdin closes
 *   nvmlview [--via P] fit [FILE]    device 0 as CUDA (cuMemGetInfo,
 *            cuDeviceTotalMem) and NVML (v1, _v2, this process's entry)
 *            show it, then whether the free memory shown can be allocated
 *            and whether one MiB more can, and the entry after that; with
 *            FILE, once device 0's context is made it prints "ready" and
 *            waits (at most 10 s) for FILE to exist before it looks
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dirent.h>
#include <stdbool.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim/driver/nvml_api.h"

#ifdef NVMLVIEW_LINK
#include "tools/simnvml/simnvml.h"
#endif

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);
typedef int (*procs_fn)(gm_nvml_dev, unsigned int *, void *);

static struct {
    __typeof__(cuInit) *init;
    __typeof__(cuDeviceGet) *dev;
    __typeof__(cuDeviceGetCount) *count;
    __typeof__(cuDeviceGetUuid_v2) *uuid;
    __typeof__(cuDevicePrimaryCtxRetain) *retain;
    __typeof__(cuCtxSetCurrent) *set;
    __typeof__(cuMemAlloc_v2) *alloc;
    __typeof__(cuMemAllocManaged) *managed;
    __typeof__(cuMemFree_v2) *free;
    __typeof__(cuMemGetInfo_v2) *info;
    __typeof__(cuDeviceTotalMem_v2) *totalmem;
} C;

static struct {
    int (*init)(void);
    int (*count)(unsigned int *);
    int (*by_index)(unsigned int, gm_nvml_dev *);
    int (*by_uuid)(const char *, gm_nvml_dev *);
    int (*uuid)(gm_nvml_dev, char *, unsigned int);
    int (*mem)(gm_nvml_dev, struct gm_nvml_memory *);
    int (*mem2)(gm_nvml_dev, struct gm_nvml_memory_v2 *);
    procs_fn cp1, cp2, cp3, gp3, mp3;
} N;

static const char *via = "dlsym";

static void *need(void *p, const char *name)
{
    if (p == NULL) {
        fprintf(stderr, "nvmlview: %s not found\n", name);
        exit(1);
    }
    return p;
}

static void *nv(void *h, const char *name)
{
    return need(dlsym(h, name), name);
}

static void load_nvml(void)
{
#ifdef NVMLVIEW_LINK
    if (strcmp(via, "link") == 0) {
        /* Plain symbol binding: the calls go through this program's PLT. */
        N.init = nvmlInit_v2;
        N.count = nvmlDeviceGetCount_v2;
        N.by_index = nvmlDeviceGetHandleByIndex_v2;
        N.by_uuid = nvmlDeviceGetHandleByUUID;
        N.uuid = nvmlDeviceGetUUID;
        N.mem = nvmlDeviceGetMemoryInfo;
        N.mem2 = nvmlDeviceGetMemoryInfo_v2;
        N.cp1 = (procs_fn)nvmlDeviceGetComputeRunningProcesses;
        N.cp2 = (procs_fn)nvmlDeviceGetComputeRunningProcesses_v2;
        N.cp3 = (procs_fn)nvmlDeviceGetComputeRunningProcesses_v3;
        N.gp3 = (procs_fn)nvmlDeviceGetGraphicsRunningProcesses_v3;
        N.mp3 = (procs_fn)nvmlDeviceGetMPSComputeRunningProcesses_v3;
        if (N.init() != GM_NVML_SUCCESS) {
            fprintf(stderr, "nvmlview: nvmlInit_v2 failed\n");
            exit(1);
        }
        return;
    }
#endif
    void *h = NULL;
    if (strcmp(via, "link") != 0) {
        h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (h == NULL) {
            fprintf(stderr, "nvmlview: %s\n", dlerror());
            exit(1);
        }
    }
    N.init = nv(h, "nvmlInit_v2");
    N.count = nv(h, "nvmlDeviceGetCount_v2");
    N.by_index = nv(h, "nvmlDeviceGetHandleByIndex_v2");
    N.by_uuid = nv(h, "nvmlDeviceGetHandleByUUID");
    N.uuid = nv(h, "nvmlDeviceGetUUID");
    N.mem = nv(h, "nvmlDeviceGetMemoryInfo");
    N.mem2 = nv(h, "nvmlDeviceGetMemoryInfo_v2");
    N.cp1 = nv(h, "nvmlDeviceGetComputeRunningProcesses");
    N.cp2 = nv(h, "nvmlDeviceGetComputeRunningProcesses_v2");
    N.cp3 = nv(h, "nvmlDeviceGetComputeRunningProcesses_v3");
    N.gp3 = nv(h, "nvmlDeviceGetGraphicsRunningProcesses_v3");
    N.mp3 = nv(h, "nvmlDeviceGetMPSComputeRunningProcesses_v3");
    if (N.init() != GM_NVML_SUCCESS) {
        fprintf(stderr, "nvmlview: nvmlInit_v2 failed\n");
        exit(1);
    }
}

static void *cu(void *h, gpa_fn gpa, const char *name, const char *family)
{
#ifdef NVMLVIEW_LINK
    if (strcmp(via, "link") == 0)
        return need(dlsym(RTLD_DEFAULT, name), name);
#endif
    if (strcmp(via, "gpa") != 0)
        return need(dlsym(h, name), name);
    void *p = NULL;
    gpa(family, &p, 13000, 0, NULL);
    return need(p, family);
}

static void load_cuda_syms(bool init)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL) {
        fprintf(stderr, "nvmlview: %s\n", dlerror());
        exit(1);
    }
    gpa_fn gpa = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
    C.init = cu(h, gpa, "cuInit", "cuInit");
    C.dev = cu(h, gpa, "cuDeviceGet", "cuDeviceGet");
    C.count = cu(h, gpa, "cuDeviceGetCount", "cuDeviceGetCount");
    C.uuid = cu(h, gpa, "cuDeviceGetUuid_v2", "cuDeviceGetUuid");
    C.retain = cu(h, gpa, "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain");
    C.set = cu(h, gpa, "cuCtxSetCurrent", "cuCtxSetCurrent");
    C.alloc = cu(h, gpa, "cuMemAlloc_v2", "cuMemAlloc");
    C.managed = cu(h, gpa, "cuMemAllocManaged", "cuMemAllocManaged");
    C.free = cu(h, gpa, "cuMemFree_v2", "cuMemFree");
    C.info = cu(h, gpa, "cuMemGetInfo_v2", "cuMemGetInfo");
    C.totalmem = cu(h, gpa, "cuDeviceTotalMem_v2", "cuDeviceTotalMem");
    if (init && C.init(0) != CUDA_SUCCESS) {
        fprintf(stderr, "nvmlview: cuInit failed\n");
        exit(1);
    }
}

static void load_cuda(void)
{
    load_cuda_syms(true);
}

static void cuda_uuid(int ord, char *out, size_t cap)
{
    CUuuid u;
    if (C.uuid(&u, ord) != CUDA_SUCCESS) {
        fprintf(stderr, "nvmlview: cuDeviceGetUuid_v2(%d) failed\n", ord);
        exit(1);
    }
    const unsigned char *b = (const unsigned char *)u.bytes;
    snprintf(out, cap,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
             "%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
             b[10], b[11], b[12], b[13], b[14], b[15]);
}

static void use_device(int ord)
{
    CUdevice d;
    CUcontext c;
    if (C.dev(&d, ord) || C.retain(&c, d) || C.set(c)) {
        fprintf(stderr, "nvmlview: no context on device %d\n", ord);
        exit(1);
    }
}

/* NVML (v1 and _v2) against cuMemGetInfo on the current device; 0 when
 * they agree. */
static int compare(gm_nvml_dev h, const char *step)
{
    size_t f = 0, t = 0;
    struct gm_nvml_memory m;
    struct gm_nvml_memory_v2 m2 = { .version = GM_NVML_MEMORY_V2 };
    if (C.info(&f, &t) != CUDA_SUCCESS || N.mem(h, &m) != GM_NVML_SUCCESS ||
        N.mem2(h, &m2) != GM_NVML_SUCCESS) {
        printf("%s: a query failed\n", step);
        return 1;
    }
    int bad = 0;
    if (m.total != t || m.free != f || m.used != m.total - m.free) {
        printf("%s: v1 total=%llu free=%llu used=%llu, cuMemGetInfo total=%zu free=%zu\n",
               step, m.total, m.free, m.used, t, f);
        bad = 1;
    }
    if (m2.total != t || m2.free != f || m2.used != m2.total - m2.free - m2.reserved) {
        printf("%s: v2 total=%llu free=%llu used=%llu reserved=%llu, cuMemGetInfo "
               "total=%zu free=%zu\n", step, m2.total, m2.free, m2.used, m2.reserved, t, f);
        bad = 1;
    }
    return bad;
}

/* This process's usedGpuMemory in a list, or -1 when it is not listed. */
static long long own_entry(procs_fn fn, gm_nvml_dev h, size_t stride)
{
    unsigned char buf[64 * 24];
    unsigned int n = 64;
    if (fn(h, &n, buf) != GM_NVML_SUCCESS)
        return -2;
    for (unsigned int i = 0; i < n; i++) {
        const struct gm_nvml_proc_v1 *p =
            (const struct gm_nvml_proc_v1 *)(buf + (size_t)i * stride);
        if (p->pid == (unsigned int)getpid())
            return (long long)p->usedGpuMemory;
    }
    return -1;
}

/* NVML's used on h (v1), or ~0 when the query fails. */
static unsigned long long nvml_used(gm_nvml_dev h)
{
    struct gm_nvml_memory m;
    return N.mem(h, &m) == GM_NVML_SUCCESS ? m.used : ~0ull;
}

static int cmd_loop(long n, size_t size)
{
    load_cuda();
    load_nvml();
    char uuid[96];
    cuda_uuid(0, uuid, sizeof uuid);
    gm_nvml_dev h;
    if (N.by_uuid(uuid, &h) != GM_NVML_SUCCESS) {
        printf("no NVML device with %s\n", uuid);
        return 1;
    }
    use_device(0);
    int bad = compare(h, "start");
    CUdeviceptr p[256];
    long k = 0, steps = 1;
    char step[64];
    for (; k < n && k < 256; k++) {
        CUresult rc = k % 3 == 2 ? C.managed(&p[k], size, CU_MEM_ATTACH_GLOBAL)
                                 : C.alloc(&p[k], size);
        if (rc != CUDA_SUCCESS)
            break;
        snprintf(step, sizeof step, "alloc %ld", k);
        bad |= compare(h, step);
        steps++;
    }
    printf("allocated %ld\n", k);
    printf("procs v1=%lld v2=%lld v3=%lld\n",
           own_entry(N.cp1, h, sizeof(struct gm_nvml_proc_v1)),
           own_entry(N.cp2, h, sizeof(struct gm_nvml_proc_v2)),
           own_entry(N.cp3, h, sizeof(struct gm_nvml_proc_v2)));
    printf("used %llu\n", nvml_used(h));
    while (k-- > 0) {
        C.free(p[k]);
        snprintf(step, sizeof step, "free %ld", k);
        bad |= compare(h, step);
        steps++;
    }
    printf("procs after frees v3=%lld\n", own_entry(N.cp3, h, sizeof(struct gm_nvml_proc_v2)));
    printf("used after frees %llu\n", nvml_used(h));
    printf("steps %ld %s\n", steps, bad ? "MISMATCH" : "equal");
    return bad;
}

static int cmd_map(void)
{
    load_cuda();
    load_nvml();
    int n = 0;
    C.count(&n);
    for (int i = 0; i < n; i++) {
        char uuid[96];
        size_t f, t;
        cuda_uuid(i, uuid, sizeof uuid);
        use_device(i);
        C.info(&f, &t);
        printf("cuda %d %s total=%zu\n", i, uuid, t);
    }
    unsigned int m = 0;
    N.count(&m);
    for (unsigned int i = 0; i < m; i++) {
        gm_nvml_dev h;
        char uuid[96];
        struct gm_nvml_memory mem;
        if (N.by_index(i, &h) || N.uuid(h, uuid, sizeof uuid) || N.mem(h, &mem))
            return 1;
        printf("nvml %u %s total=%llu\n", i, uuid, mem.total);
    }
    return 0;
}

/* Calls before cuInit: NVML's figures then (after a CUDA call that found
 * the driver not initialised), a primary retain's answer, then CUDA's and
 * NVML's totals once initialised. */
static int cmd_early(void)
{
    load_nvml();
    load_cuda_syms(false);
    gm_nvml_dev h;
    struct gm_nvml_memory m;
    size_t f = 0, t = 0;
    CUcontext c = NULL;
    if (N.by_index(0, &h))
        return 1;
    CUresult r0 = C.info(&f, &t);
    if (N.mem(h, &m))
        return 1;
    printf("before cuInit: info rc %d nvml total=%llu\n", (int)r0, m.total);
    printf("retain before cuInit rc %d\n", (int)C.retain(&c, 0));
    if (C.init(0) != CUDA_SUCCESS)
        return 1;
    use_device(0);
    C.info(&f, &t);
    if (N.mem(h, &m))
        return 1;
    printf("after cuInit: cuda total=%zu nvml total=%llu\n", t, m.total);
    return 0;
}

static int threads(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    if (d != NULL)
        closedir(d);
    return n;
}

static int cmd_info(void)
{
    load_nvml();
    unsigned int m = 0;
    N.count(&m);
    for (unsigned int i = 0; i < m; i++) {
        gm_nvml_dev h;
        char uuid[96];
        struct gm_nvml_memory mem;
        struct gm_nvml_memory_v2 m2 = { .version = GM_NVML_MEMORY_V2 };
        unsigned int np = 0;
        if (N.by_index(i, &h) || N.uuid(h, uuid, sizeof uuid) || N.mem(h, &mem) ||
            N.mem2(h, &m2))
            return 1;
        int rc = N.cp3(h, &np, NULL);
        printf("nvml %u %s total=%llu free=%llu used=%llu v2 total=%llu free=%llu "
               "used=%llu reserved=%llu procs=%u (%d)\n", i, uuid, mem.total, mem.free,
               mem.used, m2.total, m2.free, m2.used, m2.reserved, np, rc);
    }
    printf("libcuda %s\n", dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD) ? "loaded" : "not loaded");
    printf("threads %d\n", threads());
    return 0;
}

/* Holds SIZE bytes on device 0 until stdin closes. */
static int cmd_hold(size_t size)
{
    load_cuda();
    use_device(0);
    CUdeviceptr p;
    if (C.alloc(&p, size) != CUDA_SUCCESS)
        return 1;
    printf("holding\n");
    char c;
    while (read(0, &c, 1) > 0)
        ;
    return 0;
}

/* Waits up to 10 s for `path` to exist. */
static void wait_file(const char *path)
{
    for (int i = 0; i < 1000 && access(path, F_OK) != 0; i++)
        usleep(10000);
}

/* Device 0's figures, then the free memory shown allocated and one MiB
 * more (the CUDA codes), then this process's entry again; with `after`,
 * "ready" once the context is made, and a wait for that file. */
static int cmd_fit(const char *after)
{
    load_cuda();
    load_nvml();
    char uuid[96];
    cuda_uuid(0, uuid, sizeof uuid);
    gm_nvml_dev h;
    if (N.by_uuid(uuid, &h) != GM_NVML_SUCCESS)
        return 1;
    use_device(0);
    if (after != NULL) {
        printf("ready\n");
        fflush(stdout);
        wait_file(after);
    }
    size_t f = 0, t = 0, dt = 0;
    struct gm_nvml_memory m;
    struct gm_nvml_memory_v2 m2 = { .version = GM_NVML_MEMORY_V2 };
    if (C.info(&f, &t) != CUDA_SUCCESS || C.totalmem(&dt, 0) != CUDA_SUCCESS ||
        N.mem(h, &m) != GM_NVML_SUCCESS || N.mem2(h, &m2) != GM_NVML_SUCCESS)
        return 1;
    printf("cuda total=%zu free=%zu devtotal=%zu\n", t, f, dt);
    printf("nvml total=%llu free=%llu used=%llu\n", m.total, m.free, m.used);
    printf("nvml2 total=%llu free=%llu used=%llu reserved=%llu\n", m2.total,
           m2.free, m2.used, m2.reserved);
    size_t stride = sizeof(struct gm_nvml_proc_v2);
    printf("own %lld\n", own_entry(N.cp3, h, stride));
    CUdeviceptr p = 0, q = 0;
    CUresult r1 = C.alloc(&p, f);
    CUresult r2 = C.alloc(&q, 1u << 20);
    printf("fit %d more %d\n", (int)r1, (int)r2);
    printf("own after %lld\n", own_entry(N.cp3, h, stride));
    return 0;
}

static int cmd_errors(void)
{
    load_cuda();
    load_nvml();
    use_device(0);
    char uuid[96];
    cuda_uuid(0, uuid, sizeof uuid);
    gm_nvml_dev h;
    if (N.by_uuid(uuid, &h) != GM_NVML_SUCCESS)
        return 1;
    static int not_a_device;
    gm_nvml_dev bogus = (gm_nvml_dev)(void *)&not_a_device;
    struct gm_nvml_memory m;
    struct gm_nvml_memory_v2 m2 = { .version = 0 };
    struct gm_nvml_proc_v2 procs[8];
    unsigned int n = 8;
    printf("mem NULL=%d\n", N.mem(h, NULL));
    printf("mem2 NULL=%d\n", N.mem2(h, NULL));
    printf("mem bogus=%d\n", N.mem(bogus, &m));
    printf("mem2 bogus=%d\n", N.mem2(bogus, &m2));
    printf("mem2 version0=%d\n", N.mem2(h, &m2));
    printf("procs NULL count=%d\n", N.cp3(h, NULL, procs));
    printf("procs bogus=%d\n", N.cp3(bogus, &n, procs));
    n = 0;
    int rc = N.cp3(h, &n, NULL);
    printf("procs count0=%d n=%u\n", rc, n);
    n = 8;
    rc = N.gp3(h, &n, procs);
    printf("graphics=%d n=%u\n", rc, n);
    n = 8;
    rc = N.mp3(h, &n, procs);
    printf("mps=%d n=%u\n", rc, n);
    return 0;
}

int main(int argc, char **argv)
{
    int i = 1;
    if (i + 1 < argc && strcmp(argv[i], "--via") == 0) {
        via = argv[i + 1];
        i += 2;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    if (i < argc && strcmp(argv[i], "loop") == 0 && i + 2 < argc)
        return cmd_loop(atol(argv[i + 1]), strtoull(argv[i + 2], NULL, 0));
    if (i < argc && strcmp(argv[i], "early") == 0)
        return cmd_early();
    if (i < argc && strcmp(argv[i], "map") == 0)
        return cmd_map();
    if (i < argc && strcmp(argv[i], "info") == 0)
        return cmd_info();
    if (i < argc && strcmp(argv[i], "errors") == 0)
        return cmd_errors();
    if (i < argc && strcmp(argv[i], "fit") == 0)
        return cmd_fit(i + 1 < argc ? argv[i + 1] : NULL);
    if (i < argc && strcmp(argv[i], "hold") == 0 && i + 1 < argc)
        return cmd_hold(strtoull(argv[i + 1], NULL, 0));
    fprintf(stderr, "usage: nvmlview [--via link|dlsym|gpa] loop N SIZE | map | info | errors | hold SIZE | fit [FILE]\n");
    return 2;
}
