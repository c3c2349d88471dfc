/*
 * shim/group/members.c — member slots: joining (claiming a slot, the first
 * member's parameters, a group whose members all died started over),
 * registering a device by UUID, whether a member is
 * gone (pid, start time, zombie), freeing a dead member's slot and
 * charges, the reaper thread, leaving and forgetting after fork.
 *
 * Invariants: a slot's charges are freed exactly once, under the lock, by
 * whoever finds the member gone (another member, the reaper, gc). A slot
 * is stored LIVE only after its member took the slot's liveness lock
 * (GM_GROUP_LIVE_LOCK_OFF) through its O_CLOEXEC descriptor, and the lock
 * is dropped only after the slot is FREE again, so a LIVE slot whose lock
 * nobody holds is a member that died or called exec. A member is never
 * judged gone on a test that could not be made (no descriptor, no OFD
 * locks): those fall back to the pid and start-time tests.
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

#include "policy/parse.h"
#include "shim/base/clock.h"
#include "shim/base/msg.h"
#include "shim/base/shmfile.h"

static uint32_t weight_from(double w)
{
    if (!(w > 0))  /* also NaN */
        return GM_GROUP_WEIGHT_ONE;
    double m = w * GM_GROUP_WEIGHT_ONE + 0.5;
    if (m >= GM_GROUP_WEIGHT_MAX)
        return GM_GROUP_WEIGHT_MAX;
    return clamp_weight((uint32_t)m);
}

uint64_t gm_grpi_pidns_inode(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* ---- liveness locks ------------------------------------------------------ */

static void live_lock_arg(struct flock *l, short type, int slot)
{
    memset(l, 0, sizeof *l);   /* the OFD commands want l_pid 0 */
    l->l_type = type;
    l->l_whence = SEEK_SET;
    l->l_start = (off_t)GM_GROUP_LIVE_LOCK_OFF(slot);
    l->l_len = 1;
}

/* Whether some open file description holds slot's liveness lock: 1 yes,
 * 0 no, -1 unknown (no descriptor, or no OFD locks here). A lock of fd's
 * own description does not count: callers never ask about their own. */
int gm_grpi_live_lock_held(int fd, int slot)
{
    struct flock l;
    if (fd < 0 || slot < 0 || slot >= GM_GROUP_MAX_MEMBERS)
        return -1;
    live_lock_arg(&l, F_WRLCK, slot);
    if (fcntl(fd, F_OFD_GETLK, &l) != 0)
        return -1;
    return l.l_type != F_UNLCK;
}

/* Takes slot's liveness lock on our descriptor: 0, 1 when another
 * description holds it (a process that shares a dead member's open file),
 * -1 when locks fail here (errno). */
static int take_live_lock(int fd, int slot)
{
    struct flock l;
    live_lock_arg(&l, F_WRLCK, slot);
    if (fcntl(fd, F_OFD_SETLK, &l) == 0)
        return 0;
    return errno == EAGAIN || errno == EACCES ? 1 : -1;
}

/* Gives our slot's lock back at leave (after the slot is FREE): a fork
 * child that kept the open file would keep it held otherwise. */
static void drop_live_lock(const struct gm_group *g, int slot)
{
    struct flock l;
    if (!gm_grpi_fd_ours(g))
        return;
    live_lock_arg(&l, F_UNLCK, slot);
    (void)fcntl(g->fd, F_OFD_SETLK, &l);
}

/* Whether the member in slot `slot` (pid, start) is gone: nobody holds
 * the slot's lock (tested through fd; -1: not tested), its pid is gone, a
 * zombie, or another process's. A slot holding this process's pid that is
 * not our own slot belongs to this process's image before exec, or to an
 * earlier process with the same pid. */
bool gm_grpi_member_gone(const struct gm_group *g, int fd, int pid,
                         uint64_t start, int slot)
{
    if (pid <= 0)
        return true;
    if (g != NULL && pid == g->pid)
        return slot != g->slot;
    if (gm_grpi_live_lock_held(fd, slot) == 0)
        return true;
    return !gm_proc_alive(pid, start); /* a zombie is not alive */
}

bool gm_grpi_member_gone_seen(int fd, uint64_t group_ns, int pid,
                              uint64_t start, int slot)
{
    uint64_t mine = gm_grpi_pidns_inode();
    if (group_ns == 0 || mine == 0 || group_ns == mine)
        return gm_grpi_member_gone(NULL, fd, pid, start, slot);
    /* Another pid namespace: its pids name other processes here; the
     * slot's lock alone tells, and when it cannot be read the member is
     * taken as alive (nothing of a live container is ever removed). */
    return pid <= 0 || gm_grpi_live_lock_held(fd, slot) == 0;
}

/* The caller's index of segment device sdev (-1 when it has none). */
static int api_of(const struct gm_group *g, int sdev)
{
    for (int a = 0; a < GM_GROUP_MAX_DEVICES; a++)
        if (__atomic_load_n(&g->devmap[a], __ATOMIC_RELAXED) == sdev)
            return a;
    return -1;
}

/* Frees slot i (its charges and the slot itself); the caller holds the
 * lock. Returns the bytes it held. */
uint64_t gm_grpi_reclaim_slot_locked(struct gm_group *g, int i)
{
    struct gm_group_seg *s = g->seg;
    struct gm_group_slot *m = &s->slot[i];
    int pid = LD(&m->pid);
    uint64_t total = 0;
    for (int d = 0; d < GM_GROUP_MAX_DEVICES; d++) {
        uint64_t c = LD(&m->charged[d]);
        if (c == 0)
            continue;
        ST(&s->dev[d].used, sat_sub(LD(&s->dev[d].used), c));
        ST(&s->dev[d].reclaimed_bytes,
           sat_add(LD(&s->dev[d].reclaimed_bytes), c));
        ST(&m->charged[d], 0);
        total = sat_add(total, c);
        if (g->on_reclaim != NULL)
            g->on_reclaim(g->arg, api_of(g, d), pid, c);
    }
    /* Its waiting threads died with it: take them out of the count the
     * releasers test (the count only ever errs high, see gm_group_wait). */
    uint32_t gone = __atomic_exchange_n(&m->waiting, 0u, __ATOMIC_RELAXED);
    uint32_t w = __atomic_load_n(&s->hdr.waiters, __ATOMIC_RELAXED);
    while (gone > 0 && !__atomic_compare_exchange_n(
               &s->hdr.waiters, &w, w > gone ? w - gone : 0, false,
               __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    gm_grpi_set_state(s, i, GM_GROUP_SLOT_FREE);
    ST(&m->pid, 0);
    ST(&m->start_ticks, 0);
    ST(&s->hdr.reclaims, LD(&s->hdr.reclaims) + 1);
    ST(&s->hdr.reclaimed_bytes, sat_add(LD(&s->hdr.reclaimed_bytes), total));
    return total;
}

/* Checks every other live slot against /proc, under the lock (rare paths:
 * join, lock recovery, leave). Returns the number of slots freed. */
static unsigned reclaim_dead_locked(struct gm_group *g, uint64_t *bytes)
{
    unsigned freed = 0;
    int probe = gm_grpi_probe_open(g);
    for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++) {
        struct gm_group_slot *m = &g->seg->slot[i];
        if (i == g->slot || LD(&m->state) != GM_GROUP_SLOT_LIVE)
            continue;
        if (gm_grpi_member_gone(g, probe, LD(&m->pid), LD(&m->start_ticks),
                                i)) {
            uint64_t b = gm_grpi_reclaim_slot_locked(g, i);
            if (bytes != NULL)
                *bytes = sat_add(*bytes, b);
            freed++;
        }
    }
    if (probe >= 0)
        close(probe);
    return freed;
}

bool gm_grpi_own_slot(const struct gm_group *g)
{
    const struct gm_group_slot *m = &g->seg->slot[g->slot];
    return LD(&m->state) == GM_GROUP_SLOT_LIVE && LD(&m->pid) == g->pid &&
           LD(&m->start_ticks) == g->start_ticks;
}

/* Locks for a member: recovers a dead owner's lock, and fails (marking
 * the group broken) when the lock is unusable, does not respond within
 * LOCK_WAIT_NS, or our slot is no longer ours. */
bool gm_grpi_grp_lock(struct gm_group *g)
{
    int rc = gm_grpi_seg_lock(g->seg, g->fd, g->slot, g);
    if (rc < 0) {
        set_broken(g);
        return false;
    }
    if (!gm_grpi_own_slot(g)) {
        gm_grpi_seg_unlock(g->seg);
        set_broken(g);
        return false;
    }
    if (rc == 1)
        (void)reclaim_dead_locked(g, NULL);
    return true;
}

/* ---- members ------------------------------------------------------------- */

int gm_grpi_build_path(char *buf, size_t cap, const char *dir,
                      const char *prefix, const char *name)
{
    int n = snprintf(buf, cap, "%s/%s.group@%s", dir, prefix, name);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* Claims a free slot (after reclaiming dead ones) and its liveness lock;
 * the caller holds the lock. Returns the slot, -1 when none is free, -2
 * when locks fail (errno). */
static int claim_slot_locked(struct gm_group *g, unsigned *freed)
{
    struct gm_group_seg *s = g->seg;
    *freed = reclaim_dead_locked(g, NULL);
    (void)gm_grpi_fix_used_locked(s);
    for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++) {
        struct gm_group_slot *m = &s->slot[i];
        if (LD(&m->state) != GM_GROUP_SLOT_FREE)
            continue;
        /* The lock before LIVE: whoever sees the slot LIVE sees it held. */
        int lk = take_live_lock(g->fd, i);
        if (lk == 1)
            continue;
        if (lk < 0)
            return -2;
        ST(&m->pid, g->pid);
        ST(&m->start_ticks, g->start_ticks);
        ST(&m->weight, g->weight);
        ST(&m->waiting, 0u);
        ST(&m->joined_ns, gm_clock_realtime_ns());
        for (int d = 0; d < GM_GROUP_MAX_DEVICES; d++)
            ST(&m->charged[d], 0);
        gm_grpi_set_state(s, i, GM_GROUP_SLOT_LIVE);
        ST(&s->hdr.joins, LD(&s->hdr.joins) + 1);
        return i;
    }
    return -1;
}

/* A member that finds no other live one (after reclaiming the dead) is
 * the group's first: what the dead left on each device (its limit, peak,
 * reclaimed bytes) goes, and devices are registered again as in a new
 * file, where the first to register one fixes its limit. The caller holds
 * the lock, so a member joining later sees this one live and keeps the
 * table. Nothing is charged then: the dead members' charges are freed and
 * ours is 0. */
static void start_over_if_alone_locked(struct gm_group *g)
{
    struct gm_group_seg *s = g->seg;
    unsigned live;
    (void)gm_grpi_live_weight_all(s, &live);   /* never the mask alone */
    if (live != 1)
        return;
    for (int d = 0; d < GM_GROUP_MAX_DEVICES; d++) {
        struct gm_group_dev *v = &s->dev[d];
        __atomic_store_n(&v->present, 0, __ATOMIC_RELEASE);
        for (int k = 0; k < 16; k++)
            ST(&v->uuid[k], 0);
        ST(&v->limit, 0);
        ST(&v->physical, 0);
        ST(&v->used, 0);
        ST(&v->peak, 0);
        ST(&v->reclaimed_bytes, 0);
    }
}

/* Maps the segment (creating it) and takes its lock; a segment closed by
 * gc or a last leaver meanwhile is retried. Returns 0 locked, -1 (msg). */
static int attach_locked(struct gm_group *g, char *msg, size_t cap)
{
    for (int attempt = 0; attempt < 4; attempt++) {
        int rc = gm_grpi_create_seg(g, msg, cap);
        if (rc == 1) {
            struct gm_group_seg *s = NULL;
            int fd = -1;
            rc = gm_grpi_open_existing(g->path, g->name, true, &s, &fd, msg, cap);
            if (rc == 0)
                gm_grpi_adopt(g, s, fd);
        }
        if (rc < 0)
            return -1;
        if (rc == 1)
            continue;
        uint64_t ns = LD(&g->seg->hdr.pidns), mine = gm_grpi_pidns_inode();
        if (ns != 0 && mine != 0 && ns != mine) {
            gm_msgf(msg, cap, "%s was created in another pid namespace; "
                    "members of a group must share one", g->path);
            gm_grpi_unmap(g);
            return -1;
        }
        if (gm_grpi_seg_lock(g->seg, g->fd, -1, g) < 0) {
            gm_msgf(msg, cap, "the lock of %s does not respond; refusing it",
                    g->path);
            gm_grpi_unmap(g);
            return -1;
        }
        if (LD(&g->seg->hdr.closed) == 0)
            return 0;
        gm_grpi_seg_unlock(g->seg);
        gm_grpi_unmap(g);
    }
    gm_msgf(msg, cap, "%s keeps being removed while joining; giving up",
            g->path);
    return -1;
}

int gm_group_join(struct gm_group *g, const struct gm_group_params *p,
                  char *msg, size_t cap)
{
    memset(g, 0, sizeof *g);
    g->fd = -1;
    g->slot = -1;
    gm_msgf(msg, cap, "%s", "");
    const char *dir = p->dir && p->dir[0] ? p->dir : "/dev/shm";
    const char *prefix = p->prefix && p->prefix[0] ? p->prefix : "gpumem";
    if (!gm_grpi_name_ok(p->name, GM_NAME_MAX)) {
        gm_msgf(msg, cap, "invalid group name \"%s\" (use 1-%d of "
                "A-Z a-z 0-9 _ . -)", p->name ? p->name : "", GM_NAME_MAX);
        return -1;
    }
    char why[GM_NAME_WHY];
    const char *bad = gm_shm_prefix_problem(prefix, why, sizeof why);
    if (bad != NULL) {
        gm_msgf(msg, cap, "invalid segment prefix \"%s\" (it %s)", prefix,
                bad);
        return -1;
    }
    if (gm_shm_dir_check(dir, geteuid(), false, msg, cap) != 0)
        return -1;
    if (gm_grpi_build_path(g->path, sizeof g->path, dir, prefix, p->name) != 0) {
        gm_msgf(msg, cap, "group segment path too long in %s", dir);
        return -1;
    }
    snprintf(g->name, sizeof g->name, "%s", p->name);
    g->pid = (int)getpid();
    if (gm_proc_start_ticks(0, &g->start_ticks) != 0)
        g->start_ticks = 0;
    g->weight = weight_from(p->weight);
    g->limit = p->limit;
    g->keep = p->keep;
    g->on_reclaim = p->on_reclaim;
    g->on_note = p->on_note;
    g->arg = p->arg;
    for (int d = 0; d < GM_GROUP_MAX_DEVICES; d++)
        g->devmap[d] = -1;
    if (gm_grpi_join_path(g, msg, cap) != 0)
        return -1;
    g->use_on = pthread_mutex_init(&g->reg_mu, NULL) == 0;
    return 0;
}

int gm_grpi_join_path(struct gm_group *g, char *msg, size_t cap)
{
    if (attach_locked(g, msg, cap) != 0)
        return -1;
    unsigned freed = 0;
    int slot = claim_slot_locked(g, &freed);
    int e = errno;
    g->slot = slot < 0 ? -1 : slot;
    if (slot >= 0)
        start_over_if_alone_locked(g);
    gm_grpi_seg_unlock(g->seg);
    if (freed > 0)
        gm_grpi_wake_waiters(g);
    if (slot == -2)
        gm_msgf(msg, cap, "cannot lock a member slot of %s (%s); a member "
                "could not be told from a dead one", g->path, strerror(e));
    else if (slot < 0)
        gm_msgf(msg, cap, "group '%s' already has %d live members, the most "
                "it can hold", g->name, GM_GROUP_MAX_MEMBERS);
    if (slot < 0) {
        gm_grpi_unmap(g);
        return -1;
    }
    return 0;
}

static void limit_text(const struct gm_limit *l, uint64_t bytes, char *buf,
                       size_t cap)
{
    char sz[32], pct[32];
    gm_format_size(bytes, sz, sizeof sz);
    if (l->kind == GM_LIMIT_PERCENT) {
        gm_format_decimal(l->fraction * 100.0, 2, pct, sizeof pct);
        snprintf(buf, cap, "%s%% (%s)", pct, sz);
    } else if (l->kind == GM_LIMIT_SHARE) {
        snprintf(buf, cap, "share (%s)", sz);
    } else {
        snprintf(buf, cap, "%s", sz);
    }
}

void gm_grpi_gate_pause(unsigned tries)
{
    if (tries < 64) {
        sched_yield();
        return;
    }
    struct timespec ts = { 0, 1000000 };   /* a move takes milliseconds */
    nanosleep(&ts, NULL);
}

/* The caller's index for segment index sdev: the one it has, else sdev
 * itself when free (always so before a move), else the first free. Under
 * reg_mu, the only writer of devmap but a move. */
static int api_index(struct gm_group *g, int sdev)
{
    int free_one = -1;
    for (int a = 0; a < GM_GROUP_MAX_DEVICES; a++) {
        if (g->devmap[a] == sdev)
            return a;
        if (g->devmap[a] < 0 && free_one < 0)
            free_one = a;
    }
    int a = g->devmap[sdev] < 0 ? sdev : free_one;
    /* Release: pairs with the acquire load in seg_dev. */
    if (a >= 0)
        __atomic_store_n(&g->devmap[a], (int8_t)sdev, __ATOMIC_RELEASE);
    return a;
}

/* reg_mu within LOCK_WAIT_NS: a signal handler that registers a device
 * while its own thread holds it does not wait on itself for ever. */
static bool reg_lock(struct gm_group *g)
{
    uint64_t end = 0;
    for (unsigned tries = 0;; tries++) {
        if (pthread_mutex_trylock(&g->reg_mu) == 0)
            return true;
        uint64_t now = gm_clock_monotonic_ns();
        if (end == 0)
            end = now + LOCK_WAIT_NS;
        else if (now >= end)
            return false;
        gm_grpi_gate_pause(tries);
    }
}

int gm_group_device(struct gm_group *g, const unsigned char uuid[16],
                    uint64_t physical, char *msg, size_t cap)
{
    gm_msgf(msg, cap, "%s", "");
    /* Registrations one at a time (reg_mu), never during a move (inside
     * the gate, which is also where g's binding is read); the calls of
     * other threads go on meanwhile. */
    bool held = use_begin(g);
    if (!held || !joined(g)) {
        use_end(g, held);
        gm_msgf(msg, cap, "group '%s' is not usable", g ? g->name : "");
        return -1;
    }
    if (!reg_lock(g)) {
        use_end(g, held);
        gm_msgf(msg, cap, "group '%s': another registration does not end; "
                "device not registered", g->name);
        return -1;
    }
    int sdev = gm_grpi_device_in(g, uuid, physical, msg, cap);
    int a = sdev < 0 ? -1 : api_index(g, sdev);
    pthread_mutex_unlock(&g->reg_mu);
    use_end(g, held);
    return a;
}

int gm_grpi_device_in(struct gm_group *g, const unsigned char uuid[16],
                      uint64_t physical, char *msg, size_t cap)
{
    if (!joined(g) || is_broken(g) || !gm_grpi_grp_lock(g)) {
        gm_msgf(msg, cap, "group '%s' is not usable", g ? g->name : "");
        return -1;
    }
    struct gm_group_seg *s = g->seg;
    uint64_t mine = gm_limit_resolve(&g->limit, physical);
    int idx = -1, free_idx = -1;
    for (int d = 0; d < GM_GROUP_MAX_DEVICES && idx < 0; d++) {
        struct gm_group_dev *v = &s->dev[d];
        if (LD(&v->present) != 1) {
            if (free_idx < 0)
                free_idx = d;
            continue;
        }
        unsigned char u[16];
        for (int k = 0; k < 16; k++)
            u[k] = LD(&v->uuid[k]);
        if (memcmp(u, uuid, 16) == 0)
            idx = d;
    }
    if (idx >= 0) {
        uint64_t lim = LD(&s->dev[idx].limit);
        if (g->limit.kind != GM_LIMIT_NONE && lim != mine) {
            char have[32], want[96];
            gm_format_size(lim, have, sizeof have);
            limit_text(&g->limit, mine, want, sizeof want);
            if (lim == 0)
                gm_msgf(msg, cap, "group '%s' has no limit on this device; "
                        "ignoring GPUMEM_GROUP_LIMIT=%s", g->name, want);
            else
                gm_msgf(msg, cap, "group '%s' already has a limit of %s on "
                        "this device; ignoring GPUMEM_GROUP_LIMIT=%s",
                        g->name, have, want);
        }
    } else if (free_idx >= 0) {
        idx = free_idx;
        struct gm_group_dev *v = &s->dev[idx];
        for (int k = 0; k < 16; k++)
            ST(&v->uuid[k], uuid[k]);
        ST(&v->limit, mine);
        ST(&v->physical, physical);
        ST(&v->used, 0);
        ST(&v->peak, 0);
        /* Release: pairs with the acquire load in dev_ok (a thread of this
         * process may test a new index without the lock). */
        __atomic_store_n(&v->present, 1, __ATOMIC_RELEASE);
    } else {
        gm_msgf(msg, cap, "group '%s' already tracks %d devices, the most "
                "it can hold", g->name, GM_GROUP_MAX_DEVICES);
    }
    gm_grpi_seg_unlock(s);
    return idx;
}

/* ---- reaper thread ------------------------------------------------------- */

/* How often the reaper looks whether its file is still the group's
 * (rehome.c): two system calls, so much more often than it scans for the
 * dead, to keep short the time a newcomer admits alone. */
#define FILE_CHECK_NS 100000000ull

static void *reaper_main(void *arg)
{
    struct gm_group *g = arg;
    uint64_t tick = g->reaper_interval_ns < FILE_CHECK_NS
                  ? g->reaper_interval_ns : FILE_CHECK_NS;
    uint64_t next_scan = gm_clock_monotonic_ns() + g->reaper_interval_ns;
    pthread_mutex_lock(&g->reaper_mu);
    while (!g->reaper_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + tick;
        ts.tv_sec += (time_t)(ns / NSEC);
        ts.tv_nsec = (long)(ns % NSEC);
        int rc = 0;
        while (!g->reaper_stop && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&g->reaper_cv, &g->reaper_mu, &ts);
        if (g->reaper_stop)
            break;
        pthread_mutex_unlock(&g->reaper_mu);
        uint64_t now = gm_clock_monotonic_ns();
        if (now >= next_scan) {
            (void)gm_group_reclaim(g);
            next_scan = now + g->reaper_interval_ns;
        }
        gm_grpi_rehome(g);
        pthread_mutex_lock(&g->reaper_mu);
    }
    pthread_mutex_unlock(&g->reaper_mu);
    return NULL;
}

int gm_group_start_reaper(struct gm_group *g, uint64_t interval_ns)
{
    if (!joined(g) || g->reaper_on)
        return -1;
    g->reaper_interval_ns = interval_ns ? interval_ns : NSEC;
    g->reaper_stop = false;
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        return -1;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&g->reaper_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0)
        return -1;
    if (pthread_mutex_init(&g->reaper_mu, NULL) != 0) {
        pthread_cond_destroy(&g->reaper_cv);
        return -1;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&g->reaper, NULL, reaper_main, g);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_mutex_destroy(&g->reaper_mu);
        pthread_cond_destroy(&g->reaper_cv);
        return -1;
    }
    g->reaper_on = true;
    return 0;
}

static void stop_reaper(struct gm_group *g)
{
    if (!g->reaper_on)
        return;
    pthread_mutex_lock(&g->reaper_mu);
    g->reaper_stop = true;
    pthread_cond_signal(&g->reaper_cv);
    pthread_mutex_unlock(&g->reaper_mu);
    pthread_join(g->reaper, NULL);
    pthread_mutex_destroy(&g->reaper_mu);
    pthread_cond_destroy(&g->reaper_cv);
    g->reaper_on = false;
}

void gm_group_leave(struct gm_group *g)
{
    if (g == NULL)
        return;
    stop_reaper(g);
    gm_grpi_leave_seg(g, false);
}

/* Drops g's segment: unmapped, or with keep_map left mapped for good (a
 * waiter of this process may sleep on its futex word: rehome.c) and only
 * the descriptor closed. */
static void let_go(struct gm_group *g, bool keep_map)
{
    if (!keep_map) {
        gm_grpi_unmap(g);
        return;
    }
    if (g->seg != NULL && gm_grpi_fd_ours(g))
        close(g->fd);
    g->seg = NULL;
    g->fd = -1;
    g->slot = -1;
}

void gm_grpi_leave_seg(struct gm_group *g, bool keep_map)
{
    if (!joined(g) || is_broken(g) || !gm_grpi_grp_lock(g)) {
        let_go(g, keep_map);
        return;
    }
    struct gm_group_seg *s = g->seg;
    struct gm_group_slot *m = &s->slot[g->slot];
    for (int d = 0; d < GM_GROUP_MAX_DEVICES; d++) {
        ST(&s->dev[d].used, sat_sub(LD(&s->dev[d].used), LD(&m->charged[d])));
        ST(&m->charged[d], 0);
    }
    int me = g->slot;
    gm_grpi_set_state(s, me, GM_GROUP_SLOT_FREE);
    ST(&m->pid, 0);
    ST(&m->start_ticks, 0);
    (void)reclaim_dead_locked(g, NULL);
    unsigned others = 0;
    for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++)
        if (i != me && LD(&s->slot[i].state) == GM_GROUP_SLOT_LIVE)
            others++;
    if (others == 0 && !g->keep) {
        ST(&s->hdr.closed, 1u);
        gm_grpi_unlink_if_same(g->path, g->fd);
    }
    gm_grpi_seg_unlock(s);
    /* After FREE (never LIVE and unlocked) and after the lock is given
     * back: the byte is what proves the lock's holder alive. */
    drop_live_lock(g, me);
    gm_grpi_wake_waiters(g);
    let_go(g, keep_map);
}

void gm_group_forget(struct gm_group *g)
{
    if (g == NULL)
        return;
    g->reaper_on = false;   /* the thread stayed in the parent */
    /* And any move it was making: the gate as the child's own. */
    __atomic_store_n(&g->moving, 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&g->in_calls, 0u, __ATOMIC_RELAXED);
    gm_grpi_unmap(g);
}
