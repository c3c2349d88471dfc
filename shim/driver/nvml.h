/*
 * shim/driver/nvml.h — the one NVML figure the shim uses: device memory in use on a
 * CUDA device (all processes), to measure context memory as a before/after
 * difference. NVML is loaded lazily with dlopen; without it (no NVIDIA
 * driver, the simulator, a MIG instance) the answer is "unknown".
 */
#ifndef GM_NVML_H
#define GM_NVML_H

#include <stdint.h>

/* Bytes in use on CUDA device `dev` (matched by UUID), or UINT64_MAX when
 * NVML cannot say. Caller holds the nesting guard. */
uint64_t gm_nvml_used(int dev);

#endif
