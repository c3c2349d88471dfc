/*
 * shim/account/commit.h — the bodies of gm_acct_commit_entry and
 * gm_acct_released (shim/account/account.h), inline so that the common
 * allocation and free paths run without a call between wrapper and
 * bookkeeping. Rules as in account.h: the telemetry event (which logs a
 * device pointer's interval with the device's fragmentation log, under
 * the writer lock) is published before the entry enters the table (a
 * free can only find the entry after that), and a release gives back
 * exactly the entry's charge and rings the release doorbell.
 */
#ifndef GM_COMMIT_H
#define GM_COMMIT_H

#include "shim/account/grouphook.h"
#include "shim/account/release.h"
#include "shim/account/state.h"
#include "shim/account/track.h"
#include "shim/base/clock.h"
#include "shim/telemetry/telwrite.h"

/* Bring device dev's fragmentation figure up to date (cold: the exit;
 * the device is set up). */
void gm_acct_frag_sync(unsigned dev) __attribute__((cold));
/* The fragmentation log's refill (ctx: the device): every device pointer
 * of the table on that device into q's emptied tree. */
void gm_acct_frag_refill(void *ctx, struct gm_fragq *q) __attribute__((cold));

void gm_acct_commit_collision(struct gm_alloc *a,
                              const struct gm_alloc *old, int r, uint64_t t1)
    __attribute__((cold));

/* An entry's packed word of gm_track_put from its fields. */
static inline uint64_t gm_acct_meta(unsigned dev, unsigned ns, unsigned api,
                                    unsigned flags, uint32_t refs)
{
    return (uint64_t)(dev & 0xffu) | (uint64_t)(ns & 0xffu) << 8 |
           (uint64_t)(api & 0xffu) << 16 | (uint64_t)(flags & 0xffu) << 24 |
           (uint64_t)refs << 32;
}

/* Commit a new entry given by its fields (those of struct gm_alloc; the
 * births are set here): the hot paths' form, whose entry never needs to
 * be in memory. tel: gm_telemetry_on() as the caller read it (once per
 * hook); plain: the wrapper took the plain path (gm_plain_now: no group). */
static inline __attribute__((always_inline)) void gm_acct_commit_fields(
    struct gm_dev *d, uint64_t key, uint64_t size, uint64_t aux,
    uint64_t meta, bool tel, uint64_t t0, uint64_t t1, bool plain)
{
    const unsigned dev = (unsigned)meta & 0xffu;
    const unsigned api = (unsigned)(meta >> 16) & 0xffu;
    const bool ptr = ((meta >> 8) & 0xffu) == GM_NS_PTR;
    /* The admission only held the bytes: now that the driver has them,
     * they count toward the peak. */
    uint64_t peak, used = gm_budget_note_peak(&d->budget, &peak);
    if (!plain)
        gm_grp_committed(d);
    const uint32_t step = (uint32_t)atomic_load_explicit(
        &gm_st.steps, memory_order_relaxed);
    uint32_t birth_t = 0;
    if (tel) {
        /* A device pointer's interval goes to the fragmentation log in
         * the event (a new peak syncs it there). */
        struct gm_tel_ev e = {
            .ts_ns = gm_ticks_realtime(t1), .lat_ns = gm_ticks_ns(t1 - t0),
            .addr = key, .size = size,
            .used = used, .peak = peak,
            .dev = dev, .api = api, .frag_ppm = GM_TEL_FRAG_KEEP,
            .fq = ptr ? &d->frag : NULL,
            .known = true, /* gm_dev_get ran gm_tel_device */
        };
        uint32_t mark = gm_tel_alloc_ev(&gm_st.tel, &e);
        if (ptr) /* the fragmark in place of refs */
            meta = (meta & 0xffffffffull) | (uint64_t)mark << 32;
        birth_t = (uint32_t)(e.ts_ns >> 24); /* OOM snapshot ages */
    }
    /* Without telemetry (fixed for the process's life) the mark is never
     * read: no free event logs a remove. */
    const uint64_t birth = birth_t | (uint64_t)step << 32;
    struct gm_alloc old;
    int r = gm_track_put(key, size, aux, meta, birth, &old);
    if (GM_UNLIKELY(r != 0)) {
        struct gm_alloc c = { .key = key, .size = size, .aux = aux };
        gm_track_set_words(&c, meta, birth);
        gm_acct_commit_collision(&c, &old, r, t1);
    }
}

/* The same for an entry given whole (its births are ignored). */
static inline __attribute__((always_inline)) void gm_acct_commit_as(
    struct gm_dev *d, const struct gm_alloc *a, bool tel, uint64_t t0,
    uint64_t t1, bool plain)
{
    gm_acct_commit_fields(d, a->key, a->size, a->aux, gm_track_meta(a), tel,
                          t0, t1, plain);
}

/* plain as in gm_acct_commit_as (no group, no on_oom=wait doorbell, no
 * spilled block). */
static inline __attribute__((always_inline)) void gm_acct_released_as(
    const struct gm_alloc *a, unsigned api, bool tel, uint64_t t0,
    uint64_t t1, bool plain)
{
    if (GM_UNLIKELY(a->dev >= GM_MAX_DEVICES))
        return;
    struct gm_dev *d = &gm_st.dev[a->dev];
    uint64_t used;
    if (GM_LIKELY(!(a->flags & GM_AF_UNCHARGED))) {
        used = gm_budget_release(&d->budget, a->size);
        if (!plain)
            gm_grp_give(d, a->size);
    } else {
        used = gm_budget_used(&d->budget);
        /* A spilled block was no allocation of the device: its free is
         * none either (gm_tel_alloc_ev never saw it). A run that spills
         * is never plain, so the plain copies test nothing here. */
        if (!plain && (a->flags & GM_AF_SPILL))
            tel = false;
    }
    if (tel) {
        struct gm_tel_ev e = {
            .ts_ns = gm_ticks_realtime(t1), .lat_ns = gm_ticks_ns(t1 - t0),
            .addr = a->key, .size = a->size, .used = used,
            .dev = a->dev, .api = api, .frag_ppm = GM_TEL_FRAG_KEEP,
            .mark = a->fragmark,
            .fq = a->ns == GM_NS_PTR ? &d->frag : NULL,
            .known = true, /* the entry's device was resolved */
            .ended = api == GM_API_CTX_END,
        };
        gm_tel_free_ev(&gm_st.tel, &e);
    }
    if (!plain)
        gm_release_wake();
}

#endif
