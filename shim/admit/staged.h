/*
 * shim/admit/staged.h — GPUMEM_MODE=staged: grow freely during the warm-up, then
 * freeze each device's limit at peak x (1 + headroom), rounded up to 2 MiB
 * (never above a limit that was set).
 */
#ifndef GM_STAGED_H
#define GM_STAGED_H

#include <stdatomic.h>
#include <stdint.h>

#include "shim/driver/cuda_api.h"

/* Non-zero while a warm-up is running (read on every allocation). */
extern _Atomic int gm_staged_armed __attribute__((visibility("hidden")));

/* At initialisation: start the warm-up clock when the mode is staged. */
void gm_staged_arm(uint64_t now_ns);
/* Past the deadline: freeze the limits (once). */
void gm_staged_poll_slow(void);
static inline void gm_staged_poll(void)
{
    if (GM_UNLIKELY(atomic_load_explicit(&gm_staged_armed,
                                         memory_order_relaxed)))
        gm_staged_poll_slow();
}
/* The limit learned from a peak: peak x (1 + headroom), rounded up to
 * 2 MiB, capped by `cap` when cap != 0. */
uint64_t gm_staged_limit(uint64_t peak, double headroom, uint64_t cap);

#endif
