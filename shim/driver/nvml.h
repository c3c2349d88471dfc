/*
 * shim/driver/nvml.h — the NVML figures the shim itself uses to measure
 * context memory: device memory in use on a CUDA device (all processes)
 * and this process's own entry in the device's compute-process list.
 * NVML is loaded lazily with dlopen, by the shim for itself: these calls
 * go to the real library, never through the NVML view. Without it (no
 * NVIDIA driver, a MIG instance, a container without NVML) the answer is
 * "unknown".
 */
#ifndef GM_NVML_H
#define GM_NVML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gm_nvml_sample {
    uint64_t device_used;   /* bytes in use on the device, every process */
    uint64_t own_used;      /* this process's entry, when own_listed */
    bool own_listed;        /* the process list has this pid with a figure */
};

/* Samples CUDA device `dev` (matched by UUID); false when NVML cannot
 * say. Caller holds the nesting guard. */
bool gm_nvml_sample(int dev, struct gm_nvml_sample *s);

/* Load NVML now (once; nothing when it is loaded or cannot be): a caller
 * about to take a lock of its own loads it first, so that dlopen (and the
 * loader's lock) is never taken under that lock. */
void gm_nvml_load(void);

/* CUDA device `dev`'s UUID as NVML writes it ("GPU-xxxxxxxx-xxxx-..."),
 * through the real driver: 0; -2 when there is no such device (or no
 * cuDeviceGetUuid_v2), -3 when the driver is not initialised (before
 * cuInit), -1 when it cannot say otherwise. */
int gm_nvml_cuda_uuid(int dev, char *out, size_t cap);

#endif
