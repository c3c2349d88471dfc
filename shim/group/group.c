/*
 * shim/group/group.c — shared budgets (see shim/group/group.h, docs/groups.md): the
 * group segment's creation and validation, member slots, the priority
 * admission rule, release with cross-process wake-ups, dead-member
 * reclaim (on refusal and from a reaper thread), and the lock-free read
 * side used by the tools.
 *
 * Invariants: every shared field that changes after initialisation is
 * written under the segment's robust mutex, with relaxed atomic stores
 * (readers in other threads or processes load them atomically, and `gen`
 * tells a reader whether its copy straddled an update). Every subtraction
 * is clamped, every addition saturates, so a hostile or damaged segment
 * can give wrong numbers but never wrap or fault the arithmetic. Nothing on
 * the reserve/release/wait path allocates or prints.
 */
#include "shim/base/msg.h"
#include "shim/group/group.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
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
#include "shim/base/shmfile.h"
#include "shim/base/clock.h"

__extension__ typedef unsigned __int128 u128;

#define LD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

#define SEG_SIZE sizeof(struct gm_group_seg)
#define NSEC 1000000000ull
#define INIT_WAIT_NS NSEC          /* O_EXCL loser waits for the creator */
#define LOCK_WAIT_NS (2 * NSEC)    /* join and gc: bounded first lock */
#define SCAN_GAP_NS 50000000ull    /* refusal-triggered reclaim, per process */
#define WAIT_SLICE_NS NSEC         /* gm_group_wait re-checks at least this */
#define SNAP_TRIES 50

/* ---- small helpers ------------------------------------------------------- */

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_sub(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

static bool name_ok(const char *s, size_t max)
{
    size_t n = 0;
    if (s == NULL)
        return false;
    for (; s[n] != '\0'; n++) {
        char c = s[n];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
        if (!ok || n >= max)
            return false;
    }
    return n > 0;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / NSEC), (long)(ns % NSEC) };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static uint32_t clamp_weight(uint32_t w)
{
    if (w < GM_GROUP_WEIGHT_MIN)
        return GM_GROUP_WEIGHT_MIN;
    return w > GM_GROUP_WEIGHT_MAX ? GM_GROUP_WEIGHT_MAX : w;
}

static uint32_t weight_from(double w)
{
    if (!(w > 0))  /* also NaN */
        return GM_GROUP_WEIGHT_ONE;
    double m = w * GM_GROUP_WEIGHT_ONE + 0.5;
    if (m >= GM_GROUP_WEIGHT_MAX)
        return GM_GROUP_WEIGHT_MAX;
    return clamp_weight((uint32_t)m);
}

static uint64_t pidns_inode(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* True when /proc/<pid>/stat shows a zombie or dead task: its memory is
 * gone although kill(pid, 0) still succeeds. */
static bool proc_zombie(int pid)
{
    char path[48], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n;
    do {
        n = read(fd, buf, sizeof buf - 1);
    } while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ')
        return false;
    return p[2] == 'Z' || p[2] == 'X';
}

/* Whether the member in slot `slot` (pid, start) is gone. A slot holding
 * this process's pid that is not our own slot belongs to this process's
 * image before exec, or to an earlier process with the same pid. */
static bool member_gone(const struct gm_group *g, int pid, uint64_t start,
                        int slot)
{
    if (pid <= 0)
        return true;
    if (g != NULL && pid == g->pid)
        return slot != g->slot;
    if (!gm_proc_alive(pid, start))
        return true;
    return proc_zombie(pid);
}

static bool is_broken(const struct gm_group *g)
{
    return __atomic_load_n(&g->broken, __ATOMIC_ACQUIRE);
}

static void set_broken(struct gm_group *g)
{
    __atomic_store_n(&g->broken, true, __ATOMIC_RELEASE);
}

/* ---- the lock ------------------------------------------------------------ */

/* After a member died holding the lock: every device's `used` becomes the
 * sum of the live slots' charges (the slots are authoritative; a death
 * between the two stores of an update leaves them apart). */
static void repair_locked(struct gm_group_seg *s)
{
    for (int d = 0; d < GM_GROUP_MAX_DEVICES; d++) {
        uint64_t sum = 0;
        for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++)
            if (LD(&s->slot[i].state) == GM_GROUP_SLOT_LIVE)
                sum = sat_add(sum, LD(&s->slot[i].charged[d]));
        ST(&s->dev[d].used, sum);
        if (sum > LD(&s->dev[d].peak))
            ST(&s->dev[d].peak, sum);
    }
    ST(&s->hdr.repairs, LD(&s->hdr.repairs) + 1);
}

/* Takes the mutex (timeout_ns 0: no timeout). Returns 0, 1 when it was
 * recovered from a dead owner (state repaired), -1 on failure. */
static int seg_lock(struct gm_group_seg *s, uint64_t timeout_ns)
{
    pthread_mutex_t *m = &s->hdr.lock.m;
    int rc;
    if (timeout_ns == 0) {
        rc = pthread_mutex_lock(m);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + timeout_ns;
        ts.tv_sec += (time_t)(ns / NSEC);
        ts.tv_nsec = (long)(ns % NSEC);
        rc = pthread_mutex_timedlock(m, &ts);
    }
    if (rc != 0 && rc != EOWNERDEAD)
        return -1;
    /* Writers' half of the seqlock: gen odd before any field changes. An
     * acq_rel read-modify-write keeps the field stores that follow from
     * moving above it (readers: take_copy). A dead writer may have left
     * it odd already. */
    if ((LD(&s->hdr.gen) & 1u) == 0)
        __atomic_fetch_add(&s->hdr.gen, 1u, __ATOMIC_ACQ_REL);
    if (rc == EOWNERDEAD) {
        repair_locked(s);
        if (pthread_mutex_consistent(m) != 0) {
            pthread_mutex_unlock(m);
            return -1;
        }
        return 1;
    }
    return 0;
}

static void seg_unlock(struct gm_group_seg *s)
{
    /* Even again: publishes the fields stored since seg_lock. */
    __atomic_store_n(&s->hdr.gen, (LD(&s->hdr.gen) | 1u) + 1,
                     __ATOMIC_RELEASE);
    pthread_mutex_unlock(&s->hdr.lock.m);
}

/* Frees slot i (its charges and the slot itself); the caller holds the
 * lock. Returns the bytes it held. */
static uint64_t reclaim_slot_locked(struct gm_group *g, int i)
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
            g->on_reclaim(g->arg, d, pid, c);
    }
    /* Its waiting threads died with it: take them out of the count the
     * releasers test (the count only ever errs high, see gm_group_wait). */
    uint32_t gone = __atomic_exchange_n(&m->waiting, 0u, __ATOMIC_RELAXED);
    uint32_t w = __atomic_load_n(&s->hdr.waiters, __ATOMIC_RELAXED);
    while (gone > 0 && !__atomic_compare_exchange_n(
               &s->hdr.waiters, &w, w > gone ? w - gone : 0, false,
               __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    ST(&m->state, GM_GROUP_SLOT_FREE);
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
    for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++) {
        struct gm_group_slot *m = &g->seg->slot[i];
        if (i == g->slot || LD(&m->state) != GM_GROUP_SLOT_LIVE)
            continue;
        if (member_gone(g, LD(&m->pid), LD(&m->start_ticks), i)) {
            uint64_t b = reclaim_slot_locked(g, i);
            if (bytes != NULL)
                *bytes = sat_add(*bytes, b);
            freed++;
        }
    }
    return freed;
}

static bool own_slot(const struct gm_group *g)
{
    const struct gm_group_slot *m = &g->seg->slot[g->slot];
    return LD(&m->state) == GM_GROUP_SLOT_LIVE && LD(&m->pid) == g->pid &&
           LD(&m->start_ticks) == g->start_ticks;
}

static void wake_waiters(struct gm_group *g)
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

/* Locks for a member: recovers a dead owner's lock, and fails (marking
 * the group broken) when the lock is unusable or our slot is no longer
 * ours. */
static bool grp_lock(struct gm_group *g)
{
    int rc = seg_lock(g->seg, 0);
    if (rc < 0) {
        set_broken(g);
        return false;
    }
    if (!own_slot(g)) {
        seg_unlock(g->seg);
        set_broken(g);
        return false;
    }
    if (rc == 1)
        (void)reclaim_dead_locked(g, NULL);
    return true;
}

static bool joined(const struct gm_group *g)
{
    return g != NULL && g->seg != NULL && g->slot >= 0;
}

/* ---- the priority rule ------------------------------------------------- */

static uint64_t live_weight(const struct gm_group_seg *s, unsigned *count)
{
    uint64_t w = 0;
    unsigned n = 0;
    for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++) {
        if (LD(&s->slot[i].state) != GM_GROUP_SLOT_LIVE)
            continue;
        w += clamp_weight(LD(&s->slot[i].weight));
        n++;
    }
    if (count != NULL)
        *count = n;
    return w;
}

static uint64_t share_of(uint64_t limit, uint64_t w, uint64_t total)
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
    uint64_t total = live_weight(s, NULL);
    uint32_t mine = clamp_weight(LD(&s->slot[me].weight));
    uint64_t p = 0;
    for (int j = 0; j < GM_GROUP_MAX_MEMBERS; j++) {
        const struct gm_group_slot *m = &s->slot[j];
        if (j == me || LD(&m->state) != GM_GROUP_SLOT_LIVE)
            continue;
        uint32_t w = clamp_weight(LD(&m->weight));
        if (w <= mine)
            continue;
        p = sat_add(p, sat_sub(share_of(limit, w, total),
                               LD(&m->charged[gdev])));
    }
    return p;
}

/* The largest request the rule admits now for slot `me`. */
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
    if (used > LD(&d->peak))
        ST(&d->peak, used);
    if (used_out != NULL)
        *used_out = used;
    return true;
}

static bool dev_ok(const struct gm_group *g, int gdev)
{
    return gdev >= 0 && gdev < GM_GROUP_MAX_DEVICES &&
           __atomic_load_n(&g->seg->dev[gdev].present, __ATOMIC_ACQUIRE) == 1;
}

/* ---- segment creation and validation ------------------------------------- */

static void unlink_if_same(const char *path, int fd)
{
    struct stat a, b;
    if (fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
        unlink(path);
}

/* Regular file, ours, 0600, the exact size. Returns 0, 1 when the file is
 * still empty (a creator between open and fallocate), -1 (msg). */
static int check_file(int fd, const char *path, bool ours, char *msg,
                      size_t cap)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        gm_msgf(msg, cap, "cannot inspect %s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        gm_msgf(msg, cap, "%s is not a regular file; refusing it", path);
        return -1;
    }
    if (ours && st.st_uid != geteuid()) {
        gm_msgf(msg, cap, "%s belongs to another user (uid %u); refusing it",
                path, (unsigned)st.st_uid);
        return -1;
    }
    if (ours && (st.st_mode & 07777) != 0600) {
        gm_msgf(msg, cap, "%s has mode %04o, not 0600; refusing it", path,
                (unsigned)(st.st_mode & 07777));
        return -1;
    }
    if (st.st_size == 0)
        return 1;
    if ((uint64_t)st.st_size != SEG_SIZE) {
        gm_msgf(msg, cap, "%s has %lld bytes, not the %zu of a group "
                "segment of this gpumem; refusing it", path,
                (long long)st.st_size, SEG_SIZE);
        return -1;
    }
    return 0;
}

/* Header checks once `initialised` reads 1; `name` is the file's. */
static int check_hdr(const struct gm_group_hdr *h, const char *name,
                     const char *path, char *msg, size_t cap)
{
    if (LD(&h->magic) != GM_GROUP_MAGIC) {
        gm_msgf(msg, cap, "%s is not a gpumem group segment (bad magic); "
                "refusing it", path);
        return -1;
    }
    if (LD(&h->version) != GM_GROUP_VERSION) {
        gm_msgf(msg, cap, "%s has group format version %u, this gpumem "
                "reads %u; refusing it", path, LD(&h->version),
                GM_GROUP_VERSION);
        return -1;
    }
    if (LD(&h->hdr_size) != sizeof(struct gm_group_hdr) ||
        LD(&h->dev_size) != sizeof(struct gm_group_dev) ||
        LD(&h->slot_size) != sizeof(struct gm_group_slot) ||
        LD(&h->max_devices) != GM_GROUP_MAX_DEVICES ||
        LD(&h->max_members) != GM_GROUP_MAX_MEMBERS ||
        LD(&h->total_size) != SEG_SIZE) {
        gm_msgf(msg, cap, "%s has an unexpected layout; refusing it", path);
        return -1;
    }
    if (LD(&h->mutex_size) != sizeof(pthread_mutex_t)) {
        gm_msgf(msg, cap, "%s was made with another C library (mutex of %u "
                "bytes); refusing it", path, LD(&h->mutex_size));
        return -1;
    }
    char n[sizeof h->name];
    for (size_t i = 0; i < sizeof n; i++)
        n[i] = LD(&h->name[i]);
    if (memchr(n, '\0', sizeof n) == NULL || !name_ok(n, GM_NAME_MAX) ||
        strcmp(n, name) != 0) {
        gm_msgf(msg, cap, "%s does not hold the group it is named after; "
                "refusing it", path);
        return -1;
    }
    return 0;
}

static int init_seg(struct gm_group_seg *s, const char *name)
{
    struct gm_group_hdr *h = &s->hdr;
    pthread_mutexattr_t a;
    if (pthread_mutexattr_init(&a) != 0)
        return -1;
    int rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    if (rc == 0)
        rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    if (rc == 0)
        rc = pthread_mutex_init(&h->lock.m, &a);
    pthread_mutexattr_destroy(&a);
    if (rc != 0)
        return -1;
    h->magic = GM_GROUP_MAGIC;
    h->version = GM_GROUP_VERSION;
    h->hdr_size = sizeof(struct gm_group_hdr);
    h->dev_size = sizeof(struct gm_group_dev);
    h->slot_size = sizeof(struct gm_group_slot);
    h->max_devices = GM_GROUP_MAX_DEVICES;
    h->max_members = GM_GROUP_MAX_MEMBERS;
    h->total_size = SEG_SIZE;
    h->mutex_size = sizeof(pthread_mutex_t);
    h->pidns = pidns_inode();
    h->created_ns = gm_clock_realtime_ns();
    snprintf(h->name, sizeof h->name, "%s", name);
    /* Last: pairs with the acquire load in wait_initialised. */
    __atomic_store_n(&h->initialised, 1u, __ATOMIC_RELEASE);
    return 0;
}

/* Creates the segment. Returns 0 (g->seg mapped), 1 when it exists, -1. */
static int create_seg(struct gm_group *g, char *msg, size_t cap)
{
    if (gm_shm_fsize_would_kill(SEG_SIZE)) {
        gm_msgf(msg, cap, "the file size limit (RLIMIT_FSIZE) is below the "
                "size of %s", g->path);
        return -1;
    }
    int fd = open(g->path, O_CREAT | O_EXCL | O_NOFOLLOW | O_RDWR | O_CLOEXEC,
                  0600);
    if (fd < 0) {
        if (errno == EEXIST)
            return 1;
        gm_msgf(msg, cap, "cannot create %s: %s", g->path, strerror(errno));
        return -1;
    }
    /* The lock is held while initialising: a joiner that finds the file
     * uninitialised and this lock free knows its creator died. */
    int e;
    void *mem = gm_shm_size_map(fd, SEG_SIZE, &e);
    if (mem == NULL) {
        gm_msgf(msg, cap, "cannot size %s (full /dev/shm?): %s", g->path,
                strerror(e));
    } else if (init_seg(mem, g->name) != 0) {
        e = EINVAL;
        gm_msgf(msg, cap, "cannot set up the lock of %s", g->path);
    }
    if (e != 0) {
        if (mem != NULL)
            munmap(mem, SEG_SIZE);
        unlink(g->path);
        close(fd);
        return -1;
    }
    (void)flock(fd, LOCK_UN);
    g->seg = mem;
    g->len = SEG_SIZE;
    g->fd = fd;
    return 0;
}

/* The file is empty or uninitialised past the wait: when nobody holds the
 * creator's lock, the creator died; remove the file (returns 1: retry).
 * Otherwise -1 (msg). */
static int stale_or_busy(int fd, const char *path, char *msg, size_t cap)
{
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
        unlink_if_same(path, fd);
        return 1;
    }
    gm_msgf(msg, cap, "%s is still being created by another process; "
            "giving up", path);
    return -1;
}

/* Opens and validates an existing segment read-write. Returns 0 (mapped
 * into *mem, fd in *fdp), 1 to retry from the start, -1 (msg). */
static int open_existing(const char *path, const char *name, bool ours,
                         struct gm_group_seg **mem, int *fdp, char *msg,
                         size_t cap)
{
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return 1;
        if (errno == ELOOP)
            gm_msgf(msg, cap, "%s is a symbolic link; refusing to follow it",
                    path);
        else if (errno == EISDIR)
            gm_msgf(msg, cap, "%s is not a regular file; refusing it", path);
        else
            gm_msgf(msg, cap, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    uint64_t deadline = gm_clock_monotonic_ns() + INIT_WAIT_NS;
    int rc;
    while ((rc = check_file(fd, path, ours, msg, cap)) == 1 &&
           gm_clock_monotonic_ns() < deadline)
        sleep_ns(1000000);
    if (rc == 1)
        rc = stale_or_busy(fd, path, msg, cap);
    if (rc != 0) {
        close(fd);
        return rc;
    }
    struct gm_group_seg *s =
        mmap(NULL, SEG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (s == MAP_FAILED) {
        gm_msgf(msg, cap, "cannot map %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    /* Acquire: pairs with the creator's release store in init_seg. */
    while (__atomic_load_n(&s->hdr.initialised, __ATOMIC_ACQUIRE) != 1 &&
           gm_clock_monotonic_ns() < deadline)
        sleep_ns(1000000);
    if (__atomic_load_n(&s->hdr.initialised, __ATOMIC_ACQUIRE) != 1)
        rc = stale_or_busy(fd, path, msg, cap);
    else
        rc = check_hdr(&s->hdr, name, path, msg, cap);
    if (rc != 0) {
        munmap(s, SEG_SIZE);
        close(fd);
        return rc;
    }
    *mem = s;
    *fdp = fd;
    return 0;
}

/* Drops the mapping and its descriptor (both exist together). */
static void unmap(struct gm_group *g)
{
    if (g->seg != NULL) {
        munmap(g->seg, g->len);
        if (g->fd >= 0)
            close(g->fd);
    }
    g->seg = NULL;
    g->fd = -1;
    g->slot = -1;
}

/* ---- members ------------------------------------------------------------- */

static int build_path(char *buf, size_t cap, const char *dir,
                      const char *prefix, const char *name)
{
    int n = snprintf(buf, cap, "%s/%s.group.%s", dir, prefix, name);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* Claims a free slot (after reclaiming dead ones); the caller holds the
 * lock. Returns the slot or -1. */
static int claim_slot_locked(struct gm_group *g, unsigned *freed)
{
    struct gm_group_seg *s = g->seg;
    *freed = reclaim_dead_locked(g, NULL);
    for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++) {
        struct gm_group_slot *m = &s->slot[i];
        if (LD(&m->state) != GM_GROUP_SLOT_FREE)
            continue;
        ST(&m->pid, g->pid);
        ST(&m->start_ticks, g->start_ticks);
        ST(&m->weight, g->weight);
        ST(&m->waiting, 0u);
        ST(&m->joined_ns, gm_clock_realtime_ns());
        for (int d = 0; d < GM_GROUP_MAX_DEVICES; d++)
            ST(&m->charged[d], 0);
        ST(&m->state, GM_GROUP_SLOT_LIVE);
        ST(&s->hdr.joins, LD(&s->hdr.joins) + 1);
        return i;
    }
    return -1;
}

/* Maps the segment (creating it) and takes its lock; a segment closed by
 * gc or a last leaver meanwhile is retried. Returns 0 locked, -1 (msg). */
static int attach_locked(struct gm_group *g, char *msg, size_t cap)
{
    for (int attempt = 0; attempt < 4; attempt++) {
        int rc = create_seg(g, msg, cap);
        if (rc == 1) {
            struct gm_group_seg *s = NULL;
            int fd = -1;
            rc = open_existing(g->path, g->name, true, &s, &fd, msg, cap);
            if (rc == 0) {
                g->seg = s;
                g->len = SEG_SIZE;
                g->fd = fd;
            }
        }
        if (rc < 0)
            return -1;
        if (rc == 1)
            continue;
        uint64_t ns = LD(&g->seg->hdr.pidns), mine = pidns_inode();
        if (ns != 0 && mine != 0 && ns != mine) {
            gm_msgf(msg, cap, "%s was created in another pid namespace; "
                    "members of a group must share one", g->path);
            unmap(g);
            return -1;
        }
        if (seg_lock(g->seg, LOCK_WAIT_NS) < 0) {
            gm_msgf(msg, cap, "the lock of %s does not respond; refusing it",
                    g->path);
            unmap(g);
            return -1;
        }
        if (LD(&g->seg->hdr.closed) == 0)
            return 0;
        seg_unlock(g->seg);
        unmap(g);
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
    if (!name_ok(p->name, GM_NAME_MAX)) {
        gm_msgf(msg, cap, "invalid group name \"%s\" (use 1-%d of "
                "A-Z a-z 0-9 _ . -)", p->name ? p->name : "", GM_NAME_MAX);
        return -1;
    }
    if (!name_ok(prefix, GM_PREFIX_MAX)) {
        gm_msgf(msg, cap, "invalid segment prefix \"%s\"", prefix);
        return -1;
    }
    if (build_path(g->path, sizeof g->path, dir, prefix, p->name) != 0) {
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
    g->arg = p->arg;
    if (attach_locked(g, msg, cap) != 0)
        return -1;
    unsigned freed = 0;
    int slot = claim_slot_locked(g, &freed);
    g->slot = slot;
    seg_unlock(g->seg);
    if (freed > 0)
        wake_waiters(g);
    if (slot < 0) {
        gm_msgf(msg, cap, "group '%s' already has %d live members, the most "
                "it can hold", g->name, GM_GROUP_MAX_MEMBERS);
        unmap(g);
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

int gm_group_device(struct gm_group *g, const unsigned char uuid[16],
                    uint64_t physical, char *msg, size_t cap)
{
    gm_msgf(msg, cap, "%s", "");
    if (!joined(g) || is_broken(g) || !grp_lock(g)) {
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
    seg_unlock(s);
    return idx;
}

/* Finds dead members without the lock, then frees them under it. Returns
 * the bytes reclaimed; *freed the slots. */
static uint64_t reclaim_scan(struct gm_group *g, unsigned *freed)
{
    struct gm_group_seg *s = g->seg;
    int pids[GM_GROUP_MAX_MEMBERS];
    uint64_t starts[GM_GROUP_MAX_MEMBERS];
    uint64_t mask = 0, bytes = 0;
    *freed = 0;
    for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++) {
        if (i == g->slot || LD(&s->slot[i].state) != GM_GROUP_SLOT_LIVE)
            continue;
        pids[i] = LD(&s->slot[i].pid);
        starts[i] = LD(&s->slot[i].start_ticks);
        if (member_gone(g, pids[i], starts[i], i))
            mask |= 1ull << i;
    }
    if (mask == 0 || !grp_lock(g))
        return 0;
    for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++) {
        struct gm_group_slot *m = &s->slot[i];
        if (!(mask & (1ull << i)) || LD(&m->state) != GM_GROUP_SLOT_LIVE ||
            LD(&m->pid) != pids[i] || LD(&m->start_ticks) != starts[i])
            continue;
        bytes = sat_add(bytes, reclaim_slot_locked(g, i));
        (*freed)++;
    }
    seg_unlock(s);
    if (*freed > 0)
        wake_waiters(g);
    return bytes;
}

uint64_t gm_group_reclaim(struct gm_group *g)
{
    unsigned freed;
    if (!joined(g) || is_broken(g))
        return 0;
    return reclaim_scan(g, &freed);
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

bool gm_group_reserve(struct gm_group *g, int gdev, uint64_t size,
                      uint64_t *group_used_out)
{
    if (!joined(g) || is_broken(g))
        return true;
    if (!dev_ok(g, gdev))
        return false;
    if (!grp_lock(g))
        return true;
    bool ok = admit_locked(g, gdev, size, group_used_out);
    seg_unlock(g->seg);
    if (ok || !scan_due(g))
        return ok;
    unsigned freed;
    (void)reclaim_scan(g, &freed);
    if (freed == 0)
        return false;
    if (!grp_lock(g))
        return true;
    ok = admit_locked(g, gdev, size, group_used_out);
    seg_unlock(g->seg);
    return ok;
}

void gm_group_release(struct gm_group *g, int gdev, uint64_t size)
{
    if (!joined(g) || is_broken(g) || !dev_ok(g, gdev) || size == 0 ||
        !grp_lock(g))
        return;
    struct gm_group_seg *s = g->seg;
    uint64_t *c = &s->slot[g->slot].charged[gdev];
    uint64_t give = LD(c) < size ? LD(c) : size;
    ST(c, LD(c) - give);
    ST(&s->dev[gdev].used, sat_sub(LD(&s->dev[gdev].used), give));
    seg_unlock(s);
    if (give > 0)
        wake_waiters(g);
}

bool gm_group_wait(struct gm_group *g, int gdev, uint64_t size,
                   uint64_t deadline_mono_ns, uint64_t *group_used_out)
{
    if (!joined(g) || is_broken(g))
        return true;
    if (!dev_ok(g, gdev))
        return false;
    struct gm_group_hdr *h = &g->seg->hdr;
    uint32_t *mine = &g->seg->slot[g->slot].waiting;
    bool ok = false;
    /* seq_cst: pairs with wake_waiters (see there). The group count goes
     * up before and down after our slot's, so a death in between leaves
     * it high (an extra wake-up), never low (a missed one). */
    __atomic_fetch_add(&h->waiters, 1u, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(mine, 1u, __ATOMIC_RELAXED);
    for (;;) {
        uint32_t seq = __atomic_load_n(&h->release_seq, __ATOMIC_SEQ_CST);
        if (gm_group_reserve(g, gdev, size, group_used_out)) {
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
        /* Returns at once when release_seq moved since the load above. */
        syscall(SYS_futex, &h->release_seq, FUTEX_WAIT, seq, &ts, NULL, 0);
    }
    __atomic_fetch_sub(mine, 1u, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&h->waiters, 1u, __ATOMIC_SEQ_CST);
    return ok;
}

int gm_group_query(struct gm_group *g, int gdev, struct gm_group_usage *out)
{
    memset(out, 0, sizeof *out);
    if (!joined(g) || is_broken(g) || !dev_ok(g, gdev) || !grp_lock(g))
        return -1;
    struct gm_group_seg *s = g->seg;
    uint64_t total = live_weight(s, &out->members);
    out->limit = LD(&s->dev[gdev].limit);
    out->used = LD(&s->dev[gdev].used);
    out->mine = LD(&s->slot[g->slot].charged[gdev]);
    out->share = share_of(out->limit, clamp_weight(g->weight), total);
    out->reserved_above = out->limit == 0
        ? 0 : reserved_above(s, gdev, g->slot, out->limit);
    out->available = available_locked(s, gdev, g->slot);
    seg_unlock(s);
    return 0;
}

bool gm_group_broken(const struct gm_group *g)
{
    return g != NULL && is_broken(g);
}

/* ---- reaper thread ------------------------------------------------------- */

static void *reaper_main(void *arg)
{
    struct gm_group *g = arg;
    pthread_mutex_lock(&g->reaper_mu);
    while (!g->reaper_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + g->reaper_interval_ns;
        ts.tv_sec += (time_t)(ns / NSEC);
        ts.tv_nsec = (long)(ns % NSEC);
        int rc = 0;
        while (!g->reaper_stop && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&g->reaper_cv, &g->reaper_mu, &ts);
        if (g->reaper_stop)
            break;
        pthread_mutex_unlock(&g->reaper_mu);
        (void)gm_group_reclaim(g);
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
    if (!joined(g)) {
        unmap(g);
        return;
    }
    if (is_broken(g) || !grp_lock(g)) {
        unmap(g);
        return;
    }
    struct gm_group_seg *s = g->seg;
    struct gm_group_slot *m = &s->slot[g->slot];
    for (int d = 0; d < GM_GROUP_MAX_DEVICES; d++) {
        ST(&s->dev[d].used, sat_sub(LD(&s->dev[d].used), LD(&m->charged[d])));
        ST(&m->charged[d], 0);
    }
    ST(&m->state, GM_GROUP_SLOT_FREE);
    ST(&m->pid, 0);
    ST(&m->start_ticks, 0);
    int me = g->slot;
    (void)reclaim_dead_locked(g, NULL);
    unsigned others = 0;
    for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++)
        if (i != me && LD(&s->slot[i].state) == GM_GROUP_SLOT_LIVE)
            others++;
    if (others == 0 && !g->keep) {
        ST(&s->hdr.closed, 1u);
        unlink_if_same(g->path, g->fd);
    }
    seg_unlock(s);
    wake_waiters(g);
    unmap(g);
}

void gm_group_forget(struct gm_group *g)
{
    if (g == NULL)
        return;
    g->reaper_on = false;   /* the thread stayed in the parent */
    unmap(g);
}

/* ---- tools --------------------------------------------------------------- */

int gm_group_list(const char *dir, const char *prefix,
                  int (*fn)(void *arg, const char *path, const char *name),
                  void *arg)
{
    if (dir == NULL || dir[0] == '\0')
        dir = "/dev/shm";
    if (prefix == NULL || prefix[0] == '\0')
        prefix = "gpumem";
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    char lead[GM_PREFIX_MAX + 16];
    int ln = snprintf(lead, sizeof lead, "%s.group.", prefix);
    int count = 0;
    struct dirent *e;
    while (ln > 0 && (size_t)ln < sizeof lead && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, lead, (size_t)ln) != 0 ||
            !name_ok(e->d_name + ln, GM_NAME_MAX))
            continue;
        char path[GM_PATH_MAX];
        if (build_path(path, sizeof path, dir, prefix, e->d_name + ln) != 0)
            continue;
        count++;
        if (fn != NULL && fn(arg, path, e->d_name + ln) != 0)
            break;
    }
    closedir(d);
    return count;
}

static bool pread_all(int fd, void *buf, size_t len, off_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, (char *)buf + got, len - got, off + (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        got += (size_t)n;
    }
    return true;
}

/* Reads the whole file between two reads of `gen` (syscalls order the
 * copies); *consistent when both are equal and even. */
static int take_copy(int fd, struct gm_group_seg *c, bool *consistent)
{
    const off_t gen_off = (off_t)offsetof(struct gm_group_hdr, gen);
    *consistent = false;
    for (int t = 0; t < SNAP_TRIES; t++) {
        uint64_t g1, g2;
        if (!pread_all(fd, &g1, sizeof g1, gen_off) ||
            !pread_all(fd, c, sizeof *c, 0) ||
            !pread_all(fd, &g2, sizeof g2, gen_off))
            return -1;
        if (g1 == g2 && (g1 & 1u) == 0) {
            *consistent = true;
            return 0;
        }
        sleep_ns(200000);
    }
    return 0;
}

static void fill_view(const struct gm_group_seg *c, struct gm_group_view *v)
{
    memcpy(v->name, c->hdr.name, sizeof v->name - 1);
    v->name[sizeof v->name - 1] = '\0';
    v->created_ns = c->hdr.created_ns;
    v->repairs = c->hdr.repairs;
    v->reclaims = c->hdr.reclaims;
    v->reclaimed_bytes = c->hdr.reclaimed_bytes;
    v->joins = c->hdr.joins;
    v->waiters = c->hdr.waiters;
    for (int d = 0; d < GM_GROUP_MAX_DEVICES; d++) {
        const struct gm_group_dev *s = &c->dev[d];
        struct gm_group_view_dev *o = &v->dev[d];
        o->present = s->present == 1;
        if (!o->present)
            continue;
        memcpy(o->uuid, s->uuid, sizeof o->uuid);
        o->limit = s->limit;
        o->physical = s->physical;
        o->used = s->used;
        o->peak = s->peak;
        o->reclaimed_bytes = s->reclaimed_bytes;
        v->ndev = (unsigned)d + 1;
    }
    uint64_t total = live_weight(c, NULL);
    for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++) {
        const struct gm_group_slot *s = &c->slot[i];
        if (s->state != GM_GROUP_SLOT_LIVE)
            continue;
        struct gm_group_view_member *o = &v->member[v->nmembers++];
        uint32_t w = clamp_weight(s->weight);
        o->slot = i;
        o->pid = s->pid;
        o->start_ticks = s->start_ticks;
        o->weight = (double)w / GM_GROUP_WEIGHT_ONE;
        o->alive = !member_gone(NULL, s->pid, s->start_ticks, i);
        o->joined_ns = s->joined_ns;
        o->waiting = s->waiting;
        for (int d = 0; d < GM_GROUP_MAX_DEVICES; d++) {
            o->used[d] = s->charged[d];
            o->share[d] = v->dev[d].present && v->dev[d].limit
                ? share_of(v->dev[d].limit, w, total) : 0;
        }
    }
}

/* The NAME of ".../<prefix>.group.<NAME>" into buf; false when the path
 * is not named like a group segment. */
static bool name_from_path(const char *path, char *buf, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *n = strstr(base, ".group.");
    if (n == NULL || n == base)
        return false;
    n += strlen(".group.");
    if (!name_ok(n, GM_NAME_MAX) || strlen(n) >= cap)
        return false;
    snprintf(buf, cap, "%s", n);
    return true;
}

int gm_group_snapshot(const char *path, struct gm_group_view *out,
                      char *err, size_t cap)
{
    struct gm_group_seg copy;  /* 14 KiB: tools' stacks are large */
    memset(out, 0, sizeof *out);
    gm_msgf(err, cap, "%s", "");
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ELOOP)
            gm_msgf(err, cap, "%s is a symbolic link; refusing to follow it",
                    path);
        else
            gm_msgf(err, cap, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    int rc = check_file(fd, path, false, err, cap);
    if (rc == 1)
        gm_msgf(err, cap, "%s is empty (being created?)", path);
    bool consistent = false;
    if (rc == 0 && take_copy(fd, &copy, &consistent) != 0) {
        gm_msgf(err, cap, "%s was truncated while being read", path);
        rc = -1;
    }
    close(fd);
    if (rc != 0)
        return -1;
    if (copy.hdr.initialised != 1) {
        gm_msgf(err, cap, "%s is not initialised (being created?)", path);
        return -1;
    }
    char name[GM_NAME_MAX + 1];
    if (!name_from_path(path, name, sizeof name)) {
        gm_msgf(err, cap, "%s is not named like a group segment", path);
        return -1;
    }
    if (check_hdr(&copy.hdr, name, path, err, cap) != 0)
        return -1;
    fill_view(&copy, out);
    out->consistent = consistent;
    return 0;
}

/* gc on a mapped, validated segment: 1 removed, 0 live members. */
static int gc_mapped(struct gm_group_seg *s, int fd, const char *path,
                     char *err, size_t cap)
{
    if (seg_lock(s, LOCK_WAIT_NS) < 0) {
        gm_msgf(err, cap, "the lock of %s does not respond; left alone",
                path);
        return -1;
    }
    unsigned live = 0;
    for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++) {
        struct gm_group_slot *m = &s->slot[i];
        if (LD(&m->state) == GM_GROUP_SLOT_LIVE &&
            !member_gone(NULL, LD(&m->pid), LD(&m->start_ticks), i))
            live++;
    }
    int rc = 1;
    if (LD(&s->hdr.closed) != 0) {
        rc = 1;  /* already unlinked by its last member */
    } else if (live > 0) {
        gm_msgf(err, cap, "%s has %u live member%s; left alone", path, live,
                live == 1 ? "" : "s");
        rc = 0;
    } else {
        ST(&s->hdr.closed, 1u);
        unlink_if_same(path, fd);
    }
    seg_unlock(s);
    return rc;
}

int gm_group_gc(const char *path, char *err, size_t cap)
{
    gm_msgf(err, cap, "%s", "");
    char name[GM_NAME_MAX + 1];
    if (!name_from_path(path, name, sizeof name)) {
        gm_msgf(err, cap, "%s is not named like a group segment; left alone",
                path);
        return -1;
    }
    struct gm_group_seg *s = NULL;
    int fd = -1;
    int rc = open_existing(path, name, true, &s, &fd, err, cap);
    if (rc == 1)
        return 1;  /* vanished, or an abandoned creation removed */
    if (rc < 0)
        return -1;
    rc = gc_mapped(s, fd, path, err, cap);
    munmap(s, SEG_SIZE);
    close(fd);
    return rc;
}
