/*
 * shim/group/admission.c — the priority rule and the budget operations of
 * a joined member: reserve (with a refusal-triggered reclaim of dead
 * members), release with cross-process wake-ups, the bounded wait, the
 * usage query, and the lock-free peek the device view reads.
 *
 * Invariants: nothing on the reserve/release/wait path allocates or
 * prints; every subtraction is clamped and every addition saturates; no
 * call waits on the group's lock longer than LOCK_WAIT_NS (a member that
 * could not get it is broken and admits everything from then on); the
 * peek takes no lock and answers only from a consistent copy.
 */
#include "shim/group/group_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
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

void gm_grpi_wake_waiters(struct gm_group *g)
{
    struct gm_group_hdr *h = &g->seg->hdr;
    /* seq_cst pair with gm_group_wait: it counts itself in `waiters`
     * before loading release_seq; we bump release_seq before loading
     * `waiters`. One of the two sees the other. */
    __atomic_fetch_add(&h->release_seq, 1u, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&h->waiters, __ATOMIC_SEQ_CST) != 0)
        syscall(SYS_futex, &h->release_seq, FUTEX_WAKE, INT_MAX, NULL,
                NULL, 0);
}

/* ---- the priority rule ------------------------------------------------- */

/* Weight of slot i when it is LIVE, else 0 (and *n counts it). */
static uint64_t live_weight_of(const struct gm_group_seg *s, int i,
                               unsigned *n)
{
    if (LD(&s->slot[i].state) != GM_GROUP_SLOT_LIVE)
        return 0;
    (*n)++;
    return clamp_weight(LD(&s->slot[i].weight));
}

uint64_t gm_grpi_live_weight(const struct gm_group_seg *s, unsigned *count)
{
    uint64_t w = 0;
    unsigned n = 0;
    for (uint64_t m = LD(&s->hdr.live_mask); m != 0; m &= m - 1)
        w += live_weight_of(s, __builtin_ctzll(m), &n);
    if (count != NULL)
        *count = n;
    return w;
}

uint64_t gm_grpi_live_weight_all(const struct gm_group_seg *s,
                                 unsigned *count)
{
    uint64_t w = 0;
    unsigned n = 0;
    for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++)
        w += live_weight_of(s, i, &n);
    if (count != NULL)
        *count = n;
    return w;
}

uint64_t gm_grpi_share_of(uint64_t limit, uint64_t w, uint64_t total)
{
    if (total == 0 || w >= total)
        return limit;
    return (uint64_t)((u128)limit * w / total);
}

/* P of the rule: unused guaranteed shares of the other live members with
 * a higher weight than slot `me`. */
static uint64_t reserved_above(const struct gm_group_seg *s, int gdev,
                               int me, uint64_t limit)
{
    uint64_t total = gm_grpi_live_weight(s, NULL);
    uint32_t mine = clamp_weight(LD(&s->slot[me].weight));
    uint64_t p = 0;
    for (uint64_t live = LD(&s->hdr.live_mask); live != 0; live &= live - 1) {
        int j = __builtin_ctzll(live);
        const struct gm_group_slot *m = &s->slot[j];
        if (j == me || LD(&m->state) != GM_GROUP_SLOT_LIVE)
            continue;
        uint32_t w = clamp_weight(LD(&m->weight));
        if (w <= mine)
            continue;
        p = sat_add(p, sat_sub(gm_grpi_share_of(limit, w, total),
                               LD(&m->charged[gdev])));
    }
    return p;
}

/* The largest request the rule admits now for slot `me` (under the lock,
 * or inside a seqlock copy: gm_group_peek). */
static uint64_t available_locked(const struct gm_group_seg *s, int gdev,
                                 int me)
{
    uint64_t limit = LD(&s->dev[gdev].limit);
    if (limit == 0)
        return UINT64_MAX;
    uint64_t room = sat_sub(limit, LD(&s->dev[gdev].used));
    return sat_sub(room, reserved_above(s, gdev, me, limit));
}

static bool admit_locked(struct gm_group *g, int gdev, uint64_t size,
                         uint64_t *used_out)
{
    struct gm_group_seg *s = g->seg;
    struct gm_group_dev *d = &s->dev[gdev];
    uint64_t used = LD(&d->used);
    if (size > available_locked(s, gdev, g->slot)) {
        if (used_out != NULL)
            *used_out = used;
        return false;
    }
    uint64_t *c = &s->slot[g->slot].charged[gdev];
    ST(c, sat_add(LD(c), size));
    used = sat_add(used, size);
    ST(&d->used, used);
    /* No peak here: an admitted request is not yet held (it may be
     * refused by the driver); gm_group_note_peak raises it at commit. */
    if (used_out != NULL)
        *used_out = used;
    return true;
}

/* Finds dead members without the lock, then frees them under it, each
 * after a second test there: a slot found unlocked may have been left and
 * claimed again by the same process (same pid and start time, as after
 * an exec) in between. When none is dead, corrects a device's `used`
 * that is not its slots' sum (a damaged segment: a `used` written low
 * would let the group past its limit). Returns the bytes reclaimed;
 * *freed the slots. */
static uint64_t reclaim_scan(struct gm_group *g, unsigned *freed)
{
    struct gm_group_seg *s = g->seg;
    int pids[GM_GROUP_MAX_MEMBERS];
    uint64_t starts[GM_GROUP_MAX_MEMBERS];
    uint64_t mask = 0, bytes = 0;
    *freed = 0;
    int probe = gm_grpi_probe_open(g);
    for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++) {
        if (i == g->slot || LD(&s->slot[i].state) != GM_GROUP_SLOT_LIVE)
            continue;
        pids[i] = LD(&s->slot[i].pid);
        starts[i] = LD(&s->slot[i].start_ticks);
        if (gm_grpi_member_gone(g, probe, pids[i], starts[i], i))
            mask |= 1ull << i;
    }
    /* Nobody dead: the lock only when some device's `used` looks apart
     * from its slots' charges (checked again, exactly, under it). */
    bool off = mask == 0 && gm_grpi_used_off(s);
    if ((mask != 0 || off) && gm_grpi_grp_lock(g)) {
        if (off)
            (void)gm_grpi_fix_used_locked(s);
        for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++) {
            struct gm_group_slot *m = &s->slot[i];
            if (!(mask & (1ull << i)) || LD(&m->state) != GM_GROUP_SLOT_LIVE ||
                LD(&m->pid) != pids[i] || LD(&m->start_ticks) != starts[i] ||
                !gm_grpi_member_gone(g, probe, pids[i], starts[i], i))
                continue;
            bytes = sat_add(bytes, gm_grpi_reclaim_slot_locked(g, i));
            (*freed)++;
        }
        gm_grpi_seg_unlock(s);
    }
    if (probe >= 0)
        close(probe);
    if (*freed > 0)
        gm_grpi_wake_waiters(g);
    return bytes;
}

uint64_t gm_group_reclaim(struct gm_group *g)
{
    unsigned freed;
    bool held = use_begin(g);
    uint64_t bytes = joined(g) && !is_broken(g) ? reclaim_scan(g, &freed) : 0;
    use_end(g, held);
    return bytes;
}

/* At most one refusal-triggered scan per SCAN_GAP_NS per process. */
static bool scan_due(struct gm_group *g)
{
    uint64_t now = gm_clock_monotonic_ns();
    uint64_t last = __atomic_load_n(&g->last_scan_ns, __ATOMIC_RELAXED);
    if (last != 0 && now - last < SCAN_GAP_NS)
        return false;
    return __atomic_compare_exchange_n(&g->last_scan_ns, &last, now, false,
                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* The calls below, on the segment's device index sdev, inside the gate
 * (group_int.h). */

static bool reserve_in(struct gm_group *g, int sdev, uint64_t size,
                       uint64_t *group_used_out)
{
    if (!joined(g) || is_broken(g))
        return true;
    if (!dev_ok(g, sdev))
        return false;
    if (!gm_grpi_grp_lock(g))
        return true;
    bool ok = admit_locked(g, sdev, size, group_used_out);
    gm_grpi_seg_unlock(g->seg);
    if (ok || !scan_due(g))
        return ok;
    unsigned freed;
    (void)reclaim_scan(g, &freed);
    if (freed == 0)
        return false;
    if (!gm_grpi_grp_lock(g))
        return true;
    ok = admit_locked(g, sdev, size, group_used_out);
    gm_grpi_seg_unlock(g->seg);
    return ok;
}

static void release_in(struct gm_group *g, int sdev, uint64_t size)
{
    if (!joined(g) || is_broken(g) || !dev_ok(g, sdev) || size == 0 ||
        !gm_grpi_grp_lock(g))
        return;
    struct gm_group_seg *s = g->seg;
    uint64_t *c = &s->slot[g->slot].charged[sdev];
    uint64_t give = LD(c) < size ? LD(c) : size;
    ST(c, LD(c) - give);
    ST(&s->dev[sdev].used, sat_sub(LD(&s->dev[sdev].used), give));
    gm_grpi_seg_unlock(s);
    if (give > 0)
        gm_grpi_wake_waiters(g);
}

void gm_grpi_charge_in(struct gm_group *g, int sdev, uint64_t add,
                       uint64_t sub)
{
    if (!joined(g) || is_broken(g) || !dev_ok(g, sdev) ||
        (add == 0 && sub == 0) || !gm_grpi_grp_lock(g))
        return;
    struct gm_group_seg *s = g->seg;
    uint64_t *c = &s->slot[g->slot].charged[sdev];
    uint64_t mine = sat_add(LD(c), add);
    uint64_t give = mine < sub ? mine : sub;  /* never below 0 */
    ST(c, mine - give);
    struct gm_group_dev *d = &s->dev[sdev];
    ST(&d->used, sat_sub(sat_add(LD(&d->used), add), give));
    gm_grpi_seg_unlock(s);
    if (give > add)
        gm_grpi_wake_waiters(g);
}

bool gm_group_reserve(struct gm_group *g, int gdev, uint64_t size,
                      uint64_t *group_used_out)
{
    bool held = use_begin(g);
    bool ok = g == NULL || reserve_in(g, seg_dev(g, gdev), size,
                                      group_used_out);
    use_end(g, held);
    return ok;
}

void gm_group_release(struct gm_group *g, int gdev, uint64_t size)
{
    bool held = use_begin(g);
    if (g != NULL)
        release_in(g, seg_dev(g, gdev), size);
    use_end(g, held);
}

void gm_group_charge(struct gm_group *g, int gdev, uint64_t add,
                     uint64_t sub)
{
    bool held = use_begin(g);
    if (g != NULL)
        gm_grpi_charge_in(g, seg_dev(g, gdev), add, sub);
    use_end(g, held);
}

void gm_group_note_peak(struct gm_group *g, int gdev)
{
    bool held = use_begin(g);
    int sdev = g != NULL ? seg_dev(g, gdev) : -1;
    if (joined(g) && !is_broken(g) && dev_ok(g, sdev)) {
        struct gm_group_dev *d = &g->seg->dev[sdev];
        gm_grpi_raise_peak(&d->peak, LD(&d->used));
    }
    use_end(g, held);
}

/* A waiter's place in a segment: the counts releasers test before they
 * wake anyone. The group count goes up before and down after our slot's,
 * so a death in between leaves it high (an extra wake-up), never low (a
 * missed one). seq_cst: pairs with gm_grpi_wake_waiters (see there). */
struct waitreg {
    struct gm_group_seg *seg;  /* never unmapped by a move (rehome.c) */
    uint32_t *mine;
};

static void wait_enter(struct gm_group *g, struct waitreg *w)
{
    w->seg = g->seg;
    w->mine = &g->seg->slot[g->slot].waiting;
    __atomic_fetch_add(&w->seg->hdr.waiters, 1u, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(w->mine, 1u, __ATOMIC_RELAXED);
}

/* *c - 1, never below 0: a slot left by a move (rehome.c) may have been
 * freed, even claimed again, while its waiter slept. */
static void dec_clamped(uint32_t *c, int order)
{
    uint32_t v = __atomic_load_n(c, __ATOMIC_RELAXED);
    while (v > 0 && !__atomic_compare_exchange_n(c, &v, v - 1, false, order,
                                                 __ATOMIC_RELAXED))
        ;
}

static void wait_leave(struct waitreg *w)
{
    dec_clamped(w->mine, __ATOMIC_RELAXED);
    dec_clamped(&w->seg->hdr.waiters, __ATOMIC_SEQ_CST);
}

/* The gate is held between tries, not while asleep: a move goes on while a
 * member waits (the old mapping stays valid for the futex word), and the
 * next try counts the waiter in the segment it moved to. */
bool gm_group_wait(struct gm_group *g, int gdev, uint64_t size,
                   uint64_t deadline_mono_ns, uint64_t *group_used_out)
{
    bool held = use_begin(g);
    if (!joined(g) || is_broken(g)) {
        use_end(g, held);
        return true;
    }
    if (!dev_ok(g, seg_dev(g, gdev))) {
        use_end(g, held);
        return false;
    }
    struct waitreg w;
    wait_enter(g, &w);
    bool ok = false;
    for (;;) {
        if (g->seg != w.seg && joined(g)) {  /* moved while we slept */
            wait_leave(&w);
            wait_enter(g, &w);
        }
        uint32_t *word = &w.seg->hdr.release_seq;
        uint32_t seq = __atomic_load_n(word, __ATOMIC_SEQ_CST);
        if (reserve_in(g, seg_dev(g, gdev), size, group_used_out)) {
            ok = true;
            break;
        }
        uint64_t now = gm_clock_monotonic_ns();
        if (now >= deadline_mono_ns)
            break;
        uint64_t left = deadline_mono_ns - now;
        if (left > WAIT_SLICE_NS)
            left = WAIT_SLICE_NS;
        struct timespec ts = { (time_t)(left / NSEC), (long)(left % NSEC) };
        use_end(g, held);
        /* Returns at once when release_seq moved since the load above. */
        syscall(SYS_futex, word, FUTEX_WAIT, seq, &ts, NULL, 0);
        held = use_begin(g);
    }
    wait_leave(&w);
    use_end(g, held);
    return ok;
}

static int query_in(struct gm_group *g, int sdev, struct gm_group_usage *out)
{
    if (!joined(g) || is_broken(g) || !dev_ok(g, sdev) || !gm_grpi_grp_lock(g))
        return -1;
    struct gm_group_seg *s = g->seg;
    uint64_t total = gm_grpi_live_weight(s, &out->members);
    out->limit = LD(&s->dev[sdev].limit);
    out->used = LD(&s->dev[sdev].used);
    out->mine = LD(&s->slot[g->slot].charged[sdev]);
    out->share = gm_grpi_share_of(out->limit, clamp_weight(g->weight), total);
    out->reserved_above = out->limit == 0
        ? 0 : reserved_above(s, sdev, g->slot, out->limit);
    out->available = available_locked(s, sdev, g->slot);
    gm_grpi_seg_unlock(s);
    return 0;
}

int gm_group_query(struct gm_group *g, int gdev, struct gm_group_usage *out)
{
    memset(out, 0, sizeof *out);
    bool held = use_begin(g);
    int rc = g != NULL ? query_in(g, seg_dev(g, gdev), out) : -1;
    use_end(g, held);
    return rc;
}

/* One lock-free copy of what the view needs on sdev: true when `gen`
 * was even and unchanged around it (*mine: this member's charge). */
static bool peek_once(const struct gm_group_seg *s, int sdev, int me,
                      struct gm_group_peek *out, uint64_t *mine)
{
    uint64_t g1 = __atomic_load_n(&s->hdr.gen, __ATOMIC_ACQUIRE);
    if (g1 & 1u)
        return false;
    out->limit = LD(&s->dev[sdev].limit);
    out->used = LD(&s->dev[sdev].used);
    out->available = available_locked(s, sdev, me);
    *mine = LD(&s->slot[me].charged[sdev]);
    /* The loads above before the second reading (seqlock reader). Every
     * load is atomic, so a ThreadSanitizer build, which knows no fences,
     * goes without it (x86 keeps loads in order anyway). */
#if !defined(__SANITIZE_THREAD__)
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
    return LD(&s->hdr.gen) == g1;
}

static int peek_in(const struct gm_group *g, int sdev,
                   struct gm_group_peek *out)
{
    if (!joined(g) || is_broken(g) || !dev_ok(g, sdev))
        return -1;
    const struct gm_group_seg *s = g->seg;
    if (LD(&s->hdr.magic) != GM_GROUP_MAGIC ||
        LD(&s->hdr.version) != GM_GROUP_VERSION ||
        __atomic_load_n(&s->hdr.initialised, __ATOMIC_ACQUIRE) != 1 ||
        !gm_grpi_own_slot(g))
        return -1;
    struct gm_group_peek v;
    uint64_t mine;
    for (int t = 0; t < PEEK_TRIES; t++) {
        if (!peek_once(s, sdev, g->slot, &v, &mine)) {
            sched_yield();
            continue;
        }
        if (v.used < mine)
            return -1;
        *out = v;
        return 0;
    }
    return -2; /* busy: the caller asks under the lock (gm_group_query) */
}

int gm_group_peek(const struct gm_group *g, int gdev,
                  struct gm_group_peek *out)
{
    bool held = use_begin(g);
    int rc = g != NULL ? peek_in(g, seg_dev(g, gdev), out) : -1;
    use_end(g, held);
    return rc;
}

bool gm_group_broken(const struct gm_group *g)
{
    return g != NULL && is_broken(g);
}
