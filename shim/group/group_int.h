/*
 * shim/group/group_int.h — what the four parts of the group library
 * (segment.c, members.c, admission.c, rehome.c) share and nothing outside
 * them includes: the relaxed shared-field accessors, the timing constants, the
 * clamped arithmetic, and the functions one part calls in another.
 *
 * Invariants (the whole library's, see docs/groups.md): every shared
 * field that changes after initialisation is written under the segment's
 * lock (its own word: segment.c), with relaxed atomic stores (readers
 * in other threads or processes load them atomically, and `gen` tells a
 * reader whether its copy straddled an update). Every subtraction is clamped, every addition
 * saturates, so a hostile or damaged segment can give wrong numbers but
 * never wrap or fault the arithmetic. Every wait on the lock ends
 * by LOCK_WAIT_NS (gm_grpi_seg_lock); a member whose wait ends unserved
 * marks its struct broken and fails open.
 */
#ifndef GM_GROUP_INT_H
#define GM_GROUP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shim/group/group.h"

__extension__ typedef unsigned __int128 u128;

#define LD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

#define SEG_SIZE sizeof(struct gm_group_seg)
#define NSEC 1000000000ull
#define INIT_WAIT_NS NSEC          /* O_EXCL loser waits for the creator */
#define LOCK_WAIT_NS (2 * NSEC)    /* the most any wait on the lock lasts */
#define SCAN_GAP_NS 50000000ull    /* refusal-triggered reclaim, per process */
#define WAIT_SLICE_NS NSEC         /* gm_group_wait re-checks at least this */
#define SNAP_TRIES 50
#define PEEK_TRIES 64           /* gm_group_peek's copies before it gives up */

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static inline uint64_t sat_sub(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

static inline uint32_t clamp_weight(uint32_t w)
{
    if (w < GM_GROUP_WEIGHT_MIN)
        return GM_GROUP_WEIGHT_MIN;
    return w > GM_GROUP_WEIGHT_MAX ? GM_GROUP_WEIGHT_MAX : w;
}

static inline bool is_broken(const struct gm_group *g)
{
    return __atomic_load_n(&g->broken, __ATOMIC_ACQUIRE);
}

static inline void set_broken(struct gm_group *g)
{
    __atomic_store_n(&g->broken, true, __ATOMIC_RELEASE);
}

static inline bool joined(const struct gm_group *g)
{
    return g != NULL && g->seg != NULL && g->slot >= 0;
}

/* Waits a little before a call tries the gate again (a move is on). */
void gm_grpi_gate_pause(unsigned tries)
    __attribute__((visibility("hidden")));

/* The calls' side of the gate (see struct gm_group): a call is counted
 * inside for its whole length, so that a move (rehome.c) never changes
 * the segment, slot or device map under it; while a move is pending or
 * on, calls wait at the gate. A move waits for the calls inside for a
 * bounded time only (then it gives up until the next pass), and once
 * they left it reads, carries and swaps under the two files' locks,
 * each wait on them bounded by LOCK_WAIT_NS; so a call waits behind a
 * move at most that long, also a signal handler's call inside a call of
 * its own thread, and a stream of calls cannot starve a move. Two atomic
 * operations a call. The counters are the process's own state, also
 * behind a const g. */
static inline bool use_begin(const struct gm_group *g)
{
    if (g == NULL || !g->use_on)
        return false;
    unsigned *n = (unsigned *)&g->in_calls;
    for (unsigned tries = 0;; tries++) {
        /* seq_cst, both: against the mover's store of `moving` and then
         * load of in_calls (rehome.c, gate_close), so that one of the two
         * sees the other. Reading 0 from the mover's release store of
         * `moving` makes the move's stores visible here. */
        __atomic_fetch_add(n, 1u, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&g->moving, __ATOMIC_SEQ_CST) == 0)
            return true;
        __atomic_fetch_sub(n, 1u, __ATOMIC_RELEASE);
        gm_grpi_gate_pause(tries);
    }
}

static inline void use_end(const struct gm_group *g, bool held)
{
    /* Release: pairs with the mover's acquire load of in_calls: what the
     * call did comes before the move. */
    if (held)
        __atomic_fetch_sub((unsigned *)&g->in_calls, 1u, __ATOMIC_RELEASE);
}

/* The segment's index of the caller's device gdev, -1 when none. */
static inline int seg_dev(const struct gm_group *g, int gdev)
{
    /* Acquire: pairs with the release store of a registration
     * (api_index), after which the segment's device is present. */
    return gdev >= 0 && gdev < GM_GROUP_MAX_DEVICES
        ? __atomic_load_n(&g->devmap[gdev], __ATOMIC_ACQUIRE) : -1;
}

static inline bool dev_ok(const struct gm_group *g, int gdev)
{
    return gdev >= 0 && gdev < GM_GROUP_MAX_DEVICES &&
           __atomic_load_n(&g->seg->dev[gdev].present, __ATOMIC_ACQUIRE) == 1;
}


/* peak = max(peak, v) with a compare-and-swap, with or without the lock:
 * the only way the shared peak is raised (commit-time notes outside the
 * lock and the repair under it never undo each other). */
static inline void gm_grpi_raise_peak(uint64_t *peak, uint64_t v)
{
    uint64_t p = LD(peak);
    while (v > p && !__atomic_compare_exchange_n(peak, &p, v, true,
                                                 __ATOMIC_RELAXED,
                                                 __ATOMIC_RELAXED))
        ;
}

/* Slot i's state, with its bit in hdr.live_mask (the lock held). */
static inline void gm_grpi_set_state(struct gm_group_seg *s, int i,
                                     uint32_t state)
{
    uint64_t m = LD(&s->hdr.live_mask), bit = 1ull << i;
    ST(&s->hdr.live_mask, state == GM_GROUP_SLOT_LIVE ? m | bit : m & ~bit);
    ST(&s->slot[i].state, state);
}

/* ---- across the parts ---------------------------------------------------- */

bool gm_grpi_name_ok(const char *s, size_t max)
    __attribute__((visibility("hidden")));
uint64_t gm_grpi_pidns_inode(void)
    __attribute__((visibility("hidden")));
bool gm_grpi_member_gone(const struct gm_group *g, int fd, int pid,
                         uint64_t start, int slot)
    __attribute__((visibility("hidden")));
/* The same for a reader (a tool) of a group that may have been created in
 * another pid namespace (group_ns: the header's pidns): there only the
 * slot's lock is tested (held or unknown: alive). */
bool gm_grpi_member_gone_seen(int fd, uint64_t group_ns, int pid,
                              uint64_t start, int slot)
    __attribute__((visibility("hidden")));
int gm_grpi_live_lock_held(int fd, int slot)
    __attribute__((visibility("hidden")));
int gm_grpi_probe_open(const struct gm_group *g)
    __attribute__((visibility("hidden")));
bool gm_grpi_fd_ours(const struct gm_group *g)
    __attribute__((visibility("hidden")));
void gm_grpi_adopt(struct gm_group *g, struct gm_group_seg *mem, int fd)
    __attribute__((visibility("hidden")));
/* Takes the segment's lock for the member of `slot` (-1: an outsider,
 * which holds the outsider byte through fd meanwhile): 0, 1 taken over
 * from a gone holder (repaired), -1 not free within LOCK_WAIT_NS. fd is
 * the caller's descriptor of the file; g, when not NULL, its owner. */
int gm_grpi_seg_lock(struct gm_group_seg *s, int fd, int slot,
                     const struct gm_group *g)
    __attribute__((visibility("hidden")));
void gm_grpi_seg_unlock(struct gm_group_seg *s)
    __attribute__((visibility("hidden")));
/* The sum of the LIVE slots' charges on device d (what dev[d].used is
 * whenever the lock is free). */
uint64_t gm_grpi_charged_sum(const struct gm_group_seg *s, int d)
    __attribute__((visibility("hidden")));
/* Whether some device's `used` is not that sum: exact with the lock held,
 * a hint without it (a writer between its stores). */
bool gm_grpi_used_off(const struct gm_group_seg *s)
    __attribute__((visibility("hidden")));
/* The lock held: when some `used` is off (a foreign or damaged write),
 * recomputes the live mask and every `used` from the slots, counted in
 * hdr.repairs; whether it did. */
bool gm_grpi_fix_used_locked(struct gm_group_seg *s)
    __attribute__((visibility("hidden")));
/* Whether this thread holds s's lock (gm_grpi_seg_lock then answers -1
 * at once instead of waiting on itself). */
bool gm_grpi_seg_held(const struct gm_group_seg *s)
    __attribute__((visibility("hidden")));
pid_t gm_grpi_gettid(void)
    __attribute__((visibility("hidden")));
uint64_t gm_grpi_reclaim_slot_locked(struct gm_group *g, int i)
    __attribute__((visibility("hidden")));
void gm_grpi_wake_waiters(struct gm_group *g)
    __attribute__((visibility("hidden")));
bool gm_grpi_grp_lock(struct gm_group *g)
    __attribute__((visibility("hidden")));
/* Whether g's slot is still its own (LIVE, its pid and start time). */
bool gm_grpi_own_slot(const struct gm_group *g)
    __attribute__((visibility("hidden")));
uint64_t gm_grpi_live_weight(const struct gm_group_seg *s, unsigned *count)
    __attribute__((visibility("hidden")));
/* The same from every slot's state, not the mask: for what must not trust
 * the mask (starting the group over, the tools' view). */
uint64_t gm_grpi_live_weight_all(const struct gm_group_seg *s,
                                 unsigned *count)
    __attribute__((visibility("hidden")));
uint64_t gm_grpi_share_of(uint64_t limit, uint64_t w, uint64_t total)
    __attribute__((visibility("hidden")));
void gm_grpi_unlink_if_same(const char *path, int fd)
    __attribute__((visibility("hidden")));
int gm_grpi_create_seg(struct gm_group *g, char *msg, size_t cap)
    __attribute__((visibility("hidden")));
int gm_grpi_open_existing(const char *path, const char *name, bool ours,
                         struct gm_group_seg **mem, int *fdp, char *msg,
                         size_t cap)
    __attribute__((visibility("hidden")));
void gm_grpi_unmap(struct gm_group *g)
    __attribute__((visibility("hidden")));
int gm_grpi_build_path(char *buf, size_t cap, const char *dir,
                      const char *prefix, const char *name)
    __attribute__((visibility("hidden")));
/* Joins the group at g->path with g's identity fields already set (pid,
 * start time, weight, limit, keep, callbacks): attach, claim a slot,
 * start over when alone. 0, or -1 with msg (nothing held). */
int gm_grpi_join_path(struct gm_group *g, char *msg, size_t cap)
    __attribute__((visibility("hidden")));
/* Registers a device in g's segment; its segment index, or -1 (msg). */
int gm_grpi_device_in(struct gm_group *g, const unsigned char uuid[16],
                      uint64_t physical, char *msg, size_t cap)
    __attribute__((visibility("hidden")));
/* Gives this member's slot and charges back and unmaps the segment (the
 * reaper stopped or the caller is it); keep_map: left mapped, for good,
 * its descriptor closed. */
void gm_grpi_leave_seg(struct gm_group *g, bool keep_map)
    __attribute__((visibility("hidden")));
/* Segment-index versions of gm_group_charge / gm_group_note_peak, for a
 * caller that holds `use` or owns g alone. */
void gm_grpi_charge_in(struct gm_group *g, int sdev, uint64_t add,
                       uint64_t sub)
    __attribute__((visibility("hidden")));
/* The reaper's pass: when g's file is no longer the one at its path
 * (removed, or replaced by a new group's), moves this member there. */
void gm_grpi_rehome(struct gm_group *g)
    __attribute__((visibility("hidden")));

#endif
