/*
 * shim/telemetry/oomsum.h — the OOM snapshot's summary of live allocations
 * (struct gm_abi_oom, docs/abi.md "OOM snapshot"): allocations grouped by
 * API family and power-of-two size class, with their count, bytes, size
 * range, birth times and birth steps; the 16 largest classes by bytes are
 * kept, the rest summed as "other". Pure (the caller feeds entries and
 * passes the time), so it is unit-tested on its own.
 *
 * Invariants: live_allocs = sum of class counts + other_count, live_bytes
 * likewise (saturating); classes sorted by bytes descending (ties: smaller
 * size class first); ages only from births that are known (birth_t != 0).
 */
#ifndef GM_OOMSUM_H
#define GM_OOMSUM_H

#include <stdbool.h>
#include <stdint.h>

#include "shim/telemetry/abi.h"

#define GM_OOMSUM_GROUPS 64u  /* (api, class) groups tracked during a walk */

struct gm_oomsum {
    uint64_t now_ns;
    uint32_t now_t;                  /* now_ns >> 24 */
    uint32_t n;                      /* groups in use */
    struct gm_abi_oom_class g[GM_OOMSUM_GROUPS];
    uint32_t known[GM_OOMSUM_GROUPS]; /* entries with a known birth */
    uint32_t age_max[GM_OOMSUM_GROUPS], age_min[GM_OOMSUM_GROUPS];
    uint64_t other_count, other_bytes, live_allocs, live_bytes;
};

/* Start a summary at time now_ns (CLOCK_REALTIME). */
void gm_oomsum_init(struct gm_oomsum *s, uint64_t now_ns);
/* One live allocation: its size, API, birth (CLOCK_REALTIME >> 24 modulo
 * 2^32; 0 unknown) and birth step. */
void gm_oomsum_add(struct gm_oomsum *s, uint64_t size, unsigned api,
                   uint32_t birth_t, uint32_t birth_step);
/* Fill out's live_allocs, live_bytes, nclasses, classes, other_*. */
void gm_oomsum_finish(struct gm_oomsum *s, struct gm_abi_oom *out);

#endif
