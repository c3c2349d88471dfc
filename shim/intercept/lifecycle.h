/*
 * shim/intercept/lifecycle.h — what every wrapper asks first: is the shim
 * initialised (initialising it at the first CUDA call), and does
 * accounting apply to this call.
 *
 * Invariants: initialisation runs exactly once per process image
 * (gm_init_state 0 -> 1 -> 2|3 under the init lock in lifecycle.c); the
 * state is published with a release store that gm_active's acquire load
 * pairs with, so a wrapper that sees 2 sees the whole policy and the
 * driver table. A call made while the nesting guard (gm_depth,
 * shim/driver/real.h) is raised is never accounted.
 */
#ifndef GM_LIFECYCLE_H
#define GM_LIFECYCLE_H

#include <stdatomic.h>
#include <stdbool.h>

#include "shim/base/compiler.h"
#include "shim/driver/real.h"

/* 0 = not initialised, 1 = initialising, 2 = ready, 3 = disabled (init
 * failed; every wrapper passes through). */
extern _Atomic int gm_init_state __attribute__((visibility("hidden")));

void gm_init_slow(void);

struct gm_policy;
/* getauxval(AT_SECURE): the policy is loaded with gm_policy_load_secure's
 * secure set, ignoring the environment's file and library names. */
bool gm_secure_exec(void);
/* Says once, at info level, which variables a secure load ignored. */
void gm_secure_note(const struct gm_policy *p);

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

/* 1 once initialisation has finished (gm_init_state 2) for a plain run
 * (gm_plain, shim/account/state.h): the hot wrappers' one test for both.
 * Stored with release after the state's own release store; cleared in a
 * fork's child before the state is. 0 sends a wrapper to gm_active and
 * the path that checks every feature, which is right in every state. */
extern _Atomic int gm_plain_ready __attribute__((visibility("hidden")));

/* True when a hot wrapper may take the plain path: initialised, a plain
 * run, and not nested (the acquire load pairs with the release store of
 * gm_plain_ready, which follows everything initialisation wrote). */
static inline bool gm_plain_now(void)
{
    return atomic_load_explicit(&gm_plain_ready, memory_order_acquire) != 0 &&
           gm_depth == 0;
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

#endif
