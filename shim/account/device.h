/*
 * shim/account/device.h — a device's record with its limit resolved, and
 * the memory of its first context.
 *
 * Invariants: a device's limit and physical total are set once, at its
 * first use (physical total from the real cuDeviceTotalMem_v2), under
 * gm_st.dev_lock and before `ready` becomes 2 (release store; gm_dev_get
 * acquires). The device is registered with the process's group at the same
 * moment, so gdev1 is fixed before anything is charged. Context memory is
 * measured and charged once per device (ctx_measured 0 -> 1 by exchange).
 */
#ifndef GM_DEVICE_H
#define GM_DEVICE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "shim/account/state.h"
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
/* Context memory, measured once per device: call _before just before the
 * real context creator (it samples NVML where available) and _created
 * after it succeeded, with the new context. The growth of this process's
 * own NVML entry (or of the device's NVML in-use figure when NVML does
 * not list the process, or, without NVML, the device's in-use memory seen
 * through the new context) is recorded and charged to the device's
 * limit. _created returns true for the device's first context (the one
 * that was measured). */
struct gm_ctx_probe {
    bool ok;                    /* NVML answered before the creation */
    struct gm_nvml_sample s;
};
void gm_dev_context_before(int dev, struct gm_ctx_probe *before);
bool gm_dev_context_created(int dev, CUcontext ctx,
                            const struct gm_ctx_probe *before);


#endif
