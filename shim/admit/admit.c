/*
 * shim/admit/admit.c — the slow side of an admission: reclaim from this
 * process's idle pools, then the out-of-memory policy (fail, wait, spill,
 * warn) that decides what a refusal does, the refusal message, and
 * adjusting a charge to what the driver actually used.
 *
 * A group's limit is always hard: warn lets a request past the process's
 * limit only when the group can still take it.
 *
 * Static mode asks here too when its arena has no block for a request
 * (gm_admit_arena_full): the same policies, its own refusal line.
 */
#include "shim/admit/oomsnap.h"
#include "shim/admit/admit.h"

#include <stdio.h>

#include "policy/parse.h"
#include "shim/account/pools.h"
#include "shim/admit/oomwait.h"
#include "shim/telemetry/abi.h"

/* The rate-limited line of a refusal (or of a request let through):
 * "device D: API of SIZE WHAT: WHY", with how many were suppressed. 0
 * when this one is not to be printed, else the count to report. */
static uint64_t message_due(struct gm_dev *d)
{
    uint64_t n = gm_ratelimit_pass(&d->refuse_rl, 1000000000ull);
    return n != 0 && gm_log_enabled(GM_LOG_WARN) ? n : 0;
}

static void message_out(int dev, uint64_t n, uint64_t size, unsigned api,
                        const char *what, const char *why)
{
    char s[32], more[64] = "";
    gm_format_size(size, s, sizeof s);
    if (n > 1)
        snprintf(more, sizeof more, " (%llu similar messages suppressed)",
                 (unsigned long long)(n - 1));
    gm_log(GM_LOG_WARN, "device %d: %s of %s %s: %s%s", dev,
           gm_api_name(api), s, what, why, more);
}

static void refusal_message(int dev, struct gm_dev *d, uint64_t size,
                            unsigned api, uint64_t used, bool by_group,
                            const char *what)
{
    uint64_t n = message_due(d);
    if (n == 0)
        return;
    /* The process's "U used of L limit" is shorter than the group's. */
    char why[GM_GRP_DESCRIBE_CAP];
    if (by_group) {
        gm_grp_describe(d, why, sizeof why);
    } else {
        char u[32], l[32];
        gm_format_size(used, u, sizeof u);
        gm_format_size(gm_budget_limit(&d->budget), l, sizeof l);
        snprintf(why, sizeof why, "%s used of %s limit", u, l);
    }
    message_out(dev, n, size, api, what, why);
}

/* Static mode's line: the arena's size and largest free block say why. */
static void arena_message(int dev, struct gm_dev *d, uint64_t size,
                          unsigned api, uint64_t arena, uint64_t largest,
                          const char *what)
{
    uint64_t n = message_due(d);
    if (n == 0)
        return;
    char a[32], l[32], why[160];
    gm_format_size(arena, a, sizeof a);
    gm_format_size(largest, l, sizeof l);
    snprintf(why, sizeof why, "the static arena (%s) has no free block that "
             "large (the largest is %s)", a, l);
    message_out(dev, n, size, api, what, why);
}

enum gm_admit gm_admit_arena_full(int dev, struct gm_dev *d, uint64_t size,
                                  unsigned api, uint64_t arena,
                                  uint64_t largest)
{
    uint64_t used = gm_budget_used(&d->budget);
    switch (gm_st.policy.on_oom) {
    case GM_OOM_SPILL:
        gm_tel_event(&gm_st.tel, GM_EV_SPILL, (unsigned)dev, api, size, 0,
                     used);
        arena_message(dev, d, size, api, arena, largest,
                      "served as managed memory");
        return GM_ADMIT_SPILL;
    case GM_OOM_WARN:
        /* A group's limit is always hard. */
        if (!gm_grp_take(d, size)) {
            gm_admit_refused(d, (unsigned)dev, api, size, used,
                             gm_budget_limit(&d->budget));
            refusal_message(dev, d, size, api, used, true, "refused");
            return GM_ADMIT_REFUSED;
        }
        if (!gm_budget_hold_over(&d->budget, size, &used)) {
            gm_grp_give(d, size);
            break; /* the count would wrap */
        }
        gm_tel_event(&gm_st.tel, GM_EV_OVER_LIMIT, (unsigned)dev, api, size,
                     0, used - size);
        arena_message(dev, d, size, api, arena, largest,
                      "allowed past the limit, from the driver outside the "
                      "arena");
        return GM_ADMIT_OK;
    case GM_OOM_WAIT: /* waited already (shim/admit/static.c) */
    case GM_OOM_FAIL:
        break;
    }
    gm_admit_refused(d, (unsigned)dev, api, size, used,
                     gm_budget_limit(&d->budget));
    arena_message(dev, d, size, api, arena, largest, "refused");
    return GM_ADMIT_REFUSED;
}

enum gm_admit gm_admit_reserve_slow(int dev, struct gm_dev *d, uint64_t size,
                                   unsigned api, bool spillable)
{
    uint64_t used;
    bool by_group;
    if (gm_admit_take(d, size, &used, &by_group))
        return GM_ADMIT_OK;
    /* Without a limit only a size that cannot be counted is refused here:
     * no driver can serve it, and the answer is the driver's own. */
    if (!by_group && gm_budget_limit(&d->budget) == 0 &&
        size > UINT64_MAX - used)
        return GM_ADMIT_DRIVER;
    /* Reclaim before refusing: give back what this process's pools hold
     * but do not use, then try once more. */
    if (gm_pool_trim_device(dev, d) > 0 &&
        gm_admit_take(d, size, &used, &by_group))
        return GM_ADMIT_OK;
    switch (gm_st.policy.on_oom) {
    case GM_OOM_WARN:
        if (by_group)
            break; /* a group's limit is always hard */
        if (!gm_grp_take(d, size)) {
            by_group = true;
            break;
        }
        /* Held, not yet memory: the peak waits for the commit. A size
         * that would wrap the count is the driver's to refuse. */
        if (!gm_budget_hold_over(&d->budget, size, &used)) {
            gm_grp_give(d, size);
            return GM_ADMIT_DRIVER;
        }
        /* The event's `used` is what was held before this request: the
         * segment's peak follows `used`, and the request is not memory
         * until the driver has answered. */
        gm_tel_event(&gm_st.tel, GM_EV_OVER_LIMIT, (unsigned)dev, api, size, 0,
                     used - size);
        refusal_message(dev, d, size, api, used, false,
                        "allowed past the limit");
        return GM_ADMIT_OK;
    case GM_OOM_WAIT:
        if (gm_oomwait(dev, d, size, api, &used))
            return GM_ADMIT_OK;
        /* Say which limit held it back: the process's has room now only
         * if the group's did not. */
        by_group = d->gdev1 != 0 && gm_budget_fits(&d->budget, size);
        break;
    case GM_OOM_SPILL:
        if (spillable) {
            gm_tel_event(&gm_st.tel, GM_EV_SPILL, (unsigned)dev, api, size, 0,
                         used);
            refusal_message(dev, d, size, api, used, by_group,
                            "over the limit, served as managed memory");
            return GM_ADMIT_SPILL;
        }
        break;
    case GM_OOM_FAIL:
        break;
    }
    gm_admit_refused(d, (unsigned)dev, api, size, used,
                  gm_budget_limit(&d->budget));
    refusal_message(dev, d, size, api, used, by_group, "refused");
    return GM_ADMIT_REFUSED;
}

bool gm_admit_adjust(struct gm_dev *d, uint64_t reserved, uint64_t actual)
{
    if (actual > reserved) {
        uint64_t used, more = actual - reserved;
        bool by_group;
        if (gm_admit_take(d, more, &used, &by_group))
            return true;
        if (by_group || gm_st.policy.on_oom != GM_OOM_WARN ||
            !gm_grp_take(d, more))
            return false;
        gm_budget_force(&d->budget, more); /* soft limit: let it through */
    } else if (actual < reserved) {
        gm_budget_release(&d->budget, reserved - actual);
        gm_grp_give(d, reserved - actual);
    }
    return true;
}
