/*
 * shim/admit/oomsnap.c — the refusal report and the OOM snapshot (see
 * shim/admit/oomsnap.h). The snapshot is taken at most once per device:
 * a cheap look at the segment's state first, then the walk (each shard of
 * the allocation table under its own lock, never more than
 * GM_OOMSNAP_WALK_MAX entries), then a one-time claim in the segment, so
 * concurrent first refusals may both walk but only one writes.
 */
#include "shim/admit/oomsnap.h"

#include <stdatomic.h>
#include <string.h>

#include "shim/account/commit.h"
#include "shim/account/track.h"
#include "shim/admit/arena.h"
#include "shim/base/clock.h"
#include "shim/telemetry/hist.h"
#include "shim/telemetry/oomsum.h"
#include "shim/telemetry/telwrite.h"

struct walk {
    unsigned dev;
    struct gm_oomsum sum;
};

static void visit(void *ctx, const struct gm_alloc *a)
{
    struct walk *w = ctx;
    /* The device's memory the program holds: not pinned host memory,
     * not entries recorded without a charge, except stream-ordered
     * blocks (their pool's reserve is what is charged). */
    if (a->dev != w->dev || a->ns == GM_NS_HOST ||
        ((a->flags & GM_AF_UNCHARGED) && !(a->flags & GM_AF_ASYNC)))
        return;
    gm_oomsum_add(&w->sum, a->size, a->api, a->birth_t, a->birth_step);
}

static void snapshot(const struct gm_tw *tw, struct gm_dev *d, unsigned dev,
                     unsigned api, uint64_t size, uint64_t used,
                     uint64_t limit)
{
    /* One walk at a time, and off the stack (the summary is 10 KiB). */
    static struct walk w;
    static atomic_flag busy = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set_explicit(&busy, memory_order_acquire))
        return; /* another device's snapshot is being taken: skip ours */
    uint64_t now = gm_clock_realtime_ns();
    struct gm_abi_oom snap;
    memset(&snap, 0, sizeof snap);
    snap.ts_ns = now;
    snap.size = size;
    snap.api = api;
    snap.used = used;
    snap.limit = limit;
    snap.step = atomic_load_explicit(&gm_st.steps, memory_order_relaxed);
    w.dev = dev;
    gm_oomsum_init(&w.sum, now);
    bool truncated = false;
    gm_track_walk(visit, &w, GM_OOMSNAP_WALK_MAX, &truncated);
    gm_oomsum_finish(&w.sum, &snap);
    if (truncated)
        snap.flags |= GM_ABI_OOMF_TRUNCATED;
    uint64_t largest = 0;
    uint32_t ppm = 0;
    if (d->arena != NULL) {
        /* The arena's blocks are in its own table, not in the walk. */
        largest = gm_arena_largest_free(d->arena);
        ppm = gm_arena_frag_ppm(d->arena);
        snap.flags |= GM_ABI_OOMF_FRAG | GM_ABI_OOMF_ARENA;
    } else if (gm_tel_frag_peek(&gm_st.tel, dev, &d->frag, &largest,
                                &ppm)) {
        snap.flags |= GM_ABI_OOMF_FRAG;
    }
    snap.largest_free = largest;
    snap.frag_ppm = ppm;
    atomic_flag_clear_explicit(&busy, memory_order_release);
    (void)gm_hist_oom_write(tw, dev, &snap);
}

void gm_admit_refused(struct gm_dev *d, unsigned dev, unsigned api,
                      uint64_t size, uint64_t used, uint64_t limit)
{
    gm_tel_refuse(&gm_st.tel, dev, api, size, used, limit,
                  gm_budget_peak(&d->budget));
    if (!gm_telemetry_on())
        return;
    /* The writer's view of the segment (its layout as laid out, not as
     * the shared header may say now), while it is open. */
    if (tw_tel_hdr(&gm_st.tel) != NULL &&
        gm_hist_oom_wanted(&gm_st.tel.w, dev))
        snapshot(&gm_st.tel.w, d, dev, api, size, used, limit);
}
