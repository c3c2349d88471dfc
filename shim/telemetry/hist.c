/*
 * shim/telemetry/hist.c — the history's cold writer (the bucket roll and
 * the exit flush) and its pure arithmetic (fold, stitch, open bucket),
 * shared with the exit report and tools/lib/reader.c. Protocol and
 * memory order: docs/abi.md "History"; declarations: hist.h.
 *
 * Invariants: a device's history is rolled by the holder of hist_lock
 * only (taken with a compare-exchange, never waited for on the event
 * path); bucket indices only grow (an event before hist_next_ns stays in
 * the open bucket, whatever the clock did); a published bucket has
 * used_min <= used_last <= used_max.
 */
#include "shim/telemetry/hist.h"

#include <string.h>

#include "shim/base/spin.h"
#include "shim/telemetry/forecast.h"
#include "shim/telemetry/telwrite.h"

#define HIST_CLOSED UINT64_MAX   /* hist_next_ns after the exit flush */
#define FLUSH_SPINS 100000u      /* bound on waiting for a roll at exit */

/* Device dev's history in the writer's layout, NULL past it. */
static struct gm_abi_hist *hist_of(const struct gm_tw *w, unsigned dev)
{
    return dev < w->hist_slots ? &w->hists[dev] : NULL;
}

/* ---- pure arithmetic ---------------------------------------------------- */

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

static uint32_t sat_add32(uint32_t a, uint32_t b)
{
    return a + b < a ? UINT32_MAX : a + b;
}

void gm_hist_fold(struct gm_abi_bucket *dst, const struct gm_abi_bucket *src,
                  bool dst_fresh)
{
    if (dst_fresh) {
        uint64_t seq = dst->seq;
        *dst = *src;
        dst->seq = seq;
        return;
    }
    if (src->used_min < dst->used_min)
        dst->used_min = src->used_min;
    if (src->used_max > dst->used_max)
        dst->used_max = src->used_max;
    dst->used_last = src->used_last;
    dst->live_allocs = src->live_allocs;
    dst->allocs = sat_add(dst->allocs, src->allocs);
    dst->frees = sat_add(dst->frees, src->frees);
    dst->refusals = sat_add32(dst->refusals, src->refusals);
    dst->steps = src->steps;
}

static void to_point(const struct gm_abi_bucket *b, unsigned tier,
                     uint64_t index, uint64_t base_ns,
                     struct gm_hist_point *p)
{
    uint64_t w = gm_hist_width_ns(tier);
    memset(p, 0, sizeof *p);
    p->index = index;
    p->tier = tier;
    p->start_ns = base_ns + index * w;
    p->end_ns = p->start_ns + w;
    p->used_min = b->used_min;
    p->used_max = b->used_max;
    p->used_last = b->used_last;
    p->live_allocs = b->live_allocs;
    p->allocs = b->allocs;
    p->frees = b->frees;
    p->refusals = b->refusals;
    p->steps = b->steps;
}

static bool slot_holds(const struct gm_abi_bucket *b, uint64_t index)
{
    return b->seq == index + 1;
}

/* The newest index a tier's slots hold; false when it holds none. */
static bool newest(const struct gm_abi_bucket *tier, uint64_t *out)
{
    bool any = false;
    uint64_t n = 0;
    for (unsigned i = 0; i < GM_ABI_HIST_BUCKETS; i++) {
        uint64_t s = tier[i].seq;
        if (s == 0 || (s & GM_ABI_SEQ_BUSY) ||
            (s - 1) % GM_ABI_HIST_BUCKETS != i)
            continue;
        if (!any || s - 1 > n)
            n = s - 1;
        any = true;
    }
    *out = n;
    return any;
}

static uint64_t round_up(uint64_t v, uint64_t m)
{
    return v % m == 0 ? v : v + (m - v % m);
}

/* Append tier t's buckets with indices in [from, to) that it holds. */
static size_t emit(const struct gm_abi_bucket *tier, unsigned t,
                   uint64_t from, uint64_t to, uint64_t base_ns,
                   struct gm_hist_point *out, size_t n, size_t max)
{
    if (to > from && to - from > GM_ABI_HIST_BUCKETS)
        from = to - GM_ABI_HIST_BUCKETS;
    for (uint64_t j = from; j < to && n < max; j++) {
        const struct gm_abi_bucket *b = &tier[j % GM_ABI_HIST_BUCKETS];
        if (slot_holds(b, j))
            to_point(b, t, j, base_ns, &out[n++]);
    }
    return n;
}

size_t gm_hist_stitch(const struct gm_abi_bucket tiers[GM_ABI_HIST_TIERS]
                                                     [GM_ABI_HIST_BUCKETS],
                      const struct gm_hist_point *open, uint64_t base_ns,
                      struct gm_hist_point *out, size_t max)
{
    size_t n = 0;
    uint64_t n0;
    if (newest(tiers[0], &n0)) {
        /* Where each finer tier's complete coverage starts, on a boundary
         * of the next coarser bucket (in the finer tier's units). */
        const uint64_t f = GM_ABI_HIST_FOLD, nb = GM_ABI_HIST_BUCKETS;
        uint64_t n1 = n0 / f, n2 = n0 / (f * f);
        uint64_t s0 = round_up(n0 >= nb ? n0 - (nb - 1) : 0, f);
        uint64_t s1 = round_up(n1 >= nb ? n1 - (nb - 1) : 0, f);
        if (s1 > s0 / f)
            s1 = s0 / f;
        uint64_t l2 = n2 >= nb ? n2 - (nb - 1) : 0;
        n = emit(tiers[2], 2, l2, s1 / f, base_ns, out, n, max);
        n = emit(tiers[1], 1, s1, s0 / f, base_ns, out, n, max);
        n = emit(tiers[0], 0, s0, n0 + 1, base_ns, out, n, max);
    }
    if (open != NULL && n < max)
        out[n++] = *open;
    return n;
}

size_t gm_hist_append_open(struct gm_hist_point *out, size_t n, size_t max,
                           const struct gm_hist_point *open)
{
    while (n > 0 && ((out[n - 1].tier == 0 &&
                      out[n - 1].index >= open->index) ||
                     out[n - 1].end_ns > open->start_ns))
        n--;
    if (n < max)
        out[n++] = *open;
    return n;
}

bool gm_hist_open_point(const struct gm_abi_dev *d, uint64_t base_ns,
                        uint64_t steps, struct gm_hist_point *out)
{
    if (d->hist_next_ns == 0 || d->hist_next_ns == HIST_CLOSED)
        return false;
    struct gm_abi_bucket b = {
        .used_min = d->hist_min < d->used ? d->hist_min : d->used,
        .used_max = d->hist_max > d->used ? d->hist_max : d->used,
        .used_last = d->used,
        .live_allocs = d->live_allocs,
        .allocs = d->allocs > d->hist_allocs0 ? d->allocs - d->hist_allocs0
                                               : 0,
        .frees = d->frees > d->hist_frees0 ? d->frees - d->hist_frees0 : 0,
        .refusals = d->refusals - d->hist_refusals0 > UINT32_MAX ||
                            d->refusals < d->hist_refusals0
                        ? (d->refusals < d->hist_refusals0 ? 0 : UINT32_MAX)
                        : (uint32_t)(d->refusals - d->hist_refusals0),
        .steps = steps > UINT32_MAX ? UINT32_MAX : (uint32_t)steps,
    };
    to_point(&b, 0, d->hist_open, base_ns, out);
    out->open = 1;
    return true;
}

bool gm_hist_read_bucket(const struct gm_abi_bucket *src,
                         struct gm_abi_bucket *dst)
{
    uint64_t s1 = TW_LD_ACQ(&src->seq); /* pairs with publish()'s release */
    if (s1 == 0 || (s1 & GM_ABI_SEQ_BUSY))
        return false;
    dst->used_min = TW_LD_ACQ(&src->used_min);
    dst->used_max = TW_LD_ACQ(&src->used_max);
    dst->used_last = TW_LD_ACQ(&src->used_last);
    dst->live_allocs = TW_LD_ACQ(&src->live_allocs);
    dst->allocs = TW_LD_ACQ(&src->allocs);
    dst->frees = TW_LD_ACQ(&src->frees);
    dst->refusals = TW_LD_ACQ(&src->refusals);
    dst->steps = TW_LD_ACQ(&src->steps);
    /* The acquire loads keep this one after them. */
    if (TW_LD_RLX(&src->seq) != s1)
        return false;
    dst->seq = s1;
    return true;
}

/* ---- writer ------------------------------------------------------------- */

/* Publish b as bucket `index` in slot dst: BUSY mark, fields, seq. */
static void publish(struct gm_abi_bucket *dst, const struct gm_abi_bucket *b,
                    uint64_t index)
{
    TW_ST_RLX(&dst->seq, (index + 1) | GM_ABI_SEQ_BUSY);
    /* Release stores: each is ordered after the BUSY mark above. */
    TW_ST_REL(&dst->used_min, b->used_min);
    TW_ST_REL(&dst->used_max, b->used_max);
    TW_ST_REL(&dst->used_last, b->used_last);
    TW_ST_REL(&dst->live_allocs, b->live_allocs);
    TW_ST_REL(&dst->allocs, b->allocs);
    TW_ST_REL(&dst->frees, b->frees);
    TW_ST_REL(&dst->refusals, b->refusals);
    TW_ST_REL(&dst->steps, b->steps);
    TW_ST_REL(&dst->seq, index + 1); /* pairs with gm_hist_read_bucket */
}

static uint64_t diff(uint64_t now, uint64_t then)
{
    return now > then ? now - then : 0;
}

/* The block's counters, read once per roll: the closed bucket ends and
 * the new one starts with the same values, so an event counted by a
 * concurrent writer meanwhile lands in exactly one of the two. */
struct counts {
    uint64_t used, allocs, frees, refusals;
};

static struct counts counts_now(const struct gm_abi_dev *d)
{
    struct counts c = { tw_get(&d->used), tw_get(&d->allocs),
                        tw_get(&d->frees), tw_get(&d->refusals) };
    return c;
}

/* Close the open bucket of d, ending with the counters c. Caller holds
 * hist_lock. */
static void close_open(struct gm_abi_header *h, struct gm_abi_hist *hs,
                       struct gm_abi_dev *d, const struct counts *c)
{
    uint64_t used = c->used, lo = tw_get(&d->hist_min),
             hi = tw_get(&d->hist_max), steps = TW_LD_RLX(&h->steps),
             refusals = diff(c->refusals, tw_get(&d->hist_refusals0));
    struct gm_abi_bucket b = {
        .used_min = lo < used ? lo : used,
        .used_max = hi > used ? hi : used,
        .used_last = used,
        .live_allocs = tw_get(&d->live_allocs),
        .allocs = diff(c->allocs, tw_get(&d->hist_allocs0)),
        .frees = diff(c->frees, tw_get(&d->hist_frees0)),
        .refusals = refusals > UINT32_MAX ? UINT32_MAX : (uint32_t)refusals,
        .steps = steps > UINT32_MAX ? UINT32_MAX : (uint32_t)steps,
    };
    uint64_t idx = tw_get(&d->hist_open);
    publish(&hs->tier[0][idx % GM_ABI_HIST_BUCKETS], &b, idx);
    for (unsigned t = 1; t < GM_ABI_HIST_TIERS; t++) {
        uint64_t j = idx >> (4u * t);
        struct gm_abi_bucket *slot = &hs->tier[t][j % GM_ABI_HIST_BUCKETS];
        /* Only the lock holder writes buckets: plain reads of our own
         * stores. */
        struct gm_abi_bucket cur = *slot;
        gm_hist_fold(&cur, &b, cur.seq != j + 1);
        publish(slot, &cur, j);
    }
}

/* Open the bucket of `now`, starting from the counters c. */
static void open_at(struct gm_abi_header *h, struct gm_abi_dev *d,
                    uint64_t now, const struct counts *c)
{
    uint64_t idx = gm_hist_index(h->hist_base_ns, now);
    tw_put(&d->hist_open, idx);
    tw_put(&d->hist_min, c->used);
    tw_put(&d->hist_max, c->used);
    tw_put(&d->hist_allocs0, c->allocs);
    tw_put(&d->hist_frees0, c->frees);
    tw_put(&d->hist_refusals0, c->refusals);
    /* Last: an event that sees the new end sees the figures above. */
    tw_put(&d->hist_next_ns,
           h->hist_base_ns + (idx + 1) * GM_ABI_HIST_TICK_NS);
}

void gm_hist_roll(const struct gm_tw *w, struct gm_abi_dev *d,
                  unsigned dev, uint64_t now)
{
    struct gm_abi_header *h = w->h;
    struct gm_abi_hist *hs = hist_of(w, dev);
    if (hs == NULL) {
        /* No history for this ordinal: never roll again. */
        tw_put(&d->hist_next_ns, HIST_CLOSED);
        return;
    }
    uint64_t free_ = 0;
    if (!__atomic_compare_exchange_n(&d->hist_lock, &free_, 1, false,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return; /* another thread rolls: the next event tries again */
    uint64_t next = tw_get(&d->hist_next_ns);
    if (now >= next && next != HIST_CLOSED) {
        struct counts c = counts_now(d);
        if (next != 0)
            close_open(h, hs, d, &c);
        open_at(h, d, now, &c);
        if (next != 0)
            gm_forecast_check(w, d, dev, now);
    }
    TW_ST_REL(&d->hist_lock, 0); /* pairs with the acquire above */
}

void gm_hist_flush(const struct gm_tw *w)
{
    struct gm_abi_header *h = w->h;
    uint64_t seen = TW_LD_ACQ(&h->dev_seen);
    unsigned n = seen < w->hist_slots ? (unsigned)seen : w->hist_slots;
    struct gm_abi_dev *devs = w->devs;
    for (unsigned i = 0; i < n; i++) {
        struct gm_abi_dev *d = &devs[i];
        uint64_t free_ = 0;
        unsigned spins = 0;
        while (!__atomic_compare_exchange_n(&d->hist_lock, &free_, 1, false,
                                            __ATOMIC_ACQUIRE,
                                            __ATOMIC_RELAXED)) {
            free_ = 0;
            if (++spins >= FLUSH_SPINS)
                break;
            gm_cpu_relax();
        }
        if (spins >= FLUSH_SPINS)
            continue; /* a roller died inside: leave its device as is */
        TW_ST(&d->wbegin, TW_LD(&d->wbegin) + 1);
        TW_FENCE_REL(); /* as in tw_stats_enter */
        uint64_t next = tw_get(&d->hist_next_ns);
        struct counts c = counts_now(d);
        if (next != 0 && next != HIST_CLOSED)
            close_open(h, hist_of(w, i), d, &c);
        tw_put(&d->hist_next_ns, HIST_CLOSED);
        tw_stats_end(d);
        TW_ST_REL(&d->hist_lock, 0);
    }
}

/* ---- OOM snapshot --------------------------------------------------------- */

bool gm_hist_oom_wanted(const struct gm_tw *w, unsigned dev)
{
    const struct gm_abi_hist *hs = hist_of(w, dev);
    return hs != NULL && TW_LD_RLX(&hs->oom.state) == GM_ABI_OOM_EMPTY;
}

bool gm_hist_oom_write(const struct gm_tw *w, unsigned dev,
                       const struct gm_abi_oom *snap)
{
    struct gm_abi_hist *hs = hist_of(w, dev);
    if (hs == NULL)
        return false;
    uint64_t empty = GM_ABI_OOM_EMPTY;
    if (!__atomic_compare_exchange_n(&hs->oom.state, &empty,
                                     GM_ABI_OOM_WRITING, false,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return false; /* another thread's refusal came first */
    /* Plain copy: no reader looks before the release store below. */
    memcpy((char *)&hs->oom + sizeof hs->oom.state,
           (const char *)snap + sizeof snap->state,
           sizeof *snap - sizeof snap->state);
    TW_ST_REL(&hs->oom.state, GM_ABI_OOM_DONE); /* pairs with gm_seg_oom */
    return true;
}
