/*
 * shim/intercept/user.c — the functions a program calls itself, exported
 * from libgpumem.so next to the driver entry points (shim/intercept/
 * exports.map): gpumem_step() and gpumem_mark(label) record training
 * steps and labelled moments in the telemetry segment (events, history,
 * mark table); gpumem_used/peak/limit(device) read the process's own
 * figures. A program finds them with dlsym(RTLD_DEFAULT, ...) or, from
 * Python, ctypes.CDLL(None) (tools/python/gpumem.py) when the library is
 * preloaded.
 *
 * Invariants: each may be called from any thread, at any time, also
 * before any CUDA call (the first call initialises the shim as a CUDA
 * call would: policy, driver library, segment); none blocks or allocates;
 * the step count is process-wide and only grows. A program that never
 * calls them pays nothing.
 */
#include <stdatomic.h>
#include <stdint.h>

#include "shim/account/state.h"
#include "shim/intercept/lifecycle.h"
#include "shim/telemetry/marks.h"

#include "shim/driver/cuda_api.h"  /* GM_EXPORT */

/* Declared here only: the program's prototypes are in docs/tools.md. */
GM_EXPORT void gpumem_step(void);
GM_EXPORT void gpumem_mark(const char *label);
GM_EXPORT long long gpumem_used(int device);
GM_EXPORT long long gpumem_peak(int device);
GM_EXPORT long long gpumem_limit(int device);

void gpumem_step(void)
{
    /* gm_st.steps is also what allocations are stamped with (the OOM
     * snapshot's "allocated over the last N steps"). */
    uint64_t n = atomic_fetch_add_explicit(&gm_st.steps, 1,
                                           memory_order_relaxed) + 1;
    (void)gm_active(); /* initialises the shim at a first call */
    gm_tel_step(&gm_st.tel, n);
}

void gpumem_mark(const char *label)
{
    (void)gm_active();
    gm_tel_mark(&gm_st.tel, label);
}

/* The device's record when it is resolved, else NULL. */
static struct gm_dev *known_dev(int device)
{
    if (device < 0 || device >= GM_MAX_DEVICES)
        return NULL;
    if (atomic_load_explicit(&gm_init_state, memory_order_acquire) != 2)
        return NULL;
    struct gm_dev *d = &gm_st.dev[device];
    /* Pairs with the release store of ready = 2 (shim/account/device.c). */
    return atomic_load_explicit(&d->ready, memory_order_acquire) == 2 ? d
                                                                       : NULL;
}

static long long as_ll(uint64_t v)
{
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (long long)v;
}

long long gpumem_used(int device)
{
    struct gm_dev *d = known_dev(device);
    return d == NULL ? -1 : as_ll(gm_budget_used(&d->budget));
}

long long gpumem_peak(int device)
{
    struct gm_dev *d = known_dev(device);
    return d == NULL ? -1 : as_ll(gm_budget_peak(&d->budget));
}

long long gpumem_limit(int device)
{
    struct gm_dev *d = known_dev(device);
    return d == NULL ? -1 : as_ll(gm_budget_limit(&d->budget));
}
