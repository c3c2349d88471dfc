/*
 * shim/telemetry/telwrite.h — the telemetry writer's primitives (device-block
 * updates, ring records) and the two hot-path events, inline so that an
 * allocation's telemetry compiles to straight-line atomic stores in its
 * caller. The protocol, invariants and memory order are described in
 * shim/telemetry/ring.c (which holds the rest of the writer) and shim/telemetry/abi.h.
 *
 * Every update of a device block happens between tw_stats_begin and
 * tw_stats_end, with the atomic helpers below only.
 */
#ifndef GM_TELWRITE_H
#define GM_TELWRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "shim/telemetry/abi.h"
#include "shim/base/clock.h"
#include "shim/telemetry/telemetry.h"

/* The history's hot-path code (the bucket compare, the open bucket's
 * extremes) is compiled in unless a measurement turns it off:
 * tests/bench/bench_histoff.c builds the writer with GM_TW_HISTORY 0 so
 * that `make bench` can count what the history adds to an event. */
#ifndef GM_TW_HISTORY
#define GM_TW_HISTORY 1
#endif

#define TW_LD_RLX(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define TW_LD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define TW_ST_RLX(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define TW_ST_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* First use of a device: present = 1, dev_seen = max(dev_seen, dev+1). */
void gm_tw_mark_present(struct gm_abi_header *h, struct gm_abi_dev *d,
                        unsigned dev) __attribute__((cold));

/* History (shim/telemetry/hist.c), cold: the event at `now` on device
 * block d (entered by the caller) is past the open bucket: close it, fold
 * it into the coarser tiers, open the bucket of `now`. The block's
 * figures are still those before the event's own update (the end of the
 * closed bucket). Returns without rolling when another thread holds the
 * device's roll lock (the next event tries again). */
void gm_hist_roll(struct gm_abi_header *h, struct gm_abi_dev *d,
                  unsigned dev, uint64_t now) __attribute__((cold));

static inline struct gm_abi_header *tw_tel_hdr(const struct gm_tel *t)
{
    /* Pairs with the release store of t->hdr in attach(). */
    return __atomic_load_n(&t->hdr, __ATOMIC_ACQUIRE);
}

static inline uint64_t tw_get(const uint64_t *f)
{
    return TW_LD_RLX(f);
}

static inline void tw_put(uint64_t *f, uint64_t v)
{
    TW_ST_REL(f, v); /* ordered after this writer's wbegin increment */
}

/* Counts go up by one per event: 2^64 events cannot happen. */
static inline void tw_inc(uint64_t *f)
{
    __atomic_fetch_add(f, 1, __ATOMIC_RELEASE);
}

/* Cumulative byte sums saturate instead of wrapping (and stay there). */
static inline void tw_add(uint64_t *f, uint64_t v)
{
    uint64_t o = __atomic_fetch_add(f, v, __ATOMIC_RELEASE);
    if (__builtin_expect(o + v < o, 0))
        TW_ST_REL(f, UINT64_MAX);
}

/* Sums bounded by what exists (live bytes: memory held; latencies: 2^64
 * ns is 584 years) add plainly. */
static inline void tw_add_bounded(uint64_t *f, uint64_t v)
{
    __atomic_fetch_add(f, v, __ATOMIC_RELEASE);
}

/* Subtract, clamping at 0: an underflow (a release published before its
 * allocation, which the callers' ordering rules out) is undone before
 * this writer leaves, so no consistent copy ever holds it. */
static inline void tw_sub(uint64_t *f, uint64_t v)
{
    uint64_t o = __atomic_fetch_sub(f, v, __ATOMIC_RELEASE);
    if (__builtin_expect(o < v, 0))
        __atomic_fetch_add(f, v - o, __ATOMIC_RELEASE);
}

/* f = max(f, v); true when it rose. */
static inline bool tw_raise_to(uint64_t *f, uint64_t v)
{
    uint64_t o = TW_LD_RLX(f);
    while (v > o) {
        if (__atomic_compare_exchange_n(f, &o, v, true, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED))
            return true;
    }
    return false;
}

static inline unsigned tw_log2_bucket(uint64_t v, unsigned n)
{
    unsigned b = 63u - (unsigned)__builtin_clzll(v | 1); /* 0, 1 -> 0 */
    return b < n ? b : n - 1;
}

/* Enter a device block as one of possibly several concurrent writers
 * (never waits): count this writer in wbegin. Every field update that
 * follows is an atomic read-modify-write or a release store, so a reader
 * that sees any of them also sees this increment. */
static inline __attribute__((always_inline)) struct gm_abi_dev *
tw_stats_enter(struct gm_abi_header *h, unsigned dev, uint64_t now,
               bool known)
{
    if (dev >= h->dev_slots)
        return NULL;
    struct gm_abi_dev *d =
        (struct gm_abi_dev *)((char *)h + sizeof *h) + dev;
    __atomic_fetch_add(&d->wbegin, 1, __ATOMIC_ACQ_REL);
    if (!known && __builtin_expect(tw_get(&d->present) == 0, 0))
        gm_tw_mark_present(h, d, dev);
    /* History: the one compare per event; the roll is cold. It runs
     * before this event's updates, so the closed bucket ends with the
     * figures of the event before. */
    if (GM_TW_HISTORY &&
        __builtin_expect(now >= tw_get(&d->hist_next_ns), 0))
        gm_hist_roll(h, d, dev, now);
    tw_put(&d->last_ns, now);
    return d;
}

static inline __attribute__((always_inline)) struct gm_abi_dev *
tw_stats_begin(struct gm_abi_header *h, unsigned dev, uint64_t now)
{
    return tw_stats_enter(h, dev, now, false);
}

/* Leave: count this writer in wdone (release: pairs with readers). */
static inline void tw_stats_end(struct gm_abi_dev *d)
{
    __atomic_fetch_add(&d->wdone, 1, __ATOMIC_RELEASE);
}

/* f = min(f, v). */
static inline void tw_lower_to(uint64_t *f, uint64_t v)
{
    uint64_t o = TW_LD_RLX(f);
    while (v < o) {
        if (__atomic_compare_exchange_n(f, &o, v, true, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED))
            return;
    }
}

/* used = the figure given (concurrent writers may store theirs out of
 * order; the next event or gm_tel_sync corrects it); peak never falls
 * below any used stored, since each writer raises it before leaving. */
static inline void tw_set_used_peak(struct gm_abi_dev *d, uint64_t used,
                                 uint64_t peak, uint64_t now)
{
    tw_put(&d->used, used);
    /* The open history bucket's extremes (a compare each; the store only
     * when beyond). */
    if (GM_TW_HISTORY) {
        tw_raise_to(&d->hist_max, used);
        tw_lower_to(&d->hist_min, used);
    }
    if (peak < used)
        peak = used;
    if (tw_raise_to(&d->peak, peak)) {
        tw_put(&d->peak_ns, now);
        tw_put(&d->frag_peak_ppm, tw_get(&d->frag_ppm));
    }
}

/* ---- writer: ring ------------------------------------------------------- */

static inline __attribute__((always_inline)) void
tw_ring_push(struct gm_abi_header *h, unsigned kind, unsigned api,
          uint32_t dev, uint64_t now, uint64_t lat, uint64_t size,
          uint64_t addr, uint64_t used, uint64_t extra)
{
    struct gm_abi_record *ring =
        (struct gm_abi_record *)((char *)h + h->ring_offset);
    uint64_t i = __atomic_fetch_add(&h->ring_head, 1, __ATOMIC_RELAXED);
    struct gm_abi_record *r = &ring[i & (h->ring_capacity - 1)];
    uint64_t want = i + 1, s = TW_LD_RLX(&r->seq);
    do {
        if ((s & GM_ABI_SEQ_BUSY) || s >= want) {
            /* Another producer is still writing this slot (it was lapped)
             * or a later event already took it: never wait, drop. */
            __atomic_fetch_add(&h->ring_dropped, 1, __ATOMIC_RELAXED);
            return;
        }
    } while (!__atomic_compare_exchange_n(&r->seq, &s, want | GM_ABI_SEQ_BUSY,
                                          true, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    /* Release stores: each is ordered after the busy mark above. */
    TW_ST_REL(&r->ts_ns, now);
    TW_ST_REL(&r->kind, (uint16_t)kind);
    TW_ST_REL(&r->api, (uint16_t)api);
    TW_ST_REL(&r->dev, dev);
    TW_ST_REL(&r->tid, gm_thread_id());
    TW_ST_REL(&r->lat_ns, lat > UINT32_MAX ? UINT32_MAX : (uint32_t)lat);
    TW_ST_REL(&r->size, size);
    TW_ST_REL(&r->addr, addr);
    TW_ST_REL(&r->used_after, used);
    TW_ST_REL(&r->extra, extra);
    TW_ST_REL(&r->seq, want); /* publish: pairs with gm_tel_read_record */
}

static inline void tw_put_frag(struct gm_abi_dev *d, uint32_t frag_ppm)
{
    if (frag_ppm == GM_TEL_FRAG_KEEP)
        return;
    uint64_t v = frag_ppm > 1000000u ? 1000000u : frag_ppm;
    tw_put(&d->frag_ppm, v);
    if (tw_get(&d->used) == tw_get(&d->peak))
        tw_put(&d->frag_peak_ppm, v);
}

static inline __attribute__((always_inline)) void
gm_tel_alloc_ev(struct gm_tel *t, const struct gm_tel_ev *e)
{
    struct gm_abi_header *h = tw_tel_hdr(t);
    if (h == NULL)
        return;
    struct gm_abi_dev *d = tw_stats_enter(h, e->dev, e->ts_ns, e->known);
    if (d != NULL) {
        tw_inc(&d->allocs);
        tw_add(&d->total_bytes, e->size);
        tw_inc(&d->live_allocs);
        tw_add_bounded(&d->live_bytes, e->size);
        tw_inc(&d->size_hist[tw_log2_bucket(e->size, GM_ABI_SIZE_BUCKETS)]);
        tw_inc(&d->lat_hist[tw_log2_bucket(e->lat_ns, GM_ABI_LAT_BUCKETS)]);
        tw_add_bounded(&d->lat_sum_ns, e->lat_ns);
        tw_set_used_peak(d, e->used, e->peak, e->ts_ns);
        tw_put_frag(d, e->frag_ppm);
        tw_stats_end(d);
    }
    tw_ring_push(h, GM_EV_ALLOC, e->api, e->dev, e->ts_ns, e->lat_ns, e->size,
              e->addr, e->used, 0);
}

static inline __attribute__((always_inline)) void
gm_tel_free_ev(struct gm_tel *t, const struct gm_tel_ev *e)
{
    struct gm_abi_header *h = tw_tel_hdr(t);
    if (h == NULL)
        return;
    struct gm_abi_dev *d = tw_stats_enter(h, e->dev, e->ts_ns, e->known);
    if (d != NULL) {
        tw_inc(&d->frees);
        tw_sub(&d->live_allocs, 1);
        tw_sub(&d->live_bytes, e->size);
        tw_set_used_peak(d, e->used, 0, e->ts_ns);
        tw_put_frag(d, e->frag_ppm);
        tw_stats_end(d);
    }
    tw_ring_push(h, GM_EV_FREE, e->api, e->dev, e->ts_ns, e->lat_ns, e->size,
              e->addr, e->used, 0);
}

#endif
