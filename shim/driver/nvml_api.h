/*
 * shim/driver/nvml_api.h — the part of NVML's C interface that gpumem
 * uses, written from NVML's documented layout (no nvml.h ships with the
 * CUDA toolkit): return codes, the opaque device handle, memory and
 * running-process records and their versioned sizes. Shared by the shim's
 * NVML view, its context measurement, the simulated NVML and tests.
 */
#ifndef GM_NVML_API_H
#define GM_NVML_API_H

#include <stddef.h>

/* nvmlReturn_t values. */
enum {
    GM_NVML_SUCCESS = 0,
    GM_NVML_ERROR_UNINITIALIZED = 1,
    GM_NVML_ERROR_INVALID_ARGUMENT = 2,
    GM_NVML_ERROR_NOT_SUPPORTED = 3,
    GM_NVML_ERROR_NOT_FOUND = 6,
    GM_NVML_ERROR_INSUFFICIENT_SIZE = 7,
    GM_NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    GM_NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    GM_NVML_ERROR_UNKNOWN = 999,
};

/* nvmlDevice_t: an opaque pointer. */
typedef struct gm_nvml_device *gm_nvml_dev;

/* nvmlMemory_t (v1): total = free + used. */
struct gm_nvml_memory {
    unsigned long long total, free, used;
};

/* nvmlMemory_v2_t: version must be GM_NVML_MEMORY_V2. */
struct gm_nvml_memory_v2 {
    unsigned int version;
    unsigned long long total, reserved, free, used;
};
#define GM_NVML_STRUCT_VERSION(type, v) ((unsigned int)(sizeof(type) | ((v) << 24U)))
#define GM_NVML_MEMORY_V2 GM_NVML_STRUCT_VERSION(struct gm_nvml_memory_v2, 2)

/* nvmlProcessInfo_v1_t (nvmlDeviceGet*RunningProcesses, no suffix). */
struct gm_nvml_proc_v1 {
    unsigned int pid;
    unsigned long long usedGpuMemory;
};

/* nvmlProcessInfo_v2_t = nvmlProcessInfo_t (the _v2 and _v3 queries). */
struct gm_nvml_proc_v2 {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
};

#define GM_NVML_VALUE_NOT_AVAILABLE (~0ULL)
#define GM_NVML_UUID_BUFFER 80  /* NVML_DEVICE_UUID_BUFFER_SIZE */

_Static_assert(sizeof(struct gm_nvml_memory) == 24, "nvmlMemory_t layout");
_Static_assert(sizeof(struct gm_nvml_memory_v2) == 40, "nvmlMemory_v2_t layout");
_Static_assert(offsetof(struct gm_nvml_memory_v2, reserved) == 16, "nvmlMemory_v2_t layout");
_Static_assert(sizeof(struct gm_nvml_proc_v1) == 16, "nvmlProcessInfo_v1_t layout");
_Static_assert(sizeof(struct gm_nvml_proc_v2) == 24, "nvmlProcessInfo_v2_t layout");

#endif
