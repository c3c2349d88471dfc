/*
 * shim/driver/nvml.c — lazy NVML access by UUID, for context-memory
 * measurement (nvml.h).
 *
 * Invariant: NVML is opened at most once (state under a mutex), only when
 * a first context is created; never on any allocation path. Functions are
 * looked up with glibc's dlsym on our own handle, so they are NVML's, not
 * the shim's NVML wrappers.
 */
#include "shim/driver/nvml.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "shim/driver/nvml_api.h"
#include "shim/driver/real.h"

typedef int (*nvml_init_fn)(void);
typedef int (*nvml_by_uuid_fn)(const char *, gm_nvml_dev *);
typedef int (*nvml_meminfo_fn)(gm_nvml_dev, struct gm_nvml_memory *);
typedef int (*nvml_procs_fn)(gm_nvml_dev, unsigned int *, void *);

static pthread_mutex_t nvml_lock = PTHREAD_MUTEX_INITIALIZER;
static int nvml_state; /* 0 untried, 1 usable, -1 unavailable */
static nvml_by_uuid_fn by_uuid;
static nvml_meminfo_fn meminfo;
static nvml_procs_fn procs;     /* the newest compute-process query found */
static size_t proc_stride;      /* its record size */

static int nvml_open(void)
{
    if (nvml_state != 0)
        return nvml_state;
    nvml_state = -1;
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        return nvml_state;
    gm_dlsym_fn ds = gm_real_dlsym_get();
    nvml_init_fn init = (nvml_init_fn)ds(h, "nvmlInit_v2");
    by_uuid = (nvml_by_uuid_fn)ds(h, "nvmlDeviceGetHandleByUUID");
    meminfo = (nvml_meminfo_fn)ds(h, "nvmlDeviceGetMemoryInfo");
    static const char *const names[] = {
        "nvmlDeviceGetComputeRunningProcesses_v3",
        "nvmlDeviceGetComputeRunningProcesses_v2",
        "nvmlDeviceGetComputeRunningProcesses",
    };
    for (size_t i = 0; i < 3 && procs == NULL; i++) {
        procs = (nvml_procs_fn)ds(h, names[i]);
        proc_stride = i < 2 ? sizeof(struct gm_nvml_proc_v2)
                            : sizeof(struct gm_nvml_proc_v1);
    }
    if (init && by_uuid && meminfo && init() == GM_NVML_SUCCESS)
        nvml_state = 1;
    return nvml_state;
}

int gm_nvml_cuda_uuid(int dev, char *out, size_t cap)
{
    CUuuid u;
    if (gm_real.cuDeviceGetUuid_v2 == NULL)
        return -2;
    CUresult rc = gm_real.cuDeviceGetUuid_v2(&u, (CUdevice)dev);
    if (rc == CUDA_ERROR_INVALID_DEVICE)
        return -2;
    if (rc == CUDA_ERROR_NOT_INITIALIZED || rc == CUDA_ERROR_DEINITIALIZED)
        return -3;
    if (rc != CUDA_SUCCESS)
        return -1;
    const unsigned char *b = (const unsigned char *)u.bytes;
    snprintf(out, cap,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
             "%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
             b[10], b[11], b[12], b[13], b[14], b[15]);
    return 0;
}

/* This process's entry in the compute-process list (NVML lock held). The
 * list is read into a buffer of 64 entries on the stack, else into one
 * of the size NVML asks for (a device shared by more processes; a few
 * tries, as the list may grow between them). */
static void own_entry(gm_nvml_dev h, struct gm_nvml_sample *s)
{
    enum { CAP = 64, TRIES = 4 };
    struct gm_nvml_proc_v2 stack[CAP]; /* big enough for either stride */
    void *buf = stack, *big = NULL;
    unsigned int cap = CAP, n = CAP;
    s->own_listed = false;
    if (procs == NULL)
        return;
    int rc = procs(h, &n, buf);
    for (int t = 0; rc == GM_NVML_ERROR_INSUFFICIENT_SIZE && t < TRIES; t++) {
        cap = n + n / 4 + 16;
        void *nb = realloc(big, (size_t)cap * sizeof(struct gm_nvml_proc_v2));
        if (nb == NULL)
            break;
        buf = big = nb;
        n = cap;
        rc = procs(h, &n, buf);
    }
    unsigned int self = (unsigned int)getpid();
    for (unsigned int i = 0; rc == GM_NVML_SUCCESS && i < n && i < cap; i++) {
        const char *rec = (const char *)buf + (size_t)i * proc_stride;
        const struct gm_nvml_proc_v1 *p = (const struct gm_nvml_proc_v1 *)rec;
        if (p->pid == self && p->usedGpuMemory != GM_NVML_VALUE_NOT_AVAILABLE) {
            s->own_used = p->usedGpuMemory;
            s->own_listed = true;
        }
    }
    free(big);
}

void gm_nvml_load(void)
{
    pthread_mutex_lock(&nvml_lock);
    (void)nvml_open();
    pthread_mutex_unlock(&nvml_lock);
}

bool gm_nvml_sample(int dev, struct gm_nvml_sample *s)
{
    char uuid[64];
    s->device_used = 0;
    s->own_used = 0;
    s->own_listed = false;
    if (gm_nvml_cuda_uuid(dev, uuid, sizeof uuid) != 0)
        return false;
    bool ok = false;
    pthread_mutex_lock(&nvml_lock);
    gm_nvml_dev h = NULL;
    struct gm_nvml_memory m;
    if (nvml_open() == 1 && by_uuid(uuid, &h) == GM_NVML_SUCCESS &&
        meminfo(h, &m) == GM_NVML_SUCCESS) {
        s->device_used = m.used;
        own_entry(h, s);
        ok = true;
    }
    pthread_mutex_unlock(&nvml_lock);
    return ok;
}
