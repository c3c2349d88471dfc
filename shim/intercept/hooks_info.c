/*
 * shim/intercept/hooks_info.c — what the program sees of the device, and context
 * creation. With a limit, cuMemGetInfo reports total = min(limit, physical)
 * and free = min(real free, limit - used) clamped at 0, and
 * cuDeviceTotalMem reports min(limit, physical); in a group the group's
 * limit caps total too and free is no more than what the group admits
 * for the process now (its limit less all members' charge and the shares
 * kept for higher-priority members; read lock-free, and a group that
 * cannot say leaves the process's own figures). Without a limit or group
 * both pass through. NVML's own process entry is the charge less the
 * static arena's free room (gm_view_own), as free counts that room.
 * Output pointers are handed to the driver as given (a NULL one gets the
 * driver's own answer) and adjusted only on success.
 * Context creators measure and charge each new context; a context's end
 * (destroy, the primary context's last release, a reset) gives its charge
 * back, and that of the memory the driver freed with it
 * (shim/account/ctxend.h), recorded as frees the program did not call.
 */
#include "shim/intercept/lifecycle.h"
#include "policy/parse.h"
#include "shim/admit/oomsnap.h"
#include "shim/intercept/hooks_info.h"
#include "shim/telemetry/abi.h"
#include "shim/account/account.h"
#include "shim/account/grouphook.h"
#include "shim/account/ctxend.h"
#include "shim/driver/nvml.h"
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

/* Free is what the program can still get: the room under its limit and,
 * in a group, what the group admits for it now (no more than the driver
 * has free), plus, in static mode, what the arena can still hand out
 * (the arena is charged whole and invisible to the driver's own figure).
 * Like the driver's, it is a sum of free bytes, not the largest block. A
 * group that cannot say leaves the process's own view: never more than
 * that. */
bool gm_view_info(int dev, uint64_t *f, uint64_t *t)
{
    gm_staged_poll();
    struct gm_dev *d = gm_dev_get(dev);
    if (d == NULL)
        return false;
    uint64_t limit = gm_budget_limit(&d->budget);
    uint64_t glimit = 0, groom = 0;
    bool grp = gm_grp_view(d, &glimit, &groom);
    if (limit == 0 && !grp)
        return false;
    uint64_t room = min64(*f, gm_budget_room(&d->budget));
    if (limit != 0)
        *t = min64(limit, *t);
    if (grp) {
        *t = min64(glimit, *t);
        room = min64(groom, room);
    }
    uint64_t arena = gm_static_free(d);
    *f = min64(room + min64(arena, UINT64_MAX - room), *t);
    return true;
}

uint64_t gm_view_own(int dev)
{
    struct gm_dev *d = gm_dev_get(dev);
    if (d == NULL)
        return 0;
    uint64_t used = gm_budget_used(&d->budget);
    uint64_t arena = gm_static_free(d);
    return used > arena ? used - arena : 0;
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

/* The device's size as the process sees it: its limit, in a group no
 * more than the group's; 0: none (the driver's answer stands). */
static uint64_t device_limit(CUdevice dev)
{
    gm_staged_poll();
    struct gm_dev *d = gm_dev_get((int)dev);
    if (d == NULL)
        return 0;
    uint64_t limit = gm_budget_limit(&d->budget);
    uint64_t glimit, groom;
    if (gm_grp_view(d, &glimit, &groom) && (limit == 0 || glimit < limit))
        limit = glimit;
    return limit;
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
static struct gm_ctx_probe ctx_before(bool on, CUdevice dev, bool primary)
{
    struct gm_ctx_probe before = { .ok = false, .measure = false };
    if (on)
        gm_dev_context_before((int)dev, primary, &before);
    return before;
}

/* A created context that did not fit (device.c charged nothing) is
 * destroyed again and the call refused. Should the destroy fail, the
 * context lives on and is charged past the limit instead. */
static CUresult ctx_refuse(CUdevice dev, CUcontext *pctx,
                           const struct gm_ctx_probe *before,
                           enum gm_ctx_verdict v, uint64_t bytes)
{
    struct gm_dev *d = gm_dev_get((int)dev);
    CUcontext c = *pctx;
    CUresult rc = CUDA_ERROR_NOT_FOUND;
    gm_depth++;
    if (gm_real.cuCtxDestroy_v2 != NULL)
        rc = gm_real.cuCtxDestroy_v2(c);
    gm_depth--;
    if (rc != CUDA_SUCCESS) {
        uint64_t b;
        if (gm_dev_context_created((int)dev, c, before, false, &b) ==
            GM_CTX_KEPT_FIRST)
            gm_static_setup((int)dev, d, c);
        return CUDA_SUCCESS;
    }
    uint64_t used = gm_budget_used(&d->budget);
    uint64_t limit = gm_budget_limit(&d->budget);
    gm_admit_refused(d, (unsigned)dev, GM_API_CTX_CREATE, bytes, used, limit);
    char b[32], u[32], l[32];
    gm_format_size(bytes, b, sizeof b);
    gm_format_size(used, u, sizeof u);
    gm_format_size(limit, l, sizeof l);
    if (v == GM_CTX_REFUSED_GROUP)
        gm_log(GM_LOG_WARN, "device %d: cuCtxCreate refused: its context "
               "(%s) does not fit in group '%s'", (int)dev, b,
               gm_st.policy.group);
    else
        gm_log(GM_LOG_WARN, "device %d: cuCtxCreate refused: its context "
               "(%s) does not fit: %s used of %s limit", (int)dev, b, u, l);
    *pctx = NULL;
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult ctx_after(bool on, CUresult rc, CUdevice dev,
                          CUcontext *pctx, const struct gm_ctx_probe *before)
{
    if (!on || rc != CUDA_SUCCESS || pctx == NULL)
        return rc;
    /* Every new context is measured and charged; at the first on a
     * device (static mode) the arena is taken from what is left. A
     * created one that does not fit is refused; a primary one, which a
     * framework makes while starting and cannot go on without, is kept. */
    uint64_t bytes;
    enum gm_ctx_verdict v =
        gm_dev_context_created((int)dev, *pctx, before, true, &bytes);
    if (v == GM_CTX_KEPT_FIRST)
        gm_static_setup((int)dev, gm_dev_get((int)dev), *pctx);
    else if (v == GM_CTX_REFUSED_LIMIT || v == GM_CTX_REFUSED_GROUP)
        return ctx_refuse(dev, pctx, before, v, bytes);
    return rc;
}

/* The device's primary lock, NVML loaded first (dlopen takes the
 * loader's lock, which a library's constructor may hold while it retains
 * a primary context: never under ours). */
static void primary_lock(int dev)
{
    gm_depth++;
    gm_nvml_load();
    gm_depth--;
    gm_ctx_primary_lock(dev);
}

/* A context creator: measure the new context on `dev` around the call; a
 * primary retain under the device's primary lock (shim/account/contexts.h). */
#define CTX_WRAPPER(name, params, args, dev, primary)                    \
    GM_EXPORT CUresult CUDAAPI name params                               \
    {                                                                     \
        GM_NEED_REAL(name);                                               \
        bool on = gm_active();                                            \
        if (on && (primary))                                              \
            primary_lock((int)(dev));                                     \
        struct gm_ctx_probe before = ctx_before(on, dev, primary);        \
        gm_depth++;                                                       \
        CUresult rc = gm_real.name args;                                  \
        gm_depth--;                                                       \
        rc = ctx_after(on, rc, dev, pctx, &before);                       \
        if (on && (primary))                                              \
            gm_ctx_primary_unlock((int)(dev));                            \
        if (on)                                                           \
            GM_REC(GM_RO_CTX, 0, (int)(dev), 0,                           \
                   rc == CUDA_SUCCESS && pctx ? (uintptr_t)*pctx : 0, 0, \
                   0, rc);                                                \
        return rc;                                                        \
    }

CTX_WRAPPER(cuDevicePrimaryCtxRetain, (CUcontext *pctx, CUdevice dev),
            (pctx, dev), dev, true)
CTX_WRAPPER(cuCtxCreate,
            (CUcontext *pctx, unsigned int flags, CUdevice dev),
            (pctx, flags, dev), dev, false)
CTX_WRAPPER(cuCtxCreate_v2,
            (CUcontext *pctx, unsigned int flags, CUdevice dev),
            (pctx, flags, dev), dev, false)
CTX_WRAPPER(cuCtxCreate_v3,
            (CUcontext *pctx, CUexecAffinityParam *params, int numParams,
             unsigned int flags, CUdevice dev),
            (pctx, params, numParams, flags, dev), dev, false)
CTX_WRAPPER(cuCtxCreate_v4,
            (CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
             CUdevice dev),
            (pctx, params, flags, dev), dev, false)

/* A freed block of an ended context into the recording, as the free or
 * array destroy the program did not call. */
static void rec_ctx_freed(void *arg, const struct gm_alloc *a)
{
    (void)arg;
    if (a->ns == GM_NS_PTR)
        GM_REC(GM_RO_FREE, GM_RECF_CTXEND, a->dev, 0, a->key, 0, 0,
               CUDA_SUCCESS);
    else
        GM_REC(GM_RO_ARRAY_DESTROY,
               GM_RECF_CTXEND | (a->ns == GM_NS_MIPMAP ? GM_RECF_MIPMAP : 0),
               a->dev, 0, a->key, 0, 0, CUDA_SUCCESS);
}

/* What the end of a context on dev freed with it: released, recorded,
 * and said once. */
static void ctx_memory_ended(int dev)
{
    struct gm_ctxend_sum s = gm_ctxend_release(dev, rec_ctx_freed, NULL);
    if (s.entries == 0)
        return;
    char b[32];
    gm_format_size(s.bytes, b, sizeof b);
    gm_log(GM_LOG_INFO, "device %d: a context's end freed %llu allocation%s "
           "(%s) the program had not freed; their charge is given back",
           dev, (unsigned long long)s.entries, s.entries == 1 ? "" : "s", b);
}

/* A context's end gives its charge back: a destroyed context at once; the
 * primary context when a release leaves it inactive (its last reference)
 * or a reset ends it. A static arena made in it ends with it, and so does
 * the memory allocated in it (ctx_memory_ended). */
#define CTX_DESTROY_WRAPPER(name)                                         \
    GM_EXPORT CUresult CUDAAPI name(CUcontext ctx)                        \
    {                                                                     \
        GM_NEED_REAL(name);                                               \
        struct gm_ctx_ent e;                                              \
        bool listed = gm_active() && gm_dev_context_unlist(ctx, &e);      \
        gm_depth++;                                                       \
        CUresult rc = gm_real.name(ctx);                                  \
        gm_depth--;                                                       \
        if (listed && rc == CUDA_SUCCESS) {                               \
            gm_dev_context_ended(&e);                                     \
            gm_static_retire(e.dev, ctx);                                 \
            ctx_memory_ended(e.dev);                                      \
        } else if (listed) {                                              \
            gm_dev_context_relist(&e);                                    \
        }                                                                 \
        return rc;                                                        \
    }

CTX_DESTROY_WRAPPER(cuCtxDestroy)
CTX_DESTROY_WRAPPER(cuCtxDestroy_v2)

/* After a successful release: has the primary context ended? Asked of
 * the driver (nothing ends when it cannot say). */
static bool primary_inactive(CUdevice dev)
{
    unsigned int flags = 0;
    int active = 1;
    if (gm_real.cuDevicePrimaryCtxGetState == NULL)
        return false;
    gm_depth++;
    CUresult rc = gm_real.cuDevicePrimaryCtxGetState(dev, &flags, &active);
    gm_depth--;
    return rc == CUDA_SUCCESS && active == 0;
}

/* Release and reset run under the device's primary lock, so that no
 * retain can make the primary context again between the driver's answer
 * and the list's change. */
#define PRIMARY_END_WRAPPER(name, reset)                                  \
    GM_EXPORT CUresult CUDAAPI name(CUdevice dev)                         \
    {                                                                     \
        GM_NEED_REAL(name);                                               \
        bool on = gm_active();                                            \
        if (on)                                                           \
            primary_lock((int)dev);                                       \
        gm_depth++;                                                       \
        CUresult rc = gm_real.name(dev);                                  \
        gm_depth--;                                                       \
        CUcontext c;                                                      \
        if (on && rc == CUDA_SUCCESS && ((reset) || primary_inactive(dev)) && \
            gm_dev_primary_ended((int)dev, &c)) {                         \
            gm_static_retire((int)dev, c);                                \
            ctx_memory_ended((int)dev);                                   \
        }                                                                 \
        if (on)                                                           \
            gm_ctx_primary_unlock((int)dev);                              \
        return rc;                                                        \
    }

PRIMARY_END_WRAPPER(cuDevicePrimaryCtxRelease, false)
PRIMARY_END_WRAPPER(cuDevicePrimaryCtxRelease_v2, false)
PRIMARY_END_WRAPPER(cuDevicePrimaryCtxReset, true)
PRIMARY_END_WRAPPER(cuDevicePrimaryCtxReset_v2, true)
