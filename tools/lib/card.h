/*
 * tools/lib/card.h — a physical device (card) as the tools key it when
 * they sum device blocks of several processes: processes started with
 * different CUDA_VISIBLE_DEVICES may each call another card their device
 * 0, so an ordinal names a card only within one process. The key is the
 * UUID the process recorded for that ordinal (struct gm_abi_dev's uuid);
 * a block without one (none recorded) is keyed by its ordinal alone.
 * gpumem-top's device lines and the exporter's gpumem_device_* series
 * are summed by this key.
 *
 * Invariants: two keys are the same card when both UUIDs are equal and
 * recorded, or when neither has a UUID and the ordinals are equal; a key
 * with a UUID never equals one without (such a block may be any card).
 * Pure: no I/O, no allocation.
 */
#ifndef GM_TOOLS_CARD_H
#define GM_TOOLS_CARD_H

#include <stdbool.h>

#include "shim/telemetry/abi.h"

struct gm_card {
    unsigned char uuid[16];      /* all 0: none recorded */
    int dev;                     /* the ordinal, the key without a UUID */
};

/* The card of a process's device block d, which that process sees as
 * ordinal dev. */
struct gm_card gm_card_of(const struct gm_abi_dev *d, int dev);

/* Whether a UUID was recorded (not all 0). */
bool gm_uuid_recorded(const unsigned char u[16]);

/* Whether a and b are one card (the invariant above). */
bool gm_card_same(const struct gm_card *a, const struct gm_card *b);

#endif
