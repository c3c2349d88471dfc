/*
 * shim/account/state.c — the process-wide state (gm_st, the hooks' clock)
 * and which device a call is for.
 *
 * Invariant: the driver calls made here run with the nesting guard raised.
 */
#include "shim/account/state.h"

#include "shim/driver/real.h"

/* Devices on which a context was created through our wrappers. While
 * there is exactly one, the current context (if any) is on it, and the
 * driver need not be asked; a call without any current context fails in
 * the driver anyway, and its reservation is rolled back. */
_Atomic uint64_t gm_ctx_devices;

struct gm_state gm_st = { .dev_lock = PTHREAD_MUTEX_INITIALIZER };
int gm_hook_clock;
bool gm_plain;

int gm_current_device_slow(void)
{
    CUdevice d = -1;
    if (gm_real.cuCtxGetDevice == NULL)
        return -1;
    gm_depth++;
    CUresult rc = gm_real.cuCtxGetDevice(&d);
    gm_depth--;
    return rc == CUDA_SUCCESS ? (int)d : -1;
}

/* A named stream's device by the context it was made in, where the
 * driver has no cuStreamGetDevice (before CUDA 12.8). Guard raised. */
static CUresult stream_ctx_device(CUstream s, CUdevice *d)
{
    CUcontext ctx = NULL, popped = NULL;
    if (gm_real.cuStreamGetCtx == NULL || gm_real.cuCtxGetDevice == NULL ||
        gm_real.cuCtxPushCurrent_v2 == NULL ||
        gm_real.cuCtxPopCurrent_v2 == NULL)
        return CUDA_ERROR_NOT_FOUND;
    CUresult rc = gm_real.cuStreamGetCtx(s, &ctx);
    if (rc != CUDA_SUCCESS)
        return rc;
    if ((rc = gm_real.cuCtxPushCurrent_v2(ctx)) != CUDA_SUCCESS)
        return rc;
    rc = gm_real.cuCtxGetDevice(d);
    gm_real.cuCtxPopCurrent_v2(&popped);
    return rc;
}

int gm_stream_device(CUstream s)
{
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return gm_current_device();
    CUdevice d = -1;
    gm_depth++;
    CUresult rc = gm_real.cuStreamGetDevice != NULL
                      ? gm_real.cuStreamGetDevice(s, &d)
                      : stream_ctx_device(s, &d);
    gm_depth--;
    return rc == CUDA_SUCCESS ? (int)d : -1;
}

struct gm_dev *_Atomic gm_ctx_sole;
static pthread_mutex_t sole_lock = PTHREAD_MUTEX_INITIALIZER;

void gm_ctx_devices_add(int dev)
{
    pthread_mutex_lock(&sole_lock);
    /* No sole device while the mask grows: a reader between the two
     * stores asks the driver rather than take the old one. */
    atomic_store_explicit(&gm_ctx_sole, NULL, memory_order_release);
    atomic_fetch_or(&gm_ctx_devices, 1ull << dev);
    uint64_t m = atomic_load(&gm_ctx_devices);
    struct gm_dev *sole = NULL;
    if (m != 0 && (m & (m - 1)) == 0)
        sole = &gm_st.dev[__builtin_ctzll(m)];
    atomic_store_explicit(&gm_ctx_sole, sole, memory_order_release);
    pthread_mutex_unlock(&sole_lock);
}

void gm_dev_reset(void)
{
    atomic_store(&gm_ctx_sole, NULL);
    atomic_store(&gm_ctx_devices, 0);
    pthread_mutex_init(&sole_lock, NULL);
}
