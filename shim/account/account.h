/*
 * shim/account/account.h — what is held: after an admission
 * (shim/admit/admit.h) charged a request, commit it (record the
 * allocation, publish telemetry) or roll it back; on free, release
 * exactly what was recorded.
 *
 * Invariant: for every live entry in the track table, exactly entry.size
 * bytes are charged to budget[entry.dev] (unless GM_AF_UNCHARGED); a
 * reservation that is not committed is always rolled back, and every
 * release rings the release doorbell (shim/account/release.h).
 */
#ifndef GM_ACCOUNT_H
#define GM_ACCOUNT_H

#include <stdbool.h>
#include <stdint.h>

#include "shim/account/commit.h"
#include "shim/account/grouphook.h"
#include "shim/account/state.h"
#include "shim/account/track.h"

/* Give back a reservation the driver did not use. */
void gm_acct_rollback(struct gm_dev *d, uint64_t size);
/* Record a successful allocation of `size` charged bytes. */
/* Record a prepared entry (flags, aux set by the caller); t0 and t1 are
 * gm_ticks() readings just before and after the driver call (latency and
 * event time). */
void gm_acct_commit_entry(struct gm_dev *d, struct gm_alloc *a,
                          uint64_t t0, uint64_t t1);
static inline void gm_acct_commit(int dev, struct gm_dev *d, enum gm_ns ns,
                                  uint64_t key, uint64_t size, unsigned api,
                                  unsigned flags, uint64_t t0, uint64_t t1)
{
    struct gm_alloc a = {
        .key = key, .size = size, .dev = (uint8_t)dev, .ns = (uint8_t)ns,
        .api = (uint8_t)api, .flags = (uint8_t)flags, .refs = 1,
    };
    gm_acct_commit_entry(d, &a, t0, t1);
}
/* Log the entry's interval with its device's fragmentation tracker: an
 * add (after the driver returned the memory; the entry keeps its mark),
 * or a remove (before the driver frees it), which cancels the add when it
 * is still logged. Only device pointers have one. */
static inline __attribute__((always_inline)) void
gm_acct_frag_add(struct gm_alloc *a)
{
    /* Handles and arrays have no address in the device's heap. */
    if (a->ns == GM_NS_PTR && GM_LIKELY(a->dev < GM_MAX_DEVICES) &&
        gm_telemetry_on())
        a->fragmark = gm_fragq_mark(gm_fragq_post(
            &gm_st.dev[a->dev].frag, a->key, a->size, gm_acct_publish_frag,
            (void *)(uintptr_t)a->dev));
}

/* tel: gm_telemetry_on() as the caller read it. */
static inline __attribute__((always_inline)) void
gm_acct_frag_remove_tel(const struct gm_alloc *a, bool tel)
{
    if (!tel || a->ns != GM_NS_PTR || GM_UNLIKELY(a->dev >= GM_MAX_DEVICES))
        return;
    struct gm_fragq *q = &gm_st.dev[a->dev].frag;
    if (!gm_fragq_cancel(q, a->fragmark, a->key))
        gm_fragq_post(q, a->key, 0, gm_acct_publish_frag,
                      (void *)(uintptr_t)a->dev);
}
static inline __attribute__((always_inline)) void
gm_acct_frag_remove(const struct gm_alloc *a)
{
    gm_acct_frag_remove_tel(a, gm_telemetry_on());
}
/* Publish the release of an entry already removed from the table (and,
 * for a device pointer, already posted as removed). */
void gm_acct_released(const struct gm_alloc *a, unsigned api, uint64_t t0,
                      uint64_t t1);

#endif
