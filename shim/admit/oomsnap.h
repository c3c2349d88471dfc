/*
 * shim/admit/oomsnap.h — what every refusal reports: the telemetry event
 * (gm_tel_refuse) and, at a device's first refusal, the OOM snapshot in
 * the segment (docs/abi.md "OOM snapshot"): the request, used / limit,
 * the step, the live allocations summarised by API and size class with
 * their ages (a bounded walk of the allocation table), and the largest
 * free gap when fragmentation is tracked. Cold: refusals only.
 */
#ifndef GM_OOMSNAP_H
#define GM_OOMSNAP_H

#include <stdint.h>

#include "shim/account/state.h"

/* Bound on the allocation-table walk of one snapshot. */
#define GM_OOMSNAP_WALK_MAX (1u << 20)

void gm_admit_refused(struct gm_dev *d, unsigned dev, unsigned api,
                      uint64_t size, uint64_t used, uint64_t limit)
    __attribute__((cold));

#endif
