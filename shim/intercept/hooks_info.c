/*
 * shim/intercept/hooks_info.c — what the program sees of the device, and context
 * creation. With a limit, cuMemGetInfo reports total = min(limit, physical)
 * and free = min(real free, limit - used) clamped at 0, and
 * cuDeviceTotalMem reports min(limit, physical); without one both pass
 * through. Output pointers are handed to the driver as given (a NULL one
 * gets the driver's own answer) and adjusted only on success.
 * Context creators measure and charge the first context on each device.
 */
#include "shim/intercept/lifecycle.h"
#include "shim/intercept/hooks_info.h"
#include "shim/telemetry/abi.h"
#include "shim/account/account.h"
#include "shim/driver/real.h"
#include "shim/admit/arena_hooks.h"
#include "shim/admit/staged.h"
#include "shim/account/device.h"
#include "shim/account/state.h"
#include "shim/record/record.h"

static uint64_t min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* Free is what the program can still get: the room under its limit (no
 * more than the driver has free) plus, in static mode, what the arena can
 * still hand out (the arena is charged whole and invisible to the
 * driver's own figure). Like the driver's, it is a sum of free bytes, not
 * the largest block. */
bool gm_view_info(int dev, uint64_t *f, uint64_t *t)
{
    gm_staged_poll();
    struct gm_dev *d = gm_dev_get(dev);
    if (d == NULL)
        return false;
    uint64_t limit = gm_budget_limit(&d->budget);
    if (limit == 0)
        return false;
    *t = min64(limit, *t);
    uint64_t room = min64(*f, gm_budget_room(&d->budget));
    uint64_t arena = gm_static_free(d);
    *f = min64(room + min64(arena, UINT64_MAX - room), *t);
    return true;
}

/* Virtualise (free, total) for the current device; false = unchanged. */
static bool virt_info(uint64_t *f, uint64_t *t)
{
    return gm_view_info(gm_current_device(), f, t);
}

GM_EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t *free, size_t *total)
{
    GM_NEED_REAL(cuMemGetInfo_v2);
    bool on = gm_active();
    gm_depth++;
    CUresult rc = gm_real.cuMemGetInfo_v2(free, total);
    gm_depth--;
    if (rc != CUDA_SUCCESS || !on)
        return rc;
    uint64_t f = free ? *free : UINT64_MAX, t = total ? *total : UINT64_MAX;
    if (virt_info(&f, &t)) {
        if (free)
            *free = (size_t)f;
        if (total)
            *total = (size_t)t;
    }
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuMemGetInfo(unsigned int *free,
                                        unsigned int *total)
{
    GM_NEED_REAL(cuMemGetInfo);
    bool on = gm_active();
    gm_depth++;
    CUresult rc = gm_real.cuMemGetInfo(free, total);
    gm_depth--;
    if (rc != CUDA_SUCCESS || !on)
        return rc;
    uint64_t f = free ? *free : UINT64_MAX, t = total ? *total : UINT64_MAX;
    if (virt_info(&f, &t)) {
        if (free)
            *free = (unsigned int)f;
        if (total)
            *total = (unsigned int)t;
    }
    return rc;
}

static uint64_t device_limit(CUdevice dev)
{
    gm_staged_poll();
    struct gm_dev *d = gm_dev_get((int)dev);
    return d ? gm_budget_limit(&d->budget) : 0;
}

GM_EXPORT CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    GM_NEED_REAL(cuDeviceTotalMem_v2);
    bool on = gm_active();
    gm_depth++;
    CUresult rc = gm_real.cuDeviceTotalMem_v2(bytes, dev);
    gm_depth--;
    if (rc != CUDA_SUCCESS || !on || bytes == NULL)
        return rc;
    uint64_t limit = device_limit(dev);
    if (limit != 0)
        *bytes = (size_t)min64(limit, *bytes);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    GM_NEED_REAL(cuDeviceTotalMem);
    bool on = gm_active();
    gm_depth++;
    CUresult rc = gm_real.cuDeviceTotalMem(bytes, dev);
    gm_depth--;
    if (rc != CUDA_SUCCESS || !on || bytes == NULL)
        return rc;
    uint64_t limit = device_limit(dev);
    if (limit != 0)
        *bytes = (unsigned int)min64(limit, *bytes);
    return rc;
}

/* ---- contexts ------------------------------------------------------------ */

/* Before/after a context creator on `dev`. */
static struct gm_ctx_probe ctx_before(bool on, CUdevice dev)
{
    struct gm_ctx_probe before = { .ok = false };
    if (on)
        gm_dev_context_before((int)dev, &before);
    return before;
}

static void ctx_after(bool on, CUresult rc, CUdevice dev, CUcontext *pctx,
                      const struct gm_ctx_probe *before)
{
    /* The first context on a device is measured, then (static mode) the
     * arena is taken from what is left. */
    if (on && rc == CUDA_SUCCESS && pctx != NULL &&
        gm_dev_context_created((int)dev, *pctx, before))
        gm_static_setup((int)dev, gm_dev_get((int)dev), *pctx);
}

/* A context creator: measure the first context on `dev` around the call. */
#define CTX_WRAPPER(name, params, args, dev)                         \
    GM_EXPORT CUresult CUDAAPI name params                               \
    {                                                                     \
        GM_NEED_REAL(name);                                               \
        bool on = gm_active();                                            \
        struct gm_ctx_probe before = ctx_before(on, dev);                 \
        gm_depth++;                                                       \
        CUresult rc = gm_real.name args;                                  \
        gm_depth--;                                                       \
        ctx_after(on, rc, dev, pctx, &before);                            \
        if (on)                                                           \
            GM_REC(GM_RO_CTX, 0, (int)(dev), 0,                           \
                   rc == CUDA_SUCCESS && pctx ? (uintptr_t)*pctx : 0, 0, \
                   0, rc);                                                \
        return rc;                                                        \
    }

CTX_WRAPPER(cuDevicePrimaryCtxRetain, (CUcontext *pctx, CUdevice dev),
            (pctx, dev), dev)
CTX_WRAPPER(cuCtxCreate,
            (CUcontext *pctx, unsigned int flags, CUdevice dev),
            (pctx, flags, dev), dev)
CTX_WRAPPER(cuCtxCreate_v2,
            (CUcontext *pctx, unsigned int flags, CUdevice dev),
            (pctx, flags, dev), dev)
CTX_WRAPPER(cuCtxCreate_v3,
            (CUcontext *pctx, CUexecAffinityParam *params, int numParams,
             unsigned int flags, CUdevice dev),
            (pctx, params, numParams, flags, dev), dev)
CTX_WRAPPER(cuCtxCreate_v4,
            (CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
             CUdevice dev),
            (pctx, params, flags, dev), dev)
