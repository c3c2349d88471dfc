/*
 * shim/account/device.c — resolving a device's record at its first use
 * (limit, physical total, group registration, telemetry block) and
 * charging the memory of each context made on it, until its end. Invariants in device.h;
 * driver calls made here run with the nesting guard raised.
 */
#include "shim/account/device.h"

#include <stdio.h>
#include <string.h>

#include "policy/parse.h"
#include "shim/account/commit.h"
#include "shim/account/contexts.h"
#include "shim/account/grouphook.h"
#include "shim/account/release.h"
#include "shim/driver/nvml.h"
#include "shim/driver/real.h"

/* Whether the load compared the device's limit with the ceiling that
 * holds it (and said so where the value was the job's): no limit, a size
 * against a grant, a limit of the admin ceiling's own kind. Any other
 * pair (50% under 40G) can only be compared once the device's size is
 * known. */
static bool held_at_load(const struct gm_policy *p, int dev, bool by_admin)
{
    const struct gm_limit *l = p->dev_limit_set[dev] ? &p->dev_limit[dev]
                                                      : &p->limit;
    if (l->kind == GM_LIMIT_NONE)
        return true;
    if (by_admin)
        return l->kind == p->admin.max_limit.kind;
    return l->kind == GM_LIMIT_BYTES;
}

/* A GPUMEM_STATIC_SIZE above a limit known only now (a percentage or
 * share, or under such a ceiling): the arena takes the room the limit
 * leaves (shim/admit/static.c); said once, unless the load said it. */
static void static_note(const struct gm_policy *p, int dev, uint64_t limit)
{
    if (p->mode != GM_MODE_STATIC || p->static_size.kind != GM_LIMIT_BYTES ||
        limit == 0 || p->static_size.bytes <= limit ||
        (p->static_said >> dev & 1) != 0)
        return;
    char a[32], l[32];
    gm_format_size(p->static_size.bytes, a, sizeof a);
    gm_format_size(limit, l, sizeof l);
    gm_log(GM_LOG_WARN, "device %d: GPUMEM_STATIC_SIZE (%s) is above the "
           "limit (%s); the arena takes the room the limit leaves", dev, a, l);
}

/* False when the driver says there is no such device, or is not
 * initialised (a call before cuInit): nothing is recorded (no telemetry
 * block, no group entry, the record stays unresolved for a later call)
 * and the caller lets the driver answer the call. */
static bool resolve_device(int dev, struct gm_dev *d)
{
    size_t total = 0;
    CUresult rc = CUDA_SUCCESS;
    gm_depth++;
    if (gm_real.cuDeviceTotalMem_v2 != NULL)
        rc = gm_real.cuDeviceTotalMem_v2(&total, (CUdevice)dev);
    gm_depth--;
    if (rc == CUDA_ERROR_INVALID_DEVICE || rc == CUDA_ERROR_NOT_INITIALIZED ||
        rc == CUDA_ERROR_DEINITIALIZED)
        return false;
    if (rc != CUDA_SUCCESS)
        total = 0;
    d->physical = total;
    gm_fragq_init(&d->frag);
    gm_fragq_set_refill(&d->frag, gm_acct_frag_refill, (void *)(uintptr_t)dev);
    gm_grp_device(dev, d);
    bool clamped = false;
    uint64_t limit = gm_policy_limit_for_ex(&gm_st.policy, (unsigned)dev,
                                            total, &clamped);
    /* A ceiling of another kind than the limit asked (40G over 50%) can
     * only be applied now that the device's size is known. */
    uint64_t adm = gm_limit_resolve(&gm_st.policy.admin.max_limit, total);
    if (clamped && !held_at_load(&gm_st.policy, dev, adm == limit)) {
        char l[32], by[64];
        gm_format_size(limit, l, sizeof l);
        if (adm == limit)
            snprintf(by, sizeof by, "the admin ceiling GPUMEM_MAX_LIMIT");
        else if (gm_st.policy.hami_cap_dev[dev] != 0)
            snprintf(by, sizeof by, "the scheduler's grant "
                     "(CUDA_DEVICE_MEMORY_LIMIT_%d)", dev);
        else
            snprintf(by, sizeof by, "the scheduler's grant "
                     "(CUDA_DEVICE_MEMORY_LIMIT)");
        gm_log(GM_LOG_WARN, "device %d: the limit asked is above %s; the "
               "limit is %s", dev, by, l);
    }
    static_note(&gm_st.policy, dev, limit);
    gm_budget_set_limit(&d->budget, limit);
    CUuuid u;
    gm_depth++;
    CUresult urc = gm_real.cuDeviceGetUuid_v2
                       ? gm_real.cuDeviceGetUuid_v2(&u, (CUdevice)dev)
                       : CUDA_ERROR_NOT_FOUND;
    gm_depth--;
    gm_tel_device(&gm_st.tel, (unsigned)dev, total, limit,
                  urc == CUDA_SUCCESS ? (const unsigned char *)u.bytes : NULL);
    if (limit != 0 && gm_log_enabled(GM_LOG_INFO)) {
        char l[32], t[32];
        gm_format_size(limit, l, sizeof l);
        gm_format_size(total, t, sizeof t);
        gm_log(GM_LOG_INFO, "device %d: limit %s of %s", dev, l, t);
    }
    return true;
}

struct gm_dev *gm_dev_get_slow(int dev)
{
    if (dev < 0 || dev >= GM_MAX_DEVICES)
        return NULL;
    struct gm_dev *d = &gm_st.dev[dev];
    if (atomic_load_explicit(&d->ready, memory_order_acquire) == 2)
        return d;
    bool ok = true;
    pthread_mutex_lock(&gm_st.dev_lock);
    if (atomic_load_explicit(&d->ready, memory_order_relaxed) != 2) {
        d->ordinal = dev;
        ok = resolve_device(dev, d);
        if (ok)
            atomic_store_explicit(&d->ready, 2, memory_order_release);
    }
    pthread_mutex_unlock(&gm_st.dev_lock);
    return ok ? d : NULL;
}

/* Device memory the driver reports in use for the whole device right now,
 * through the new context; 0 when it cannot say. */
static uint64_t driver_in_use(CUcontext ctx)
{
    size_t f = 0, t = 0;
    if (gm_real.cuCtxPushCurrent_v2 == NULL || gm_real.cuMemGetInfo_v2 == NULL)
        return 0;
    if (gm_real.cuCtxPushCurrent_v2(ctx) != CUDA_SUCCESS)
        return 0;
    CUresult rc = gm_real.cuMemGetInfo_v2(&f, &t);
    CUcontext popped;
    if (gm_real.cuCtxPopCurrent_v2)
        gm_real.cuCtxPopCurrent_v2(&popped);
    return rc == CUDA_SUCCESS && t >= f ? (uint64_t)(t - f) : 0;
}

void gm_dev_context_before(int dev, bool primary, struct gm_ctx_probe *before)
{
    before->ok = false;
    before->measure = false;
    before->primary = primary;
    struct gm_dev *d = gm_dev_get(dev);
    if (d == NULL)
        return;
    /* A retain of a primary context that is already charged makes
     * nothing new (the caller holds the device's primary lock). */
    if (primary && gm_ctx_has_primary(dev))
        return;
    before->measure = true;
    before->held = gm_budget_used(&d->budget);
    gm_depth++;
    before->ok = gm_nvml_sample(dev, &before->s);
    gm_depth--;
}

/* What the new context took: this process's own NVML figure where NVML
 * lists it (exact on a shared device, but for what the process allocated
 * or freed meanwhile), else the device's in-use difference around the
 * creation. Without NVML: for the device's first context the driver's
 * total - free through it (an over-estimate on a shared device) less what
 * the process held there before it (memory that outlives contexts), for a
 * later one the first one's size (the driver's in-use figure then holds
 * the earlier contexts and allocations too). A later context is never
 * taken to be smaller than the first: contexts of one device cost about
 * the same, and a free that ran during the measurement must not hide it. */
static uint64_t context_bytes(int dev, CUcontext ctx,
                              const struct gm_ctx_probe *before, bool first)
{
    struct gm_nvml_sample after;
    uint64_t b;
    const char *how;
    if (before->ok && gm_nvml_sample(dev, &after)) {
        if (after.own_listed) {
            /* Not listed before: no context on the device, but what the
             * process held there without one (VMM memory, a pool's
             * reserve, which outlive contexts) is in its entry now. */
            uint64_t was = before->s.own_listed ? before->s.own_used
                           : before->held < after.own_used ? before->held
                                                            : after.own_used;
            b = after.own_used > was ? after.own_used - was : 0;
            how = "this process's NVML entry";
        } else {
            b = after.device_used > before->s.device_used
                    ? after.device_used - before->s.device_used : 0;
            how = "the device's use in NVML around it";
        }
    } else {
        /* less what the process already held there, charged before */
        uint64_t in_use = first ? driver_in_use(ctx) : 0;
        b = in_use > before->held ? in_use - before->held : 0;
        how = first ? "the driver's total - free" : "nothing";
    }
    uint64_t floor = first ? 0 : gm_ctx_first_bytes(dev);
    if (b < floor)
        how = "the first context's size";
    gm_log(GM_LOG_DEBUG, "device %d: context measured by %s", dev, how);
    return b > floor ? b : floor;
}

/* Give back a listed context's charge (its end was seen, or the driver
 * handed its handle out again unseen). */
static void context_release(const struct gm_ctx_ent *e)
{
    struct gm_dev *d = gm_dev_get(e->dev);
    if (d == NULL)
        return;
    uint64_t used = gm_budget_release(&d->budget, e->bytes);
    gm_grp_give(d, e->bytes);
    gm_release_wake();
    gm_tel_event(&gm_st.tel, GM_EV_CONTEXT_END, (unsigned)e->dev, GM_API_NONE,
                 e->bytes, 0, used);
    if (gm_log_enabled(GM_LOG_INFO)) {
        char b[32];
        gm_format_size(e->bytes, b, sizeof b);
        gm_log(GM_LOG_INFO, "device %d: a context ended, %s given back",
               e->dev, b);
    }
}

/* Charge a created context within the limit and the group, or refuse it
 * (nothing charged). `soft` (on_oom=warn) lets it past the process limit,
 * never past the group's. */
static enum gm_ctx_verdict charge_within(struct gm_dev *d, uint64_t bytes,
                                         bool soft, uint64_t *used)
{
    if (soft)
        *used = gm_budget_force(&d->budget, bytes);
    else if (!gm_budget_reserve(&d->budget, bytes, used))
        return GM_CTX_REFUSED_LIMIT;
    if (!gm_grp_take(d, bytes)) {
        *used = gm_budget_release(&d->budget, bytes);
        gm_release_wake();
        return GM_CTX_REFUSED_GROUP;
    }
    gm_grp_committed(d);
    return GM_CTX_KEPT;
}

/* Charge a context that is kept whatever the limits say (a primary one,
 * or a created one whose destroy failed): memory the driver holds, so it
 * goes on the budget and on the group past their limits, as a pool's
 * growth does. Returns the budget's use after it. */
static uint64_t charge_kept(struct gm_dev *d, uint64_t bytes)
{
    uint64_t used = gm_budget_force(&d->budget, bytes);
    gm_grp_settle(d, bytes, 0);
    gm_grp_committed(d);
    return used;
}

enum gm_ctx_verdict gm_dev_context_created(int dev, CUcontext ctx,
                                           const struct gm_ctx_probe *before,
                                           bool may_refuse, uint64_t *bytes_out)
{
    struct gm_dev *d = gm_dev_get(dev);
    *bytes_out = 0;
    if (d == NULL || !before->measure)
        return GM_CTX_NOTHING;
    struct gm_ctx_ent stale;
    if (gm_ctx_take((uintptr_t)ctx, &stale))
        context_release(&stale); /* its end went unseen */
    bool first = atomic_load(&d->ctx_measured) == 0;
    gm_depth++;
    uint64_t bytes = context_bytes(dev, ctx, before, first);
    gm_depth--;
    *bytes_out = bytes;
    uint64_t used = 0;
    if (may_refuse && !before->primary) {
        enum gm_ctx_verdict v = charge_within(
            d, bytes, gm_st.policy.on_oom == GM_OOM_WARN, &used);
        if (v != GM_CTX_KEPT) {
            if (first && gm_ctx_first_bytes(dev) == 0)
                gm_ctx_set_first_bytes(dev, bytes); /* for the next one */
            return v;
        }
    } else {
        used = charge_kept(d, bytes);
    }
    first = atomic_exchange(&d->ctx_measured, 1) == 0;
    if (first) {
        gm_ctx_devices_add(dev);
        gm_ctx_set_first_bytes(dev, bytes);
    }
    gm_tel_context(&gm_st.tel, (unsigned)dev, bytes, used,
                   gm_budget_peak(&d->budget));
    struct gm_ctx_ent e = { (uintptr_t)ctx, bytes, dev, before->primary };
    if (!gm_ctx_add(&e)) {
        static atomic_flag warned = ATOMIC_FLAG_INIT;
        if (!atomic_flag_test_and_set(&warned))
            gm_log(GM_LOG_WARN, "more than %d live contexts: the memory of "
                   "the ones past them stays charged after they end",
                   GM_CTX_MAX);
    }
    if (gm_log_enabled(GM_LOG_INFO)) {
        char b[32];
        gm_format_size(bytes, b, sizeof b);
        gm_log(GM_LOG_INFO, "device %d: context takes %s (charged)", dev, b);
    }
    return first ? GM_CTX_KEPT_FIRST : GM_CTX_KEPT;
}

bool gm_dev_context_unlist(CUcontext ctx, struct gm_ctx_ent *e)
{
    return gm_ctx_take_ending((uintptr_t)ctx, e);
}

void gm_dev_context_relist(const struct gm_ctx_ent *e)
{
    if (!gm_ctx_add(e))
        gm_log(GM_LOG_WARN, "the context list is full: a context whose "
               "destroy failed stays charged after its end");
    gm_ctx_ending_settled(e->dev);
}

void gm_dev_context_ended(const struct gm_ctx_ent *e)
{
    gm_ctx_ending_settled(e->dev);
    context_release(e);
}

bool gm_dev_primary_ended(int dev, CUcontext *ctx)
{
    struct gm_ctx_ent e;
    if (!gm_ctx_take_primary(dev, &e))
        return false;
    context_release(&e);
    *ctx = (CUcontext)e.ctx;
    return true;
}
