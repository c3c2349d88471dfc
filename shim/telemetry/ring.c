/*
 * shim/telemetry/ring.c — the telemetry segment: creation (shared file or private
 * fallback), the seqlocked per-device stats, the event ring,
 * and the read primitives shared with the exit report and tools/lib/reader.c.
 *
 * Invariants:
 *  - Every writer holds the process's writer lock (struct gm_tel's wlock,
 *    taken by tw_lock: one writer at a time), so it updates the shared
 *    fields with plain loads and stores (atomics in a ThreadSanitizer
 *    build: shim/telemetry/telwrite.h). It never waits on a reader. A
 *    waiter never waits for itself (a signal handler's re-entry skips),
 *    for a dead holder (replaced, its leftovers repaired) or longer than
 *    GM_TEL_LOCK_WAIT_NS (then it skips its update).
 *  - Device blocks are seqlocked for readers: the writer adds one to
 *    wbegin, fences (release), changes fields, and adds one to wdone with
 *    a release store. A reader loads wdone (acquire), the fields
 *    (acquire), then wbegin; the copy is consistent when that wbegin
 *    equals the wdone it started from: a writer whose store it saw had
 *    already counted itself in wbegin, so none was inside while it copied.
 *  - Ring records: the writer marks the slot busy (seq = index+1 | BUSY),
 *    fences, writes the fields and publishes seq = index+1 (release). A
 *    slot found busy or already holding a later event (bytes not written
 *    by this process's writer) is not written: the record is counted in
 *    ring_dropped.
 *  - Nothing here allocates with malloc, prints, or makes a syscall on the
 *    hot path; counters saturate, subtractions clamp.
 */
#include "shim/base/msg.h"
#include "shim/telemetry/telemetry.h"
#include "shim/telemetry/telwrite.h"
#include "shim/telemetry/hist.h"
#include "shim/telemetry/forecast.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shim/base/clock.h"
#include "shim/base/safefile.h"
#include "shim/base/shmfile.h"
#include "shim/base/spin.h"
#include "shim/telemetry/ident.h"


#define READ_ATTEMPTS 64u
#define STUCK_ATTEMPTS 16u

/* The scalar fields of struct gm_abi_dev after seq and lock. */
#define GM_DEV_SCALARS(X)                                                   \
    X(present) X(physical) X(limit) X(used) X(peak) X(peak_ns)              \
    X(context_bytes) X(pool_reserve) X(allocs) X(frees) X(refusals)         \
    X(spills) X(spilled_bytes) X(over_limit) X(total_bytes) X(live_allocs)  \
    X(live_bytes) X(frag_ppm) X(frag_peak_ppm) X(waits) X(trims)            \
    X(trimmed_bytes) X(reclaims) X(reclaimed_bytes) X(last_ns) X(lat_sum_ns) \
    X(hist_next_ns) X(hist_open) X(hist_min) X(hist_max) X(hist_allocs0)    \
    X(hist_frees0) X(hist_refusals0) X(hist_lock) X(uuid[0]) X(uuid[1])     \
    X(context_peak) X(ended_bytes)

/* ---- geometry ----------------------------------------------------------- */

static uint32_t ring_cap(uint32_t want)
{
    if (want == 0)
        want = GM_ABI_RING_DEFAULT;
    if (want > GM_ABI_RING_MAX)
        want = GM_ABI_RING_MAX;
    uint32_t c = GM_ABI_RING_MIN;
    while (c < want)
        c <<= 1;
    return c;
}

static uint32_t dev_slots(uint32_t want)
{
    return want == 0 || want > GM_ABI_MAX_DEVICES ? GM_ABI_MAX_DEVICES : want;
}

static uint32_t hist_slots(uint32_t dev)
{
    return dev < GM_ABI_HIST_DEVICES ? dev : GM_ABI_HIST_DEVICES;
}

static size_t hist_size(uint32_t slots)
{
    return (size_t)GM_ABI_MARKS * sizeof(struct gm_abi_mark) +
           (size_t)hist_slots(slots) * sizeof(struct gm_abi_hist);
}

size_t gm_tel_layout_size(uint32_t ring_events, uint32_t slots)
{
    return sizeof(struct gm_abi_header) +
           (size_t)dev_slots(slots) * sizeof(struct gm_abi_dev) +
           (size_t)ring_cap(ring_events) * sizeof(struct gm_abi_record) +
           hist_size(dev_slots(slots));
}

/* ---- writer: stats ------------------------------------------------------ */

/* ---- writer: cold helpers ------------------------------------------------ */

/* First use of a device: present = 1, dev_seen = max(dev_seen, dev+1). */
void gm_tw_mark_present(const struct gm_tw *w, struct gm_abi_dev *d,
                        unsigned dev)
{
    struct gm_abi_header *h = w->h;
    tw_put(&d->present, 1);
    uint64_t want = (uint64_t)dev + 1, cur = TW_LD_RLX(&h->dev_seen);
    while (cur < want &&
           !__atomic_compare_exchange_n(&h->dev_seen, &cur, want, true,
                                        __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
}

/* ---- writer: the lock's slow path ----------------------------------------- */

/* Whether thread `tid` of this process is gone (tgkill's existence test:
 * ESRCH; a thread id is not reused while the kernel still knows it). */
static bool thread_gone(int tid)
{
    return syscall(SYS_tgkill, getpid(), tid, 0) != 0 && errno == ESRCH;
}

/* A holder died inside its update: close what it left open, so readers
 * do not see its device block busy, nor its ring slot unpublished,
 * forever. Runs holding the lock. Its half-written event stays half
 * written (one event's fields); every later one is whole. */
static void repair(const struct gm_tw *w)
{
    /* The fragmentation logs' trees may be half changed: rebuilt before
     * their next use (shim/telemetry/fragq.h). */
    gm_fragq_epoch++;
    struct gm_abi_dev *devs = w->devs;
    for (uint32_t i = 0; i < w->dev_slots; i++) {
        if (TW_LD(&devs[i].wdone) != TW_LD(&devs[i].wbegin))
            TW_ST_REL(&devs[i].wdone, TW_LD(&devs[i].wbegin));
        /* Rolls run under the writer lock: nobody else can hold it. */
        TW_ST_REL(&devs[i].hist_lock, 0);
    }
    uint64_t head = TW_LD(&w->h->ring_head);
    if (head == 0)
        return;
    struct gm_abi_record *r = &w->ring[(head - 1) & w->ring_mask];
    /* Its record stays unpublished (readers count it lost); the slot is
     * written again on the next lap. */
    if (TW_LD(&r->seq) == (head | GM_ABI_SEQ_BUSY))
        TW_ST_REL(&r->seq, head - 1);
}

/* Once per process, unless warnings are muted (as the forecast's line). */
static void stuck_warning(const struct gm_tel *t, int holder)
{
    static _Atomic int said;
    if (t->quiet || atomic_exchange(&said, 1))
        return;
    char line[200];
    int n = snprintf(line, sizeof line,
                     "gpumem: telemetry: thread %d has held the segment's "
                     "writer lock for over %llu s; events are not recorded "
                     "while it does (limits are still enforced)\n", holder,
                     (unsigned long long)(GM_TEL_LOCK_WAIT_NS / 1000000000ull));
    if (n > 0)
        (void)gm_write_all(STDERR_FILENO, line,
                           (size_t)n < sizeof line ? (size_t)n
                                                   : sizeof line - 1);
}

/* Takes over the lock that `cur` shows held by a dead thread, keeping its
 * deferred work for this taker's release (and dropping a waiter's mark
 * of it as stuck): false when the word changed meanwhile. */
static bool take_over(struct gm_tel *t, int cur, int me)
{
    if (!atomic_compare_exchange_strong_explicit(
            &t->wlock.v, &cur, TW_W_OPEN | me | (cur & TW_W_DEFER),
            memory_order_acquire, memory_order_relaxed))
        return false;
    if (tw_tel_hdr(t) != NULL)
        repair(&t->w);
    return true;
}

/* This thread's skips past a holder marked stuck: every 256th (the first
 * included) asks whether that holder is still there. */
static __thread unsigned stuck_skips
    __attribute__((tls_model("initial-exec")));

int gm_tel_lock_slow(struct gm_tel *t, int me)
{
    unsigned spins = 0;
    uint64_t first = 0, since = 0;
    int seen = 0; /* the holder `since` dates from */
    for (;;) {
        int cur = atomic_load_explicit(&t->wlock.v, memory_order_relaxed);
        if (!(cur & TW_W_OPEN))
            return TW_CLOSED;
        if (cur == TW_W_OPEN) {
            if (atomic_compare_exchange_weak_explicit(
                    &t->wlock.v, &cur, TW_W_OPEN | me, memory_order_acquire,
                    memory_order_relaxed))
                return TW_TAKEN;
            continue;
        }
        int holder = cur & TW_W_TID;
        if (holder == me)
            return TW_MINE;
        if (cur & TW_W_CLOSE)
            return TW_CLOSED; /* closes once its holder lets go */
        if (cur & TW_W_STUCK) {
            /* The holder given up on still holds it: skip at once, but
             * now and then ask whether it died since (then take over). */
            if ((stuck_skips++ & 255u) == 0 && thread_gone(holder) &&
                take_over(t, cur, me))
                return TW_TAKEN;
            return TW_STUCK;
        }
        if (++spins < 100) {
            gm_cpu_relax();
            continue;
        }
        sched_yield();
        if (spins % 256 != 0)
            continue;
        if (thread_gone(holder)) {
            if (take_over(t, cur, me))
                return TW_TAKEN;
            continue;
        }
        uint64_t now = gm_clock_monotonic_ns();
        if (first == 0)
            first = now;
        if (holder != seen) {
            /* Another holder: the lock moves, this one's time starts. */
            seen = holder;
            since = now;
        } else if (now - since > GM_TEL_LOCK_WAIT_NS) {
            /* One holder all along. Fails when it let go (or a flag came)
             * meanwhile: look again. */
            if (atomic_compare_exchange_strong_explicit(
                    &t->wlock.v, &cur, cur | TW_W_STUCK,
                    memory_order_relaxed, memory_order_relaxed)) {
                stuck_warning(t, holder);
                return TW_STUCK;
            }
        }
        if (now - first > 2 * GM_TEL_LOCK_WAIT_NS)
            return TW_BUSY; /* the lock moves but never to this thread */
    }
}

/* The release found a flag in the word (TW_W_DEFER, TW_W_STUCK,
 * TW_W_CLOSE): let go accordingly, then do the deferred work. Only the
 * holder clears flags; others only add TW_W_STUCK or TW_W_CLOSE to a held
 * word, so the loop ends once no flag arrives between the load and the
 * compare-and-swap. */
void gm_tel_unlock_slow(struct gm_tel *t, int me)
{
    int cur = atomic_load_explicit(&t->wlock.v, memory_order_relaxed);
    for (;;) {
        if ((cur & TW_W_TID) != me || !(cur & TW_W_OPEN))
            return; /* not held by this thread: nothing to let go */
        int next = (cur & TW_W_CLOSE) ? 0 : TW_W_OPEN;
        /* Release: pairs with the next taker's acquire. */
        if (atomic_compare_exchange_weak_explicit(&t->wlock.v, &cur, next,
                                                  memory_order_release,
                                                  memory_order_relaxed))
            break;
    }
    if (cur & TW_W_DEFER)
        gm_forecast_flush();
}

void gm_tw_defer(const struct gm_tw *w)
{
    /* w is the view inside its struct gm_tel (tw_lock_as returns &t->w);
     * the caller holds the lock, so the word holds its id. */
    struct gm_tel *t =
        (struct gm_tel *)(void *)((char *)w - offsetof(struct gm_tel, w));
    atomic_fetch_or_explicit(&t->wlock.v, TW_W_DEFER, memory_order_relaxed);
}

/* ---- writer: the hooks' API --------------------------------------------- */

void gm_tel_device(struct gm_tel *t, unsigned dev, uint64_t physical,
                   uint64_t limit, const unsigned char *uuid)
{
    uint64_t now = gm_clock_realtime_ns();
    const struct gm_tw *w = tw_lock(t);
    if (w == NULL)
        return;
    struct gm_abi_dev *d = tw_stats_begin(w, dev, now);
    if (d != NULL) {
        tw_put(&d->physical, physical);
        tw_put(&d->limit, limit);
        if (uuid != NULL) {
            uint64_t u[2];
            memcpy(u, uuid, sizeof u);
            tw_put(&d->uuid[0], u[0]);
            tw_put(&d->uuid[1], u[1]);
        }
        tw_stats_end(d);
    }
    tw_unlock(t);
}

void gm_tel_alloc_frag(struct gm_tel *t, unsigned dev, unsigned api,
                       uint64_t addr, uint64_t size, uint64_t lat_ns,
                       uint64_t used_after, uint64_t peak, uint32_t frag_ppm)
{
    struct gm_tel_ev e = {
        .ts_ns = gm_clock_realtime_ns(), .lat_ns = lat_ns, .addr = addr, .size = size,
        .used = used_after, .peak = peak, .dev = dev, .api = api,
        .frag_ppm = frag_ppm,
    };
    gm_tel_alloc_ev(t, &e);
}

void gm_tel_alloc(struct gm_tel *t, unsigned dev, unsigned api, uint64_t addr,
                  uint64_t size, uint64_t lat_ns, uint64_t used_after,
                  uint64_t peak)
{
    gm_tel_alloc_frag(t, dev, api, addr, size, lat_ns, used_after, peak,
                      GM_TEL_FRAG_KEEP);
}

void gm_tel_free_frag(struct gm_tel *t, unsigned dev, unsigned api,
                      uint64_t addr, uint64_t size, uint64_t lat_ns,
                      uint64_t used_after, uint32_t frag_ppm)
{
    struct gm_tel_ev e = {
        .ts_ns = gm_clock_realtime_ns(), .lat_ns = lat_ns, .addr = addr, .size = size,
        .used = used_after, .dev = dev, .api = api, .frag_ppm = frag_ppm,
        .ended = api == GM_API_CTX_END,
    };
    gm_tel_free_ev(t, &e);
}

void gm_tel_free(struct gm_tel *t, unsigned dev, unsigned api, uint64_t addr,
                 uint64_t size, uint64_t lat_ns, uint64_t used_after)
{
    gm_tel_free_frag(t, dev, api, addr, size, lat_ns, used_after,
                     GM_TEL_FRAG_KEEP);
}

void gm_tel_refuse(struct gm_tel *t, unsigned dev, unsigned api,
                   uint64_t size, uint64_t used, uint64_t limit,
                   uint64_t peak)
{
    uint64_t now = gm_clock_realtime_ns();
    const struct gm_tw *w = tw_lock(t);
    if (w == NULL)
        return;
    struct gm_abi_dev *d = tw_stats_begin(w, dev, now);
    if (d != NULL) {
        tw_inc(&d->refusals);
        tw_set_used_peak(d, used, peak, now);
        tw_stats_end(d);
    }
    tw_ring_push(w, GM_EV_OOM, api, dev, now, 0, size, 0, used, limit);
    tw_unlock(t);
}

void gm_tel_context(struct gm_tel *t, unsigned dev, uint64_t bytes,
                    uint64_t used_after, uint64_t peak)
{
    uint64_t now = gm_clock_realtime_ns();
    const struct gm_tw *w = tw_lock(t);
    if (w == NULL)
        return;
    struct gm_abi_dev *d = tw_stats_begin(w, dev, now);
    if (d != NULL) {
        tw_add(&d->context_bytes, bytes);
        tw_raise_to(&d->context_peak, tw_get(&d->context_bytes));
        tw_set_used_peak(d, used_after, peak, now);
        tw_stats_end(d);
    }
    tw_ring_push(w, GM_EV_CONTEXT, GM_API_NONE, dev, now, 0, bytes, 0,
              used_after, 0);
    tw_unlock(t);
}

void gm_tel_limit(struct gm_tel *t, unsigned dev, uint64_t new_limit)
{
    uint64_t now = gm_clock_realtime_ns(), old = 0, used = 0;
    const struct gm_tw *w = tw_lock(t);
    if (w == NULL)
        return;
    struct gm_abi_dev *d = tw_stats_begin(w, dev, now);
    if (d != NULL) {
        old = tw_get(&d->limit);
        used = tw_get(&d->used);
        tw_put(&d->limit, new_limit);
        tw_stats_end(d);
    }
    tw_ring_push(w, GM_EV_LIMIT, GM_API_NONE, dev, now, 0, new_limit, 0, used,
              old);
    tw_unlock(t);
}

/* Writer lock held: frag_ppm into device dev's block (not an event of
 * its own: last_ns is left alone); GM_TEL_FRAG_KEEP changes nothing. */
static void frag_put_locked(const struct gm_tw *w, unsigned dev,
                            uint32_t frag_ppm)
{
    if (frag_ppm == GM_TEL_FRAG_KEEP || dev >= w->dev_slots)
        return;
    struct gm_abi_dev *d = &w->devs[dev];
    TW_ST(&d->wbegin, TW_LD(&d->wbegin) + 1);
    TW_FENCE_REL(); /* as in tw_stats_enter */
    tw_put_frag(d, frag_ppm);
    tw_stats_end(d);
}

void gm_tel_frag(struct gm_tel *t, unsigned dev, uint32_t frag_ppm)
{
    const struct gm_tw *w = tw_lock(t);
    if (w == NULL)
        return;
    frag_put_locked(w, dev, frag_ppm);
    tw_unlock(t);
}

void gm_tel_frag_sync(struct gm_tel *t, unsigned dev, struct gm_fragq *q)
{
    const struct gm_tw *w = tw_lock(t);
    if (w == NULL)
        return;
    frag_put_locked(w, dev, gm_fragq_apply(q, false));
    tw_unlock(t);
}

bool gm_tel_frag_peek(struct gm_tel *t, unsigned dev, struct gm_fragq *q,
                      uint64_t *largest, uint32_t *ppm)
{
    const struct gm_tw *w = tw_lock(t);
    if (w == NULL)
        return false;
    frag_put_locked(w, dev, gm_fragq_apply(q, false));
    bool any = gm_frag_count(&q->set) > 0;
    if (any) {
        *largest = gm_frag_largest_free(&q->set);
        *ppm = gm_frag_ppm(&q->set);
    }
    tw_unlock(t);
    return any;
}

void gm_tel_host(struct gm_tel *t, unsigned api, uint64_t addr, int64_t delta)
{
    uint64_t now = gm_clock_realtime_ns();
    const struct gm_tw *w = tw_lock(t);
    if (w == NULL)
        return;
    struct gm_abi_header *h = w->h;
    uint64_t mag = delta < 0 ? (uint64_t)0 - (uint64_t)delta : (uint64_t)delta;
    uint64_t cur = TW_LD(&h->host_pinned), next;
    if (delta < 0)
        next = cur > mag ? cur - mag : 0;
    else
        next = cur + mag < cur ? UINT64_MAX : cur + mag;
    TW_ST_REL(&h->host_pinned, next); /* pairs with the readers' acquire */
    tw_ring_push(w, GM_EV_HOST, api, GM_ABI_NO_DEVICE, now, 0, mag,
                 (uint64_t)delta, next, addr);
    tw_unlock(t);
}

/* gm_tel_event with the record's extra field. */
static void event_x(struct gm_tel *t, unsigned kind, unsigned dev,
                    unsigned api, uint64_t size, uint64_t addr,
                    uint64_t used_after, uint64_t extra)
{
    uint64_t now = gm_clock_realtime_ns();
    const struct gm_tw *w = tw_lock(t);
    if (w == NULL)
        return;
    struct gm_abi_dev *d = tw_stats_begin(w, dev, now);
    if (d != NULL) {
        switch (kind) {
        case GM_EV_SPILL:
            tw_inc(&d->spills);
            tw_add(&d->spilled_bytes, size);
            break;
        case GM_EV_OVER_LIMIT:
            tw_inc(&d->over_limit);
            break;
        case GM_EV_WAIT_BEGIN:
            tw_inc(&d->waits);
            break;
        case GM_EV_TRIM:
            tw_inc(&d->trims);
            tw_add(&d->trimmed_bytes, size);
            break;
        case GM_EV_RECLAIM:
            tw_inc(&d->reclaims);
            tw_add(&d->reclaimed_bytes, size);
            break;
        case GM_EV_CONTEXT_END:
            tw_sub(&d->context_bytes, size);
            break;
        case GM_EV_CTX_FREED: /* addr blocks of size bytes in all */
            tw_sub(&d->live_allocs, addr);
            tw_sub(&d->live_bytes, size);
            tw_add(&d->ended_bytes, size);
            if (tw_get(&d->live_allocs) == 0) /* a reset: a phase ends */
                gm_forecast_reset(dev, tw_get(&d->hist_open),
                                  tw_get(&d->allocs) + tw_get(&d->frees));
            break;
        default:
            break;
        }
        tw_set_used_peak(d, used_after, 0, now);
        tw_stats_end(d);
    }
    tw_ring_push(w, kind, api, dev, now, 0, size, addr, used_after, extra);
    tw_unlock(t);
}

void gm_tel_event(struct gm_tel *t, unsigned kind, unsigned dev, unsigned api,
                  uint64_t size, uint64_t addr, uint64_t used_after)
{
    event_x(t, kind, dev, api, size, addr, used_after, 0);
}

void gm_tel_ctx_freed(struct gm_tel *t, unsigned dev, uint64_t bytes,
                      uint64_t count, uint64_t used_after, uint64_t began_ns)
{
    event_x(t, GM_EV_CTX_FREED, dev, GM_API_CTX_END, bytes, count,
            used_after, began_ns);
}

void gm_tel_pool(struct gm_tel *t, unsigned dev, uint64_t reserve_bytes,
                 uint64_t used, uint64_t peak)
{
    uint64_t now = gm_clock_realtime_ns();
    const struct gm_tw *w = tw_lock(t);
    if (w == NULL)
        return;
    struct gm_abi_dev *d = tw_stats_begin(w, dev, now);
    if (d != NULL) {
        tw_put(&d->pool_reserve, reserve_bytes);
        tw_set_used_peak(d, used, peak, now);
        tw_stats_end(d);
    }
    tw_unlock(t);
}

void gm_tel_sync(struct gm_tel *t, unsigned dev, uint64_t used, uint64_t peak)
{
    uint64_t now = gm_clock_realtime_ns();
    const struct gm_tw *w = tw_lock(t);
    if (w == NULL)
        return;
    struct gm_abi_dev *d = tw_stats_begin(w, dev, now);
    if (d != NULL) {
        tw_set_used_peak(d, used, peak, now);
        tw_stats_end(d);
    }
    tw_unlock(t);
}

/* ---- segment creation --------------------------------------------------- */

static void read_cmdline(char *dst, size_t cap)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    size_t n = 0;
    while (n < cap - 1) {
        ssize_t r = read(fd, dst + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)dst[i] < 0x20 || dst[i] == 0x7f)
            dst[i] = ' ';
    while (n > 0 && dst[n - 1] == ' ')
        n--;
    dst[n] = '\0';
}

/* Fills a zeroed image; magic is stored last (release) so a reader that
 * sees it (acquire) sees every other header field. */
static void init_image(struct gm_abi_header *h, uint32_t cap, uint32_t slots,
                       const struct gm_tel_params *p)
{
    h->abi_version = GM_ABI_VERSION;
    h->header_size = sizeof *h;
    h->dev_size = sizeof(struct gm_abi_dev);
    h->record_size = sizeof(struct gm_abi_record);
    h->dev_slots = slots;
    h->ring_capacity = cap;
    h->dev_offset = sizeof *h;
    h->ring_offset = sizeof *h + (uint64_t)slots * sizeof(struct gm_abi_dev);
    h->hist_offset =
        h->ring_offset + (uint64_t)cap * sizeof(struct gm_abi_record);
    h->hist_size = hist_size(slots);
    h->hist_slots = hist_slots(slots);
    h->hist_tiers = GM_ABI_HIST_TIERS;
    h->hist_buckets = GM_ABI_HIST_BUCKETS;
    h->hist_bucket_size = sizeof(struct gm_abi_bucket);
    h->marks_capacity = GM_ABI_MARKS;
    h->hist_dev_size = sizeof(struct gm_abi_hist);
    h->total_size = h->hist_offset + h->hist_size;
    h->pid = (uint32_t)getpid();
    h->mode = p->mode;
    h->on_oom = p->on_oom;
    h->created_ns = gm_clock_realtime_ns();
    h->hist_base_ns = h->created_ns;
    uint64_t ticks;
    if (gm_proc_start_ticks(0, &ticks) == 0) {
        h->start_ticks = ticks;
        h->start_realtime_ns = gm_proc_start_realtime_ns(ticks);
    }
    if (h->start_realtime_ns == 0 || h->start_realtime_ns > h->created_ns)
        h->start_realtime_ns = h->created_ns;
    read_cmdline(h->cmdline, sizeof h->cmdline);
    gm_forecast_configure(p->warn_before_ns, p->forecast_silent);
    if (p->policy_summary != NULL)
        snprintf(h->policy, sizeof h->policy, "%s", p->policy_summary);
    if (p->ident != NULL)
        gm_ident_copy(&h->ident, p->ident);
    TW_ST_REL(&h->magic, GM_ABI_MAGIC);
}

/* The writer's view of the image init_image laid out with cap records
 * and slots device blocks (from those numbers, not from the header). */
static void set_view(struct gm_tw *w, void *mem, uint32_t cap, uint32_t slots)
{
    char *base = mem;
    size_t ring_off = sizeof(struct gm_abi_header) +
                      (size_t)slots * sizeof(struct gm_abi_dev);
    size_t hist_off = ring_off + (size_t)cap * sizeof(struct gm_abi_record);
    w->h = mem;
    w->devs = (struct gm_abi_dev *)(base + sizeof(struct gm_abi_header));
    w->ring = (struct gm_abi_record *)(base + ring_off);
    w->marks = (struct gm_abi_mark *)(base + hist_off);
    w->hists = (struct gm_abi_hist *)(base + hist_off +
                                      (size_t)GM_ABI_MARKS *
                                          sizeof(struct gm_abi_mark));
    w->ring_mask = (uint64_t)cap - 1;
    w->dev_slots = slots;
    w->hist_slots = hist_slots(slots);
}

static void attach(struct gm_tel *t, void *mem, size_t len, bool shared,
                   uint32_t cap, uint32_t slots)
{
    t->map_len = len;
    t->shared = shared;
    set_view(&t->w, mem, cap, slots);
    __atomic_store_n(&t->hdr, (struct gm_abi_header *)mem, __ATOMIC_RELEASE);
    /* No writer holds the lock: it was closed (0) until now. Release:
     * pairs with a taker's acquire compare-and-swap, which then sees t->w
     * and t->hdr. */
    atomic_store_explicit(&t->wlock.v, TW_W_OPEN, memory_order_release);
}

/* Whether the file may be a telemetry writer's leftover: too short to
 * hold any magic (empty, a few bytes of garbage), or its magic is ours or
 * still 0 (a writer that died before storing it). A file with another
 * magic (a group segment, another program's file) is never ours to
 * remove. */
static bool telemetry_kind(int fd, const struct stat *st)
{
    uint64_t magic = 0;
    if (st->st_size < (off_t)sizeof magic)
        return true;
    return pread(fd, &magic, sizeof magic, 0) == (ssize_t)sizeof magic &&
           (magic == GM_ABI_MAGIC || magic == 0);
}

/* A file already sits at our path. Remove it when it is of our kind and
 * nobody holds it locked (its writer is dead: a previous process with our
 * pid, or this process's image before exec, whose descriptor closed on
 * exec). Returns 0 when the path is free now, -1 (reason in err) when it
 * must be left alone. */
static int clear_stale(const char *path, char *err, size_t cap)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        if (errno == ELOOP)
            gm_msgf(err, cap, "%s is a symbolic link; not following it",
                    path);
        else
            gm_msgf(err, cap, "cannot inspect %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    int rc = -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        gm_msgf(err, cap, "%s exists and is not a regular file; left alone",
                path);
    } else if (st.st_uid != geteuid()) {
        gm_msgf(err, cap, "%s exists and belongs to another user; left "
                "alone", path);
    } else if (!telemetry_kind(fd, &st)) {
        gm_msgf(err, cap, "%s exists and is not a gpumem telemetry segment; "
                "left alone", path);
    } else {
        int locked = -1, why = 0;
        for (int i = 0; i < 3 && locked != 0; i++) {
            locked = flock(fd, LOCK_EX | LOCK_NB);
            why = locked != 0 ? errno : 0;
            if (locked != 0 && why == EWOULDBLOCK)
                nanosleep(&(struct timespec){ 0, 2000000 }, NULL);
            else
                break;
        }
        if (locked != 0 && why != EWOULDBLOCK) {
            /* No locks on this file system: fall back to the header. */
            struct gm_abi_header h;
            if (pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
                h.magic == GM_ABI_MAGIC && h.pid == (uint32_t)getpid())
                locked = 0;
        }
        if (locked != 0)
            gm_msgf(err, cap, "%s is in use by a live process; left alone",
                    path);
        else if (unlink(path) != 0 && errno != ENOENT)
            gm_msgf(err, cap, "cannot remove the stale %s: %s", path,
                    strerror(errno));
        else
            rc = 0;
    }
    close(fd);
    return rc;
}

/* Creates, sizes and maps the shared segment. Returns the mapping or NULL
 * (reason in err, nothing left behind). */
static void *open_shared(struct gm_tel *t, const struct gm_tel_params *p,
                         size_t len, char *err, size_t cap)
{
    const char *prefix = p->prefix && p->prefix[0] ? p->prefix : "gpumem";
    const char *dir = p->shm_dir && p->shm_dir[0] ? p->shm_dir : "/dev/shm";
    char why[GM_NAME_WHY];
    const char *bad = gm_shm_prefix_problem(prefix, why, sizeof why);
    if (bad != NULL) {
        gm_msgf(err, cap, "invalid segment prefix \"%s\" (it %s)", prefix,
                bad);
        return NULL;
    }
    if (gm_shm_dir_check(dir, geteuid(), false, err, cap) != 0)
        return NULL;
    /* Processes of different pid namespaces may share the directory and
     * the same pid: outside the initial namespace the name carries it. */
    uint64_t ns = p->ident != NULL ? p->ident->pidns : 0;
    int n = ns != 0 && ns != GM_PIDNS_INIT
                ? snprintf(t->path, sizeof t->path, "%s/%s.%ld.ns%llu", dir,
                           prefix, (long)getpid(), (unsigned long long)ns)
                : snprintf(t->path, sizeof t->path, "%s/%s.%ld", dir, prefix,
                           (long)getpid());
    if (n < 0 || (size_t)n >= sizeof t->path) {
        gm_msgf(err, cap, "segment path too long in %s", dir);
        return NULL;
    }
    if (gm_shm_fsize_would_kill(len)) {
        gm_msgf(err, cap, "the file size limit (RLIMIT_FSIZE) is below the "
                "segment size for %s", t->path);
        return NULL;
    }
    int fd = -1;
    for (int attempt = 0; attempt < 2 && fd < 0; attempt++) {
        fd = open(t->path, O_CREAT | O_EXCL | O_NOFOLLOW | O_RDWR | O_CLOEXEC,
                  0600);
        if (fd >= 0)
            break;
        if (errno != EEXIST || attempt == 1) {
            gm_msgf(err, cap, "cannot create %s: %s", t->path,
                    strerror(errno));
            return NULL;
        }
        if (clear_stale(t->path, err, cap) != 0)
            return NULL;
    }
    int e;
    void *mem = gm_shm_size_map(fd, len, &e);
    if (mem == NULL) {
        gm_msgf(err, cap, "cannot size the segment %s (directory full?): %s",
                t->path, strerror(e));
        unlink(t->path);
        close(fd);
        return NULL;
    }
    t->fd = fd;
    struct stat st;
    t->file_dev = t->file_ino = 0;
    if (fstat(fd, &st) == 0) {
        t->file_dev = (uint64_t)st.st_dev;
        t->file_ino = (uint64_t)st.st_ino;
    }
    return mem;
}

/* Whether t->fd still is the segment's descriptor: the program may have
 * closed it (close_range, a daemon closing every descriptor) and got the
 * number back for a file of its own, which is never ours to close or
 * unlock. */
static bool fd_ours(const struct gm_tel *t)
{
    struct stat st;
    return t->fd >= 0 && t->file_ino != 0 && fstat(t->fd, &st) == 0 &&
           (uint64_t)st.st_dev == t->file_dev &&
           (uint64_t)st.st_ino == t->file_ino;
}

int gm_tel_open(struct gm_tel *t, const struct gm_tel_params *p, char *err,
                size_t errcap)
{
    atomic_store_explicit(&t->wlock.v, 0, memory_order_relaxed); /* closed */
    t->hdr = NULL;
    t->map_len = 0;
    t->shared = false;
    t->path[0] = '\0';
    t->fd = -1;
    t->file_dev = t->file_ino = 0;
    if (err != NULL && errcap > 0)
        err[0] = '\0';
    uint32_t cap = ring_cap(p->ring_events), slots = dev_slots(p->dev_slots);
    size_t len = gm_tel_layout_size(cap, slots);
    void *mem = open_shared(t, p, len, err, errcap);
    bool shared = mem != NULL;
    if (!shared) {
        t->path[0] = '\0';
        mem = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (mem == MAP_FAILED)
            return -1;
    }
    init_image(mem, cap, slots, p);
    t->quiet = p->forecast_silent;
    attach(t, mem, len, shared, cap, slots);
    return shared ? 0 : 1;
}

int gm_tel_open_mem(struct gm_tel *t, void *mem, size_t len,
                    const struct gm_tel_params *p)
{
    uint32_t cap = ring_cap(p->ring_events), slots = dev_slots(p->dev_slots);
    size_t need = gm_tel_layout_size(cap, slots);
    atomic_store_explicit(&t->wlock.v, 0, memory_order_relaxed); /* closed */
    t->hdr = NULL;
    t->fd = -1;
    t->file_dev = t->file_ino = 0;
    t->path[0] = '\0';
    if (mem == NULL || len < need || ((uintptr_t)mem & 63u) != 0)
        return -1;
    memset(mem, 0, need);
    init_image(mem, cap, slots, p);
    t->quiet = p->forecast_silent;
    attach(t, mem, 0, false, cap, slots);
    return 0;
}

/* Take the lock to close the segment: true when taken; false when it
 * cannot be had (this thread holds it: an exit from a signal handler; or
 * its holder is stuck), and then TW_W_CLOSE is on the holder's word, so
 * that its release leaves the lock closed. *gone: already closed (or
 * being closed by another thread), nothing to do. */
static bool take_to_close(struct gm_tel *t, int me, bool *gone)
{
    *gone = false;
    for (;;) {
        int r = tw_take(t, me);
        if (r == TW_TAKEN)
            return true;
        if (r == TW_CLOSED) {
            *gone = true;
            return false;
        }
        int cur = atomic_load_explicit(&t->wlock.v, memory_order_relaxed);
        while ((cur & TW_W_OPEN) && cur != TW_W_OPEN) {
            if (cur & TW_W_CLOSE) {
                *gone = true; /* another closer marked it: that one closes */
                return false;
            }
            if (atomic_compare_exchange_weak_explicit(
                    &t->wlock.v, &cur, cur | TW_W_CLOSE,
                    memory_order_relaxed, memory_order_relaxed))
                return false;
        }
        if (!(cur & TW_W_OPEN)) {
            *gone = true;
            return false;
        }
        /* Let go meanwhile: take it after all. */
    }
}

void gm_tel_close(struct gm_tel *t, bool keep)
{
    struct gm_abi_header *h = tw_tel_hdr(t);
    if (h == NULL)
        return;
    /* Without the lock when it cannot be had: the segment is still marked
     * closed and removed. */
    bool gone;
    bool held = take_to_close(t, (int)gm_thread_id(), &gone);
    if (gone || tw_tel_hdr(t) != h) {
        if (held)
            tw_unlock(t);
        return; /* closed by another thread meanwhile */
    }
    uint64_t now = gm_clock_realtime_ns();
    gm_hist_flush(&t->w);
    TW_ST_REL(&h->closed_ns, now);
    __atomic_fetch_or(&h->flags, GM_ABI_F_CLOSED | (keep ? GM_ABI_F_KEPT : 0u),
                      __ATOMIC_RELEASE);
    __atomic_store_n(&t->hdr, NULL, __ATOMIC_RELEASE);
    if (held) {
        /* Closed for good: a taker that finds 0 takes nothing, so
         * nothing is published to one. */
        int was = atomic_exchange_explicit(&t->wlock.v, 0,
                                           memory_order_release);
        if (was & TW_W_DEFER)
            gm_forecast_flush();
    }
    /* The file's syscalls after the lock: a writer that loaded hdr before
     * it was cleared writes into the mapping, which stays. */
    if (t->shared) {
        if (!keep)
            unlink(t->path);
        if (fd_ours(t)) {
            /* Explicitly: the mapping we leave keeps the file open. */
            flock(t->fd, LOCK_UN);
            close(t->fd);
        }
    }
    t->fd = -1;
}

void gm_tel_forget(struct gm_tel *t)
{
    /* Our copies only: the lock belongs to the open file that parent and
     * child share, so it is never unlocked here (that would unlock the
     * parent's); closing our descriptor and unmapping our copy of the
     * mapping drops our references, so the lock ends with the parent.
     * A number that names another file now (the program closed ours and
     * reused it) is the program's: left open. */
    if (t->hdr != NULL && t->shared && fd_ours(t))
        close(t->fd);
    if (t->hdr != NULL && t->map_len > 0)
        munmap(t->hdr, t->map_len);
    t->fd = -1;
    t->shared = false;
    t->path[0] = '\0';
    t->map_len = 0;
    __atomic_store_n(&t->hdr, NULL, __ATOMIC_RELEASE);
    memset(&t->w, 0, sizeof t->w); /* it described the unmapped copy */
    /* A thread of the parent may have held the writer lock at the fork;
     * the child has no such thread. Closed until its own segment opens. */
    atomic_store_explicit(&t->wlock.v, 0, memory_order_relaxed);
    gm_thread_id_reset();
    gm_forecast_configure(0, true); /* the child's segment sets its own */
}

/* ---- read side ---------------------------------------------------------- */

static void backoff(unsigned attempt)
{
    unsigned n = 1u << (attempt < 6 ? attempt : 6);
    for (unsigned i = 0; i < n; i++)
        gm_cpu_relax();
}

static void copy_dev(const struct gm_abi_dev *s, struct gm_abi_dev *d)
{
#define GM_COPY(f) d->f = TW_LD_ACQ(&s->f);
    GM_DEV_SCALARS(GM_COPY)
#undef GM_COPY
    for (unsigned i = 0; i < GM_ABI_SIZE_BUCKETS; i++)
        d->size_hist[i] = TW_LD_ACQ(&s->size_hist[i]);
    for (unsigned i = 0; i < GM_ABI_LAT_BUCKETS; i++)
        d->lat_hist[i] = TW_LD_ACQ(&s->lat_hist[i]);
}

/* The writer's invariants (docs/abi.md, "Invariants"). */
static bool dev_sane(const struct gm_abi_dev *d)
{
    uint64_t sz = 0, lat = 0;
    for (unsigned i = 0; i < GM_ABI_SIZE_BUCKETS; i++)
        sz += d->size_hist[i];
    for (unsigned i = 0; i < GM_ABI_LAT_BUCKETS; i++)
        lat += d->lat_hist[i];
    return d->present <= 1 && d->used <= d->peak &&
           d->live_allocs <= d->allocs && d->live_bytes <= d->total_bytes &&
           d->frag_ppm <= 1000000 && d->frag_peak_ppm <= 1000000 &&
           (d->allocs == UINT64_MAX || (sz == d->allocs && lat == d->allocs));
}

int gm_tel_read_dev(const struct gm_abi_dev *src, struct gm_abi_dev *dst)
{
    uint64_t last = 0;
    unsigned same = 0;
    for (unsigned a = 0; a < READ_ATTEMPTS; a++) {
        uint64_t done = TW_LD_ACQ(&src->wdone);
        uint64_t begun = TW_LD_RLX(&src->wbegin);
        if (begun != done) {
            /* A writer is inside; one that stays there is dead. */
            same = begun == last ? same + 1 : 0;
            last = begun;
            if (same >= STUCK_ATTEMPTS)
                break;
            backoff(a);
            continue;
        }
        copy_dev(src, dst);
        /* The acquire field loads keep this load after them: equal to
         * `done` only if no writer began since every writer counted in
         * `done` had finished. */
        uint64_t b2 = TW_LD_RLX(&src->wbegin);
        if (b2 == done) {
            dst->wbegin = dst->wdone = done;
            return dev_sane(dst) ? GM_SNAP_OK : GM_SNAP_INSANE;
        }
        backoff(a);
    }
    copy_dev(src, dst);
    dst->wdone = TW_LD_RLX(&src->wdone);
    dst->wbegin = TW_LD_RLX(&src->wbegin);
    return GM_SNAP_BUSY;
}

int gm_tel_read_record(const struct gm_abi_record *slot, uint64_t index,
                       struct gm_abi_record *out)
{
    uint64_t want = index + 1;
    uint64_t s1 = TW_LD_ACQ(&slot->seq); /* pairs with ring_push's publish */
    if (s1 != want)
        return (s1 & ~GM_ABI_SEQ_BUSY) > want ? GM_REC_GONE : GM_REC_PENDING;
    out->ts_ns = TW_LD_ACQ(&slot->ts_ns);
    out->kind = TW_LD_ACQ(&slot->kind);
    out->api = TW_LD_ACQ(&slot->api);
    out->dev = TW_LD_ACQ(&slot->dev);
    out->tid = TW_LD_ACQ(&slot->tid);
    out->lat_ns = TW_LD_ACQ(&slot->lat_ns);
    out->size = TW_LD_ACQ(&slot->size);
    out->addr = TW_LD_ACQ(&slot->addr);
    out->used_after = TW_LD_ACQ(&slot->used_after);
    out->extra = TW_LD_ACQ(&slot->extra);
    if (TW_LD_RLX(&slot->seq) != s1)
        return GM_REC_GONE; /* a later event took the slot meanwhile */
    out->seq = s1;
    return GM_REC_OK;
}

int gm_tel_read(const struct gm_abi_header *h, uint32_t slots, uint32_t cap,
                struct gm_snapshot *out)
{
    memset(out, 0, offsetof(struct gm_snapshot, dev));
    (void)TW_LD_ACQ(&h->magic); /* pairs with init_image's release */
    out->pid = h->pid;
    out->mode = h->mode;
    out->on_oom = h->on_oom;
    out->flags = TW_LD_ACQ(&h->flags);
    out->start_ticks = h->start_ticks;
    out->start_realtime_ns = h->start_realtime_ns;
    out->created_ns = h->created_ns;
    out->closed_ns = TW_LD_ACQ(&h->closed_ns);
    out->taken_ns = gm_clock_realtime_ns();
    out->host_pinned = TW_LD_ACQ(&h->host_pinned);
    out->ring_capacity = cap;
    out->ring_head = TW_LD_ACQ(&h->ring_head);
    out->ring_dropped = TW_LD_ACQ(&h->ring_dropped);
    memcpy(out->cmdline, h->cmdline, sizeof out->cmdline);
    out->cmdline[sizeof out->cmdline - 1] = '\0';
    memcpy(out->policy, h->policy, sizeof out->policy);
    out->policy[sizeof out->policy - 1] = '\0';
    gm_ident_copy(&out->ident, &h->ident);
    out->steps = TW_LD_ACQ(&h->steps);
    out->marks = TW_LD_ACQ(&h->marks);
    out->hist_base_ns = h->hist_base_ns;
    memset(out->oom, 0, sizeof out->oom);
    out->dev_slots = slots;
    uint64_t seen = TW_LD_ACQ(&h->dev_seen);
    out->dev_count = seen < slots ? (uint32_t)seen : slots;
    const struct gm_abi_dev *devs =
        (const struct gm_abi_dev *)((const char *)h + sizeof *h);
    int bad = 0;
    for (uint32_t i = 0; i < out->dev_count; i++) {
        out->dev_state[i] = (uint8_t)gm_tel_read_dev(&devs[i], &out->dev[i]);
        bad += out->dev_state[i] != GM_SNAP_OK;
    }
    return bad;
}

void gm_tel_read_oom(const struct gm_abi_header *h, uint32_t slots,
                     uint32_t cap, struct gm_snapshot *out)
{
    memset(out->oom, 0, sizeof out->oom);
    uint32_t hslots = slots < GM_ABI_HIST_DEVICES ? slots
                                                  : GM_ABI_HIST_DEVICES;
    const char *base = (const char *)h + sizeof *h +
                       (size_t)slots * sizeof(struct gm_abi_dev) +
                       (size_t)cap * sizeof(struct gm_abi_record) +
                       (size_t)GM_ABI_MARKS * sizeof(struct gm_abi_mark);
    const struct gm_abi_hist *hs = (const struct gm_abi_hist *)base;
    for (uint32_t i = 0; i < out->dev_count && i < hslots; i++) {
        /* Pairs with gm_hist_oom_write's release of DONE; the fields
         * never change after it. */
        if (TW_LD_ACQ(&hs[i].oom.state) != GM_ABI_OOM_DONE)
            continue;
        memcpy(&out->oom[i], &hs[i].oom, sizeof out->oom[i]);
        if (out->oom[i].nclasses > GM_ABI_OOM_CLASSES)
            out->oom[i].nclasses = GM_ABI_OOM_CLASSES;
    }
}

int gm_tel_snapshot(struct gm_tel *t, struct gm_snapshot *out)
{
    const struct gm_tw *w = tw_lock(t);
    if (w == NULL)
        return -1;
    int bad = gm_tel_read(w->h, w->dev_slots, (uint32_t)(w->ring_mask + 1),
                          out);
    gm_tel_read_oom(w->h, w->dev_slots, (uint32_t)(w->ring_mask + 1), out);
    tw_unlock(t);
    return bad;
}

bool gm_tel_hold_writers(struct gm_tel *t)
{
    return tw_take(t, (int)gm_thread_id()) == TW_TAKEN;
}

void gm_tel_release_writers(struct gm_tel *t)
{
    tw_unlock(t);
}

uint64_t gm_snapshot_events_lost(const struct gm_snapshot *s)
{
    uint64_t over = s->ring_head > s->ring_capacity
                        ? s->ring_head - s->ring_capacity : 0;
    return over + s->ring_dropped < over ? UINT64_MAX : over + s->ring_dropped;
}
