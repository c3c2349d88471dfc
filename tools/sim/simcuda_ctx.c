/*
 * tools/sim/simcuda_ctx.c — contexts and streams of the simulated driver:
 * primary contexts (retain/release/reset/state/flags), cuCtxCreate v1-_v4,
 * cuCtxDestroy, the per-thread context stack (set/get/push/pop), the device
 * of a context, synchronisation, and cuStreamCreate/Destroy/Synchronize/
 * GetDevice.
 *
 * Context memory: every live context of a device (an active primary
 * context counts as one, every created context as one) charges
 * SIMCUDA_CONTEXT bytes, returned when it ends. Ending a context
 * (cuCtxDestroy, the primary context's last release, a reset) frees the
 * allocations, arrays and streams made in it, as the real driver does. A
 * reset ends the primary context but keeps its reference count (so later
 * releases still succeed), as a real driver does.
 * Invariants: a created context is registered (SIM_H_CTX) exactly while it
 * lives; a primary context is alive exactly while primary_active is set;
 * context counts, activity and charges change only under the device lock.
 * A stack entry may outlive its context: using it answers
 * CUDA_ERROR_CONTEXT_IS_DESTROYED.
 */
#include "tools/sim/simcuda.h"

#include <stdlib.h>

#define SIM_CTX_STACK 128

/* The calling thread's context stack. Each entry keeps the device and API
 * version the context had when it was made current, so a stale entry can
 * still answer cuCtxGetDevice, as on a real driver. */
struct tls_ent {
    CUcontext ctx;
    int dev;
    int api;
};
static __thread struct tls_ent tls_stack[SIM_CTX_STACK];
static __thread int tls_depth;

/* ---- helpers --------------------------------------------------------------- */

static struct gm_sim_dev *primary_of(CUcontext c)
{
    for (int i = 0; i < gm_sim.cfg.ndev; i++)
        if ((void *)c == (void *)&gm_sim.dev[i].primary)
            return &gm_sim.dev[i];
    return NULL;
}

/* Device and API version of a live context; -1 when it is unknown or gone
 * (*gone set when it is a primary context that is inactive). */
static int ctx_lookup(CUcontext c, int *api, bool *gone)
{
    int dev;
    struct gm_sim_dev *d = primary_of(c);
    *gone = false;
    if (c == NULL)
        return -1;
    if (d != NULL) {
        *api = 2;
        if (atomic_load(&d->primary_active))
            return d->ordinal;
        *gone = true;
        return -1;
    }
    struct gm_sim_ctx *x = gm_sim_reg_find(SIM_H_CTX, (uintptr_t)c, &dev);
    if (x == NULL)
        return -1;
    *api = x->api;
    return dev;
}

int gm_sim_ctx_dev(CUcontext c)
{
    int api;
    bool gone;
    return ctx_lookup(c, &api, &gone);
}

CUresult gm_sim_current(int api, int *dev, const void **ctx)
{
    int cur_api;
    bool gone;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (tls_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext c = tls_stack[tls_depth - 1].ctx;
    int d = ctx_lookup(c, &cur_api, &gone);
    if (d < 0)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;   /* it was alive when made current */
    if (api != 0 && api != cur_api)
        return CUDA_ERROR_INVALID_CONTEXT;
    *dev = d;
    if (ctx != NULL)
        *ctx = c;
    return CUDA_SUCCESS;
}

CUresult gm_sim_stream_dev(CUstream s, int *dev)
{
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return gm_sim_current(0, dev, NULL);
    return gm_sim_reg_find(SIM_H_STREAM, (uintptr_t)s, dev) != NULL
               ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* Every context charges its context memory, as on a real driver. Device
 * locked. */
static CUresult ctx_open(struct gm_sim_dev *d)
{
    if (!gm_sim_charge(d, gm_sim.cfg.context))
        return CUDA_ERROR_OUT_OF_MEMORY;
    d->ctx_bytes += gm_sim.cfg.context;
    d->nctx++;
    gm_sim_publish(d);
    return CUDA_SUCCESS;
}

/* A context goes away: its resources, then its context memory. Device
 * locked. */
static void ctx_close(struct gm_sim_dev *d, const void *ctx)
{
    gm_sim_mem_drop_ctx(d, ctx);
    gm_sim_objs_drop_ctx(d, ctx);
    uint64_t b = d->ctx_bytes < gm_sim.cfg.context ? d->ctx_bytes
                                                  : gm_sim.cfg.context;
    gm_sim_uncharge(d, b);
    d->ctx_bytes -= b;
    d->nctx--;
    gm_sim_publish(d);
}

static void tls_pop_if_top(CUcontext c)
{
    if (tls_depth > 0 && tls_stack[tls_depth - 1].ctx == c)
        tls_depth--;
}

static void tls_set(int i, CUcontext c, int dev, int api)
{
    tls_stack[i].ctx = c;
    tls_stack[i].dev = dev;
    tls_stack[i].api = api;
}

/* ---- primary contexts -------------------------------------------------------- */

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult rc = gm_sim_dev_entry(dev, pctx != NULL);
    if (rc != CUDA_SUCCESS)
        return rc;
    struct gm_sim_dev *d = &gm_sim.dev[dev];
    pthread_mutex_lock(&d->lock);
    if (!atomic_load(&d->primary_active) && (rc = ctx_open(d)) == CUDA_SUCCESS)
        atomic_store(&d->primary_active, true);
    if (rc == CUDA_SUCCESS)
        atomic_fetch_add(&d->primary_refs, 1);
    pthread_mutex_unlock(&d->lock);
    if (rc == CUDA_SUCCESS)
        *pctx = (CUcontext)(void *)&d->primary;
    return rc;
}

/* Release: one reference less; the last one ends the context. Reset: the
 * context ends now (its references stay counted, as on a real driver). */
static CUresult primary_release(CUdevice dev, bool reset)
{
    CUresult rc = gm_sim_dev_entry(dev, true);
    if (rc != CUDA_SUCCESS)
        return rc;
    struct gm_sim_dev *d = &gm_sim.dev[dev];
    pthread_mutex_lock(&d->lock);
    int refs = atomic_load(&d->primary_refs);
    bool end = reset;
    if (!reset) {
        if (refs == 0)
            rc = CUDA_ERROR_INVALID_CONTEXT;
        else
            atomic_store(&d->primary_refs, refs - 1);
        end = refs == 1;
    }
    if (end && atomic_load(&d->primary_active)) {
        atomic_store(&d->primary_active, false);
        ctx_close(d, &d->primary);
    }
    if (reset)
        d->primary_flags = 0;
    pthread_mutex_unlock(&d->lock);
    return rc;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return primary_release(dev, false);
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    return primary_release(dev, false);
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    return primary_release(dev, true);
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    return primary_release(dev, true);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CUresult rc = gm_sim_dev_entry(dev, flags != NULL && active != NULL);
    if (rc != CUDA_SUCCESS)
        return rc;
    struct gm_sim_dev *d = &gm_sim.dev[dev];
    pthread_mutex_lock(&d->lock);
    *flags = d->primary_flags;
    *active = atomic_load(&d->primary_active);
    pthread_mutex_unlock(&d->lock);
    return CUDA_SUCCESS;
}

static CUresult primary_set_flags(CUdevice dev, unsigned int flags)
{
    CUresult rc = gm_sim_dev_entry(dev, true);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
        return CUDA_ERROR_INVALID_VALUE;
    struct gm_sim_dev *d = &gm_sim.dev[dev];
    pthread_mutex_lock(&d->lock);
    d->primary_flags = flags;
    pthread_mutex_unlock(&d->lock);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    return primary_set_flags(dev, flags);
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    return primary_set_flags(dev, flags);
}

/* ---- created contexts ----------------------------------------------------- */

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev, int api)
{
    CUresult rc = gm_sim_dev_entry(dev, pctx != NULL);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (tls_depth == SIM_CTX_STACK)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct gm_sim_ctx *c = calloc(1, sizeof *c);
    if (c == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->dev = dev;
    c->api = api;
    c->flags = flags;
    struct gm_sim_dev *d = &gm_sim.dev[dev];
    pthread_mutex_lock(&d->lock);
    rc = ctx_open(d);
    if (rc == CUDA_SUCCESS && gm_sim_reg_add(SIM_H_CTX, (uintptr_t)c, dev, c) != 0) {
        ctx_close(d, c);
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_unlock(&d->lock);
    if (rc != CUDA_SUCCESS) {
        free(c);
        return rc;
    }
    *pctx = (CUcontext)(void *)c;
    tls_set(tls_depth++, *pctx, dev, api);
    return CUDA_SUCCESS;
}

CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return ctx_create(pctx, flags, dev, 1);
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return ctx_create(pctx, flags, dev, 2);
}

CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                        unsigned int flags, CUdevice dev)
{
    if (numParams < 0 || (numParams > 0 && paramsArray == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    return ctx_create(pctx, flags, dev, 2);
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                        unsigned int flags, CUdevice dev)
{
    if (ctxCreateParams != NULL && ctxCreateParams->numExecAffinityParams < 0)
        return CUDA_ERROR_INVALID_VALUE;
    return ctx_create(pctx, flags, dev, 2);
}

static CUresult ctx_destroy(CUcontext ctx)
{
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (ctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct gm_sim_dev *d;
    if (primary_of(ctx) != NULL)
        return CUDA_ERROR_INVALID_CONTEXT;  /* primary contexts are released, not destroyed */
    struct gm_sim_ctx *c = gm_sim_lock_handle(SIM_H_CTX, (uintptr_t)ctx, &d);
    if (c == NULL)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    gm_sim_reg_del(SIM_H_CTX, (uintptr_t)ctx);
    ctx_close(d, c);
    pthread_mutex_unlock(&d->lock);
    free(c);
    tls_pop_if_top(ctx);
    return CUDA_SUCCESS;
}

CUresult cuCtxDestroy(CUcontext ctx)
{
    return ctx_destroy(ctx);
}

CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    return ctx_destroy(ctx);
}

/* ---- the context stack ----------------------------------------------------- */

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    int api;
    bool gone;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (ctx == NULL) {
        if (tls_depth > 0)
            tls_depth--;
        return CUDA_SUCCESS;
    }
    int dev = ctx_lookup(ctx, &api, &gone);
    if (dev < 0)
        return gone ? CUDA_ERROR_CONTEXT_IS_DESTROYED : CUDA_ERROR_INVALID_CONTEXT;
    if (tls_depth == 0)
        tls_depth = 1;
    tls_set(tls_depth - 1, ctx, dev, api);
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = tls_depth > 0 ? tls_stack[tls_depth - 1].ctx : NULL;
    return CUDA_SUCCESS;
}

static CUresult ctx_push(CUcontext ctx)
{
    int api;
    bool gone;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (ctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    int dev = ctx_lookup(ctx, &api, &gone);
    if (dev < 0)
        return gone ? CUDA_ERROR_CONTEXT_IS_DESTROYED : CUDA_ERROR_INVALID_CONTEXT;
    if (tls_depth == SIM_CTX_STACK)
        return CUDA_ERROR_OUT_OF_MEMORY;
    tls_set(tls_depth++, ctx, dev, api);
    return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext ctx)
{
    return ctx_push(ctx);
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    return ctx_push(ctx);
}

static CUresult ctx_pop(CUcontext *pctx)
{
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (tls_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext c = tls_stack[--tls_depth].ctx;
    if (pctx != NULL)
        *pctx = c;
    return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    return ctx_pop(pctx);
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    return ctx_pop(pctx);
}

/* The device of ctx, or (NULL) of the current context. The current
 * context is not validated: a real driver answers with the device it had. */
static CUresult ctx_get_device(CUdevice *device, CUcontext ctx)
{
    int api;
    bool gone;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ctx == NULL) {
        if (tls_depth == 0)
            return CUDA_ERROR_INVALID_CONTEXT;
        *device = tls_stack[tls_depth - 1].dev;
        return CUDA_SUCCESS;
    }
    int dev = ctx_lookup(ctx, &api, &gone);
    if (dev < 0)
        return gone ? CUDA_ERROR_CONTEXT_IS_DESTROYED : CUDA_ERROR_INVALID_CONTEXT;
    *device = dev;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
    return ctx_get_device(device, NULL);
}

CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    return ctx_get_device(device, ctx);
}

/* A synchronisation point of ctx (NULL: the current context). */
static CUresult ctx_sync(CUcontext ctx)
{
    int dev;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (ctx == NULL) {
        rc = gm_sim_current(0, &dev, NULL);
        if (rc != CUDA_SUCCESS)
            return rc;
    } else if ((dev = gm_sim_ctx_dev(ctx)) < 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    gm_sim_pools_sync(dev);
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
    return ctx_sync(NULL);
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    return ctx_sync(ctx);
}

/* ---- streams ---------------------------------------------------------------- */

static void obj_link(struct gm_sim_dev *d, struct gm_sim_obj *o)
{
    o->prev = NULL;
    o->next = d->objs;
    if (d->objs != NULL)
        d->objs->prev = o;
    d->objs = o;
}

static void obj_unlink(struct gm_sim_dev *d, struct gm_sim_obj *o)
{
    if (o->prev != NULL)
        o->prev->next = o->next;
    else
        d->objs = o->next;
    if (o->next != NULL)
        o->next->prev = o->prev;
}

CUresult gm_sim_obj_add(struct gm_sim_dev *d, struct gm_sim_obj *o)
{
    if (gm_sim_reg_add(o->kind, (uintptr_t)o, d->ordinal, o) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    obj_link(d, o);
    return CUDA_SUCCESS;
}

void gm_sim_obj_del(struct gm_sim_dev *d, struct gm_sim_obj *o)
{
    gm_sim_reg_del(o->kind, (uintptr_t)o);
    if (o->kind == SIM_H_ARRAY || o->kind == SIM_H_MIPMAP) {
        gm_sim_uncharge(d, o->bytes);
        d->array_bytes -= o->bytes;
    }
    obj_unlink(d, o);
    free(o);
}

void gm_sim_objs_drop_ctx(struct gm_sim_dev *d, const void *ctx)
{
    struct gm_sim_obj *o = d->objs;
    while (o != NULL) {
        struct gm_sim_obj *next = o->next;
        if (o->ctx == ctx)
            gm_sim_obj_del(d, o);
        o = next;
    }
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    int dev;
    const void *ctx;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (phStream == NULL || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    rc = gm_sim_current(0, &dev, &ctx);
    if (rc != CUDA_SUCCESS)
        return rc;
    struct gm_sim_obj *o = calloc(1, sizeof *o);
    if (o == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    o->kind = SIM_H_STREAM;
    o->dev = dev;
    o->ctx = ctx;
    o->flags = Flags;
    struct gm_sim_dev *d = &gm_sim.dev[dev];
    pthread_mutex_lock(&d->lock);
    rc = gm_sim_obj_add(d, o);
    pthread_mutex_unlock(&d->lock);
    if (rc != CUDA_SUCCESS) {
        free(o);
        return rc;
    }
    *phStream = (CUstream)(void *)o;
    return CUDA_SUCCESS;
}

static CUresult stream_destroy(CUstream s)
{
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    struct gm_sim_dev *d;
    struct gm_sim_obj *o = gm_sim_lock_handle(SIM_H_STREAM, (uintptr_t)s, &d);
    if (o == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    gm_sim_obj_del(d, o);
    pthread_mutex_unlock(&d->lock);
    return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream hStream)
{
    return stream_destroy(hStream);
}

CUresult cuStreamDestroy_v2(CUstream hStream)
{
    return stream_destroy(hStream);
}

static CUresult stream_sync(CUstream s)
{
    int dev;
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = gm_sim_stream_dev(s, &dev);
    if (rc == CUDA_SUCCESS) {
        atomic_fetch_add_explicit(&gm_sim.stream_syncs, 1, memory_order_relaxed);
        gm_sim_pools_sync(dev);
    }
    return rc;
}

CUresult cuStreamSynchronize(CUstream hStream)
{
    return stream_sync(hStream);
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    return stream_sync(hStream);
}

/* A named stream's device is the one of the context it was made in; the
 * default streams' is the current context's. */
static CUresult stream_device(CUstream s, CUdevice *device)
{
    int dev = -1;
    CUresult rc = gm_sim_ready();
    if (rc == CUDA_SUCCESS)
        rc = device != NULL ? gm_sim_stream_dev(s, &dev)
                            : CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        *device = dev;
    return rc;
}

CUresult cuStreamGetDevice(CUstream hStream, CUdevice *device)
{
    return stream_device(hStream, device);
}

CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice *device)
{
    return stream_device(hStream, device);
}
