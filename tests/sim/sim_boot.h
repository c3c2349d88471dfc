/*
 * tests/sim/sim_boot.h — the set-up every simulated-driver suite shares:
 * a known environment for the driver (read at cuInit), then cuInit and
 * device 0's primary context made current. Each Check test runs in its
 * own process, so each boots a fresh driver.
 */
#ifndef GM_SIM_BOOT_H
#define GM_SIM_BOOT_H

#include <check.h>
#include <cuda.h>
#include <stddef.h>
#include <stdlib.h>

/* Forget every SIMCUDA_* setting of the caller's environment. */
static inline void gm_simt_clear_env(void)
{
    static const char *const vars[] = {
        "SIMCUDA_DEVICES", "SIMCUDA_MEMORY", "SIMCUDA_CONTEXT",
        "SIMCUDA_LATENCY", "SIMCUDA_FAIL", "SIMCUDA_UUID_SEED",
        "SIMCUDA_POOL_RELEASE",
    };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}

/* Devices of `memory` bytes each ("8G", "1G,256M"), no context memory. */
static inline void gm_simt_env(const char *memory)
{
    gm_simt_clear_env();
    setenv("SIMCUDA_CONTEXT", "0", 1);
    setenv("SIMCUDA_MEMORY", memory, 1);
}

/* cuInit, then device 0's primary context, made current. */
static inline CUcontext gm_simt_boot(void)
{
    CUcontext c = NULL;
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    ck_assert_int_eq(cuDevicePrimaryCtxRetain(&c, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuCtxSetCurrent(c), CUDA_SUCCESS);
    return c;
}

#endif
