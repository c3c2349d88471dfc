/*
 * shim/admit/oomwait.h — GPUMEM_ON_OOM=wait: block a refused allocation
 * until memory is released (in this process, or in the group) or the wait
 * times out. Waiters sleep on the release doorbell
 * (shim/account/release.h), which every release rings.
 */
#ifndef GM_OOMWAIT_H
#define GM_OOMWAIT_H

#include <stdbool.h>
#include <stdint.h>

struct gm_dev;
struct gm_arena;
struct gm_arena_piece;

/* Wait until `size` can be reserved on `d` (then it is reserved and true
 * is returned with *used set) or until GPUMEM_ON_OOM's timeout (false). */
bool gm_oomwait(int dev, struct gm_dev *d, uint64_t size, unsigned api,
                uint64_t *used);
/* Static mode: wait until the arena `a` of `d` hands out a block of
 * `size` (then true, the block in *got) or until the same timeout, or
 * until `a` is no longer the device's arena (its context ended: false,
 * *retired set). Woken by the same doorbell, which every arena free
 * rings. */
bool gm_oomwait_arena(int dev, struct gm_dev *d, struct gm_arena *a,
                      uint64_t size, unsigned api,
                      struct gm_arena_piece *got, bool *retired);

#endif
