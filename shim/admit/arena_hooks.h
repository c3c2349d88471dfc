/*
 * shim/admit/arena_hooks.h — static mode (GPUMEM_MODE=static) as the wrappers see
 * it: one driver allocation per device made at its first context, from
 * which cuMemAlloc and cuMemAllocPitch requests are served, and to which
 * cuMemFree and cuMemFreeAsync of its blocks return them.
 *
 * A request the arena has no free block for goes by GPUMEM_ON_OOM: fail
 * refuses it; wait waits for the arena's frees (bounded, as in grow
 * mode); spill serves it as managed memory, warn from the driver outside
 * the arena, past the limit. Either of the last two is no arena block:
 * its free finds it in the allocation table (its address is outside
 * every arena) and goes to the driver with its own charge, or none.
 */
#ifndef GM_ARENA_HOOKS_H
#define GM_ARENA_HOOKS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "shim/driver/cuda_api.h"

struct gm_dev;
struct gm_arena;

/* Bit d set: device d has an arena (checked inline on every free). */
extern _Atomic uint64_t gm_arena_bits __attribute__((visibility("hidden")));

/* At the first context on `dev` in static mode: reserve the arena. */
void gm_static_setup(int dev, struct gm_dev *d, CUcontext ctx);
/* Context `ctx` on `dev` ended: if the device's arena was made in it, the
 * driver freed it with the context; the arena is retired (its charge
 * given back, nothing served from it any more) and the device allocates
 * on demand from then on. */
void gm_static_retire(int dev, CUcontext ctx);

/* What gm_arena_try_alloc made of a request. */
enum gm_arena_res {
    GM_ARENA_NONE = 0, /* no arena: admit it as in grow mode */
    GM_ARENA_DONE,     /* *rc set: CUDA_SUCCESS with *p a block of the
                        * arena, or the error (out of memory, invalid) */
    GM_ARENA_SPILL,    /* no block, on_oom=spill: serve it as managed
                        * memory, not charged */
    GM_ARENA_OVER,     /* no block, on_oom=warn: `size` is held past the
                        * limit (budget and group); serve it from the
                        * driver, then commit, or roll back */
};

/* A block the arena handed out: address, rounded size, and how long the
 * sub-allocator took. */
struct gm_arena_piece {
    uint64_t addr, size, lat_ns;
};

/* Serve an allocation from the device's arena, or say what
 * GPUMEM_ON_OOM makes of a request it has no block for. */
enum gm_arena_res gm_arena_try_alloc(int dev, struct gm_dev *d, uint64_t size,
                                     unsigned api, CUdeviceptr *p,
                                     CUresult *rc);
/* One timed try of arena `a`: 0, or gm_arena_alloc's error. */
int gm_arena_take(struct gm_arena *a, uint64_t size,
                  struct gm_arena_piece *out);
/* True when `p` lies in a device's arena (a block of it or not). */
bool gm_arena_holds(CUdeviceptr p);
/* Return an arena pointer: at once, so a stream-ordered free synchronises
 * its stream first; then the release doorbell rings (a waiter may fit
 * now). False when `p` is in no arena; true with *rc set (CUDA_SUCCESS,
 * or CUDA_ERROR_INVALID_VALUE when `p` does not start a live block)
 * otherwise. */
bool gm_arena_try_free(CUdeviceptr p, unsigned api, CUresult *rc);
/* Bytes the device's arena can still hand out (the sum of its free
 * blocks); 0 without an arena. */
uint64_t gm_static_free(struct gm_dev *d);
/* Fork child: forget the parent's arenas. */
void gm_static_reset(void);

#endif
