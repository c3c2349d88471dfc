/*
 * shim/oomwait.c — waiting for memory instead of failing.
 *
 * No busy loop: waiters sleep on a condition variable (CLOCK_MONOTONIC)
 * and retry their reservation when any release in this process wakes them;
 * when it is the group's limit that holds them back, they sleep on the
 * group's futex instead, which any member's release wakes.
 * Lost wake-ups are impossible: a waiter registers (waiters++) and re-checks
 * the budget under the mutex, and the releaser, after its release, loads
 * `waiters` behind a seq_cst fence paired with the waiter's fence after its
 * increment; if it sees 0, the waiter's re-check sees the release.
 */
#include "shim/oomwait.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "policy/parse.h"
#include "shim/abi.h"
#include "shim/account.h"
#include "shim/grouphook.h"
#include "shim/state.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static pthread_once_t cv_once = PTHREAD_ONCE_INIT;
static _Atomic unsigned waiters;

static void cv_init(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &a);
    pthread_condattr_destroy(&a);
}

bool gm_oomwait(int dev, struct gm_dev *d, uint64_t size, unsigned api,
                uint64_t *used)
{
    pthread_once(&cv_once, cv_init);
    uint64_t start = gm_clock_monotonic_ns();
    uint64_t deadline = start + gm_st.policy.oom_wait_ns;
    char s[32];
    gm_format_size(size, s, sizeof s);
    gm_log(GM_LOG_WARN, "device %d: %s of %s waits for memory (up to %llu ms)",
           dev, gm_api_name(api), s,
           (unsigned long long)(gm_st.policy.oom_wait_ns / 1000000u));
    gm_tel_event(&gm_st.tel, GM_EV_WAIT_BEGIN, (unsigned)dev, api, size, 0,
                 gm_budget_used(&d->budget));
    bool ok = false;
    pthread_mutex_lock(&mu);
    atomic_fetch_add(&waiters, 1);
    atomic_thread_fence(memory_order_seq_cst);
    for (;;) {
        bool by_group;
        if (gm_acct_take(d, size, used, &by_group)) {
            ok = true;
            break;
        }
        uint64_t now = gm_clock_monotonic_ns();
        if (now >= deadline)
            break;
        if (by_group) {
            /* Another process must free: sleep on the group's futex. */
            pthread_mutex_unlock(&mu);
            bool got = gm_grp_wait(d, size, deadline);
            pthread_mutex_lock(&mu);
            if (got) {
                if (gm_budget_reserve(&d->budget, size, used)) {
                    ok = true;
                    break;
                }
                gm_grp_give(d, size);
            }
            continue;
        }
        struct timespec ts = {
            .tv_sec = (time_t)(deadline / 1000000000u),
            .tv_nsec = (long)(deadline % 1000000000u),
        };
        pthread_cond_timedwait(&cv, &mu, &ts);
    }
    atomic_fetch_sub(&waiters, 1);
    pthread_mutex_unlock(&mu);
    uint64_t waited_ms = (gm_clock_monotonic_ns() - start) / 1000000u;
    gm_tel_event(&gm_st.tel, GM_EV_WAIT_END, (unsigned)dev, api, size, ok,
                 gm_budget_used(&d->budget));
    gm_log(GM_LOG_WARN, "device %d: %s of %s %s after %llu ms", dev,
           gm_api_name(api), s, ok ? "served" : "gave up waiting",
           (unsigned long long)waited_ms);
    return ok;
}

void gm_oomwait_wake_slow(void)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (GM_LIKELY(atomic_load_explicit(&waiters, memory_order_relaxed) == 0))
        return;
    pthread_mutex_lock(&mu);
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

void gm_oomwait_reset(void)
{
    pthread_mutex_init(&mu, NULL);
    atomic_store(&waiters, 0);
    cv_once = (pthread_once_t)PTHREAD_ONCE_INIT;
}
