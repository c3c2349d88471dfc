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
void gm_acct_commit_entry(struct gm_dev *d, const struct gm_alloc *a,
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
/* Publish the release of an entry already removed from the table (its
 * event removes a device pointer's interval from the fragmentation log). */
void gm_acct_released(const struct gm_alloc *a, unsigned api, uint64_t t0,
                      uint64_t t1);

#endif
