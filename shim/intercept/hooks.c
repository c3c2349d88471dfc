/*
 * shim/intercept/hooks.c — wrappers of the device-pointer allocation family:
 * cuMemAlloc(_v2), cuMemAllocPitch(_v2), cuMemAllocManaged,
 * cuMemAllocAsync(_ptsz), cuMemAllocFromPoolAsync(_ptsz), and their frees.
 *
 * Each wrapper: guard (initialised, not nested, valid arguments) ->
 * reserve against the budget of the device that serves the request (the
 * current context's; the stream's for cuMemAllocAsync, the pool's for
 * cuMemAllocFromPoolAsync) -> real call (timed, guard raised) -> commit,
 * or roll back on failure. Frees take the entry out of the table first
 * (so a concurrent allocation that gets the same address cannot collide
 * with it), call the driver, and release the charge only on success (the
 * entry goes back on failure). Invalid arguments and calls
 * for no device (no current context, an unknown stream) go to the driver
 * untouched, so the program sees the driver's own error.
 */
#include "shim/admit/oomsnap.h"
#include "shim/intercept/lifecycle.h"
#include "shim/telemetry/abi.h"
#include "shim/admit/admit.h"
#include "shim/account/commit.h"
#include "shim/admit/arena_hooks.h"
#include "shim/account/grouphook.h"
#include "shim/account/pools.h"
#include "shim/admit/staged.h"
#include "shim/driver/real.h"
#include "shim/account/device.h"
#include "shim/account/state.h"
#include "shim/record/record.h"


/* Which real function an allocation goes to. */
enum kind { K_V2, K_V1, K_MANAGED, K_ASYNC, K_ASYNC_PTSZ, K_POOL, K_POOL_PTSZ };

struct req {
    enum kind kind;
    unsigned api;
    CUdeviceptr *out;        /* 64-bit result (v1: a temporary) */
    CUdeviceptr_v1 *out_v1;  /* v1 only */
    uint64_t size;
    unsigned flags;          /* managed: attach flags */
    CUstream stream;
    CUmemoryPool pool;
};

/* Inlined into each wrapper with a constant kind: the switch folds away.
 * sure: the real function is known to be there. The plain path's wrapper
 * tested it after gm_plain_now, that is after initialisation had
 * finished, and gm_real's entries are never cleared after that; on the
 * full path the wrapper's own initialisation may still have replaced the
 * entry it tested (GM_NEED_REAL), so the call tests it again. */
#define REAL_OR_NOT_FOUND(sure, fn, args)                                 \
    ((sure) || gm_real.fn != NULL ? gm_real.fn args : CUDA_ERROR_NOT_FOUND)

static inline __attribute__((always_inline)) CUresult
call_real(enum kind k, const struct req *r, CUdeviceptr *p, bool sure)
{
    CUresult rc = CUDA_ERROR_NOT_FOUND;
    gm_depth++;
    switch (k) {
    case K_V2:
        rc = REAL_OR_NOT_FOUND(sure, cuMemAlloc_v2, (p, (size_t)r->size));
        break;
    case K_V1: {
        CUdeviceptr_v1 v = 0;
        rc = REAL_OR_NOT_FOUND(sure, cuMemAlloc, (&v, (unsigned)r->size));
        *p = v;
        break;
    }
    case K_MANAGED:
        rc = REAL_OR_NOT_FOUND(sure, cuMemAllocManaged,
                               (p, (size_t)r->size, r->flags));
        break;
    case K_ASYNC:
        rc = REAL_OR_NOT_FOUND(sure, cuMemAllocAsync,
                               (p, (size_t)r->size, r->stream));
        break;
    case K_ASYNC_PTSZ:
        rc = REAL_OR_NOT_FOUND(sure, cuMemAllocAsync_ptsz,
                               (p, (size_t)r->size, r->stream));
        break;
    case K_POOL:
        rc = REAL_OR_NOT_FOUND(sure, cuMemAllocFromPoolAsync,
                               (p, (size_t)r->size, r->pool, r->stream));
        break;
    case K_POOL_PTSZ:
        rc = REAL_OR_NOT_FOUND(sure, cuMemAllocFromPoolAsync_ptsz,
                               (p, (size_t)r->size, r->pool, r->stream));
        break;
    }
    gm_depth--;
    return rc;
}

static CUresult free_real_any(enum kind k, CUstream stream, CUdeviceptr p);

/* A request the budget cannot count (GM_ADMIT_DRIVER): the driver's own
 * answer, uncharged; should the driver ever serve it, it is given back
 * and refused. It takes the request's fields by value: passing the
 * request's address would keep the hot path's request in memory. */
static __attribute__((noinline, cold)) CUresult
uncountable(enum kind k, uint64_t size, unsigned flags, CUstream stream,
            CUmemoryPool pool)
{
    struct req r = { .kind = k, .size = size, .flags = flags,
                     .stream = stream, .pool = pool };
    CUdeviceptr p = 0;
    CUresult rc = call_real(k, &r, &p, false);
    if (rc != CUDA_SUCCESS)
        return rc;
    free_real_any(k, stream, p);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

/* Refused but spillable: serve as managed memory, recorded, not charged. */
static __attribute__((noinline, cold)) CUresult
spill(int dev, struct gm_dev *d, uint64_t size, unsigned api, CUdeviceptr *p)
{
    if (gm_real.cuMemAllocManaged == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    gm_depth++;
    CUresult rc = gm_real.cuMemAllocManaged(p, (size_t)size,
                                            CU_MEM_ATTACH_GLOBAL);
    gm_depth--;
    if (rc != CUDA_SUCCESS)
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* Recorded (its free must find it) but published as its spill event
     * only: it is no allocation of the device (no count, latency, live
     * bytes or fragmentation interval; docs/metrics.md). */
    struct gm_alloc a = {
        .key = *p, .size = size, .dev = (uint8_t)dev, .ns = GM_NS_PTR,
        .api = (uint8_t)api, .flags = GM_AF_SPILL | GM_AF_UNCHARGED,
        .refs = 1,
    };
    gm_acct_commit_as(d, &a, false, 0, 0, false);
    return CUDA_SUCCESS;
}

/* Undo an async allocation that grew its pool past the limit: free it on
 * its stream, trim the pool back, recharge. The request's kind and stream
 * by value (cold: its address would keep the hot path's request in
 * memory). */
static __attribute__((noinline, cold)) void
async_undo(int dev, struct gm_dev *d, enum kind k, CUstream stream,
           CUdeviceptr p, struct gm_pool *pool)
{
    gm_depth++;
    if (k == K_ASYNC_PTSZ || k == K_POOL_PTSZ) {
        if (gm_real.cuMemFreeAsync_ptsz)
            gm_real.cuMemFreeAsync_ptsz(p, stream);
    } else if (gm_real.cuMemFreeAsync) {
        gm_real.cuMemFreeAsync(p, stream);
    }
    gm_depth--;
    gm_pool_trim_device(dev, d);
    gm_pool_refresh(dev, d, pool);
}

/* Stream-ordered allocation: the device, and its group, are charged what
 * the pool holds. A provisional reservation of the request (on the
 * budget, and a hold on the group) keeps concurrent admissions from
 * passing a limit together; a request that does not fit may still be
 * served from memory the pool already holds (and both already count).
 * After the driver answered, the pool's growth replaces the holds. */
static inline __attribute__((always_inline)) CUresult
alloc_async(enum kind k, int dev, struct gm_dev *d, const struct req *r,
            struct gm_pool *pool, bool plain)
{
    uint64_t used;
    uint64_t prov = r->size, ghold = r->size;
    if (!plain)
        gm_staged_poll();
    if (!gm_budget_hold(&d->budget, prov, &used)) {
        prov = 0;
        if (gm_pool_idle(pool) < r->size) {
            enum gm_admit ad = gm_admit_reserve_as(dev, d, r->size, r->api,
                                                   false, plain);
            if (ad == GM_ADMIT_DRIVER)
                return uncountable(k, r->size, r->flags, r->stream, r->pool);
            if (ad != GM_ADMIT_OK)
                return CUDA_ERROR_OUT_OF_MEMORY;
            prov = r->size; /* also on the group */
        } else if (!plain && !gm_grp_take(d, r->size)) {
            ghold = 0; /* served from what the pool, and group, hold */
        }
    } else if (!plain && !gm_grp_take(d, r->size)) {
        if (gm_pool_idle(pool) >= r->size) {
            ghold = 0;
        } else {
            gm_budget_release(&d->budget, prov);
            enum gm_admit ad = gm_admit_reserve_as(dev, d, r->size, r->api,
                                                   false, plain);
            if (ad == GM_ADMIT_DRIVER)
                return uncountable(k, r->size, r->flags, r->stream, r->pool);
            if (ad != GM_ADMIT_OK)
                return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    CUdeviceptr p = 0;
    int clk = gm_hook_clock;
    uint64_t t0, t1;
    CUresult rc;
    GM_HOOK_TIMED(clk, t0, t1, rc = call_real(k, r, &p, plain));
    if (rc != CUDA_SUCCESS) {
        gm_budget_release(&d->budget, prov);
        if (!plain)
            gm_grp_give(d, ghold);
        return rc;
    }
    /* The pool's growth replaces the holds (on the group through the
     * settle, shim/account/pools.c). */
    gm_pool_settle(dev, d, pool, prov, p, r->size);
    bool group_over = false;
    if (!plain && GM_UNLIKELY(d->gdev1 != 0)) { /* both group steps */
        if (ghold)
            gm_grp_give_slow(d, ghold);
        group_over = gm_grp_over(d);
    }
    uint64_t limit = gm_budget_limit(&d->budget);
    if ((limit != 0 && gm_budget_used(&d->budget) > limit &&
         gm_st.policy.on_oom != GM_OOM_WARN) || GM_UNLIKELY(group_over)) {
        async_undo(dev, d, k, r->stream, p, pool);
        gm_admit_refused(d, (unsigned)dev, r->api, r->size,
                      gm_budget_used(&d->budget), limit);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *r->out = p;
    gm_acct_commit_fields(d, p, r->size,
                          (uint64_t)(uintptr_t)gm_pool_handle(pool),
                          gm_acct_meta((unsigned)dev, GM_NS_PTR, r->api,
                                       GM_AF_ASYNC | GM_AF_UNCHARGED, 1),
                          clk != 0, t0, t1, plain);
    return CUDA_SUCCESS;
}

/* Static mode, on_oom=warn: a cuMemAlloc_v2 the arena had no block for,
 * its size already held past the limit (gm_admit_arena_full), served by
 * the driver outside the arena and committed as in grow mode (its free
 * finds it in the table and gives the charge back). */
static CUresult outside_arena(int dev, struct gm_dev *d, const struct req *r,
                              CUdeviceptr *p)
{
    int clk = gm_hook_clock;
    uint64_t t0, t1;
    CUresult rc;
    GM_HOOK_TIMED(clk, t0, t1, rc = call_real(K_V2, r, p, false));
    if (rc != CUDA_SUCCESS) {
        gm_acct_rollback(d, r->size);
        return rc;
    }
    gm_acct_commit_fields(d, *p, r->size, 0,
                          gm_acct_meta((unsigned)dev, GM_NS_PTR, r->api, 0, 1),
                          clk != 0, t0, t1, false);
    return CUDA_SUCCESS;
}

/* Static mode: a cuMemAlloc_v2 for a device with an arena, served from
 * it or, when it has no block, as GPUMEM_ON_OOM says (arena_hooks.h).
 * False when the device has no arena after all (retired): the caller
 * admits it as in grow mode. */
static __attribute__((noinline, cold)) bool
arena_alloc(int dev, struct gm_dev *d, const struct req *r, CUresult *rc)
{
    CUdeviceptr p = 0;
    switch (gm_arena_try_alloc(dev, d, r->size, r->api, &p, rc)) {
    case GM_ARENA_NONE:
        return false;
    case GM_ARENA_DONE:
        break;
    case GM_ARENA_SPILL:
        *rc = spill(dev, d, r->size, r->api, &p);
        break;
    case GM_ARENA_OVER:
        *rc = outside_arena(dev, d, r, &p);
        break;
    }
    if (*rc == CUDA_SUCCESS)
        *r->out = p;
    return true;
}

/* The device (*dev) a request is served by, and so charged to: CUDA
 * serves cuMemAllocFromPoolAsync on the pool's device and
 * cuMemAllocAsync from the current pool of the stream's device; the
 * other allocations are the current context's. */
static inline __attribute__((always_inline)) struct gm_dev *
req_device(enum kind k, const struct req *r, int *dev)
{
    if (k >= K_POOL) {
        *dev = gm_pool_device(r->pool, r->stream);
        return gm_dev_get(*dev);
    }
    if (k >= K_ASYNC)
        return gm_dev_of_stream(r->stream, dev);
    return gm_dev_current(dev);
}

/* plain: the wrapper took the plain path (gm_plain_now); a constant in
 * each inlined copy, so that the feature checks it rules out fold away. */
static inline __attribute__((always_inline)) CUresult
alloc_ptr(enum kind k, const struct req *r, bool plain)
{
    int dev;
    struct gm_dev *d = req_device(k, r, &dev);
    CUdeviceptr p = 0;
    if (d == NULL) { /* no device (context, stream): the driver says */
        CUresult rc = call_real(k, r, &p, plain);
        if (rc == CUDA_SUCCESS)
            *r->out = p;
        return rc;
    }
    if (k >= K_ASYNC) {
        struct gm_pool *pool = gm_pool_for(dev, k >= K_POOL ? r->pool
                                                             : NULL);
        if (pool != NULL)
            return alloc_async(k, dev, d, r, pool, plain);
    }
    bool spillable = k == K_V2;
    if (k == K_V2 && !plain) { /* v1's 32-bit pointers cannot reach it */
        CUresult rc;
        if (GM_UNLIKELY(__atomic_load_n(&d->arena, __ATOMIC_ACQUIRE) != NULL) &&
            arena_alloc(dev, d, r, &rc))
            return rc;
    }
    enum gm_admit ad = gm_admit_reserve_as(dev, d, r->size, r->api, spillable,
                                           plain);
    switch (ad) {
    case GM_ADMIT_REFUSED:
        return CUDA_ERROR_OUT_OF_MEMORY;
    case GM_ADMIT_DRIVER:
        return uncountable(k, r->size, r->flags, r->stream, r->pool);
    case GM_ADMIT_SPILL: {
        CUresult rc = spill(dev, d, r->size, r->api, &p);
        if (rc == CUDA_SUCCESS)
            *r->out = p;
        return rc;
    }
    case GM_ADMIT_OK:
        break;
    }
    int clk = gm_hook_clock;
    uint64_t t0, t1;
    CUresult rc;
    GM_HOOK_TIMED(clk, t0, t1, rc = call_real(k, r, &p, plain));
    if (rc != CUDA_SUCCESS) {
        gm_acct_rollback(d, r->size);
        return rc;
    }
    *r->out = p;
    gm_acct_commit_fields(d, p, r->size, 0,
                          gm_acct_meta((unsigned)dev, GM_NS_PTR, r->api,
                                       k >= K_ASYNC ? GM_AF_ASYNC : 0, 1),
                          clk != 0, t0, t1, plain);
    return rc;
}

static inline __attribute__((always_inline)) CUresult
mem_alloc(CUdeviceptr *dptr, size_t bytesize, bool plain)
{
    struct req r = { .kind = K_V2, .api = GM_API_MEM_ALLOC, .out = dptr,
                     .size = bytesize };
    CUresult rc = alloc_ptr(K_V2, &r, plain);
    if (!plain)
        GM_REC(GM_RO_ALLOC, 0, gm_current_device(), bytesize,
               rc == CUDA_SUCCESS ? *dptr : 0, (uintptr_t)0, (uintptr_t)0, rc);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    /* The plain path tests its real function after gm_plain_now, so
     * after initialisation (call_real's "sure"). */
    if (GM_LIKELY(gm_plain_now()) && dptr != NULL && bytesize != 0 &&
        gm_real.cuMemAlloc_v2 != NULL)
        return mem_alloc(dptr, bytesize, true);
    GM_NEED_REAL(cuMemAlloc_v2);
    if (!gm_active() || dptr == NULL || bytesize == 0)
        return gm_real.cuMemAlloc_v2(dptr, bytesize);
    return mem_alloc(dptr, bytesize, false);
}

GM_EXPORT CUresult CUDAAPI cuMemAlloc(CUdeviceptr_v1 *dptr,
                                      unsigned int bytesize)
{
    GM_NEED_REAL(cuMemAlloc);
    if (!gm_active() || dptr == NULL || bytesize == 0)
        return gm_real.cuMemAlloc(dptr, bytesize);
    CUdeviceptr p = 0;
    struct req r = { .kind = K_V1, .api = GM_API_MEM_ALLOC, .out = &p,
                     .size = bytesize };
    CUresult rc = alloc_ptr(K_V1, &r, false);
    if (rc == CUDA_SUCCESS)
        *dptr = (CUdeviceptr_v1)p;
    GM_REC(GM_RO_ALLOC, GM_RECF_V1, gm_current_device(), bytesize,
           rc == CUDA_SUCCESS ? p : 0, 0, 0, rc);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr,
                                             size_t bytesize,
                                             unsigned int flags)
{
    GM_NEED_REAL(cuMemAllocManaged);
    if (!gm_active() || dptr == NULL || bytesize == 0)
        return gm_real.cuMemAllocManaged(dptr, bytesize, flags);
    struct req r = { .kind = K_MANAGED, .api = GM_API_MEM_ALLOC_MANAGED,
                     .out = dptr, .size = bytesize, .flags = flags };
    CUresult rc = alloc_ptr(K_MANAGED, &r, false);
    GM_REC(GM_RO_MANAGED, 0, gm_current_device(), bytesize,
           rc == CUDA_SUCCESS ? *dptr : 0, (uintptr_t)flags, (uintptr_t)0, rc);
    return rc;
}

/* The stream-ordered allocations (k: K_ASYNC, K_ASYNC_PTSZ, K_POOL,
 * K_POOL_PTSZ, a constant in each wrapper), recorded unless plain. */
static inline __attribute__((always_inline)) CUresult
stream_alloc(enum kind k, CUdeviceptr *dptr, size_t bytesize,
             CUmemoryPool pool, CUstream hStream, bool plain)
{
    bool from_pool = k == K_POOL || k == K_POOL_PTSZ;
    struct req r = { .kind = k,
                     .api = from_pool ? GM_API_MEM_ALLOC_FROM_POOL
                                      : GM_API_MEM_ALLOC_ASYNC,
                     .out = dptr, .size = bytesize, .stream = hStream,
                     .pool = pool };
    CUresult rc = alloc_ptr(k, &r, plain);
    if (!plain)
        GM_REC(from_pool ? GM_RO_POOL_ALLOC : GM_RO_ASYNC,
               k == K_ASYNC_PTSZ || k == K_POOL_PTSZ ? GM_RECF_PTSZ : 0,
               gm_current_device(), bytesize, rc == CUDA_SUCCESS ? *dptr : 0,
               (uintptr_t)hStream, (uintptr_t)pool, rc);
    return rc;
}

/* Each stream-ordered wrapper (fn: its real function's name, args: its
 * arguments): the plain path (its real function tested after
 * gm_plain_now, as in cuMemAlloc_v2), else the full one, else the
 * driver's own. */
#define STREAM_ALLOC(fn, k, dptr, size, pool, s, args)                    \
    do {                                                                  \
        if (GM_LIKELY(gm_plain_now()) && (dptr) != NULL && (size) != 0 && \
            gm_real.fn != NULL)                                           \
            return stream_alloc(k, dptr, size, pool, s, true);            \
        GM_NEED_REAL(fn);                                                 \
        if (!gm_active() || (dptr) == NULL || (size) == 0)                \
            return gm_real.fn args;                                       \
        return stream_alloc(k, dptr, size, pool, s, false);               \
    } while (0)

GM_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize,
                                           CUstream hStream)
{
    STREAM_ALLOC(cuMemAllocAsync, K_ASYNC, dptr, bytesize, NULL, hStream,
                 (dptr, bytesize, hStream));
}

GM_EXPORT CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr,
                                                size_t bytesize,
                                                CUstream hStream)
{
    STREAM_ALLOC(cuMemAllocAsync_ptsz, K_ASYNC_PTSZ, dptr, bytesize, NULL,
                 hStream, (dptr, bytesize, hStream));
}

GM_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr,
                                                   size_t bytesize,
                                                   CUmemoryPool pool,
                                                   CUstream hStream)
{
    STREAM_ALLOC(cuMemAllocFromPoolAsync, K_POOL, dptr, bytesize, pool,
                 hStream, (dptr, bytesize, pool, hStream));
}

GM_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr,
                                                        size_t bytesize,
                                                        CUmemoryPool pool,
                                                        CUstream hStream)
{
    STREAM_ALLOC(cuMemAllocFromPoolAsync_ptsz, K_POOL_PTSZ, dptr, bytesize,
                 pool, hStream, (dptr, bytesize, pool, hStream));
}

/* ---- pitch ------------------------------------------------------------ */

static CUresult pitch_common(CUdeviceptr *dptr, size_t *pitch, size_t width,
                             size_t height, unsigned elem, int v1)
{
    int dev = gm_current_device();
    struct gm_dev *d = gm_dev_get(dev);
    bool held = false; /* static mode, on_oom=warn: the estimate is held */
    if (!v1 && d != NULL &&
        GM_UNLIKELY(__atomic_load_n(&d->arena, __ATOMIC_ACQUIRE) != NULL) &&
        (elem == 4 || elem == 8 || elem == 16)) {
        /* Static mode: rows padded to 512 bytes, served from the arena. */
        uint64_t pw = ((uint64_t)width + 511u) & ~(uint64_t)511u;
        CUdeviceptr p = 0;
        CUresult rc;
        enum gm_arena_res got = height <= UINT64_MAX / pw
            ? gm_arena_try_alloc(dev, d, pw * height, GM_API_MEM_ALLOC_PITCH,
                                 &p, &rc)
            : GM_ARENA_NONE;
        switch (got) {
        case GM_ARENA_NONE:
            break;
        case GM_ARENA_SPILL: /* rows padded as in the arena */
            rc = spill(dev, d, pw * height, GM_API_MEM_ALLOC_PITCH, &p);
            /* fall through */
        case GM_ARENA_DONE:
            if (rc == CUDA_SUCCESS) {
                *dptr = p;
                *pitch = (size_t)pw;
            }
            return rc;
        case GM_ARENA_OVER: /* held past the limit: the driver's, below */
            held = true;
            break;
        }
    }
    uint64_t rw = ((uint64_t)width + 511u) & ~(uint64_t)511u;
    uint64_t est = height != 0 && rw > UINT64_MAX / height ? 0 : rw * height;
    CUdeviceptr p = 0;
    size_t pp = 0;
    CUresult rc;
    bool uncounted = false; /* GM_ADMIT_DRIVER: the driver answers */
    if (d == NULL || est == 0) {
        d = NULL;
    } else if (!held) {
        enum gm_admit ad = gm_admit_reserve(dev, d, est,
                                            GM_API_MEM_ALLOC_PITCH, !v1);
        switch (ad) {
        case GM_ADMIT_OK:
            break;
        case GM_ADMIT_SPILL: {
            /* Managed memory with rows padded to 512 bytes. */
            CUresult src = spill(dev, d, est, GM_API_MEM_ALLOC_PITCH, &p);
            if (src == CUDA_SUCCESS) {
                *dptr = p;
                *pitch = (size_t)rw;
            }
            return src;
        }
        case GM_ADMIT_DRIVER: /* used + est would wrap the count */
            uncounted = true;
            d = NULL;
            break;
        case GM_ADMIT_REFUSED:
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    uint64_t t0 = gm_hook_ticks();
    gm_depth++;
    if (v1) {
        CUdeviceptr_v1 q = 0;
        unsigned int qp = 0;
        rc = gm_real.cuMemAllocPitch(&q, &qp, (unsigned)width,
                                     (unsigned)height, elem);
        p = q;
        pp = qp;
    } else {
        rc = gm_real.cuMemAllocPitch_v2(&p, &pp, width, height, elem);
    }
    gm_depth--;
    uint64_t t1 = gm_hook_ticks();
    if (d == NULL) {
        if (rc == CUDA_SUCCESS && GM_UNLIKELY(uncounted)) {
            /* served although uncountable: give it back, refuse */
            gm_depth++;
            if (v1)
                gm_real.cuMemFree((CUdeviceptr_v1)p);
            else
                gm_real.cuMemFree_v2(p);
            gm_depth--;
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        if (rc == CUDA_SUCCESS) {
            *dptr = p;
            *pitch = pp;
        }
        return rc;
    }
    if (rc != CUDA_SUCCESS) {
        gm_acct_rollback(d, est);
        return rc;
    }
    uint64_t actual = (uint64_t)pp * height;
    if (!gm_admit_adjust(d, est, actual)) {
        gm_depth++;
        if (v1)
            gm_real.cuMemFree((CUdeviceptr_v1)p);
        else
            gm_real.cuMemFree_v2(p);
        gm_depth--;
        gm_acct_rollback(d, est);
        gm_admit_refused(d, (unsigned)dev, GM_API_MEM_ALLOC_PITCH,
                      actual, gm_budget_used(&d->budget),
                      gm_budget_limit(&d->budget));
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = p;
    *pitch = pp;
    gm_acct_commit(dev, d, GM_NS_PTR, p, actual, GM_API_MEM_ALLOC_PITCH, 0,
                   t0, t1);
    return CUDA_SUCCESS;
}

GM_EXPORT CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr,
                                              size_t *pPitch,
                                              size_t WidthInBytes,
                                              size_t Height,
                                              unsigned int ElementSizeBytes)
{
    GM_NEED_REAL(cuMemAllocPitch_v2);
    if (!gm_active() || dptr == NULL || pPitch == NULL || WidthInBytes == 0 ||
        Height == 0)
        return gm_real.cuMemAllocPitch_v2(dptr, pPitch, WidthInBytes, Height,
                                          ElementSizeBytes);
    CUresult rc = pitch_common(dptr, pPitch, WidthInBytes, Height,
                               ElementSizeBytes, 0);
    GM_REC(GM_RO_PITCH, 0, gm_current_device(),
           rc == CUDA_SUCCESS ? (uint64_t)*pPitch * Height : 0,
           rc == CUDA_SUCCESS ? *dptr : 0, WidthInBytes,
           (uint64_t)Height | (uint64_t)ElementSizeBytes << 48, rc);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr_v1 *dptr,
                                           unsigned int *pPitch,
                                           unsigned int WidthInBytes,
                                           unsigned int Height,
                                           unsigned int ElementSizeBytes)
{
    GM_NEED_REAL(cuMemAllocPitch);
    if (!gm_active() || dptr == NULL || pPitch == NULL || WidthInBytes == 0 ||
        Height == 0 || gm_real.cuMemFree == NULL)
        return gm_real.cuMemAllocPitch(dptr, pPitch, WidthInBytes, Height,
                                       ElementSizeBytes);
    CUdeviceptr p = 0;
    size_t pp = 0;
    CUresult rc = pitch_common(&p, &pp, WidthInBytes, Height,
                               ElementSizeBytes, 1);
    if (rc == CUDA_SUCCESS) {
        *dptr = (CUdeviceptr_v1)p;
        *pPitch = (unsigned int)pp;
    }
    GM_REC(GM_RO_PITCH, GM_RECF_V1, gm_current_device(),
           rc == CUDA_SUCCESS ? (uint64_t)pp * Height : 0,
           rc == CUDA_SUCCESS ? p : 0, WidthInBytes,
           (uint64_t)Height | (uint64_t)ElementSizeBytes << 48, rc);
    return rc;
}

/* ---- frees ------------------------------------------------------------ */

/* A free the program made (not one of ours, not of NULL) into the
 * recording (shim/record/record.h). */
#define GM_REC_FREE(op, fl, p, s, rc)                                     \
    do {                                                                  \
        if (GM_UNLIKELY(__atomic_load_n(&gm_rec_on, __ATOMIC_RELAXED)) && \
            gm_depth == 0 && (p) != 0)                                    \
            gm_rec_put((op), (fl), gm_current_device(), 0, (uint64_t)(p), \
                       (uint64_t)(uintptr_t)(s), 0, (uint32_t)(rc));      \
    } while (0)

enum fkind { F_V2, F_V1, F_ASYNC, F_ASYNC_PTSZ };

static inline __attribute__((always_inline)) CUresult
free_real(enum fkind k, CUdeviceptr p, CUstream s)
{
    CUresult rc = CUDA_ERROR_NOT_FOUND;
    gm_depth++;
    switch (k) {
    case F_V2:
        if (gm_real.cuMemFree_v2)
            rc = gm_real.cuMemFree_v2(p);
        break;
    case F_V1:
        if (gm_real.cuMemFree)
            rc = gm_real.cuMemFree((CUdeviceptr_v1)p);
        break;
    case F_ASYNC:
        if (gm_real.cuMemFreeAsync)
            rc = gm_real.cuMemFreeAsync(p, s);
        break;
    case F_ASYNC_PTSZ:
        if (gm_real.cuMemFreeAsync_ptsz)
            rc = gm_real.cuMemFreeAsync_ptsz(p, s);
        break;
    }
    gm_depth--;
    return rc;
}

static CUresult free_real_any(enum kind k, CUstream stream, CUdeviceptr p)
{
    return free_real(k >= K_ASYNC ? F_ASYNC : k == K_V1 ? F_V1 : F_V2, p,
                     stream);
}

/* Wait for the work queued on the stream of a stream-ordered free. */
static CUresult stream_sync_real(enum fkind k, CUstream s)
{
    CUresult rc = CUDA_ERROR_NOT_FOUND;
    gm_depth++;
    if (k == F_ASYNC_PTSZ && gm_real.cuStreamSynchronize_ptsz)
        rc = gm_real.cuStreamSynchronize_ptsz(s);
    else if (k == F_ASYNC && gm_real.cuStreamSynchronize)
        rc = gm_real.cuStreamSynchronize(s);
    gm_depth--;
    return rc;
}

/* Static mode: a stream-ordered free of an arena block. The arena may
 * hand the block out again at once (as after cuMemFree, which is
 * synchronous), while cuMemFreeAsync promises that the work queued on its
 * stream before it still sees the block: that stream is synchronised
 * first (its error, if any, is the free's, and the block stays). False
 * when `p` is in no arena. */
static __attribute__((noinline, cold)) bool
arena_free_async(enum fkind k, unsigned api, CUdeviceptr p, CUstream s,
                 CUresult *rc)
{
    if (!gm_arena_holds(p))
        return false;
    *rc = stream_sync_real(k, s);
    return *rc != CUDA_SUCCESS || gm_arena_try_free(p, api, rc);
}

static inline __attribute__((always_inline)) CUresult
free_ptr(enum fkind k, unsigned api, CUdeviceptr p, CUstream s, bool plain)
{
    /* The plain path's wrapper has tested gm_plain_now() and p. */
    if (!plain && (!gm_active() || p == 0))
        return free_real(k, p, s);
    /* Static mode: an arena block goes back to its arena. */
    if ((k == F_V2 || k == F_V1) && !plain) {
        CUresult rc;
        if (GM_UNLIKELY(atomic_load_explicit(&gm_arena_bits,
                                             memory_order_relaxed) != 0) &&
            gm_arena_try_free(p, api, &rc))
            return rc;
    }
    if ((k == F_ASYNC || k == F_ASYNC_PTSZ) && !plain &&
        GM_UNLIKELY(atomic_load_explicit(&gm_arena_bits,
                                         memory_order_relaxed) != 0)) {
        CUresult rc;
        if (arena_free_async(k, api, p, s, &rc))
            return rc;
    }
    struct gm_alloc a;
    int clk = gm_hook_clock;
    bool known = gm_track_remove(GM_NS_PTR, p, &a);
    uint64_t t0, t1;
    CUresult rc;
    GM_HOOK_TIMED(clk, t0, t1, rc = free_real(k, p, s));
    if (GM_UNLIKELY(rc != CUDA_SUCCESS)) {
        if (known)
            gm_track_insert(&a, NULL);
        return rc;
    }
    if (known) {
        gm_acct_released_as(&a, api, clk != 0, t0, t1, plain);
        /* A pool gives memory back only at a synchronisation point:
         * refresh it then, not now. */
        if (a.aux != 0)
            gm_pool_freed(a.aux);
    }
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
    if (GM_LIKELY(gm_plain_now()) && dptr != 0) /* no recording, ... */
        return free_ptr(F_V2, GM_API_MEM_FREE, dptr, NULL, true);
    CUresult rc = free_ptr(F_V2, GM_API_MEM_FREE, dptr, NULL, false);
    GM_REC_FREE(GM_RO_FREE, 0, dptr, 0, rc);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuMemFree(CUdeviceptr_v1 dptr)
{
    CUresult rc = free_ptr(F_V1, GM_API_MEM_FREE, dptr, NULL, false);
    GM_REC_FREE(GM_RO_FREE, GM_RECF_V1, dptr, 0, rc);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    if (GM_LIKELY(gm_plain_now()) && dptr != 0)
        return free_ptr(F_ASYNC, GM_API_MEM_FREE_ASYNC, dptr, hStream, true);
    CUresult rc = free_ptr(F_ASYNC, GM_API_MEM_FREE_ASYNC, dptr, hStream,
                           false);
    GM_REC_FREE(GM_RO_FREE_ASYNC, 0, dptr, hStream, rc);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr,
                                               CUstream hStream)
{
    if (GM_LIKELY(gm_plain_now()) && dptr != 0)
        return free_ptr(F_ASYNC_PTSZ, GM_API_MEM_FREE_ASYNC, dptr, hStream,
                        true);
    CUresult rc = free_ptr(F_ASYNC_PTSZ, GM_API_MEM_FREE_ASYNC, dptr,
                           hStream, false);
    GM_REC_FREE(GM_RO_FREE_ASYNC, GM_RECF_PTSZ, dptr, hStream, rc);
    return rc;
}
