/*
 * tools/simnvml/simnvml.c — the simulated NVML (see simnvml.h).
 *
 * Answers follow NVML's: UNINITIALIZED before nvmlInit (reference counted
 * with nvmlShutdown), INVALID_ARGUMENT for a NULL output or a handle that
 * is not one of ours, INSUFFICIENT_SIZE (with the count needed) for a
 * process buffer that is too small, ARGUMENT_VERSION_MISMATCH for a
 * nvmlMemory_v2_t without its version. Invariants: handles point into
 * devs[] and are fixed at the first nvmlInit; used never exceeds total
 * (free = total - used, never negative); the process list is sorted by pid.
 */
#include "tools/simnvml/simnvml.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tools/sim/simmachine.h"

#define SN_NAME "gpumem simulated GPU"

struct gm_nvml_device {
    int index;
    char uuid[48];
};

static pthread_mutex_t sn_lock = PTHREAD_MUTEX_INITIALIZER;
static int sn_refs;                 /* nvmlInit minus nvmlShutdown */
static int sn_loaded;               /* 0 not yet, 1 ok, -1 bad configuration */
static struct gm_sim_machine sn_machine;
static struct gm_nvml_device devs[GM_SIM_MAX_PHYS];

static int sn_init(void)
{
    pthread_mutex_lock(&sn_lock);
    if (sn_loaded == 0) {
        sn_loaded = gm_sim_machine_load(&sn_machine) == 0 ? 1 : -1;
        for (int i = 0; i < sn_machine.ndev; i++) {
            unsigned char b[16];
            devs[i].index = i;
            gm_sim_uuid(&sn_machine, i, b);
            gm_sim_uuid_string(b, devs[i].uuid, sizeof devs[i].uuid);
        }
    }
    int rc = sn_loaded == 1 ? GM_NVML_SUCCESS : GM_NVML_ERROR_UNKNOWN;
    if (rc == GM_NVML_SUCCESS)
        sn_refs++;
    pthread_mutex_unlock(&sn_lock);
    return rc;
}

int nvmlInit(void) { return sn_init(); }
int nvmlInit_v2(void) { return sn_init(); }

int nvmlInitWithFlags(unsigned int flags)
{
    (void)flags; /* NO_GPUS / NO_ATTACH: nothing to attach to here */
    return sn_init();
}

int nvmlShutdown(void)
{
    pthread_mutex_lock(&sn_lock);
    int rc = sn_refs > 0 ? GM_NVML_SUCCESS : GM_NVML_ERROR_UNINITIALIZED;
    if (sn_refs > 0)
        sn_refs--;
    pthread_mutex_unlock(&sn_lock);
    return rc;
}

static bool sn_ready(void)
{
    pthread_mutex_lock(&sn_lock);
    bool r = sn_refs > 0;
    pthread_mutex_unlock(&sn_lock);
    return r;
}

const char *nvmlErrorString(int result)
{
    switch (result) {
    case GM_NVML_SUCCESS: return "Success";
    case GM_NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case GM_NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case GM_NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case GM_NVML_ERROR_NOT_FOUND: return "Not Found";
    case GM_NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case GM_NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case GM_NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument Version Mismatch";
    default: return "Unknown Error";
    }
}

static int copy_string(const char *s, char *out, unsigned int length)
{
    if (out == NULL)
        return GM_NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(s) + 1 > length)
        return GM_NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, s, strlen(s) + 1);
    return GM_NVML_SUCCESS;
}

int nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    if (!sn_ready())
        return GM_NVML_ERROR_UNINITIALIZED;
    return copy_string("580.0.sim", version, length);
}

int nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    if (!sn_ready())
        return GM_NVML_ERROR_UNINITIALIZED;
    return copy_string("13.580.0.sim", version, length);
}

static int get_count(unsigned int *count)
{
    if (!sn_ready())
        return GM_NVML_ERROR_UNINITIALIZED;
    if (count == NULL)
        return GM_NVML_ERROR_INVALID_ARGUMENT;
    *count = (unsigned int)sn_machine.ndev;
    return GM_NVML_SUCCESS;
}

int nvmlDeviceGetCount(unsigned int *count) { return get_count(count); }
int nvmlDeviceGetCount_v2(unsigned int *count) { return get_count(count); }

static int by_index(unsigned int index, gm_nvml_dev *dev)
{
    if (!sn_ready())
        return GM_NVML_ERROR_UNINITIALIZED;
    if (dev == NULL || index >= (unsigned int)sn_machine.ndev)
        return GM_NVML_ERROR_INVALID_ARGUMENT;
    *dev = &devs[index];
    return GM_NVML_SUCCESS;
}

int nvmlDeviceGetHandleByIndex(unsigned int index, gm_nvml_dev *dev) { return by_index(index, dev); }
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, gm_nvml_dev *dev) { return by_index(index, dev); }

int nvmlDeviceGetHandleByUUID(const char *uuid, gm_nvml_dev *dev)
{
    if (!sn_ready())
        return GM_NVML_ERROR_UNINITIALIZED;
    if (uuid == NULL || dev == NULL)
        return GM_NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < sn_machine.ndev; i++)
        if (strcmp(devs[i].uuid, uuid) == 0) {
            *dev = &devs[i];
            return GM_NVML_SUCCESS;
        }
    return GM_NVML_ERROR_NOT_FOUND;
}

/* The device behind a handle, or NULL for anything that is not one of
 * ours (compared as an address: a foreign handle is never dereferenced). */
static const struct gm_nvml_device *handle(gm_nvml_dev dev)
{
    for (int i = 0; i < sn_machine.ndev; i++)
        if (dev == &devs[i])
            return &devs[i];
    return NULL;
}

/* The common entry of a device query: initialised, a known handle, a
 * non-NULL output. */
static int dev_entry(gm_nvml_dev dev, const void *out, const struct gm_nvml_device **d)
{
    if (!sn_ready())
        return GM_NVML_ERROR_UNINITIALIZED;
    *d = handle(dev);
    if (*d == NULL || out == NULL)
        return GM_NVML_ERROR_INVALID_ARGUMENT;
    return GM_NVML_SUCCESS;
}

int nvmlDeviceGetIndex(gm_nvml_dev dev, unsigned int *index)
{
    const struct gm_nvml_device *d;
    int rc = dev_entry(dev, index, &d);
    if (rc == GM_NVML_SUCCESS)
        *index = (unsigned int)d->index;
    return rc;
}

int nvmlDeviceGetUUID(gm_nvml_dev dev, char *uuid, unsigned int length)
{
    const struct gm_nvml_device *d;
    int rc = dev_entry(dev, uuid, &d);
    return rc == GM_NVML_SUCCESS ? copy_string(d->uuid, uuid, length) : rc;
}

int nvmlDeviceGetName(gm_nvml_dev dev, char *name, unsigned int length)
{
    const struct gm_nvml_device *d;
    int rc = dev_entry(dev, name, &d);
    return rc == GM_NVML_SUCCESS ? copy_string(SN_NAME, name, length) : rc;
}

/* ---- memory and processes ------------------------------------------------ */

struct sum {
    int phys;
    uint64_t used;
};

static void add_used(const struct gm_sim_proc *p, void *arg)
{
    struct sum *s = arg;
    s->used += p->used[s->phys];
}

/* Bytes in use on a physical device, every simulated process together,
 * no more than its capacity. */
static uint64_t device_used(int phys)
{
    struct sum s = { phys, 0 };
    (void)gm_sim_board_scan(sn_machine.board, add_used, &s);
    uint64_t cap = sn_machine.memory[phys];
    return s.used < cap ? s.used : cap;
}

int nvmlDeviceGetMemoryInfo(gm_nvml_dev dev, struct gm_nvml_memory *mem)
{
    const struct gm_nvml_device *d;
    int rc = dev_entry(dev, mem, &d);
    if (rc != GM_NVML_SUCCESS)
        return rc;
    mem->total = sn_machine.memory[d->index];
    mem->used = device_used(d->index);
    mem->free = mem->total - mem->used;
    return GM_NVML_SUCCESS;
}

int nvmlDeviceGetMemoryInfo_v2(gm_nvml_dev dev, struct gm_nvml_memory_v2 *mem)
{
    const struct gm_nvml_device *d;
    int rc = dev_entry(dev, mem, &d);
    if (rc != GM_NVML_SUCCESS)
        return rc;
    if (mem->version != GM_NVML_MEMORY_V2)
        return GM_NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    mem->total = sn_machine.memory[d->index];
    mem->reserved = 0; /* the simulated device sets nothing aside */
    mem->used = device_used(d->index);
    mem->free = mem->total - mem->used;
    return GM_NVML_SUCCESS;
}

#define SN_MAX_PROCS 256

struct plist {
    int phys;
    unsigned int n;
    unsigned int pid[SN_MAX_PROCS];
    uint64_t used[SN_MAX_PROCS];
};

static void add_proc(const struct gm_sim_proc *p, void *arg)
{
    struct plist *l = arg;
    if (p->contexts[l->phys] == 0 || l->n == SN_MAX_PROCS)
        return;
    unsigned int i = l->n++;
    while (i > 0 && l->pid[i - 1] > (unsigned int)p->pid) {
        l->pid[i] = l->pid[i - 1];
        l->used[i] = l->used[i - 1];
        i--;
    }
    l->pid[i] = (unsigned int)p->pid;
    l->used[i] = p->used[l->phys];
}

/* Compute processes: every simulated process with a context on the
 * device. Graphics and MPS lists are empty (compute = false). */
static int procs(gm_nvml_dev dev, unsigned int *count, void *infos, bool v2,
                 bool compute)
{
    const struct gm_nvml_device *d;
    int rc = dev_entry(dev, count, &d);
    if (rc != GM_NVML_SUCCESS)
        return rc;
    static struct plist l; /* under sn_lock: too big for a small stack */
    pthread_mutex_lock(&sn_lock);
    memset(&l, 0, sizeof l);
    l.phys = d->index;
    if (compute)
        (void)gm_sim_board_scan(sn_machine.board, add_proc, &l);
    if (*count < l.n || (infos == NULL && l.n > 0)) {
        rc = *count < l.n ? GM_NVML_ERROR_INSUFFICIENT_SIZE
                          : GM_NVML_ERROR_INVALID_ARGUMENT;
        *count = l.n;
        pthread_mutex_unlock(&sn_lock);
        return rc;
    }
    for (unsigned int i = 0; i < l.n; i++) {
        if (v2) {
            struct gm_nvml_proc_v2 *o = (struct gm_nvml_proc_v2 *)infos + i;
            o->pid = l.pid[i];
            o->usedGpuMemory = l.used[i];
            o->gpuInstanceId = 0xffffffffu;     /* no MIG */
            o->computeInstanceId = 0xffffffffu;
        } else {
            struct gm_nvml_proc_v1 *o = (struct gm_nvml_proc_v1 *)infos + i;
            o->pid = l.pid[i];
            o->usedGpuMemory = l.used[i];
        }
    }
    *count = l.n;
    pthread_mutex_unlock(&sn_lock);
    return GM_NVML_SUCCESS;
}

int nvmlDeviceGetComputeRunningProcesses(gm_nvml_dev dev, unsigned int *count,
                                         struct gm_nvml_proc_v1 *infos)
{
    return procs(dev, count, infos, false, true);
}

int nvmlDeviceGetComputeRunningProcesses_v2(gm_nvml_dev dev, unsigned int *count,
                                            struct gm_nvml_proc_v2 *infos)
{
    return procs(dev, count, infos, true, true);
}

int nvmlDeviceGetComputeRunningProcesses_v3(gm_nvml_dev dev, unsigned int *count,
                                            struct gm_nvml_proc_v2 *infos)
{
    return procs(dev, count, infos, true, true);
}

int nvmlDeviceGetGraphicsRunningProcesses(gm_nvml_dev dev, unsigned int *count,
                                          struct gm_nvml_proc_v1 *infos)
{
    return procs(dev, count, infos, false, false);
}

int nvmlDeviceGetGraphicsRunningProcesses_v2(gm_nvml_dev dev, unsigned int *count,
                                             struct gm_nvml_proc_v2 *infos)
{
    return procs(dev, count, infos, true, false);
}

int nvmlDeviceGetGraphicsRunningProcesses_v3(gm_nvml_dev dev, unsigned int *count,
                                             struct gm_nvml_proc_v2 *infos)
{
    return procs(dev, count, infos, true, false);
}

int nvmlDeviceGetMPSComputeRunningProcesses(gm_nvml_dev dev, unsigned int *count,
                                            struct gm_nvml_proc_v1 *infos)
{
    return procs(dev, count, infos, false, false);
}

int nvmlDeviceGetMPSComputeRunningProcesses_v2(gm_nvml_dev dev, unsigned int *count,
                                               struct gm_nvml_proc_v2 *infos)
{
    return procs(dev, count, infos, true, false);
}

int nvmlDeviceGetMPSComputeRunningProcesses_v3(gm_nvml_dev dev, unsigned int *count,
                                               struct gm_nvml_proc_v2 *infos)
{
    return procs(dev, count, infos, true, false);
}
