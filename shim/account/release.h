/*
 * shim/account/release.h — the release doorbell: every path that gives
 * memory back to a device budget (a free, a rollback, a pool that shrank)
 * rings it, and a thread that waits for memory (GPUMEM_ON_OOM=wait,
 * shim/admit/oomwait.c) sleeps on it.
 *
 * Lost wake-ups are impossible: a waiter registers (gm_release_wait_begin:
 * waiters++ then a seq_cst fence) and re-checks the budget under the
 * doorbell's mutex; the releaser, after its release, issues a seq_cst
 * fence (paired with the waiter's) and loads `waiters`: if it sees 0, the
 * waiter's re-check sees the release. Without on_oom=wait nobody can be
 * waiting: ringing costs one load and no fence.
 */
#ifndef GM_RELEASE_H
#define GM_RELEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "shim/account/state.h"

void gm_release_wake_slow(void);
/* Memory was released: wake waiters. */
static inline void gm_release_wake(void)
{
    if (GM_UNLIKELY(gm_st.policy.on_oom == GM_OOM_WAIT))
        gm_release_wake_slow();
}

/* A waiter's side. begin takes the doorbell's mutex and registers; sleep
 * waits (mutex held, released while asleep) until a ring or the
 * CLOCK_MONOTONIC deadline; unlock/relock let the waiter sleep elsewhere
 * (a group's futex) while registered; end unregisters and unlocks. */
void gm_release_wait_begin(void);
void gm_release_sleep(uint64_t deadline_ns);
void gm_release_unlock(void);
void gm_release_relock(void);
void gm_release_wait_end(void);

/* Fork child: reinitialise the primitives. */
void gm_release_reset(void);

#endif
