/*
 * shim/account.h — the accounting steps every allocation wrapper takes:
 * reserve against the device budget (applying the out-of-memory policy on
 * refusal), then commit (record the allocation, publish telemetry) or roll
 * back; and on free, release exactly what was recorded.
 *
 * Invariant: for every live entry in the track table, exactly entry.size
 * bytes are charged to budget[entry.dev] (unless GM_AF_UNCHARGED); a
 * reservation that is not committed is always rolled back.
 */
#ifndef GM_ACCOUNT_H
#define GM_ACCOUNT_H

#include <stdbool.h>
#include <stdint.h>

#include "shim/state.h"
#include "shim/track.h"

/* Outcome of a reservation. */
enum gm_admit {
    GM_ADMIT_OK = 0,      /* charged; call the driver, then commit/rollback */
    GM_ADMIT_REFUSED,     /* return CUDA_ERROR_OUT_OF_MEMORY */
    GM_ADMIT_SPILL,       /* not charged: serve as managed memory instead */
};

/* Reserve `size` on the device budget and, if the device is in a group,
 * on the group; on refusal nothing stays reserved and *by_group says
 * whether the group refused. */
bool gm_acct_take(struct gm_dev *d, uint64_t size, uint64_t *used,
                  bool *by_group);
enum gm_admit gm_acct_reserve(int dev, struct gm_dev *d, uint64_t size,
                              unsigned api, bool spillable);
void gm_acct_rollback(struct gm_dev *d, uint64_t size);
/* Record a successful allocation of `size` charged bytes. */
void gm_acct_commit(int dev, struct gm_dev *d, enum gm_ns ns, uint64_t key,
                    uint64_t size, unsigned api, unsigned flags,
                    uint64_t lat_ns);
/* The same for a prepared entry (flags, aux set by the caller). */
void gm_acct_commit_entry(struct gm_dev *d, const struct gm_alloc *a,
                          uint64_t lat_ns);
/* Adjust a reservation to the size the driver actually used (pitch,
 * arrays). Returns false (and keeps the original charge) when growing it
 * would pass the limit. */
bool gm_acct_adjust(struct gm_dev *d, uint64_t reserved, uint64_t actual);
/* Publish the release of an entry already removed from the table. */
void gm_acct_released(const struct gm_alloc *a, unsigned api,
                      uint64_t lat_ns);

#endif
