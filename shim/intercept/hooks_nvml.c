/*
 * shim/intercept/hooks_nvml.c — the NVML view: nvmlDeviceGetMemoryInfo
 * (v1, _v2) and the running-process queries (compute, graphics, MPS; v1,
 * _v2, _v3) show a limited process what its CUDA queries show.
 *
 * Reached as exported symbols (the real function is then glibc's
 * dlsym(RTLD_NEXT, name)) and through the dlsym override on a handle of
 * libnvidia-ml (resolve.c hands us what glibc found). The real function
 * is always called first with the caller's arguments, so NULL outputs,
 * unknown handles and wrong struct versions get NVML's own answers;
 * figures are changed only on success. With a limit on the device, or a
 * group limit there: total and free are what cuMemGetInfo reports
 * (gm_view_info: in a group no more than the group's limit and room),
 * used = total - free (never negative, never wrapping), _v2's
 * reserved = 0; the process's own entry in a process list shows what
 * gpumem charges the process itself (in static mode less the arena's
 * free room, which free counts: gm_view_own). The NVML device is matched
 * to a CUDA device by UUID. In a process whose CUDA is not initialised
 * (nvidia-smi, a monitoring agent, a program before its first CUDA call)
 * the view comes from the policy (the node's admin file and the
 * environment, read as the CUDA path reads them) and the job's segments:
 * nothing is initialised, no driver loaded, no segment or thread
 * created; the CUDA ordinal comes from CUDA_VISIBLE_DEVICES, nothing is
 * charged, and used is what the job's live processes are charged on the
 * card (shim/telemetry/jobuse.h, read at each query). Without a limit, with
 * GPUMEM_NVML_VIEW=0, inside our own calls (the nesting guard) or when
 * the shim is disabled, everything passes through.
 */
#include "shim/intercept/lifecycle.h"
#include "shim/intercept/hooks_info.h"
#include "shim/intercept/hooks_nvml.h"
#include "shim/telemetry/jobuse.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/policy.h"
#include "policy/visible.h"
#include "shim/account/device.h"
#include "shim/account/state.h"
#include "shim/base/safefile.h"
#include "shim/driver/nvml.h"
#include "shim/driver/nvml_api.h"
#include "shim/group/group.h"

extern char **environ;

#define NV_EXPORT GM_EXPORT

NV_EXPORT int nvmlDeviceGetMemoryInfo(gm_nvml_dev dev, struct gm_nvml_memory *mem);
NV_EXPORT int nvmlDeviceGetMemoryInfo_v2(gm_nvml_dev dev, struct gm_nvml_memory_v2 *mem);
#define NV_PROC_DECL(name, rec) \
    NV_EXPORT int name(gm_nvml_dev dev, unsigned int *count, struct rec *infos);
#define NV_PROCS(X)                                                       \
    X(nvmlDeviceGetComputeRunningProcesses, gm_nvml_proc_v1)              \
    X(nvmlDeviceGetComputeRunningProcesses_v2, gm_nvml_proc_v2)           \
    X(nvmlDeviceGetComputeRunningProcesses_v3, gm_nvml_proc_v2)           \
    X(nvmlDeviceGetGraphicsRunningProcesses, gm_nvml_proc_v1)             \
    X(nvmlDeviceGetGraphicsRunningProcesses_v2, gm_nvml_proc_v2)          \
    X(nvmlDeviceGetGraphicsRunningProcesses_v3, gm_nvml_proc_v2)          \
    X(nvmlDeviceGetMPSComputeRunningProcesses, gm_nvml_proc_v1)           \
    X(nvmlDeviceGetMPSComputeRunningProcesses_v2, gm_nvml_proc_v2)        \
    X(nvmlDeviceGetMPSComputeRunningProcesses_v3, gm_nvml_proc_v2)
NV_PROCS(NV_PROC_DECL)

/* ---- the wrapped names and their real functions ------------------------ */

enum nv_hook {
    NV_MEM, NV_MEM2,
#define NV_PROC_ENUM(name, rec) NV_##name,
    NV_PROCS(NV_PROC_ENUM)
#undef NV_PROC_ENUM
    NV_COUNT
};

static const struct {
    const char *name;
    void *wrapper;
} nv_hooks[NV_COUNT] = {
    [NV_MEM] = { "nvmlDeviceGetMemoryInfo", (void *)&nvmlDeviceGetMemoryInfo },
    [NV_MEM2] = { "nvmlDeviceGetMemoryInfo_v2", (void *)&nvmlDeviceGetMemoryInfo_v2 },
#define NV_PROC_ROW(name, rec) [NV_##name] = { #name, (void *)&name },
    NV_PROCS(NV_PROC_ROW)
#undef NV_PROC_ROW
};

/* Real functions: set once (compare-and-swap from NULL) by the dlsym
 * override or by the first call through an exported symbol. */
static void *nv_real[NV_COUNT];

void *gm_nvml_wrapper_for(const char *name, void *real)
{
    if (real == NULL || strncmp(name, "nvmlDevice", 10) != 0)
        return real;
    for (int i = 0; i < NV_COUNT; i++) {
        if (strcmp(nv_hooks[i].name, name) != 0)
            continue;
        if (real == nv_hooks[i].wrapper)
            return real; /* glibc found ours (the library is the preload) */
        void *expected = NULL;
        __atomic_compare_exchange_n(&nv_real[i], &expected, real, 0,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
        if (__atomic_load_n(&nv_real[i], __ATOMIC_RELAXED) != real)
            return real; /* another NVML than the one we call: leave it */
        return nv_hooks[i].wrapper;
    }
    return real;
}

static void *real_of(enum nv_hook i)
{
    void *f = __atomic_load_n(&nv_real[i], __ATOMIC_RELAXED);
    if (f != NULL)
        return f;
    f = gm_real_dlsym_get()(RTLD_NEXT, nv_hooks[i].name);
    if (f == NULL || f == nv_hooks[i].wrapper)
        return NULL;
    void *expected = NULL;
    __atomic_compare_exchange_n(&nv_real[i], &expected, f, 0,
                                __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return __atomic_load_n(&nv_real[i], __ATOMIC_RELAXED);
}

/* ---- NVML functions the view itself needs, from the same library ------- */

typedef int (*uuid_fn)(gm_nvml_dev, char *, unsigned int);
typedef int (*count_fn)(unsigned int *);
typedef int (*index_fn)(unsigned int, gm_nvml_dev *);

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static void *lib_handle;        /* the library of the first real function seen */
static uuid_fn lib_uuid;
static count_fn lib_count;
static index_fn lib_index;

/* Looks the helpers up in the library that holds `real` (dladdr), so they
 * come from the very NVML the program called. */
static bool lib_ready(void *real)
{
    pthread_mutex_lock(&lib_lock);
    if (lib_handle == NULL) {
        Dl_info info;
        if (dladdr(real, &info) != 0 && info.dli_fname != NULL)
            lib_handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        if (lib_handle != NULL) {
            gm_dlsym_fn ds = gm_real_dlsym_get();
            lib_uuid = (uuid_fn)ds(lib_handle, "nvmlDeviceGetUUID");
            lib_count = (count_fn)ds(lib_handle, "nvmlDeviceGetCount_v2");
            lib_index = (index_fn)ds(lib_handle, "nvmlDeviceGetHandleByIndex_v2");
        }
    }
    bool ok = lib_uuid != NULL;
    pthread_mutex_unlock(&lib_lock);
    return ok;
}

/* ---- the view ------------------------------------------------------------ */

struct nv_view {
    uint64_t total, free;
    uint64_t charged;       /* this process's own entry (gm_view_own) */
};

/* CUDA ordinal of the device with this UUID, through the real driver;
 * -1 when CUDA does not see it, -2 when the driver is not initialised
 * yet (the shim started before the program's cuInit). */
static int cuda_ordinal(const char *uuid)
{
    for (int ord = 0; ord < GM_MAX_DEVICES; ord++) {
        char u[64];
        gm_depth++;
        int got = gm_nvml_cuda_uuid(ord, u, sizeof u);
        gm_depth--;
        if (got == -3)
            return -2;
        if (got == -2)
            return -1; /* past the last device */
        if (got == 0 && strcmp(u, uuid) == 0)
            return ord;
    }
    return -1;
}

/* The shim is initialised here: the same view as cuMemGetInfo on that
 * device. *uninit: the driver is not initialised yet (no view here). */
static bool view_cuda(const char *uuid, uint64_t total, uint64_t free,
                      struct nv_view *v, bool *uninit)
{
    *uninit = false;
    if (!gm_st.policy.nvml_view)
        return false;
    int ord = cuda_ordinal(uuid);
    *uninit = ord == -2;
    if (ord < 0)
        return false;
    uint64_t f = free, t = total;
    if (!gm_view_info(ord, &f, &t))
        return false;
    v->total = t;
    v->free = f;
    v->charged = gm_view_own(ord);
    return true;
}

/* A process without CUDA: its own copy of the policy, read once, as the
 * CUDA path reads it (the node's admin file, then the environment), so
 * that both hold the same ceilings. It is used where the CUDA path would
 * run: a valid load, or a bad variable under GPUMEM_ON_BAD_CONFIG=warn
 * (the rest holds); an admin file that cannot be applied or a bad load
 * under exit (the CUDA path exits) passes through. */
static pthread_once_t solo_once = PTHREAD_ONCE_INIT;
static struct gm_policy solo_policy;
static struct gm_admin_file solo_admin;
static struct gm_diag solo_diag;
static bool solo_valid;

static void solo_load(void)
{
    int bad = gm_policy_load_node_secure(&solo_policy, environ, &solo_admin,
                                         gm_secure_exec(), &solo_diag);
    if (bad || solo_policy.log_level > GM_LOG_QUIET)
        (void)gm_write_all(STDERR_FILENO, solo_diag.text, solo_diag.len);
    gm_secure_note(&solo_policy);
    solo_valid = bad == 0 || (!solo_policy.admin_fatal &&
                              solo_policy.on_bad_config == GM_BAD_WARN);
}

/* The CUDA ordinal this process would give NVML device `h`: its place in
 * CUDA_VISIBLE_DEVICES (indices as NVML's, or UUID prefixes); -1 when
 * hidden. */
static int solo_ordinal(gm_nvml_dev h)
{
    unsigned int n = 0;
    if (lib_count == NULL || lib_index == NULL || lib_count(&n) != GM_NVML_SUCCESS)
        return -1;
    if (n > GM_MAX_DEVICES)
        n = GM_MAX_DEVICES;
    char uuid[GM_MAX_DEVICES][GM_NVML_UUID_BUFFER];
    const char *uuids[GM_MAX_DEVICES];
    int self = -1, phys[GM_MAX_DEVICES];
    for (unsigned int i = 0; i < n; i++) {
        gm_nvml_dev x = NULL;
        uuid[i][0] = '\0';
        if (lib_index(i, &x) == GM_NVML_SUCCESS) {
            if (x == h)
                self = (int)i;
            if (lib_uuid(x, uuid[i], sizeof uuid[i]) != GM_NVML_SUCCESS)
                uuid[i][0] = '\0';
        }
        uuids[i] = uuid[i];
    }
    int k = gm_visible_map(getenv("CUDA_VISIBLE_DEVICES"), uuids, (int)n, phys);
    for (int ord = 0; ord < k; ord++)
        if (phys[ord] == self)
            return ord;
    return -1;
}

/* What the job's live processes are charged on the card of this UUID
 * (shim/telemetry/jobuse.h): their segments in this process's segment
 * directory, of its user and, under Slurm, of its job. */
static uint64_t job_charge(const unsigned char uuid[16])
{
    return gm_job_used(solo_policy.shm_dir, solo_policy.shm_prefix, getuid(),
                       getenv("SLURM_JOB_ID"), uuid, NULL);
}

/* The group's ceiling on the card of `uuid` (NULL: not known) of `total`
 * bytes, for a process of GPUMEM_GROUP that does not join it (it only
 * watches: joining would take a share of the group): the limit its
 * segment holds for the card, or where the card is not registered there
 * yet (no segment, or a file a member would refuse) this process's own
 * GPUMEM_GROUP_LIMIT resolved against the card, as a first member would
 * register it. *used: the group's charge there (0 without one). Returns
 * the ceiling, 0 for none. */
static uint64_t solo_group(const unsigned char *uuid, uint64_t total,
                           uint64_t *used)
{
    char err[256];
    uint64_t limit = 0;
    *used = 0;
    if (solo_policy.group[0] == '\0')
        return 0;
    if (uuid != NULL &&
        gm_group_card(solo_policy.shm_dir, solo_policy.shm_prefix,
                      solo_policy.group, uuid, &limit, used, err,
                      sizeof err) == 1)
        return limit;
    return gm_limit_resolve(&solo_policy.group_limit, total);
}

static uint64_t min_limit(uint64_t a, uint64_t b)
{
    return a == 0 ? b : b == 0 ? a : a < b ? a : b;
}

static bool view_solo(gm_nvml_dev h, uint64_t total, uint64_t free,
                      struct nv_view *v)
{
    pthread_once(&solo_once, solo_load);
    if (!solo_valid || !solo_policy.nvml_view)
        return false;
    bool own = gm_policy_has_limit(&solo_policy);
    if (!own && solo_policy.group[0] == '\0')
        return false;
    int ord = solo_ordinal(h);
    if (ord < 0)
        return false;
    uint64_t limit =
        own ? gm_policy_limit_for(&solo_policy, (unsigned)ord, total) : 0;
    /* The card's UUID, read once: the job's and the group's charges are
     * both keyed by it. */
    char text[GM_NVML_UUID_BUFFER];
    unsigned char uuid[16];
    bool known = lib_uuid(h, text, sizeof text) == GM_NVML_SUCCESS &&
                 gm_uuid_parse(text, uuid);
    uint64_t group_used = 0;
    limit = min_limit(limit, solo_group(known ? uuid : NULL, total,
                                        &group_used));
    if (limit == 0)
        return false;
    v->total = limit < total ? limit : total;
    /* Used is what the job's processes are charged on this card (their
     * segments), or the group's charge there where that is more, so the
     * room left is what the job can still take. */
    uint64_t job = known ? job_charge(uuid) : 0;
    if (group_used > job)
        job = group_used;
    uint64_t room = v->total > job ? v->total - job : 0;
    v->free = free < room ? free : room;
    v->charged = 0;
    return true;
}

/* The view of NVML device `h` whose real figures are (total, free);
 * false: pass through. */
static bool nv_view(void *real, gm_nvml_dev h, uint64_t total, uint64_t free,
                    struct nv_view *v)
{
    if (gm_depth > 0 || !lib_ready(real))
        return false;
    int s = atomic_load_explicit(&gm_init_state, memory_order_acquire);
    if (s == 3)
        return false;
    if (s < 2)
        return view_solo(h, total, free, v);
    char uuid[GM_NVML_UUID_BUFFER];
    if (lib_uuid(h, uuid, sizeof uuid) != GM_NVML_SUCCESS)
        return false;
    bool uninit;
    if (view_cuda(uuid, total, free, v, &uninit))
        return true;
    /* Before the program's cuInit the process has no CUDA device yet:
     * the view of a process without CUDA (the job's charge). */
    return uninit && view_solo(h, total, free, v);
}

/* ---- memory -------------------------------------------------------------- */

typedef int (*mem_fn)(gm_nvml_dev, struct gm_nvml_memory *);
typedef int (*mem2_fn)(gm_nvml_dev, struct gm_nvml_memory_v2 *);

NV_EXPORT int nvmlDeviceGetMemoryInfo(gm_nvml_dev dev, struct gm_nvml_memory *mem)
{
    mem_fn real = (mem_fn)real_of(NV_MEM);
    if (real == NULL)
        return GM_NVML_ERROR_FUNCTION_NOT_FOUND;
    int rc = real(dev, mem);
    struct nv_view v;
    if (rc == GM_NVML_SUCCESS && mem != NULL &&
        nv_view((void *)real, dev, mem->total, mem->free, &v)) {
        mem->total = v.total;
        mem->free = v.free;
        mem->used = v.total - v.free; /* free <= total: no wrap */
    }
    return rc;
}

NV_EXPORT int nvmlDeviceGetMemoryInfo_v2(gm_nvml_dev dev, struct gm_nvml_memory_v2 *mem)
{
    mem2_fn real = (mem2_fn)real_of(NV_MEM2);
    if (real == NULL)
        return GM_NVML_ERROR_FUNCTION_NOT_FOUND;
    int rc = real(dev, mem);
    struct nv_view v;
    if (rc == GM_NVML_SUCCESS && mem != NULL &&
        nv_view((void *)real, dev, mem->total, mem->free, &v)) {
        mem->total = v.total;
        mem->reserved = 0; /* the limit holds no memory set aside */
        mem->free = v.free;
        mem->used = v.total - v.free;
    }
    return rc;
}

/* ---- running processes --------------------------------------------------- */

typedef int (*procs_fn)(gm_nvml_dev, unsigned int *, void *);

/* After a successful list: this process's entry shows its charge. Both
 * record versions start with pid and usedGpuMemory at the same offsets. */
static int procs_call(enum nv_hook i, size_t stride, gm_nvml_dev dev,
                      unsigned int *count, void *infos)
{
    procs_fn real = (procs_fn)real_of(i);
    if (real == NULL)
        return GM_NVML_ERROR_FUNCTION_NOT_FOUND;
    int rc = real(dev, count, infos);
    if (rc != GM_NVML_SUCCESS || count == NULL || infos == NULL || *count == 0)
        return rc;
    unsigned int self = (unsigned int)getpid();
    struct gm_nvml_proc_v1 *own = NULL;
    for (unsigned int k = 0; k < *count; k++) {
        struct gm_nvml_proc_v1 *p =
            (struct gm_nvml_proc_v1 *)((char *)infos + (size_t)k * stride);
        if (p->pid == self)
            own = p;
    }
    struct nv_view v;
    if (own != NULL &&
        atomic_load_explicit(&gm_init_state, memory_order_acquire) == 2 &&
        nv_view((void *)real, dev, 0, 0, &v))
        own->usedGpuMemory = v.charged;
    return rc;
}

#define NV_PROC_WRAPPER(name, rec)                                          \
    NV_EXPORT int name(gm_nvml_dev dev, unsigned int *count, struct rec *infos) \
    {                                                                       \
        return procs_call(NV_##name, sizeof(struct rec), dev, count, infos); \
    }
NV_PROCS(NV_PROC_WRAPPER)
