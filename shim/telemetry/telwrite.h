/*
 * shim/telemetry/telwrite.h — the telemetry writer's primitives (device-block
 * updates, ring records) and the two hot-path events, inline so that an
 * allocation's telemetry compiles to straight-line stores in its caller.
 * The protocol, invariants and memory order are described in
 * shim/telemetry/ring.c (which holds the rest of the writer) and
 * shim/telemetry/abi.h.
 *
 * Every update of a device block happens between tw_stats_begin and
 * tw_stats_end, with the helpers below only. The two events also keep a
 * device pointer's fragmentation log (shim/telemetry/fragq.h), which the
 * writer lock serialises as well.
 */
#ifndef GM_TELWRITE_H
#define GM_TELWRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "shim/telemetry/abi.h"
#include "shim/base/clock.h"
#include "shim/telemetry/telemetry.h"

/* The history's hot-path code (the bucket compare, the open bucket's
 * extremes) is compiled in unless a measurement turns it off:
 * tests/bench/bench_histoff.c builds the writer with GM_TW_HISTORY 0 so
 * that `make bench` can count what the history adds to an event. */
#ifndef GM_TW_HISTORY
#define GM_TW_HISTORY 1
#endif

/* Likewise for the parts of the two hot-path events, compiled out only
 * to measure what each costs: tests/bench/floor.sh builds the shim with
 * GM_TW_FIGURES 0 (no device-block update, no fragmentation log: the
 * event takes the lock, stamps and writes its record) and with
 * GM_TW_RECORD 0 as well (the lock and the clocks alone). Such a build
 * keeps no figures; floor.sh builds it in a directory of its own and
 * nothing installs it. */
#ifndef GM_TW_FIGURES
#define GM_TW_FIGURES 1
#endif
#ifndef GM_TW_RECORD
#define GM_TW_RECORD 1
#endif

#define TW_LD_RLX(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define TW_LD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define TW_ST_RLX(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define TW_ST_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* The fields below are written only with the writer lock held (one
 * writer at a time in the process), so a writer reads them back and
 * updates them with plain loads and stores: no read-modify-write needs a
 * locked instruction. Readers in other processes copy them under the
 * seqlock (wbegin/wdone, a record's seq) and retry on a change. Built
 * for ThreadSanitizer, whose tests also read from threads of this
 * process while it writes, the same accesses are atomic loads and stores:
 * the order of the stores is the same in both builds, given by the
 * release fences (release stores there) and release stores named below. */
#if defined(__SANITIZE_THREAD__)
/* ThreadSanitizer knows no fences: each store is a release store instead,
 * ordered after every store before it (the wbegin increment, the busy
 * mark), which is what the fence gives the plain stores. */
#define TW_LD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define TW_ST(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define TW_FENCE_REL() ((void)0)
#else
#define TW_LD(p) (*(p))
#define TW_ST(p, v) (*(p) = (v))
#define TW_FENCE_REL() __atomic_thread_fence(__ATOMIC_RELEASE)
#endif

/* The writer lock (struct gm_tel's wlock) is one word that holds the
 * segment's state as well, so that taking and letting go are one atomic
 * operation each and nothing else is tested on the way:
 *
 *   0                 closed (no segment yet, or gm_tel_close ran): a
 *                     writer takes nothing and writes nothing;
 *   TW_W_OPEN         open and free;
 *   TW_W_OPEN | tid   held by thread tid, with any of the flags below.
 *
 * Taken with one compare-and-swap from TW_W_OPEN (acquire; pairs with
 * the release compare-and-swap in tw_unlock_as, and with attach()'s
 * release store of TW_W_OPEN, which follows the stores of t->w). Let go
 * with one compare-and-swap from TW_W_OPEN | tid back to TW_W_OPEN
 * (release); a flag set meanwhile makes it fail, and gm_tel_unlock_slow
 * handles the flag without ever opening a lock that is to close:
 *
 *   TW_W_DEFER   the holder left work for after the lock (a forecast
 *                warning's line: nothing that may block is done while
 *                holding it), done by gm_tel_unlock_slow once let go;
 *   TW_W_STUCK   a waiter gave up on this holder (the same thread kept
 *                the lock GM_TEL_LOCK_WAIT_NS): later waiters skip at
 *                once, every 256th skip of a thread asking whether the
 *                holder died since (then taken over); it goes with the
 *                holder's release (its thread id may be another
 *                thread's later);
 *   TW_W_CLOSE   the segment was closed while this holder kept the lock
 *                (an exit from a signal handler that interrupted it, or
 *                past a stuck holder): its release leaves the lock closed.
 *
 * A Linux thread id is at most 2^22 (PID_MAX_LIMIT), below TW_W_TID. The
 * slow path of taking, when the word is not TW_W_OPEN, returns: */
#define TW_W_OPEN 0x40000000
#define TW_W_DEFER 0x20000000
#define TW_W_STUCK 0x10000000
#define TW_W_CLOSE 0x08000000
#define TW_W_TID 0x07ffffff
#define TW_TAKEN 1     /* taken after a wait (or from a holder that died) */
#define TW_MINE 0      /* this thread holds it (a signal handler re-entered) */
#define TW_STUCK -1    /* its holder kept it GM_TEL_LOCK_WAIT_NS: given up */
#define TW_CLOSED -2   /* the segment is closed (or none was opened) */
#define TW_BUSY -3     /* held by one thread after another for twice
                          GM_TEL_LOCK_WAIT_NS, never free to this one */
#define GM_TEL_LOCK_WAIT_NS 2000000000ull
int gm_tel_lock_slow(struct gm_tel *t, int me) __attribute__((cold, noinline));
void gm_tel_unlock_slow(struct gm_tel *t, int me) __attribute__((cold, noinline));

static inline __attribute__((always_inline)) int tw_take(struct gm_tel *t,
                                                         int me)
{
    int open = TW_W_OPEN;
    if (__builtin_expect(atomic_compare_exchange_strong_explicit(
                             &t->wlock.v, &open, TW_W_OPEN | me,
                             memory_order_acquire, memory_order_relaxed),
                         1))
        return TW_TAKEN;
    return gm_tel_lock_slow(t, me);
}

/* Take the writer lock when the segment is open: returns the writer's
 * view of it (t->w: the header and where its parts lie), or NULL (then
 * nothing is held: no segment, or it was closed while this writer
 * waited, or the lock could not be had — see TW_MINE, TW_STUCK,
 * TW_BUSY). The thread id is read before the lock (its first read makes
 * a system call). */
static inline __attribute__((always_inline)) const struct gm_tw *
tw_lock_as(struct gm_tel *t, int me)
{
    if (__builtin_expect(tw_take(t, me) != TW_TAKEN, 0))
        return NULL;
    return &t->w;
}

/* The same for the calling thread, whose id is looked up here. */
static inline __attribute__((always_inline)) const struct gm_tw *
tw_lock(struct gm_tel *t)
{
    return tw_lock_as(t, (int)gm_thread_id());
}

/* Let go of the lock taken as `me` (release: pairs with the acquire
 * compare-and-swap of the next taker). */
static inline __attribute__((always_inline)) void tw_unlock_as(struct gm_tel *t,
                                                               int me)
{
    int held = TW_W_OPEN | me;
    if (__builtin_expect(!atomic_compare_exchange_strong_explicit(
                             &t->wlock.v, &held, TW_W_OPEN,
                             memory_order_release, memory_order_relaxed),
                         0))
        gm_tel_unlock_slow(t, me);
}

static inline __attribute__((always_inline)) void tw_unlock(struct gm_tel *t)
{
    tw_unlock_as(t, (int)gm_thread_id());
}

/* The holder leaves work for after the lock (TW_W_DEFER). */
void gm_tw_defer(const struct gm_tw *w) __attribute__((cold));

/* First use of a device: present = 1, dev_seen = max(dev_seen, dev+1). */
void gm_tw_mark_present(const struct gm_tw *w, struct gm_abi_dev *d,
                        unsigned dev) __attribute__((cold));

/* History (shim/telemetry/hist.c), cold: the event at `now` on device
 * block d (entered by the caller) is past the open bucket: close it, fold
 * it into the coarser tiers, open the bucket of `now`. The block's
 * figures are still those before the event's own update (the end of the
 * closed bucket). Returns without rolling when another thread holds the
 * device's roll lock (the next event tries again). */
void gm_hist_roll(const struct gm_tw *w, struct gm_abi_dev *d,
                  unsigned dev, uint64_t now) __attribute__((cold));

static inline struct gm_abi_header *tw_tel_hdr(const struct gm_tel *t)
{
    /* Pairs with the release store of t->hdr in attach(). */
    return __atomic_load_n(&t->hdr, __ATOMIC_ACQUIRE);
}

/* The primitives below run with the writer lock held. */
static inline uint64_t tw_get(const uint64_t *f)
{
    return TW_LD(f);
}

static inline void tw_put(uint64_t *f, uint64_t v)
{
    TW_ST(f, v); /* ordered after wbegin by tw_stats_enter's fence */
}

/* Counts go up by one per event: 2^64 events cannot happen. */
static inline void tw_inc(uint64_t *f)
{
    TW_ST(f, TW_LD(f) + 1);
}

/* Cumulative byte sums saturate instead of wrapping (and stay there). */
static inline void tw_add(uint64_t *f, uint64_t v)
{
    uint64_t o = TW_LD(f);
    TW_ST(f, o + v < o ? UINT64_MAX : o + v);
}

/* A count down by one, stopping at 0 (tw_sub's clamp, cheaper). */
static inline void tw_dec(uint64_t *f)
{
    uint64_t o = TW_LD(f);
    TW_ST(f, o - (o != 0));
}

/* Sums bounded by what exists (live bytes: memory held; latencies: 2^64
 * ns is 584 years) add plainly. */
static inline void tw_add_bounded(uint64_t *f, uint64_t v)
{
    TW_ST(f, TW_LD(f) + v);
}

/* Subtract, clamping at 0 (an underflow would be a release published
 * before its allocation, which the callers' ordering rules out). */
static inline void tw_sub(uint64_t *f, uint64_t v)
{
    uint64_t o = TW_LD(f);
    TW_ST(f, o > v ? o - v : 0);
}

/* f = max(f, v); true when it rose. */
static inline bool tw_raise_to(uint64_t *f, uint64_t v)
{
    if (v <= TW_LD(f))
        return false;
    TW_ST(f, v);
    return true;
}

static inline unsigned tw_log2_bucket(uint64_t v, unsigned n)
{
    /* The top bit's index (0, 1 -> 0); written as 63 ^ clz, which the
     * compiler folds into one bit-scan (63 - clz took four more). */
    unsigned b = 63u ^ (unsigned)__builtin_clzll(v | 1);
    return b < n ? b : n - 1;
}

/* Enter a device block (writer lock held): count this writer in
 * wbegin, then a release fence, so that a reader that sees any of the
 * stores that follow also sees the increment. */
static inline __attribute__((always_inline)) struct gm_abi_dev *
tw_stats_enter(const struct gm_tw *w, unsigned dev, uint64_t now,
               bool known)
{
    if (dev >= w->dev_slots)
        return NULL;
    struct gm_abi_dev *d = &w->devs[dev];
    TW_ST(&d->wbegin, TW_LD(&d->wbegin) + 1);
    TW_FENCE_REL(); /* pairs with the reader's acquire loads of fields */
    if (!known && __builtin_expect(tw_get(&d->present) == 0, 0))
        gm_tw_mark_present(w, d, dev);
    /* History: the one compare per event; the roll is cold. It runs
     * before this event's updates, so the closed bucket ends with the
     * figures of the event before. */
    if (GM_TW_HISTORY &&
        __builtin_expect(now >= tw_get(&d->hist_next_ns), 0))
        gm_hist_roll(w, d, dev, now);
    tw_put(&d->last_ns, now);
    return d;
}

static inline __attribute__((always_inline)) struct gm_abi_dev *
tw_stats_begin(const struct gm_tw *w, unsigned dev, uint64_t now)
{
    return tw_stats_enter(w, dev, now, false);
}

/* Leave: count this writer in wdone (release: pairs with the reader's
 * acquire load of wdone, which it compares with wbegin). */
static inline void tw_stats_end(struct gm_abi_dev *d)
{
    TW_ST_REL(&d->wdone, TW_LD(&d->wdone) + 1);
}

/* f = min(f, v). */
static inline void tw_lower_to(uint64_t *f, uint64_t v)
{
    if (v < TW_LD(f))
        TW_ST(f, v);
}

/* used = the figure given (concurrent writers may store theirs out of
 * order; the next event or gm_tel_sync corrects it); peak never falls
 * below any used stored, since each writer raises it before leaving.
 * True when the peak rose. */
static inline bool tw_set_used_peak(struct gm_abi_dev *d, uint64_t used,
                                    uint64_t peak, uint64_t now)
{
    tw_put(&d->used, used);
    /* The open history bucket's extremes (a compare each; the store only
     * when beyond). */
    if (GM_TW_HISTORY) {
        tw_raise_to(&d->hist_max, used);
        tw_lower_to(&d->hist_min, used);
    }
    if (peak < used)
        peak = used;
    if (!tw_raise_to(&d->peak, peak))
        return false;
    tw_put(&d->peak_ns, now);
    tw_put(&d->frag_peak_ppm, tw_get(&d->frag_ppm));
    return true;
}

/* ---- writer: ring ------------------------------------------------------- */

/* One record from thread tid (the lock holder's id, as tw_lock_as took
 * it). */
static inline __attribute__((always_inline)) void
tw_ring_push_as(const struct gm_tw *w, uint32_t tid, unsigned kind,
                unsigned api, uint32_t dev, uint64_t now, uint64_t lat,
                uint64_t size, uint64_t addr, uint64_t used, uint64_t extra)
{
    struct gm_abi_header *h = w->h;
    uint64_t i = TW_LD(&h->ring_head);
    TW_ST(&h->ring_head, i + 1);
    struct gm_abi_record *r = &w->ring[i & w->ring_mask];
    uint64_t want = i + 1, s = TW_LD(&r->seq);
    /* A busy mark is the top bit, and want stays below 2^63 (so many
     * events cannot happen): one compare finds a busy slot and a slot
     * already at or past this index alike. */
    if (__builtin_expect(s >= want, 0)) {
        /* Not a slot this process's writer left (another program's
         * bytes; a dead writer's slot is repaired when its lock is taken
         * over). Never wait, drop. */
        tw_inc(&h->ring_dropped);
        return;
    }
    TW_ST(&r->seq, want | GM_ABI_SEQ_BUSY);
    TW_FENCE_REL(); /* the busy mark before the fields, for readers */
    TW_ST(&r->ts_ns, now);
    TW_ST(&r->kind, (uint16_t)kind);
    TW_ST(&r->api, (uint16_t)api);
    TW_ST(&r->dev, dev);
    TW_ST(&r->tid, tid);
    TW_ST(&r->lat_ns, lat > UINT32_MAX ? UINT32_MAX : (uint32_t)lat);
    TW_ST(&r->size, size);
    TW_ST(&r->addr, addr);
    TW_ST(&r->used_after, used);
    TW_ST(&r->extra, extra);
    TW_ST_REL(&r->seq, want); /* publish: pairs with gm_tel_read_record */
}

static inline __attribute__((always_inline)) void
tw_ring_push(const struct gm_tw *w, unsigned kind, unsigned api,
          uint32_t dev, uint64_t now, uint64_t lat, uint64_t size,
          uint64_t addr, uint64_t used, uint64_t extra)
{
    tw_ring_push_as(w, gm_thread_id(), kind, api, dev, now, lat, size, addr,
                    used, extra);
}

static inline void tw_put_frag(struct gm_abi_dev *d, uint32_t frag_ppm)
{
    if (frag_ppm == GM_TEL_FRAG_KEEP)
        return;
    uint64_t v = frag_ppm > 1000000u ? 1000000u : frag_ppm;
    tw_put(&d->frag_ppm, v);
    if (tw_get(&d->used) == tw_get(&d->peak))
        tw_put(&d->frag_peak_ppm, v);
}

static inline __attribute__((always_inline)) uint32_t
gm_tel_alloc_ev(struct gm_tel *t, const struct gm_tel_ev *e)
{
    uint32_t me = gm_thread_id();
    const struct gm_tw *w = tw_lock_as(t, (int)me);
    if (w == NULL)
        return 0; /* the interval is not logged: its free removes nothing */
    uint32_t ppm = e->frag_ppm, mark = 0;
    if (GM_TW_FIGURES && e->fq != NULL)
        mark = gm_fragq_add(e->fq, e->addr, e->size, &ppm);
    struct gm_abi_dev *d =
        GM_TW_FIGURES ? tw_stats_enter(w, e->dev, e->ts_ns, e->known) : NULL;
    if (d != NULL) {
        tw_inc(&d->allocs);
        tw_add(&d->total_bytes, e->size);
        tw_inc(&d->live_allocs);
        tw_add_bounded(&d->live_bytes, e->size);
        tw_inc(&d->size_hist[tw_log2_bucket(e->size, GM_ABI_SIZE_BUCKETS)]);
        tw_inc(&d->lat_hist[tw_log2_bucket(e->lat_ns, GM_ABI_LAT_BUCKETS)]);
        tw_add_bounded(&d->lat_sum_ns, e->lat_ns);
        /* A new peak is a sync point: its fragmentation is that of the
         * heap at the peak itself. */
        if (tw_set_used_peak(d, e->used, e->peak, e->ts_ns) &&
            e->fq != NULL)
            ppm = gm_fragq_apply(e->fq, true);
        tw_put_frag(d, ppm);
        tw_stats_end(d);
    }
    if (GM_TW_RECORD)
        tw_ring_push_as(w, me, GM_EV_ALLOC, e->api, e->dev, e->ts_ns,
                        e->lat_ns, e->size, e->addr, e->used, 0);
    tw_unlock_as(t, (int)me);
    return mark;
}

static inline __attribute__((always_inline)) void
gm_tel_free_ev(struct gm_tel *t, const struct gm_tel_ev *e)
{
    uint32_t me = gm_thread_id();
    const struct gm_tw *w = tw_lock_as(t, (int)me);
    /* Mark 0: the interval was never logged, there is nothing to remove. */
    bool logged = GM_TW_FIGURES && e->fq != NULL && e->mark != 0;
    if (w == NULL) {
        if (logged)
            gm_fragq_lost_remove(e->fq, e->addr);
        return;
    }
    uint32_t ppm = e->frag_ppm;
    if (logged)
        gm_fragq_remove(e->fq, e->mark, e->addr, &ppm);
    struct gm_abi_dev *d =
        GM_TW_FIGURES ? tw_stats_enter(w, e->dev, e->ts_ns, e->known) : NULL;
    if (d != NULL) {
        /* A context's end is not a free of the program's: its blocks
         * leave the live figures together, in the GM_EV_CTX_FREED event
         * (e->ended is a constant false on the free path: folded away). */
        if (!e->ended) {
            tw_inc(&d->frees);
            tw_dec(&d->live_allocs);
            tw_sub(&d->live_bytes, e->size);
        }
        tw_set_used_peak(d, e->used, 0, e->ts_ns);
        tw_put_frag(d, ppm);
        tw_stats_end(d);
    }
    /* A context's end writes one GM_EV_CTX_FREED for all its blocks. */
    if (GM_TW_RECORD && !e->ended)
        tw_ring_push_as(w, me, GM_EV_FREE, e->api, e->dev, e->ts_ns,
                        e->lat_ns, e->size, e->addr, e->used, 0);
    tw_unlock_as(t, (int)me);
}

#endif
