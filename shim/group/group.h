/*
 * shim/group/group.h — shared budgets: several processes of one user under one
 * per-device limit (GPUMEM_GROUP, GPUMEM_GROUP_LIMIT, GPUMEM_PRIORITY),
 * with priority shares, dead-member reclaim and cross-process waits.
 * Behaviour, the priority rule and a worked example: docs/groups.md.
 *
 * The group is one file, <dir>/<prefix>.group@<NAME> (dir /dev/shm), mode
 * 0600, mapped MAP_SHARED by every member. The '@' is in no prefix, group
 * name or pid, so the name never equals a process's telemetry segment
 * <prefix>.<pid> nor another group's file. Its layout is below: it is the
 * contract between members built from different copies of gpumem and the
 * tools, so it is versioned and checked with _Static_assert.
 *
 * Invariants (segment):
 *  - Every field that changes after initialisation is written only while
 *    holding `lock`, a futex word of the segment's own (below; no C
 *    library's mutex, whose robust-list pointers in shared memory a
 *    foreign write would make its holder follow). It names its holder: a
 *    member's slot, whose liveness lock proves the holder alive, or an
 *    outsider (a process joining, gc), which holds the byte
 *    GM_GROUP_OUTSIDER_LOCK_OFF for as long as it takes and holds the
 *    lock. A waiter that finds the holder gone takes the lock over,
 *    recomputes every device's `used` from the member slots and reclaims
 *    dead members before going on; a `used` found apart from the slots
 *    with the lock free (a damaged write) is recomputed by the next
 *    reaper pass or join.
 *  - dev[d].used == sum over LIVE slots of charged[d] whenever the lock is
 *    free, and dev[d].used <= dev[d].limit for a device with a limit but
 *    for what gm_group_charge adds without the admission rule (memory the
 *    driver already holds: a pool's growth, a member's primary context).
 *  - hdr.live_mask has bit i set exactly when slot i is LIVE, whenever the
 *    lock is free (both change together under it; a take-over after a
 *    death recomputes it from the states). The priority rule visits the
 *    slots it names only; scans for dead members read every slot.
 *  - `gen` is a seqlock for readers that take no lock: odd while a locker
 *    may be changing fields, even otherwise.
 *  - `initialised` is stored last (release) by the creator; nothing else is
 *    trusted before it reads 1 (acquire).
 *  - A LIVE slot's member holds an open-file-description lock (F_OFD_SETLK,
 *    write) on the byte GM_GROUP_LIVE_LOCK_OFF(slot) of the file, taken
 *    through its own O_CLOEXEC descriptor before the slot is stored LIVE
 *    and kept by that descriptor and the mapping. Both go at exec and at
 *    death, so a LIVE slot whose byte nobody locks is a gone member.
 *  - Every wait on `lock` is bounded (LOCK_WAIT_NS); a lock that does not
 *    respond marks the group broken for the waiter, which fails open.
 *
 * Invariants (API): gm_group_reserve/release/wait never call malloc and
 * never print; messages go into caller buffers, bare text without the
 * "gpumem: " prefix and without newline. A struct gm_group may be used by
 * any number of threads of its process between join and leave.
 */
#ifndef GM_GROUP_H
#define GM_GROUP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

/* ---- segment layout ------------------------------------------------------ */

/* "GPUMEMGR" read as a little-endian 64-bit integer. */
#define GM_GROUP_MAGIC 0x52474d454d555047ull
#define GM_GROUP_VERSION 3u         /* 3: own lock word; 2: liveness locks */
#define GM_GROUP_MAX_DEVICES 16
#define GM_GROUP_MAX_MEMBERS 64
#define GM_GROUP_WEIGHT_ONE 1000u      /* weights are stored in thousandths */
#define GM_GROUP_WEIGHT_MIN 1u         /* 0.001 */
#define GM_GROUP_WEIGHT_MAX 1000000u   /* 1000 */

/* The byte of the file a live member of slot i keeps locked (F_OFD_SETLK):
 * the first byte of its slot. */
#define GM_GROUP_LIVE_LOCK_OFF(i)                                        \
    (offsetof(struct gm_group_seg, slot) +                                \
     (size_t)(i) * sizeof(struct gm_group_slot))

/* The lock word: bits 0-6 its holder (0: free; 1 + slot: that slot's
 * member; GM_GROUP_LOCK_OUTSIDER: a process without a slot), bit 7 set
 * while threads may sleep on it, bits 8-31 the number of times it was
 * taken (mod 2^24), so that a waiter that found a holder gone never takes
 * the lock from a later holder with the same name. */
#define GM_GROUP_LOCK_HOLDER 0x7fu
#define GM_GROUP_LOCK_OUTSIDER 0x7fu
#define GM_GROUP_LOCK_WAITERS 0x80u
#define GM_GROUP_LOCK_TAKEN 0x100u     /* one taking, in the count */

/* The byte an outsider keeps locked (F_OFD_SETLK, write) from before it
 * takes the lock until after it gave it back: the first of `lock`. */
#define GM_GROUP_OUTSIDER_LOCK_OFF (offsetof(struct gm_group_seg, hdr.lock))

/* Member slot states. */
#define GM_GROUP_SLOT_FREE 0u
#define GM_GROUP_SLOT_LIVE 1u

struct gm_group_hdr {
    uint64_t magic;             /*   0  GM_GROUP_MAGIC */
    uint32_t version;           /*   8  GM_GROUP_VERSION */
    uint32_t hdr_size;          /*  12  sizeof(struct gm_group_hdr) */
    uint32_t dev_size;          /*  16  sizeof(struct gm_group_dev) */
    uint32_t slot_size;         /*  20  sizeof(struct gm_group_slot) */
    uint32_t max_devices;       /*  24  GM_GROUP_MAX_DEVICES */
    uint32_t max_members;       /*  28  GM_GROUP_MAX_MEMBERS */
    uint64_t total_size;        /*  32  bytes in the file */
    uint32_t lock_size;         /*  40  4: the lock is one 32-bit word */
    uint32_t initialised;       /*  44  atomic: 1 once all else is written */
    uint32_t closed;            /*  48  1 once unlinked (gc, last leave) */
    uint32_t pad0;              /*  52 */
    uint64_t pidns;             /*  56  creator's pid namespace inode (0: ?) */
    uint64_t created_ns;        /*  64  CLOCK_REALTIME ns */
    uint64_t gen;               /*  72  seqlock for lock-free readers */
    uint64_t repairs;           /*  80  lock recoveries after a death */
    uint64_t reclaims;          /*  88  dead members reclaimed */
    uint64_t reclaimed_bytes;   /*  96  their charges, all devices */
    uint64_t joins;             /* 104  members that joined, ever */
    char name[GM_NAME_MAX + 8]; /* 112  group name, NUL-terminated */
    uint64_t reserved0;         /* 184 */
    union {
        uint32_t word;          /*      GM_GROUP_LOCK_* (futex word) */
        char bytes[64];
    } lock;                     /* 192  the group's lock */
    uint32_t release_seq;       /* 256  futex word: bumped on every release */
    uint32_t waiters;           /* 260  threads in gm_group_wait (never
                                           below the true count) */
    uint64_t live_mask;         /* 264  bit i: slot i is LIVE (the
                                           priority rule's index of the
                                           slots; repairs recompute it) */
    uint32_t pad1[12];          /* 272 */
    uint64_t reserved1[24];     /* 320 */
};                              /* 512 */

struct gm_group_dev {
    unsigned char uuid[16];     /*   0  device UUID (cuDeviceGetUuid) */
    uint64_t present;           /*  16  1 once registered */
    uint64_t limit;             /*  24  group limit in bytes, 0 = none */
    uint64_t physical;          /*  32  physical total seen by the first */
    uint64_t used;              /*  40  bytes charged, all members */
    uint64_t peak;              /*  48  high-water mark of used */
    uint64_t reclaimed_bytes;   /*  56  bytes reclaimed from dead members */
};                              /*  64 */

struct gm_group_slot {
    uint32_t state;             /*   0  GM_GROUP_SLOT_* (stored last) */
    int32_t pid;                /*   4 */
    uint64_t start_ticks;       /*   8  /proc/<pid>/stat field 22 (0: ?) */
    uint32_t weight;            /*  16  priority weight x 1000 */
    uint32_t waiting;           /*  20  its threads in gm_group_wait */
    uint64_t joined_ns;         /*  24  CLOCK_REALTIME ns */
    uint64_t charged[GM_GROUP_MAX_DEVICES]; /* 32 bytes per group device */
    uint64_t reserved[4];       /* 160 */
};                              /* 192 */

struct gm_group_seg {
    struct gm_group_hdr hdr;
    struct gm_group_dev dev[GM_GROUP_MAX_DEVICES];
    struct gm_group_slot slot[GM_GROUP_MAX_MEMBERS];
};

_Static_assert(sizeof(struct gm_group_hdr) == 512, "group header size");
_Static_assert(offsetof(struct gm_group_hdr, name) == 112, "name");
_Static_assert(offsetof(struct gm_group_hdr, lock) == 192, "lock");
_Static_assert(offsetof(struct gm_group_hdr, release_seq) == 256, "futex");
_Static_assert(offsetof(struct gm_group_hdr, live_mask) == 264, "mask");
_Static_assert(sizeof(struct gm_group_dev) == 64, "group device size");
_Static_assert(sizeof(struct gm_group_slot) == 192, "group slot size");
_Static_assert(sizeof(struct gm_group_seg) == 512 + 16 * 64 + 64 * 192,
               "group segment size");
_Static_assert(GM_GROUP_LIVE_LOCK_OFF(1) == 1536 + 192,
               "liveness lock bytes (docs/groups.md)");

/* ---- members ------------------------------------------------------------- */

/* Called for each (dead member, device) whose charge was reclaimed, with
 * the group device index, the member's pid and the bytes freed. Runs with
 * the group's lock held, in whichever thread reclaimed: keep it short
 * (record an event), and never call back into this API. */
typedef void (*gm_group_reclaim_fn)(void *arg, int gdev, int pid,
                                    uint64_t bytes);

/* Called by the reaper, no lock held, with one line (bare text) when it
 * moved this member to the file now at the group's path because its own
 * file was removed (rehome.c), or could not. */
typedef void (*gm_group_note_fn)(void *arg, const char *text);

struct gm_group_params {
    const char *dir;          /* NULL or "": /dev/shm */
    const char *prefix;       /* NULL or "": "gpumem" */
    const char *name;         /* [A-Za-z0-9_.-]{1,64} */
    double weight;            /* priority weight (1.5 high, 1.0, 0.7 low);
                                 clamped to [0.001, 1000]; <= 0 means 1 */
    struct gm_limit limit;    /* this member's GPUMEM_GROUP_LIMIT */
    bool keep;                /* last member leaving keeps the file */
    gm_group_reclaim_fn on_reclaim; /* may be NULL */
    gm_group_note_fn on_note;       /* may be NULL */
    void *arg;
};

/* A process's membership. Fields are private to the files of shim/group/. */
struct gm_group {
    struct gm_group_seg *seg;
    size_t len;
    int fd;                   /* O_CLOEXEC, holds the slot's liveness lock */
    uint64_t file_dev, file_ino;  /* the segment fd's file (fd reuse guard) */
    int slot;                 /* our member slot, -1 when not joined */
    int pid;
    uint64_t start_ticks;
    uint32_t weight;
    bool keep;
    bool broken;              /* atomic: lost the segment; fail open */
    struct gm_limit limit;
    gm_group_reclaim_fn on_reclaim;
    gm_group_note_fn on_note;
    void *arg;
    /* The caller's device indices stay its own when the member moves to
     * another file (rehome.c): devmap[i] is the segment's index of the
     * caller's device i, -1 none (atomic bytes: set once by a
     * registration, under reg_mu, and rewritten only by a move). Every
     * call reads g's segment, slot and devmap inside the process-local
     * gate (in_calls counts the calls inside; a move raises `moving`,
     * waits, bounded, for in_calls to reach 0, and changes them alone:
     * group_int.h, use_begin). */
    int8_t devmap[GM_GROUP_MAX_DEVICES];
    unsigned in_calls;        /* atomic */
    unsigned moving;          /* atomic; written by the reaper only */
    pthread_mutex_t reg_mu;
    bool use_on;
    bool move_failed;         /* said once until a move succeeds */
    unsigned moves;           /* atomic: moves made (rehome.c) */
    uint64_t move_after_ns;   /* after a failed move: not before (mono) */
    uint64_t move_wait_ns;    /* the wait after the last failure */
    uint64_t last_scan_ns;    /* atomic: last refusal-triggered reclaim */
    char name[GM_NAME_MAX + 1];
    char path[GM_PATH_MAX];
    /* reaper thread */
    bool reaper_on;
    bool reaper_stop;
    uint64_t reaper_interval_ns;
    pthread_t reaper;
    pthread_mutex_t reaper_mu;
    pthread_cond_t reaper_cv;
};

/* Typical use by the shim: join once (first CUDA use), register each
 * device as it is first used, start the reaper; on every allocation,
 * reserve after the per-process budget admitted it (release that one when
 * the group refuses), release on free; leave at exit; forget in a fork
 * child. One membership per process and group. */

/* Opens (creating if needed) the group's segment and claims a member
 * slot for this process (pid + /proc start time + the slot's liveness
 * lock). Dead members, and a slot left by this process's image before
 * exec, are reclaimed first; a member that then finds no other live one
 * clears the device table (limits, peaks), so the group starts over as a
 * new one. `g` is overwritten: it must not hold a membership.
 * Returns 0, or -1 with the reason in msg (nothing held then): bad name,
 * a file at the path that is not a valid group segment of this user
 * (symbolic link, other owner, mode other than 0600, wrong size, magic,
 * version or sizes), another pid namespace, all slots taken, a lock that
 * does not respond within LOCK_WAIT_NS, ... */
int gm_group_join(struct gm_group *g, const struct gm_group_params *p,
                  char *msg, size_t cap);

/* The group device index (0..GM_GROUP_MAX_DEVICES-1) of the device with
 * this UUID, registering it when new: the first member to register a
 * device fixes its limit (params limit resolved against `physical`). When
 * this member's own limit resolves to another value, msg receives a
 * warning naming both values and the group's limit applies; msg is ""
 * otherwise. Returns -1 (reason in msg) when the table is full or the
 * group is unusable. */
int gm_group_device(struct gm_group *g, const unsigned char uuid[16],
                    uint64_t physical, char *msg, size_t cap);

/* Charges `size` bytes to this member on group device `gdev` when the
 * priority rule admits it (docs/groups.md):
 *     used + size + P <= limit,
 * P = sum over other live members j with a higher weight of
 *     max(0, share_j - charged_j),  share_j = floor(limit * w_j / W),
 * W = the sum of the weights of live members (this one included).
 * On refusal, reclaims dead members (at most every 50 ms per process) and
 * tries once more. *group_used_out (may be NULL) receives the group's use
 * after the charge, or at the refusal. A group that became unusable
 * admits everything (the per-process limit still applies); see
 * gm_group_broken; so does a struct that is not joined. Returns false
 * for a gdev that gm_group_device did not return. */
bool gm_group_reserve(struct gm_group *g, int gdev, uint64_t size,
                      uint64_t *group_used_out);

/* Returns `size` bytes of this member's charge (clamped to the charge),
 * and wakes members blocked in gm_group_wait. */
void gm_group_release(struct gm_group *g, int gdev, uint64_t size);

/* Charge `add` and give back `sub` in one step, without the admission
 * rule (what the driver already holds: a pool that grew or shrank); may
 * pass the group's limit, which the caller then checks. The give is
 * clamped to this member's charge; waiters are woken when it shrinks. */
void gm_group_charge(struct gm_group *g, int gdev, uint64_t add,
                     uint64_t sub);

/* peak = max(peak, used) for the device, after a charge became memory the
 * driver holds (admission alone never raises the peak). Lock-free. */
void gm_group_note_peak(struct gm_group *g, int gdev);

/* gm_group_reserve, retried whenever any member releases (futex on the
 * segment, no polling) until it succeeds or CLOCK_MONOTONIC reaches
 * deadline_mono_ns. Returns whether it was charged. */
bool gm_group_wait(struct gm_group *g, int gdev, uint64_t size,
                   uint64_t deadline_mono_ns, uint64_t *group_used_out);

/* Frees the charges of dead members (pid gone, a zombie, a pid that now
 * belongs to a process with another start time, or a slot whose liveness
 * lock nobody holds: the member died or called exec), calling on_reclaim
 * for each (member, device) with a charge. Returns the bytes reclaimed. */
uint64_t gm_group_reclaim(struct gm_group *g);

/* Starts a thread (all signals blocked) that runs gm_group_reclaim every
 * interval_ns (0: one second) until gm_group_leave. Returns 0, or -1 when
 * the thread could not be created or is already running. */
int gm_group_start_reaper(struct gm_group *g, uint64_t interval_ns);

/* What this member sees on a device, for cuMemGetInfo and messages. */
struct gm_group_usage {
    uint64_t limit;           /* group limit, 0 = none */
    uint64_t used;            /* charged by all members */
    uint64_t mine;            /* charged by this member */
    uint64_t share;           /* this member's guaranteed share (limit if
                                 none) */
    uint64_t reserved_above;  /* P of the rule: unused shares of members
                                 with a higher weight */
    uint64_t available;       /* the largest size reserve would admit now
                                 (UINT64_MAX without a limit) */
    unsigned members;         /* live member slots */
};
/* Fills *out under the group's lock. Returns 0, or -1 (out zeroed) when
 * not joined, the group is unusable, or gdev is not registered. */
int gm_group_query(struct gm_group *g, int gdev, struct gm_group_usage *out);

/* What the device view (cuMemGetInfo, NVML) reads of the group on a
 * device, for this member. */
struct gm_group_peek {
    uint64_t limit;           /* group limit, 0 = none */
    uint64_t used;            /* charged by all members */
    uint64_t available;       /* as gm_group_usage's: limit - used - P,
                                 clamped at 0 (UINT64_MAX without a limit) */
};
/* Fills *out without the lock: loads between two even, equal readings of
 * `gen` (a few tries, yielding while a locker holds it). Returns 0, or -1
 * (*out untouched) when not joined, broken, gdev is not registered, this
 * member's slot is not its own, the header is not a group's of this
 * version any more, or the figures contradict each other (the group's
 * use below this member's charge): a caller then shows the process's own
 * view; -2 when the copy straddled updates on every try: the group is
 * sound but busy, and a caller asks under the lock (gm_group_query), so
 * that a busy group never shows a member more than it gives. Never waits
 * on the group's lock, never allocates, never prints. */
int gm_group_peek(const struct gm_group *g, int gdev,
                  struct gm_group_peek *out);

/* True once the group became unusable (its lock could not be recovered or
 * did not respond within LOCK_WAIT_NS, or this member's slot was taken
 * away): reserve then admits everything and release does nothing. The
 * shim warns once. */
bool gm_group_broken(const struct gm_group *g);

/* Stops the reaper, releases this member's remaining charge, frees its
 * slot, and unmaps. The last live member removes the file (unless keep).
 * Returns within about twice LOCK_WAIT_NS whatever the lock does (the
 * reaper's wait on it is bounded too). Safe to call on a struct that never
 * joined (memset to 0 or after a failed join). */
void gm_group_leave(struct gm_group *g);

/* In a fork child: drops the parent's mapping and descriptor without
 * touching the segment, the parent's liveness lock (it belongs to the
 * open file both share: never unlocked here) or its reaper thread. */
void gm_group_forget(struct gm_group *g);

/* ---- tools (readers take no lock) ----------------------------------------- */

struct gm_group_view_dev {
    bool present;
    unsigned char uuid[16];
    uint64_t limit, physical, used, peak, reclaimed_bytes;
};

struct gm_group_view_member {
    int slot;
    int pid;
    uint64_t start_ticks;
    double weight;
    bool alive;               /* the process exists now and holds the
                                 slot's lock (not yet reclaimed when
                                 false) */
    uint64_t joined_ns;
    unsigned waiting;         /* its threads blocked in gm_group_wait */
    uint64_t used[GM_GROUP_MAX_DEVICES];
    uint64_t share[GM_GROUP_MAX_DEVICES]; /* 0 where the device has none */
};

struct gm_group_view {
    char name[GM_NAME_MAX + 1];
    uint64_t pidns;           /* creator's pid namespace inode (0: ?): the
                                 namespace of the members' pids */
    uint64_t created_ns, repairs, reclaims, reclaimed_bytes, joins;
    unsigned waiters;         /* threads blocked in gm_group_wait */
    bool consistent;          /* copied between two updates */
    unsigned ndev;            /* 1 + highest present device */
    struct gm_group_view_dev dev[GM_GROUP_MAX_DEVICES];
    unsigned nmembers;
    struct gm_group_view_member member[GM_GROUP_MAX_MEMBERS];
};

/* Calls fn(arg, path, name) for every "<prefix>.group@<NAME>" entry of dir
 * (NULL: /dev/shm) with a valid NAME, in directory order, stopping when fn
 * returns non-zero. Returns the number of calls, or -1 when dir cannot be
 * read. Opens no segment. */
int gm_group_list(const char *dir, const char *prefix,
                  int (*fn)(void *arg, const char *path, const char *name),
                  void *arg);

/* Copies a group segment (read with pread: a file truncated meanwhile is
 * an error, never a fault) after validating it. Retries a few times for a
 * copy taken between two updates; out->consistent says whether it got
 * one. Returns 0, or -1 with the reason in err. */
int gm_group_snapshot(const char *path, struct gm_group_view *out,
                      char *err, size_t cap);

/* One card's figures in group `name`'s segment (dir NULL: /dev/shm;
 * prefix NULL: "gpumem"), read as a tool reads them: no lock, no
 * membership, pread into about 1.5 KiB of stack (and the path's 4 KiB).
 * The file passes the checks a member's join makes (ours, 0600, size,
 * magic, version, layout, name). Returns 1 with *limit (0: none) and
 * *used, 0 when the group has no segment yet or the card (by UUID) is
 * not registered in it, -1 when the file is refused (reason in err).
 * For a process that only watches (NVML without CUDA): it takes no share
 * of the group. */
int gm_group_card(const char *dir, const char *prefix, const char *name,
                  const unsigned char uuid[16], uint64_t *limit,
                  uint64_t *used, char *err, size_t cap);

/* Removes a group segment that has no live member (and one whose creator
 * died before initialising it). Returns 1 removed, 0 left in place (live
 * members: reason in err), -1 refused or failed (reason in err). */
int gm_group_gc(const char *path, char *err, size_t cap);

#endif
