/*
 * shim/admit/oomwait.c — waiting for memory instead of failing.
 *
 * No busy loop: a waiter registers on the release doorbell
 * (shim/account/release.h, which states why no wake-up is lost) and
 * retries its reservation whenever a release in this process rings it;
 * when it is the group's limit that holds it back, it sleeps on the
 * group's futex instead, which any member's release wakes. Every sleep
 * ends at the deadline (CLOCK_MONOTONIC).
 *
 * Static mode waits the same way for its arena: the arena frees ring the
 * doorbell (shim/admit/static.c), and the waiter retries the arena,
 * never the budget (the whole arena is charged already).
 */
#include "shim/admit/oomwait.h"

#include "policy/parse.h"
#include "shim/account/grouphook.h"
#include "shim/account/release.h"
#include "shim/account/state.h"
#include "shim/admit/arena_hooks.h"
#include "shim/admit/take.h"
#include "shim/telemetry/abi.h"

/* The line and the event at a wait's start; returns its start time. */
static uint64_t wait_opens(int dev, struct gm_dev *d, uint64_t size,
                           unsigned api)
{
    uint64_t start = gm_clock_monotonic_ns();
    char s[32];
    gm_format_size(size, s, sizeof s);
    gm_log(GM_LOG_WARN, "device %d: %s of %s waits for memory (up to %llu ms)",
           dev, gm_api_name(api), s,
           (unsigned long long)(gm_st.policy.oom_wait_ns / 1000000u));
    gm_tel_event(&gm_st.tel, GM_EV_WAIT_BEGIN, (unsigned)dev, api, size, 0,
                 gm_budget_used(&d->budget));
    return start;
}

/* The event and the line at its end. */
static void wait_closes(int dev, struct gm_dev *d, uint64_t size,
                        unsigned api, uint64_t start, bool ok)
{
    char s[32];
    gm_format_size(size, s, sizeof s);
    uint64_t waited_ms = (gm_clock_monotonic_ns() - start) / 1000000u;
    gm_tel_event(&gm_st.tel, GM_EV_WAIT_END, (unsigned)dev, api, size, ok,
                 gm_budget_used(&d->budget));
    gm_log(GM_LOG_WARN, "device %d: %s of %s %s after %llu ms", dev,
           gm_api_name(api), s, ok ? "served" : "gave up waiting",
           (unsigned long long)waited_ms);
}

/* The wait's end: start + GPUMEM_ON_OOM's duration, held at the largest
 * instant (a wait of 584 years is a wait, not one that ends at once). */
static uint64_t wait_deadline(uint64_t start)
{
    uint64_t w = gm_st.policy.oom_wait_ns;
    return w > UINT64_MAX - start ? UINT64_MAX : start + w;
}

bool gm_oomwait(int dev, struct gm_dev *d, uint64_t size, unsigned api,
                uint64_t *used)
{
    uint64_t start = wait_opens(dev, d, size, api);
    uint64_t deadline = wait_deadline(start);
    bool ok = false;
    gm_release_wait_begin();
    for (;;) {
        bool by_group;
        if (gm_admit_take(d, size, used, &by_group)) {
            ok = true;
            break;
        }
        uint64_t now = gm_clock_monotonic_ns();
        if (now >= deadline)
            break;
        if (by_group) {
            /* Another process must free: sleep on the group's futex. */
            gm_release_unlock();
            bool got = gm_grp_wait(d, size, deadline);
            gm_release_relock();
            if (got) {
                if (gm_budget_hold(&d->budget, size, used)) {
                    ok = true;
                    break;
                }
                gm_grp_give(d, size);
            }
            continue;
        }
        gm_release_sleep(deadline);
    }
    gm_release_wait_end();
    wait_closes(dev, d, size, api, start, ok);
    return ok;
}

bool gm_oomwait_arena(int dev, struct gm_dev *d, struct gm_arena *a,
                      uint64_t size, unsigned api,
                      struct gm_arena_piece *got, bool *retired)
{
    uint64_t start = wait_opens(dev, d, size, api);
    uint64_t deadline = wait_deadline(start);
    bool ok = false;
    *retired = false;
    gm_release_wait_begin();
    for (;;) {
        /* A retired arena's record stays, but its memory went with its
         * context: nothing more is taken from it. */
        if (__atomic_load_n(&d->arena, __ATOMIC_ACQUIRE) != a) {
            *retired = true;
            break;
        }
        if (gm_arena_take(a, size, got) == 0) {
            ok = true;
            break;
        }
        if (gm_clock_monotonic_ns() >= deadline)
            break;
        gm_release_sleep(deadline);
    }
    gm_release_wait_end();
    wait_closes(dev, d, size, api, start, ok);
    return ok;
}
