/*
 * shim/driver/nvml.c — lazy NVML access by UUID, for context-memory measurement.
 *
 * Invariant: NVML is opened at most once (state under a mutex), only when
 * a first context is created; never on any allocation path.
 */
#include "shim/driver/nvml.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "shim/driver/real.h"

typedef struct { unsigned long long total, free, used; } gm_nvml_memory;
typedef int (*nvml_init_fn)(void);
typedef int (*nvml_by_uuid_fn)(const char *, void **);
typedef int (*nvml_meminfo_fn)(void *, gm_nvml_memory *);

static pthread_mutex_t nvml_lock = PTHREAD_MUTEX_INITIALIZER;
static int nvml_state; /* 0 untried, 1 usable, -1 unavailable */
static nvml_by_uuid_fn by_uuid;
static nvml_meminfo_fn meminfo;

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
    if (init && by_uuid && meminfo && init() == 0)
        nvml_state = 1;
    return nvml_state;
}

static int uuid_string(int dev, char *out, size_t cap)
{
    CUuuid u;
    if (gm_real.cuDeviceGetUuid_v2 == NULL ||
        gm_real.cuDeviceGetUuid_v2(&u, (CUdevice)dev) != CUDA_SUCCESS)
        return -1;
    const unsigned char *b = (const unsigned char *)u.bytes;
    snprintf(out, cap,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
             "%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
             b[10], b[11], b[12], b[13], b[14], b[15]);
    return 0;
}

uint64_t gm_nvml_used(int dev)
{
    uint64_t r = UINT64_MAX;
    char uuid[64];
    if (uuid_string(dev, uuid, sizeof uuid) != 0)
        return r;
    pthread_mutex_lock(&nvml_lock);
    void *h = NULL;
    gm_nvml_memory m;
    if (nvml_open() == 1 && by_uuid(uuid, &h) == 0 && meminfo(h, &m) == 0)
        r = m.used;
    pthread_mutex_unlock(&nvml_lock);
    return r;
}
