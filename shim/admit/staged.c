/*
 * shim/admit/staged.c — the staged mode's one transition: at the first
 * allocation (or device query) after GPUMEM_WARMUP has passed, every device
 * seen so far gets limit = peak x (1 + GPUMEM_HEADROOM) rounded up to
 * 2 MiB (at most the limit set, if one was), with a limit-change event and
 * a line on stderr. Devices first used after the freeze get the limit the
 * policy gives them.
 *
 * Invariant: the freeze runs exactly once (gm_staged_armed 1 -> 0 by
 * exchange); until then the check costs one relaxed load per allocation.
 */
#include "shim/admit/staged.h"


#include "policy/parse.h"
#include "shim/telemetry/abi.h"
#include "shim/account/state.h"

_Atomic int gm_staged_armed;
static uint64_t deadline_ns;

void gm_staged_arm(uint64_t now_ns)
{
    if (gm_st.policy.mode != GM_MODE_STAGED)
        return;
    deadline_ns = now_ns + gm_st.policy.warmup_ns;
    atomic_store_explicit(&gm_staged_armed, 1, memory_order_release);
}

uint64_t gm_staged_limit(uint64_t peak, double headroom, uint64_t cap)
{
    const uint64_t two_mib = 2ull << 20, ppm = 1000000u;
    /* Integer arithmetic in parts per million: 400 MiB + 10% is exactly
     * 440 MiB, not a rounding error above it. */
    uint64_t h = headroom <= 0 ? 0 : (uint64_t)(headroom * 1e6 + 0.5);
    uint64_t extra = (peak / ppm) * h + ((peak % ppm) * h + ppm - 1) / ppm;
    uint64_t l = extra > UINT64_MAX - two_mib - peak ? UINT64_MAX - two_mib
                                                     : peak + extra;
    l = (l + two_mib - 1) / two_mib * two_mib;
    if (l == 0)
        l = two_mib;
    return cap != 0 && cap < l ? cap : l;
}

void gm_staged_poll_slow(void)
{
    if (gm_clock_monotonic_ns() < deadline_ns ||
        atomic_exchange(&gm_staged_armed, 0) == 0)
        return;
    char w[32];
    gm_format_duration(gm_st.policy.warmup_ns, w, sizeof w);
    for (unsigned i = 0; i < GM_MAX_DEVICES; i++) {
        struct gm_dev *d = &gm_st.dev[i];
        if (atomic_load_explicit(&d->ready, memory_order_acquire) != 2)
            continue;
        uint64_t peak = gm_budget_peak(&d->budget);
        uint64_t l = gm_staged_limit(peak, gm_st.policy.headroom,
                                     gm_budget_limit(&d->budget));
        gm_budget_set_limit(&d->budget, l);
        gm_tel_limit(&gm_st.tel, i, l);
        char ls[32], ps[32];
        gm_format_size(l, ls, sizeof ls);
        gm_format_size(peak, ps, sizeof ps);
        gm_log(GM_LOG_WARN, "device %u: warm-up of %s over: limit frozen at "
               "%s (peak %s + %llu%% headroom)", i, w, ls, ps,
               (unsigned long long)(gm_st.policy.headroom * 100.0 + 0.5));
    }
}
