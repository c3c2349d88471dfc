/*
 * shim/admit/static.c — GPUMEM_MODE=static: at the first context on a device the
 * shim takes GPUMEM_STATIC_SIZE (default: all the room the limit leaves
 * after the context) in one driver allocation, charges it to the device,
 * and serves cuMemAlloc_v2 and cuMemAllocPitch(_v2) from it with the
 * best-fit sub-allocator in shim/admit/arena.c. Frees of arena pointers
 * (cuMemFree, and cuMemFreeAsync once its stream is synchronised: the
 * wrappers, shim/intercept/hooks.c) return to the arena; everything else
 * goes to the driver as in grow mode.
 *
 * Invariants: an arena is initialised completely before its pointer is
 * published in gm_dev.arena (release store; readers acquire); it lives
 * until the process exits or the context it was made in ends (then it is
 * unpublished once, by compare-and-swap, its charge given back, and its
 * record kept for threads still inside it; no arena is made again on that
 * device). Arena pieces are not charged again: the whole
 * arena already is. Telemetry records each piece as an allocation so the
 * counts, sizes and leak check work as in grow mode, with `used` standing
 * at context + arena.
 *
 * A request the arena has no block for follows GPUMEM_ON_OOM
 * (arena_hooks.h): wait retries the arena on the release doorbell, which
 * every arena free rings; spill and warn are decided in
 * shim/admit/admit.c (gm_admit_arena_full) and served by the wrappers
 * outside the arena, so no arena figure counts them and no arena free
 * sees them.
 */
#include <string.h>
#include <errno.h>

#include "shim/admit/oomsnap.h"
#include "policy/parse.h"
#include "shim/telemetry/abi.h"
#include "shim/admit/admit.h"
#include "shim/admit/arena.h"
#include "shim/admit/arena_hooks.h"
#include "shim/driver/real.h"
#include "shim/account/release.h"
#include "shim/account/state.h"
#include "shim/admit/oomwait.h"

static struct gm_arena arenas[GM_MAX_DEVICES];
static CUcontext arena_ctx[GM_MAX_DEVICES];   /* where each arena was made */
static uint64_t arena_charge[GM_MAX_DEVICES];  /* what it was charged */
_Atomic uint64_t gm_arena_bits;  /* devices that have an arena */

static uint64_t arena_size(struct gm_dev *d)
{
    uint64_t room = gm_budget_room(&d->budget);
    uint64_t limit = gm_budget_limit(&d->budget);
    const struct gm_limit *s = &gm_st.policy.static_size;
    uint64_t want = s->kind == GM_LIMIT_NONE ? room : gm_limit_resolve(s, limit);
    if (want > room)
        want = room;
    return want & ~((2ull << 20) - 1);
}

void gm_static_setup(int dev, struct gm_dev *d, CUcontext ctx)
{
    if (gm_st.policy.mode != GM_MODE_STATIC || gm_real.cuMemAlloc_v2 == NULL)
        return;
    uint64_t size = arena_size(d);
    char s[32];
    gm_format_size(size, s, sizeof s);
    if (size == 0) {
        gm_log(GM_LOG_WARN, "device %d: no room for a static arena; "
               "allocating on demand", dev);
        return;
    }
    uint64_t used;
    bool by_group;
    if (!gm_admit_take(d, size, &used, &by_group)) {
        gm_log(GM_LOG_WARN, "device %d: no room for a static arena of %s%s; "
               "allocating on demand", dev, s,
               by_group ? " in the group" : "");
        return;
    }
    CUdeviceptr base = 0;
    CUcontext popped;
    gm_depth++;
    CUresult rc = gm_real.cuCtxPushCurrent_v2(ctx);
    if (rc == CUDA_SUCCESS) {
        rc = gm_real.cuMemAlloc_v2(&base, (size_t)size);
        gm_real.cuCtxPopCurrent_v2(&popped);
    }
    gm_depth--;
    if (rc != CUDA_SUCCESS ||
        gm_arena_init(&arenas[dev], base, size) != 0) {
        gm_acct_rollback(d, size);
        gm_log(GM_LOG_ERROR, "device %d: the static arena of %s could not be "
               "allocated (driver error %d); allocating on demand", dev, s,
               (int)rc);
        return;
    }
    gm_budget_raise_peak(&d->budget, gm_budget_used(&d->budget));
    gm_grp_committed(d);
    gm_tel_event(&gm_st.tel, GM_EV_MODE, (unsigned)dev, GM_API_MEM_ALLOC,
                 size, base, used);
    gm_log(GM_LOG_INFO, "device %d: static arena of %s reserved", dev, s);
    arena_ctx[dev] = ctx;
    arena_charge[dev] = size;
    __atomic_store_n(&d->arena, &arenas[dev], __ATOMIC_RELEASE);
    atomic_fetch_or(&gm_arena_bits, 1ull << dev);
}

void gm_static_retire(int dev, CUcontext ctx)
{
    if (dev < 0 || dev >= GM_MAX_DEVICES || ctx == NULL)
        return;
    struct gm_dev *d = &gm_st.dev[dev];
    struct gm_arena *a = __atomic_load_n(&d->arena, __ATOMIC_ACQUIRE);
    if (a == NULL || arena_ctx[dev] != ctx ||
        !__atomic_compare_exchange_n(&d->arena, &a, NULL, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;
    /* Frees of its pointers go to the driver from now on (which says the
     * memory is gone); the arena's own record stays, unused, for any
     * thread still inside it. */
    atomic_fetch_and(&gm_arena_bits, ~(1ull << dev));
    arena_ctx[dev] = NULL;
    gm_acct_rollback(d, arena_charge[dev]);
    /* Its pieces went with it (no entry each): out of the live figures. */
    uint64_t n = gm_arena_live(a), bytes = gm_arena_used(a);
    if (n != 0)
        gm_tel_ctx_freed(&gm_st.tel, (unsigned)dev, bytes, n,
                         gm_budget_used(&d->budget), gm_clock_realtime_ns());
    gm_log(GM_LOG_WARN, "device %d: the static arena ended with its context; "
           "allocating on demand from now on", dev);
}

int gm_arena_take(struct gm_arena *a, uint64_t size,
                  struct gm_arena_piece *out)
{
    uint64_t t0 = gm_hook_ticks();
    int r = gm_arena_alloc(a, size, &out->addr, &out->size);
    out->lat_ns = gm_ticks_ns(gm_hook_ticks() - t0);
    return r;
}

/* on_oom=wait: a request the arena could hold whole waits for its frees
 * (one larger than the whole arena never fits: no wait). 0 with a block
 * in *got; -ENOMEM with none (no wait, or none by the bound); -ENODEV
 * when the arena was retired meanwhile. */
static int arena_wait(int dev, struct gm_dev *d, struct gm_arena *a,
                      uint64_t size, unsigned api, struct gm_arena_piece *got)
{
    bool retired = false;
    if (gm_st.policy.on_oom != GM_OOM_WAIT || size > a->size)
        return -ENOMEM;
    if (gm_oomwait_arena(dev, d, a, size, api, got, &retired))
        return 0;
    return retired ? -ENODEV : -ENOMEM;
}

/* No block for the request: what GPUMEM_ON_OOM makes of it. */
static enum gm_arena_res arena_full(int dev, struct gm_dev *d,
                                    struct gm_arena *a, uint64_t size,
                                    unsigned api, CUresult *rc)
{
    switch (gm_admit_arena_full(dev, d, size, api, a->size,
                                gm_arena_largest_free(a))) {
    case GM_ADMIT_SPILL:
        return GM_ARENA_SPILL;
    case GM_ADMIT_OK:
        return GM_ARENA_OVER;
    case GM_ADMIT_REFUSED:
    case GM_ADMIT_DRIVER:
        break;
    }
    *rc = CUDA_ERROR_OUT_OF_MEMORY;
    return GM_ARENA_DONE;
}

enum gm_arena_res gm_arena_try_alloc(int dev, struct gm_dev *d, uint64_t size,
                                     unsigned api, CUdeviceptr *p,
                                     CUresult *rc)
{
    struct gm_arena *a = __atomic_load_n(&d->arena, __ATOMIC_ACQUIRE);
    if (GM_LIKELY(a == NULL))
        return GM_ARENA_NONE;
    struct gm_arena_piece got = { 0, 0, 0 };
    int r = gm_arena_take(a, size, &got);
    if (r == -ENOMEM)
        r = arena_wait(dev, d, a, size, api, &got);
    if (r == -ENODEV)
        return GM_ARENA_NONE; /* retired while waiting: on demand now */
    if (r == -ENOMEM)
        return arena_full(dev, d, a, size, api, rc);
    if (r != 0) {
        *rc = CUDA_ERROR_INVALID_VALUE;
        return GM_ARENA_DONE;
    }
    *p = got.addr;
    *rc = CUDA_SUCCESS;
    gm_tel_alloc_frag(&gm_st.tel, (unsigned)dev, api, got.addr, got.size,
                      got.lat_ns, gm_budget_used(&d->budget),
                      gm_budget_peak(&d->budget), gm_arena_frag_ppm(a));
    return GM_ARENA_DONE;
}

/* The device whose arena holds `p`, or -1. */
static int arena_of(CUdeviceptr p)
{
    uint64_t bits = atomic_load_explicit(&gm_arena_bits, memory_order_acquire);
    while (GM_UNLIKELY(bits != 0)) {
        int dev = __builtin_ctzll(bits);
        bits &= bits - 1;
        if (gm_arena_owns(&arenas[dev], p))
            return dev;
    }
    return -1;
}

bool gm_arena_holds(CUdeviceptr p)
{
    return arena_of(p) >= 0;
}

bool gm_arena_try_free(CUdeviceptr p, unsigned api, CUresult *rc)
{
    int dev = arena_of(p);
    if (dev < 0)
        return false;
    struct gm_arena *a = &arenas[dev];
    uint64_t size = 0;
    uint64_t t0 = gm_hook_ticks();
    int r = gm_arena_free(a, p, &size);
    uint64_t lat = gm_ticks_ns(gm_hook_ticks() - t0);
    if (r != 0) {
        *rc = CUDA_ERROR_INVALID_VALUE;
        return true;
    }
    struct gm_dev *d = &gm_st.dev[dev];
    gm_tel_free_frag(&gm_st.tel, (unsigned)dev, api, p, size, lat,
                     gm_budget_used(&d->budget), gm_arena_frag_ppm(a));
    gm_release_wake(); /* on_oom=wait: a waiter may fit now */
    *rc = CUDA_SUCCESS;
    return true;
}

uint64_t gm_static_free(struct gm_dev *d)
{
    struct gm_arena *a = __atomic_load_n(&d->arena, __ATOMIC_ACQUIRE);
    return a == NULL ? 0 : gm_arena_free_bytes(a);
}

void gm_static_reset(void)
{
    atomic_store(&gm_arena_bits, 0);
    memset(arena_ctx, 0, sizeof arena_ctx);
}
