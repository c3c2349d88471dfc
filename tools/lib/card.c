/*
 * tools/lib/card.c — the key of a physical device (see tools/lib/card.h).
 *
 * Invariants: the key holds the 16 bytes of the block's UUID as the
 * writer stored them (the two words of struct gm_abi_dev, copied, not
 * reordered), so two processes' blocks of one card give equal keys.
 */
#include "tools/lib/card.h"

#include <string.h>

struct gm_card gm_card_of(const struct gm_abi_dev *d, int dev)
{
    struct gm_card k;
    _Static_assert(sizeof k.uuid == sizeof d->uuid, "uuid size");
    memcpy(k.uuid, d->uuid, sizeof k.uuid);
    k.dev = dev;
    return k;
}

bool gm_uuid_recorded(const unsigned char u[16])
{
    static const unsigned char none[16];
    return memcmp(u, none, sizeof none) != 0;
}

bool gm_card_same(const struct gm_card *a, const struct gm_card *b)
{
    if (gm_uuid_recorded(a->uuid) || gm_uuid_recorded(b->uuid))
        return memcmp(a->uuid, b->uuid, sizeof a->uuid) == 0;
    return a->dev == b->dev;
}
