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

/* tel: gm_telemetry_on() as the caller read it (once per hook); plain:
 * gm_plain as it read it (no group). */
static inline __attribute__((always_inline)) void gm_acct_commit_as(
    struct gm_dev *d, struct gm_alloc *a, bool tel, uint64_t t0, uint64_t t1,
    bool plain)
{
    /* The entry's fields before any atomic operation: the caller's
     * constants (a device pointer, its device) stay known to the compiler
     * instead of being read back from memory the atomics may have
     * changed. */
    const uint64_t key = a->key, size = a->size;
    const unsigned dev = a->dev, api = a->api;
    const bool ptr = a->ns == GM_NS_PTR;
    /* The admission only held the bytes: now that the driver has them,
     * they count toward the peak. */
    uint64_t peak, used = gm_budget_note_peak(&d->budget, &peak);
    if (!plain)
        gm_grp_committed(d);
    a->birth_step = (uint32_t)atomic_load_explicit(&gm_st.steps,
                                                   memory_order_relaxed);
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
        if (ptr)
            a->fragmark = mark;
        a->birth_t = (uint32_t)(e.ts_ns >> 24); /* OOM snapshot ages */
    }
    /* Without telemetry (fixed for the process's life) the mark is never
     * read: no free event logs a remove. */
    struct gm_alloc old;
    int r = gm_track_insert(a, &old);
    if (GM_UNLIKELY(r != 0))
        gm_acct_commit_collision(a, &old, r, t1);
}

/* plain as in gm_acct_commit_as (no group, no on_oom=wait doorbell). */
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
