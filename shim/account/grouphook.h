/*
 * shim/account/grouphook.h — the shim's use of a shared budget (GPUMEM_GROUP):
 * joining at initialisation, registering each device by UUID, and
 * charging the group next to the process budget.
 *
 * Invariant: every byte the shim charges to a device's group entry is
 * given back through gm_grp_give (or reclaimed by another member if this
 * process dies). Devices without a group entry (no group, or a group that
 * could not be joined) cost one load on the allocation path.
 */
#ifndef GM_GROUPHOOK_H
#define GM_GROUPHOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/parse.h"
#include "shim/account/state.h"

/* Join GPUMEM_GROUP (after telemetry is open). On failure: exit status 2
 * under GPUMEM_ON_BAD_CONFIG=exit, else one warning and the process runs
 * on without the group. */
void gm_grp_init(void);
/* Register device `dev` with the group (at its first use). */
void gm_grp_device(int dev, struct gm_dev *d);
bool gm_grp_take_slow(struct gm_dev *d, uint64_t size);
void gm_grp_give_slow(struct gm_dev *d, uint64_t size);
/* Charge / give back `size` on the device's group entry. take returns
 * false when the group refuses. */
static inline bool gm_grp_take(struct gm_dev *d, uint64_t size)
{
    return GM_LIKELY(d->gdev1 == 0) || gm_grp_take_slow(d, size);
}
static inline void gm_grp_give(struct gm_dev *d, uint64_t size)
{
    if (GM_UNLIKELY(d->gdev1 != 0))
        gm_grp_give_slow(d, size);
}
/* A charge became memory the driver holds: raise the group's peak. */
void gm_grp_committed_slow(struct gm_dev *d);
static inline void gm_grp_committed(struct gm_dev *d)
{
    if (GM_UNLIKELY(d->gdev1 != 0))
        gm_grp_committed_slow(d);
}
/* What the driver already holds changed (a pool grew by `add`, shrank by
 * `sub`): follow it on the group without the admission rule, as the
 * process budget does (gm_budget_settle). */
void gm_grp_settle_slow(struct gm_dev *d, uint64_t add, uint64_t sub);
static inline void gm_grp_settle(struct gm_dev *d, uint64_t add, uint64_t sub)
{
    if (GM_UNLIKELY(d->gdev1 != 0))
        gm_grp_settle_slow(d, add, sub);
}
/* True when the device's group is past its limit (after a settle). */
bool gm_grp_over(struct gm_dev *d);
/* Block until the group can take `size` (then it is taken) or until the
 * CLOCK_MONOTONIC deadline. */
bool gm_grp_wait(struct gm_dev *d, uint64_t size, uint64_t deadline_ns);
/* The group's part of the device view (cuMemGetInfo, NVML): its limit
 * on the device (*limit) and what the group would admit for this process
 * now (*room: the limit less every member's charge, less the unused
 * shares the priority rule keeps for members of a higher weight; clamped
 * at 0). False when the device has no group entry or no group limit, or
 * the group cannot say (unusable, damaged, or no consistent copy:
 * gm_group_peek); the caller then shows the process's own view.
 * Lock-free; not on the allocation path. */
bool gm_grp_view(struct gm_dev *d, uint64_t *limit, uint64_t *room);
/* "group 'NAME' has 7.5 GiB used of 8.0 GiB limit" for refusal messages,
 * with "; 2.0 GiB of it is kept for higher-priority members, so at most
 * 0.5 GiB fits now" when the priority rule keeps room from this member.
 * A buffer of GM_GRP_DESCRIBE_CAP bytes holds the longest whole: a name
 * of GM_NAME_MAX characters and four sizes of GM_SIZE_TEXT_MAX. */
#define GM_GRP_USE_FMT "group '%s' has %s used of %s limit"
#define GM_GRP_KEPT_FMT "; %s of it is kept for higher-priority members, " \
                        "so at most %s fits now"
#define GM_GRP_DESCRIBE_CAP                                               \
    (sizeof GM_GRP_USE_FMT - 1 - 3 * 2 + GM_NAME_MAX +                    \
     2 * GM_SIZE_TEXT_MAX + sizeof GM_GRP_KEPT_FMT - 1 - 2 * 2 +          \
     2 * GM_SIZE_TEXT_MAX + 1)
void gm_grp_describe(struct gm_dev *d, char *buf, size_t cap);
/* Exit-report lines for the group (text; "" when not in a group). */
size_t gm_grp_report(char *buf, size_t cap);
/* Leave at exit; forget after fork (the child is not a member). */
void gm_grp_leave(void);
void gm_grp_forget(void);

#endif
