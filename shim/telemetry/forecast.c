/*
 * shim/telemetry/forecast.c — the forecast warning (see forecast.h; the
 * fit, verdict and forecast formula are shim/telemetry/trend.c's, the
 * definitions docs/metrics.md "Forecast").
 */
#include "shim/telemetry/forecast.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "policy/parse.h"
#include "shim/base/safefile.h"
#include "shim/telemetry/report.h"
#include "shim/telemetry/telwrite.h"
#include "shim/telemetry/trend.h"

static _Atomic uint64_t warn_ns;
static _Atomic int quiet;              /* the log level mutes warnings */
static _Atomic uint64_t warned;        /* bit dev: given */
static uint64_t last_check[GM_ABI_HIST_DEVICES]; /* roll-lock holder only */
/* Per device, the phases its resets bound (docs/metrics.md): `from`, the
 * first bucket of the last phase with allocations or frees; `reset1`,
 * 1 + the bucket open at the first reset after them (0: none yet), and
 * `ops`, the device's allocs + frees then. Written under the writer lock
 * (relaxed atomics: the exit report reads them holding it too). */
struct phase {
    _Atomic uint64_t from, reset1, ops;
};
static struct phase phases[GM_ABI_HIST_DEVICES];
/* Warning lines formatted under the writer lock, written to stderr by
 * gm_forecast_flush after it was released (a blocked stderr must not hold
 * every writer): one per device, as the warning is given once. */
static char pending[GM_ABI_HIST_DEVICES][320];
static _Atomic size_t pending_len[GM_ABI_HIST_DEVICES];

void gm_forecast_configure(uint64_t warn_before_ns, bool silent)
{
    __atomic_store_n(&warn_ns, warn_before_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&quiet, silent, __ATOMIC_RELAXED);
    __atomic_store_n(&warned, 0, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < GM_ABI_HIST_DEVICES; i++) {
        last_check[i] = 0;
        atomic_store_explicit(&phases[i].from, 0, memory_order_relaxed);
        atomic_store_explicit(&phases[i].reset1, 0, memory_order_relaxed);
        atomic_store_explicit(&phases[i].ops, 0, memory_order_relaxed);
        atomic_store_explicit(&pending_len[i], 0, memory_order_relaxed);
    }
}

bool gm_forecast_warned(unsigned dev)
{
    return dev < 64 &&
           (__atomic_load_n(&warned, __ATOMIC_RELAXED) >> dev & 1u);
}

#define PH_LD(f) atomic_load_explicit(&(f), memory_order_relaxed)
#define PH_ST(f, v) atomic_store_explicit(&(f), (v), memory_order_relaxed)

void gm_forecast_reset(unsigned dev, uint64_t bucket, uint64_t ops)
{
    if (dev >= GM_ABI_HIST_DEVICES)
        return;
    struct phase *p = &phases[dev];
    if (PH_LD(p->reset1) != 0) {
        if (ops == PH_LD(p->ops))
            return; /* nothing since the last reset: it still ends the phase */
        PH_ST(p->from, PH_LD(p->reset1)); /* a phase began after it */
    }
    PH_ST(p->reset1, bucket + 1);
    PH_ST(p->ops, ops);
}

/* The buckets [*first, *end) of device dev's phase: the one after the
 * last reset once the device allocated or freed since, else the one
 * that reset ended (the buckets before the reset's own). */
static void phase_of(unsigned dev, uint64_t ops_now, uint64_t *first,
                     uint64_t *end)
{
    *first = 0;
    *end = UINT64_MAX;
    if (dev >= GM_ABI_HIST_DEVICES)
        return;
    const struct phase *p = &phases[dev];
    uint64_t r1 = PH_LD(p->reset1);
    *first = PH_LD(p->from);
    if (r1 == 0)
        return;
    if (ops_now != PH_LD(p->ops))
        *first = r1;
    else
        *end = r1 - 1;
}

/* The last closed tier-0 buckets in [first, end), oldest first. */
static size_t gather(const struct gm_abi_header *h, const struct gm_abi_dev *d,
                     const struct gm_abi_hist *hs, uint64_t first,
                     uint64_t end, struct gm_trend_point *pt)
{
    uint64_t open = tw_get(&d->hist_open);
    /* Closed buckets still held: open - GM_ABI_HIST_BUCKETS .. open - 1. */
    uint64_t lo = open > GM_ABI_HIST_BUCKETS ? open - GM_ABI_HIST_BUCKETS : 0;
    uint64_t top = end < open ? end : open;
    if (lo < first)
        lo = first;
    bool steps = TW_LD_RLX(&h->steps) > 0;
    size_t n = 0;
    for (uint64_t idx = top; idx > lo && n < GM_FORECAST_POINTS;) {
        idx--;
        const struct gm_abi_bucket *b = &hs->tier[0][idx % GM_ABI_HIST_BUCKETS];
        if (b->seq != idx + 1) /* only the roller writes: our own stores */
            continue;
        struct gm_trend_point *p = &pt[GM_FORECAST_POINTS - 1 - n++];
        p->t = (double)(idx + 1);
        p->step = steps ? (double)b->steps : -1.0;
        p->floor = b->used_min;
        p->peak = b->used_max;
        p->live = b->live_allocs;
    }
    /* Move the n points found to the front. */
    for (size_t i = 0; i < n; i++)
        pt[i] = pt[GM_FORECAST_POINTS - n + i];
    return n;
}

static uint64_t round_u64(double v)
{
    if (!(v > 0))
        return 0;
    return v >= 1.8e19 ? UINT64_MAX : (uint64_t)(v + 0.5);
}

/* Steps to the limit in whole steps, rounded down as everywhere they are
 * shown (docs/metrics.md, "The forecast"). */
static uint64_t whole_steps(double v)
{
    if (!(v > 0))
        return 0;
    return v >= 1.8e19 ? UINT64_MAX : (uint64_t)v; /* truncates: floor */
}

/* The warning line on stderr, unless the log level mutes warnings (the
 * record is written anyway). */
static void warn_line(const struct gm_tw *w, unsigned dev,
                      const struct gm_trend *r, uint64_t limit)
{
    if (__atomic_load_n(&quiet, __ATOMIC_RELAXED))
        return;
    char lim[32], rate[32], floor[32], per_step[32], line[320];
    gm_format_size_short(limit, lim, sizeof lim);
    gm_format_size_short(round_u64(r->bytes_per_second), rate, sizeof rate);
    gm_format_size_short(round_u64(r->floor_now), floor, sizeof floor);
    unsigned long long secs = round_u64(r->seconds_to_limit);
    int n;
    if (r->by_step && !isnan(r->steps_to_limit)) {
        gm_format_size_short(round_u64(r->bytes_per_step), per_step,
                             sizeof per_step);
        n = snprintf(line, sizeof line,
                     "gpumem: device %u: the limit (%s) is forecast in about "
                     "%llu s (%llu steps): used floor %s, growing %s per "
                     "step (%s/s)\n", dev, lim, secs,
                     (unsigned long long)whole_steps(r->steps_to_limit), floor,
                     per_step, rate);
    } else {
        n = snprintf(line, sizeof line,
                     "gpumem: device %u: the limit (%s) is forecast in about "
                     "%llu s: used floor %s, growing %s/s\n", dev, lim, secs,
                     floor, rate);
    }
    if (n <= 0)
        return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    memcpy(pending[dev], line, len);
    /* Pairs with the acquire exchange in gm_forecast_flush. */
    atomic_store_explicit(&pending_len[dev], len, memory_order_release);
    gm_tw_defer(w); /* the flush after the writer lock */
}

void gm_forecast_flush(void)
{
    for (unsigned i = 0; i < GM_ABI_HIST_DEVICES; i++) {
        size_t len = atomic_exchange_explicit(&pending_len[i], 0,
                                              memory_order_acquire);
        if (len > 0)
            (void)gm_write_all(STDERR_FILENO, pending[i], len);
    }
}

bool gm_forecast_trend(const struct gm_tw *w, unsigned dev,
                       struct gm_trend *r)
{
    if (w == NULL || dev >= w->hist_slots || dev >= w->dev_slots)
        return false;
    const struct gm_abi_dev *d = &w->devs[dev];
    struct gm_trend_point pt[GM_FORECAST_POINTS];
    uint64_t first, end;
    phase_of(dev, tw_get(&d->allocs) + tw_get(&d->frees), &first, &end);
    size_t n = gather(w->h, d, &w->hists[dev], first, end, pt);
    return n > 0 && gm_trend_fit(pt, n, tw_get(&d->limit), NULL, r) == 0 &&
           r->verdict == GM_TREND_GROWS;
}

void gm_forecast_check(const struct gm_tw *w, struct gm_abi_dev *d,
                       unsigned dev, uint64_t now)
{
    uint64_t threshold = __atomic_load_n(&warn_ns, __ATOMIC_RELAXED);
    uint64_t limit = tw_get(&d->limit);
    if (threshold == 0 || limit == 0 || dev >= GM_ABI_HIST_DEVICES ||
        gm_forecast_warned(dev))
        return;
    if (last_check[dev] != 0 && now - last_check[dev] < GM_FORECAST_EVERY_NS)
        return;
    last_check[dev] = now;
    struct gm_trend r;
    if (!gm_forecast_trend(w, dev, &r) || isnan(r.seconds_to_limit) ||
        r.seconds_to_limit * 1e9 >= (double)threshold)
        return;
    uint64_t bit = 1ull << dev;
    if (__atomic_fetch_or(&warned, bit, __ATOMIC_RELAXED) & bit)
        return;
    warn_line(w, dev, &r, limit);
    uint64_t steps_left = r.by_step && !isnan(r.steps_to_limit)
                              ? whole_steps(r.steps_to_limit) : UINT64_MAX;
    tw_ring_push(w, GM_EV_FORECAST, GM_API_NONE, dev, now, 0,
                 round_u64(r.seconds_to_limit), steps_left,
                 round_u64(r.floor_now), round_u64(r.bytes_per_second));
}
