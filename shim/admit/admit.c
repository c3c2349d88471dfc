/*
 * shim/admit/admit.c — the slow side of an admission: reclaim from this
 * process's idle pools, then the out-of-memory policy (fail, wait, spill,
 * warn) that decides what a refusal does, the refusal message, and
 * adjusting a charge to what the driver actually used.
 *
 * A group's limit is always hard: warn lets a request past the process's
 * limit only when the group can still take it.
 */
#include "shim/admit/oomsnap.h"
#include "shim/admit/admit.h"

#include <stdio.h>

#include "policy/parse.h"
#include "shim/account/pools.h"
#include "shim/admit/oomwait.h"
#include "shim/telemetry/abi.h"

static void refusal_message(int dev, struct gm_dev *d, uint64_t size,
                            unsigned api, uint64_t used, bool by_group,
                            const char *what)
{
    uint64_t n = gm_ratelimit_pass(&d->refuse_rl, 1000000000ull);
    if (n == 0 || !gm_log_enabled(GM_LOG_WARN))
        return;
    char s[32], why[160], more[64] = "";
    gm_format_size(size, s, sizeof s);
    if (by_group) {
        gm_grp_describe(d, why, sizeof why);
    } else {
        char u[32], l[32];
        gm_format_size(used, u, sizeof u);
        gm_format_size(gm_budget_limit(&d->budget), l, sizeof l);
        snprintf(why, sizeof why, "%s used of %s limit", u, l);
    }
    if (n > 1)
        snprintf(more, sizeof more, " (%llu similar messages suppressed)",
                 (unsigned long long)(n - 1));
    gm_log(GM_LOG_WARN, "device %d: %s of %s %s: %s%s", dev,
           gm_api_name(api), s, what, why, more);
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
