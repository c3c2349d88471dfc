/*
 * shim/admit/arena_hooks.h — static mode (GPUMEM_MODE=static) as the wrappers see
 * it: one driver allocation per device made at its first context, from
 * which cuMemAlloc and cuMemAllocPitch requests are served, and to which
 * cuMemFree and cuMemFreeAsync of its blocks return them.
 */
#ifndef GM_ARENA_HOOKS_H
#define GM_ARENA_HOOKS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "shim/driver/cuda_api.h"

struct gm_dev;

/* Bit d set: device d has an arena (checked inline on every free). */
extern _Atomic uint64_t gm_arena_bits __attribute__((visibility("hidden")));

/* At the first context on `dev` in static mode: reserve the arena. */
void gm_static_setup(int dev, struct gm_dev *d, CUcontext ctx);
/* Context `ctx` on `dev` ended: if the device's arena was made in it, the
 * driver freed it with the context; the arena is retired (its charge
 * given back, nothing served from it any more) and the device allocates
 * on demand from then on. */
void gm_static_retire(int dev, CUcontext ctx);
/* Serve an allocation from the device's arena. Returns false when the
 * device has no arena (the caller goes to the driver); true with *rc set
 * (CUDA_SUCCESS and *p, or CUDA_ERROR_OUT_OF_MEMORY) otherwise. */
bool gm_arena_try_alloc(int dev, struct gm_dev *d, uint64_t size,
                        unsigned api, CUdeviceptr *p, CUresult *rc);
/* True when `p` lies in a device's arena (a block of it or not). */
bool gm_arena_holds(CUdeviceptr p);
/* Return an arena pointer: at once, so a stream-ordered free synchronises
 * its stream first. False when `p` is in no arena; true with *rc set
 * (CUDA_SUCCESS, or CUDA_ERROR_INVALID_VALUE when `p` does not start a
 * live block) otherwise. */
bool gm_arena_try_free(CUdeviceptr p, unsigned api, CUresult *rc);
/* Bytes the device's arena can still hand out (the sum of its free
 * blocks); 0 without an arena. */
uint64_t gm_static_free(struct gm_dev *d);
/* Fork child: forget the parent's arenas. */
void gm_static_reset(void);

#endif
