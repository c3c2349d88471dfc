/*
 * shim/account/device.h — a device's record with its limit resolved, and
 * the memory of the contexts made on it.
 *
 * Invariants: a device's limit and physical total are set once, at its
 * first use (physical total from the real cuDeviceTotalMem_v2), under
 * gm_st.dev_lock and before `ready` becomes 2 (release store; gm_dev_get
 * acquires). The device is registered with the process's group at the same
 * moment, so gdev1 is fixed before anything is charged. Each context's
 * memory is charged once, from its creation to its end; the device's
 * first context is told apart by ctx_measured (0 -> 1 by exchange).
 */
#ifndef GM_DEVICE_H
#define GM_DEVICE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "shim/account/state.h"
#include "shim/account/contexts.h"
#include "shim/driver/nvml.h"

/* The device's record with its limit resolved; NULL for a bad ordinal. */
struct gm_dev *gm_dev_get_slow(int dev);
static inline struct gm_dev *gm_dev_get(int dev)
{
    if (GM_LIKELY((unsigned)dev < GM_MAX_DEVICES &&
                  atomic_load_explicit(&gm_st.dev[dev].ready,
                                       memory_order_acquire) == 2))
        return &gm_st.dev[dev];
    return gm_dev_get_slow(dev);
}
/* The one device with contexts (*dev) and its record (gm_ctx_sole),
 * else NULL. */
static inline struct gm_dev *gm_dev_sole(int *dev)
{
    /* Pairs with the release store in gm_ctx_devices_add. */
    struct gm_dev *d = atomic_load_explicit(&gm_ctx_sole,
                                            memory_order_acquire);
    if (GM_LIKELY(d != NULL))
        *dev = d->ordinal;
    return d;
}
/* The current device (*dev) and its record, as gm_current_device and
 * gm_dev_get answer: one load (gm_ctx_sole) while one device has
 * contexts. */
static inline struct gm_dev *gm_dev_current(int *dev)
{
    struct gm_dev *d = gm_dev_sole(dev);
    if (GM_LIKELY(d != NULL))
        return d;
    *dev = gm_current_device();
    return gm_dev_get(*dev);
}
/* The device of stream `s` (*dev; -1 when none) and its record: the
 * device CUDA serves a cuMemAllocAsync on `s` from. While one device has
 * contexts every stream is on it (one load, as above); else
 * gm_stream_device says. */
static inline struct gm_dev *gm_dev_of_stream(CUstream s, int *dev)
{
    struct gm_dev *d = gm_dev_sole(dev);
    if (GM_LIKELY(d != NULL))
        return d;
    *dev = gm_stream_device(s);
    return gm_dev_get(*dev);
}
/* Context memory, measured for each context made on the device: call
 * _before just before the real context creator (it samples NVML where
 * available; a primary retain runs under gm_ctx_primary_lock) and
 * _created after it succeeded, with the new context. The growth of this
 * process's own NVML entry (or of the device's NVML in-use figure when
 * NVML does not list the process; without NVML, see device.c) is charged
 * to the device's limit and the context listed (shim/account/contexts.h)
 * until _ended (a destroyed context, unlisted before the destroy) or
 * _primary_ended (the primary context's last release or a reset, which
 * returns its handle) gives it back. A retain of a primary context that is
 * already charged measures nothing. With may_refuse, a created (not a
 * primary) context that does not fit under the limit or in the group is
 * not charged (on_oom=warn lets it past the process limit, never past the
 * group's): the caller destroys it. Any other context is kept and charged
 * to the budget and the group alike, past their limits if need be. */
struct gm_ctx_probe {
    bool ok;                    /* NVML answered before the creation */
    bool measure;               /* a new context is expected */
    bool primary;               /* by cuDevicePrimaryCtxRetain */
    uint64_t held;              /* the device's charge before it */
    struct gm_nvml_sample s;
};
enum gm_ctx_verdict {
    GM_CTX_NOTHING,             /* nothing new was made */
    GM_CTX_KEPT,                /* charged and listed */
    GM_CTX_KEPT_FIRST,          /* ... the device's first context */
    GM_CTX_REFUSED_LIMIT,       /* not charged: past the limit */
    GM_CTX_REFUSED_GROUP,       /* not charged: the group is full */
};
void gm_dev_context_before(int dev, bool primary, struct gm_ctx_probe *before);
enum gm_ctx_verdict gm_dev_context_created(int dev, CUcontext ctx,
                                           const struct gm_ctx_probe *before,
                                           bool may_refuse, uint64_t *bytes);
/* A destroy takes the context out of the list before the driver's call
 * (so a context the driver makes meanwhile with the same handle is not
 * taken for it), then gives its charge back, or lists it again when the
 * destroy failed. */
bool gm_dev_context_unlist(CUcontext ctx, struct gm_ctx_ent *e);
void gm_dev_context_ended(const struct gm_ctx_ent *e);
void gm_dev_context_relist(const struct gm_ctx_ent *e);
bool gm_dev_primary_ended(int dev, CUcontext *ctx);

#endif
