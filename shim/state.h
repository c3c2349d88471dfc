/*
 * shim/state.h — the shim's process-wide state and the helpers every
 * wrapper uses: initialisation check, nesting guard, per-device budget.
 *
 * Invariants: gm_st.policy is written once during initialisation and
 * read-only after gm_ready() is true. A device's limit is resolved at its
 * first use (physical total from the real cuDeviceTotalMem_v2) exactly once
 * (dev_ready goes 0 -> 2 through 1 under dev_lock). The nesting guard is a
 * thread-local depth counter with the initial-exec TLS model (no malloc,
 * no lazy TLS allocation): a wrapper entered while depth > 0 (the driver or
 * our own code calling back into an exported symbol) passes straight to the
 * real function and accounts nothing.
 */
#ifndef GM_STATE_H
#define GM_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "policy/budget.h"
#include "policy/policy.h"
#include "shim/clock.h"
#include "shim/cuda_api.h"
#include "shim/fragq.h"
#include "shim/log.h"
#include "shim/real.h"
#include "shim/spin.h"
#include "shim/telemetry.h"

struct gm_arena;

struct gm_dev {
    struct gm_budget budget;
    _Atomic int ready;            /* 0 unknown, 1 resolving, 2 resolved */
    _Atomic int ctx_measured;     /* first context seen */
    uint64_t physical;            /* real total (set once, before ready=2) */
    struct gm_ratelimit refuse_rl;
    struct gm_fragq frag;         /* live device-pointer intervals */
    struct gm_arena *arena;       /* static mode: NULL until reserved */
    int gdev1;                    /* group device index + 1; 0 = none */
};

struct gm_state {
    struct gm_policy policy;
    struct gm_tel tel;
    struct gm_dev dev[GM_MAX_DEVICES];
    pthread_mutex_t dev_lock;
    uint64_t start_ns;
};

/* Globals are hidden: the hooks read them directly, not through the GOT. */
extern struct gm_state gm_st __attribute__((visibility("hidden")));

/* 0 = not initialised, 1 = initialising, 2 = ready, 3 = disabled (init
 * failed; every wrapper passes through). */
extern _Atomic int gm_init_state __attribute__((visibility("hidden")));
extern __thread int gm_depth __attribute__((tls_model("initial-exec")));

void gm_init_slow(void);

/* True when accounting applies to this call: initialised, and not nested
 * inside another wrapper or our own driver calls. */
static inline bool gm_active(void)
{
    int s = atomic_load_explicit(&gm_init_state, memory_order_acquire);
    if (GM_UNLIKELY(s < 2)) {
        gm_init_slow();
        s = atomic_load_explicit(&gm_init_state, memory_order_acquire);
    }
    return s == 2 && gm_depth == 0;
}

/* In a wrapper: make sure the real function is known (initialising on
 * the first call), else answer as a driver without it would. */
#define GM_NEED_REAL(fn)                                                  \
    do {                                                                  \
        if (GM_UNLIKELY(gm_real.fn == NULL)) {                            \
            (void)gm_active();                                            \
            if (gm_real.fn == NULL)                                       \
                return CUDA_ERROR_NOT_FOUND;                              \
        }                                                                 \
    } while (0)

/* The device of the current context, -1 if none (or no driver function).
 * Devices on which a context was created through our wrappers are bits of
 * gm_ctx_devices; while there is exactly one, the current context (if
 * any) is on it and the driver need not be asked: a call without any
 * current context fails in the driver anyway, and its reservation is
 * rolled back. */
extern _Atomic uint64_t gm_ctx_devices __attribute__((visibility("hidden")));
int gm_current_device_slow(void);
static inline int gm_current_device(void)
{
    uint64_t m = atomic_load_explicit(&gm_ctx_devices, memory_order_relaxed);
    if (GM_LIKELY(m != 0 && (m & (m - 1)) == 0))
        return __builtin_ctzll(m);
    return gm_current_device_slow();
}
/* Fork child: forget which devices have contexts. */
void gm_dev_reset(void);
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
 * after it succeeded, with the new context. The difference (or, without
 * NVML, the device's in-use memory seen through the new context) is
 * recorded and charged to the device's limit. */
void gm_dev_context_before(int dev, uint64_t *nvml_used);
void gm_dev_context_created(int dev, CUcontext ctx, uint64_t nvml_before);

/* What the hooks time with: 0 nothing (GPUMEM_TELEMETRY=0), 1 the TSC, 2
 * CLOCK_MONOTONIC. Set once at initialisation; the one flag the hot paths
 * read for "telemetry on". */
extern int gm_hook_clock __attribute__((visibility("hidden")));

/* GPUMEM_TELEMETRY: when off, the hot paths skip timing, the segment and
 * the fragmentation tracker, and only enforce limits. */
static inline bool gm_telemetry_on(void)
{
    return gm_hook_clock != 0;
}

/* A tick reading when telemetry will use it, else 0. */
static inline uint64_t gm_hook_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (GM_LIKELY(gm_hook_clock == 1))
        return __builtin_ia32_rdtsc();
#endif
    return gm_hook_clock != 0 ? gm_clock_monotonic_ns() : 0;
}

#endif
