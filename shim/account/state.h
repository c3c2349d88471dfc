/*
 * shim/account/state.h — the shim's process-wide state (gm_st: the policy,
 * the telemetry segment, one record per device) and the per-device
 * helpers that need nothing above it: which device a call is for, and the
 * hooks' clock. Resolving a device's record is shim/account/device.h.
 *
 * Invariants: gm_st.policy is written once during initialisation (by the
 * lifecycle, shim/intercept/lifecycle.c) and read-only after the state is
 * published as ready. A device record's `ready` goes 0 -> 2 through 1
 * under dev_lock (shim/account/device.c); its fields other than the
 * budget's atomics are written before `ready` becomes 2 (release store)
 * and read after an acquire load of it. Defined in shim/account/state.c.
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
#include "shim/base/clock.h"
#include "shim/driver/cuda_api.h"
#include "shim/telemetry/fragq.h"
#include "shim/base/log.h"
#include "shim/driver/real.h"
#include "shim/base/spin.h"
#include "shim/telemetry/telemetry.h"

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
    int ordinal;                  /* its index in gm_st.dev (set before
                                     ready=2) */
};

struct gm_state {
    struct gm_policy policy;
    struct gm_tel tel;
    struct gm_dev dev[GM_MAX_DEVICES];
    pthread_mutex_t dev_lock;
    uint64_t start_ns;
    _Atomic uint64_t steps;       /* gpumem_step() calls (shim/intercept/
                                     user.c); stamped on allocations */
};

/* Globals are hidden: the hooks read them directly, not through the GOT. */
extern struct gm_state gm_st __attribute__((visibility("hidden")));

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
/* The device of stream `s`, -1 if none: a default stream's (NULL,
 * CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) is the current context's
 * (gm_current_device); another's is asked of the driver:
 * cuStreamGetDevice, or without it (drivers before CUDA 12.8) the device
 * of the stream's context (cuStreamGetCtx, then cuCtxGetDevice with that
 * context pushed). */
int gm_stream_device(CUstream s);
/* The device record of gm_ctx_devices' one device while there is exactly
 * one (set, with release, after its bit; that device is ready by then),
 * else NULL: the hot paths' current device and its record in one load.
 * Written by gm_ctx_devices_add only, under its lock, from the mask as it
 * is then, so the last store is of the last mask. */
extern struct gm_dev *_Atomic gm_ctx_sole __attribute__((visibility("hidden")));
/* Add dev (set up: ready) to gm_ctx_devices, and update gm_ctx_sole. */
void gm_ctx_devices_add(int dev);

/* Fork child: forget which devices have contexts. */
void gm_dev_reset(void);
/* What the hooks time with: 0 nothing (GPUMEM_TELEMETRY=0), 1 the TSC, 2
 * CLOCK_MONOTONIC. Set once at initialisation; the one flag the hot paths
 * read for "telemetry on". */
extern int gm_hook_clock __attribute__((visibility("hidden")));
/* True when the run uses none of the features an allocation or a free
 * must otherwise look for on its way: no group, grow mode (no static
 * arena, no staged freeze), no on_oom=wait doorbell, no on_oom=spill
 * (a spilled block's free publishes nothing), no recording. Set
 * once at initialisation, before the state is published (read-only
 * after). Initialisation turns it into gm_plain_ready
 * (shim/intercept/lifecycle.h), which the hot wrappers test once to take
 * a path compiled with those checks known false (shim/intercept/hooks.c). */
extern bool gm_plain __attribute__((visibility("hidden")));
static inline bool gm_is_plain(void)
{
    /* Written once, before the state's release store that gm_active's
     * acquire load pairs with; read before it, it may still say false
     * (the path that checks everything). */
    return __atomic_load_n(&gm_plain, __ATOMIC_RELAXED);
}

/* GPUMEM_TELEMETRY: when off, the hot paths skip timing, the segment and
 * the fragmentation tracker, and only enforce limits. */
static inline bool gm_telemetry_on(void)
{
    return gm_hook_clock != 0;
}

/* A tick reading in clock mode clk (gm_hook_clock, read once by a hook
 * for all of its readings): 0 when telemetry is off. */
static inline uint64_t gm_hook_ticks_in(int clk)
{
#if defined(__x86_64__) || defined(__i386__)
    if (GM_LIKELY(clk == 1))
        return __builtin_ia32_rdtsc();
#endif
    return clk != 0 ? gm_clock_monotonic_ns() : 0;
}

/* Run the statement `call` timed in clock mode clk: t0 and t1 take tick
 * readings just before and after it, or 0 without telemetry (one test of
 * the mode for both readings). */
#define GM_HOOK_TIMED(clk, t0, t1, call)                                  \
    do {                                                                  \
        if ((clk) == 0) {                                                 \
            (t0) = (t1) = 0;                                              \
            call;                                                         \
        } else {                                                          \
            (t0) = gm_hook_ticks_in(clk);                                 \
            call;                                                         \
            (t1) = gm_hook_ticks_in(clk);                                 \
        }                                                                 \
    } while (0)

/* A tick reading when telemetry will use it, else 0. */
static inline uint64_t gm_hook_ticks(void)
{
    return gm_hook_ticks_in(gm_hook_clock);
}

#endif
