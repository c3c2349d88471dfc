/*
 * shim/group/segment.c — the group segment as a file: creating it,
 * opening and validating an existing one (owner, mode, size, magic, ABI,
 * name), its lock with the take-over from a gone holder, and the
 * lock-free read side used by the tools (list, snapshot, gc).
 *
 * Invariants: a file is used, repaired or unlinked only after it passed
 * every check, and never unlinked when its magic is another kind's (an
 * uninitialised file is removed only when its magic is 0 or ours); the
 * lock's writers keep `gen` odd while fields change, so a reader's copy is
 * consistent when `gen` was even and equal before and after it
 * (take_copy); no wait on the lock lasts longer than LOCK_WAIT_NS.
 */
#include "shim/group/group_int.h"

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
#include "shim/base/clock.h"
#include "shim/base/msg.h"
#include "shim/base/safefile.h"
#include "shim/base/shmfile.h"

bool gm_grpi_name_ok(const char *s, size_t max)
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

/* ---- the lock ------------------------------------------------------------ */

uint64_t gm_grpi_charged_sum(const struct gm_group_seg *s, int d)
{
    uint64_t sum = 0;
    for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++)
        if (LD(&s->slot[i].state) == GM_GROUP_SLOT_LIVE)
            sum = sat_add(sum, LD(&s->slot[i].charged[d]));
    return sum;
}

/* After a member died holding the lock: the live mask and every device's
 * `used` are recomputed from the slots (they are authoritative; a death
 * between the stores of an update leaves them apart). */
static void repair_locked(struct gm_group_seg *s)
{
    uint64_t live = 0;
    for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++)
        if (LD(&s->slot[i].state) == GM_GROUP_SLOT_LIVE)
            live |= 1ull << i;
    ST(&s->hdr.live_mask, live);
    for (int d = 0; d < GM_GROUP_MAX_DEVICES; d++) {
        uint64_t sum = gm_grpi_charged_sum(s, d);
        ST(&s->dev[d].used, sum);
        gm_grpi_raise_peak(&s->dev[d].peak, sum);
    }
    ST(&s->hdr.repairs, LD(&s->hdr.repairs) + 1);
}

bool gm_grpi_used_off(const struct gm_group_seg *s)
{
    for (int d = 0; d < GM_GROUP_MAX_DEVICES; d++)
        if (LD(&s->dev[d].used) != gm_grpi_charged_sum(s, d))
            return true;
    return false;
}

bool gm_grpi_fix_used_locked(struct gm_group_seg *s)
{
    if (!gm_grpi_used_off(s))
        return false;
    repair_locked(s);
    return true;
}

/* The lock is a word of the segment's own (GM_GROUP_LOCK_*), not a C
 * library's mutex: a robust mutex keeps its holder's robust-list links in
 * the shared file, and a same-user process that zeroes or rewrites them
 * makes the holder's pthread_mutex_unlock write through them (a member
 * crashed that way). Nothing read from the word is ever followed: it only
 * names a holder, whose liveness this file's locks tell. */

#define LOCK_ASK_FIRST_NS 1000000ull    /* a holder is asked after 1 ms */
#define LOCK_ASK_EVERY_NS 10000000ull   /* then every 10 ms */
#define OUTSIDER_NAP_NS 200000ull       /* between tries for its byte */

/* The segment whose lock this thread holds, or is taking or giving back,
 * and the holder's tid: a thread interrupted there by a signal whose
 * handler comes back into the group (leave from exit(), a reservation)
 * must never wait on itself. With it, the word this thread stored when it
 * took the lock and (plus one) the descriptor through which it holds the
 * outsider byte (0: none). */
static __thread const struct gm_group_seg *t_held
    __attribute__((tls_model("initial-exec")));
static __thread pid_t t_held_tid __attribute__((tls_model("initial-exec")));
static __thread uint32_t t_word __attribute__((tls_model("initial-exec")));
static __thread int t_out_fd __attribute__((tls_model("initial-exec")));

bool gm_grpi_seg_held(const struct gm_group_seg *s)
{
    return s != NULL && __atomic_load_n(&t_held, __ATOMIC_RELAXED) == s &&
           t_held_tid == gm_grpi_gettid();
}

/* The kernel's id of the calling thread (cached per thread, reset in a
 * fork child: shim/base/clock.h). */
pid_t gm_grpi_gettid(void)
{
    return (pid_t)gm_thread_id();
}

static void outsider_arg(struct flock *l, short type)
{
    memset(l, 0, sizeof *l);   /* the OFD commands want l_pid 0 */
    l->l_type = type;
    l->l_whence = SEEK_SET;
    l->l_start = (off_t)GM_GROUP_OUTSIDER_LOCK_OFF;
    l->l_len = 1;
}

/* Takes the outsider byte through fd by `end`: 1 taken, 0 not taken
 * because this file system has no such locks (EINVAL, ENOSYS,
 * EOPNOTSUPP: the lock is then taken without it, and such a holder is
 * never found gone), -1 another outsider kept it past `end` (or locks
 * failed otherwise: the word is never held without the byte where the
 * byte exists). */
static int take_outsider_byte(int fd, uint64_t end)
{
    if (fd < 0)
        return 0;
    for (;;) {
        struct flock l;
        outsider_arg(&l, F_WRLCK);
        if (fcntl(fd, F_OFD_SETLK, &l) == 0)
            return 1;
        if (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)
            return 0;   /* no such locks here */
        if (errno != EAGAIN && errno != EACCES && errno != EINTR &&
            errno != ENOLCK)
            return -1;  /* never hold the word without the byte */
        if (gm_clock_monotonic_ns() >= end)
            return -1;
        sleep_ns(OUTSIDER_NAP_NS);
    }
}

static void drop_outsider_byte(int fd)
{
    struct flock l;
    outsider_arg(&l, F_UNLCK);
    (void)fcntl(fd, F_OFD_SETLK, &l);
}

/* Whether some other open file description holds the outsider byte: 1,
 * 0, -1 unknown. */
static int outsider_byte_held(int fd)
{
    struct flock l;
    if (fd < 0)
        return -1;
    outsider_arg(&l, F_WRLCK);
    if (fcntl(fd, F_OFD_GETLK, &l) != 0)
        return -1;
    return l.l_type != F_UNLCK;
}

/* Whether the holder that word w names is gone (asked through fd, -1:
 * cannot ask). `slot` is the asker's (-1: an outsider), `out_mine`
 * whether the asker holds the outsider byte (then an outsider named by
 * the word can only be a dead one). A name that is neither a slot nor an
 * outsider (a foreign write), our own slot (another of our threads, or a
 * forgery) and whatever cannot be asked count as alive: the wait then
 * ends at its bound. */
static bool holder_gone(const struct gm_group_seg *s, int fd, int slot,
                        bool out_mine, uint32_t w)
{
    uint32_t h = w & GM_GROUP_LOCK_HOLDER;
    if (h == GM_GROUP_LOCK_OUTSIDER)
        return out_mine || outsider_byte_held(fd) == 0;
    if (h == 0 || h > GM_GROUP_MAX_MEMBERS || (int)h - 1 == slot)
        return false;
    int k = (int)h - 1;
    int held = gm_grpi_live_lock_held(fd, k);
    if (held == 0)
        return true;
    /* Held (by the member, or by a child that kept its open file after
     * the member died), or not asked (no descriptor: the file was
     * removed, or none was left to open): its pid tells. A slot no longer
     * LIVE is one its member is leaving, inside the lock. */
    const struct gm_group_slot *m = &s->slot[k];
    return LD(&m->state) == GM_GROUP_SLOT_LIVE &&
           gm_grpi_member_gone_seen(-1, LD(&s->hdr.pidns), LD(&m->pid),
                                    LD(&m->start_ticks), k);
}

/* The word that takes the lock over from `old` for holder `me`. */
static uint32_t taken_word(uint32_t old, uint32_t me)
{
    return ((old & ~(GM_GROUP_LOCK_HOLDER | GM_GROUP_LOCK_WAITERS)) +
            GM_GROUP_LOCK_TAKEN) | me;
}

/* The word from *old to w, remembered as this thread's when it took
 * (acquire: pairs with the release in gm_grpi_seg_unlock); *old is the
 * word found when it did not. */
static inline bool try_take(uint32_t *word, uint32_t *old, uint32_t w)
{
    if (!__atomic_compare_exchange_n(word, old, w, false, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED))
        return false;
    t_word = w;
    return true;
}

struct asker {
    struct gm_group_seg *s;
    int fd;                     /* the file's descriptor, for its locks */
    int slot;                   /* -1: an outsider */
    bool out_mine;              /* holds the outsider byte */
    const struct gm_group *g;   /* NULL (fd is asked), or the member */
};

/* Sleeps on the word while it reads `w` (with the waiters bit), at most
 * `ns`. A wake-up, a change, a signal or the end all return. */
static void sleep_on_word(uint32_t *word, uint32_t w, uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / NSEC), (long)(ns % NSEC) };
    (void)syscall(SYS_futex, word, FUTEX_WAIT, w, &ts, NULL, 0);
}

/* Takes the word by `end` (0: LOCK_WAIT_NS after the first try that
 * finds it held; the clock is read only then): 0, 1 when it was taken
 * over from a gone holder, -1 when the holder kept it (or seemed to)
 * until `end`. */
static int take_word(const struct asker *a, uint32_t me, uint64_t end)
{
    uint32_t *word = &a->s->hdr.lock.word;
    uint32_t old = __atomic_load_n(word, __ATOMIC_RELAXED);
    uint32_t slept = 0;   /* the waiters bit once we slept: others may */
    uint64_t ask = 0;
    bool asked = false;   /* the holder was asked about at least once */
    for (;;) {
        if ((old & GM_GROUP_LOCK_HOLDER) == 0) {
            if (try_take(word, &old, taken_word(old, me) | slept))
                return 0;
            continue;
        }
        uint64_t now = gm_clock_monotonic_ns();
        if (end == 0)
            end = now + LOCK_WAIT_NS;   /* the wait starts at the first miss */
        if (ask == 0)
            ask = now + LOCK_ASK_FIRST_NS;
        if (now >= ask) {
            /* A member asks through a descriptor of its own, opened for
             * the question (never one whose number the program reused). */
            int fd = a->g != NULL ? gm_grpi_probe_open(a->g) : a->fd;
            bool gone = holder_gone(a->s, fd, a->slot, a->out_mine, old);
            if (a->g != NULL && fd >= 0)
                close(fd);
            asked = true;
            if (gone) {
                if (try_take(word, &old, taken_word(old, me) |
                                             (old & GM_GROUP_LOCK_WAITERS)))
                    return 1;
                continue;
            }
            ask = now + LOCK_ASK_EVERY_NS;
        }
        /* Never given up before the holder was asked about once (an
         * outsider's byte may have taken most of the bound). */
        if (now >= end && asked)
            return -1;
        if ((old & GM_GROUP_LOCK_WAITERS) == 0 &&
            !__atomic_compare_exchange_n(word, &old,
                                         old | GM_GROUP_LOCK_WAITERS, false,
                                         __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            continue;
        slept = GM_GROUP_LOCK_WAITERS;
        uint64_t until = asked && end < ask ? end : ask;
        sleep_on_word(word, old | GM_GROUP_LOCK_WAITERS,
                      until > now ? until - now : 0);
        old = __atomic_load_n(word, __ATOMIC_RELAXED);
    }
}

static void clear_held(void)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&t_held, NULL, __ATOMIC_RELAXED);
}

/* Writers' half of the seqlock, once the lock is had: gen odd before any
 * field changes, by a release fence after the increment. A gone writer
 * may have left it odd already. Then the repair after a take-over (rc
 * 1). */
static inline int entered(struct gm_group_seg *s, int rc)
{
    if ((LD(&s->hdr.gen) & 1u) == 0) {
#if defined(__SANITIZE_THREAD__)
        /* ThreadSanitizer refuses fences; it orders by the RMW. */
        __atomic_fetch_add(&s->hdr.gen, 1u, __ATOMIC_ACQ_REL);
#else
        __atomic_fetch_add(&s->hdr.gen, 1u, __ATOMIC_RELAXED);
        /* The odd gen before every field store that follows (pairs with
         * the readers' acquire fence in take_copy and peek_once). */
        __atomic_thread_fence(__ATOMIC_RELEASE);
#endif
    }
    if (rc == 1)
        repair_locked(s);
    return rc;
}

/* Everything but a member's lock found free: an outsider's byte first,
 * then waiting for the word. */
static __attribute__((noinline)) int
seg_lock_slow(struct gm_group_seg *s, int fd, int slot,
              const struct gm_group *g)
{
    uint64_t end = 0;
    struct asker a = { s, fd, slot, false, g };
    uint32_t me = (uint32_t)slot + 1;
    if (slot < 0 || slot >= GM_GROUP_MAX_MEMBERS) {
        end = gm_clock_monotonic_ns() + LOCK_WAIT_NS;
        int out = take_outsider_byte(fd, end);
        if (out < 0) {
            clear_held();
            return -1;
        }
        a.slot = -1;
        a.out_mine = out == 1;
        me = GM_GROUP_LOCK_OUTSIDER;
    }
    int rc = take_word(&a, me, end);
    if (rc < 0) {
        if (a.out_mine)
            drop_outsider_byte(fd);
        clear_held();
        return -1;
    }
    t_out_fd = a.out_mine ? fd + 1 : 0;
    return entered(s, rc);
}

/* Takes the lock, waiting at most LOCK_WAIT_NS, for the member of `slot`
 * or (slot -1) an outsider, fd being the caller's descriptor of the file
 * (g, when given, its owner: the holder's liveness is then asked through
 * a descriptor opened for it, not fd, whose number the program may have
 * reused). Returns 0, 1 when it was taken over from a gone holder (the
 * state repaired), -1 when it did not come free in time. */
int gm_grpi_seg_lock(struct gm_group_seg *s, int fd, int slot,
                     const struct gm_group *g)
{
    if (gm_grpi_seg_held(s))
        return -1;   /* ours already: waiting would wait on ourselves */
    t_held_tid = gm_grpi_gettid();
    __atomic_store_n(&t_held, s, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    /* A member finding the word free: one compare-and-swap. */
    uint32_t *word = &s->hdr.lock.word;
    uint32_t old = __atomic_load_n(word, __ATOMIC_RELAXED);
    if (slot >= 0 && slot < GM_GROUP_MAX_MEMBERS &&
        (old & GM_GROUP_LOCK_HOLDER) == 0) {
        if (try_take(word, &old, taken_word(old, (uint32_t)slot + 1))) {
            t_out_fd = 0;
            return entered(s, 0);
        }
    }
    return seg_lock_slow(s, fd, slot, g);
}

void gm_grpi_seg_unlock(struct gm_group_seg *s)
{
    /* Even again: publishes the fields stored since gm_grpi_seg_lock. */
    __atomic_store_n(&s->hdr.gen, (LD(&s->hdr.gen) | 1u) + 1,
                     __ATOMIC_RELEASE);
    uint32_t *word = &s->hdr.lock.word;
    uint32_t cur = __atomic_load_n(word, __ATOMIC_RELAXED);
    /* Only the word we stored is given back: one taken over from us (our
     * liveness lock was lost) or rewritten by another process is left. */
    while ((cur & ~GM_GROUP_LOCK_WAITERS) ==
           (t_word & ~GM_GROUP_LOCK_WAITERS)) {
        uint32_t freed = cur & ~(GM_GROUP_LOCK_HOLDER | GM_GROUP_LOCK_WAITERS);
        /* Release: pairs with the acquire in take_word. */
        if (__atomic_compare_exchange_n(word, &cur, freed, false,
                                        __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
            if (cur & GM_GROUP_LOCK_WAITERS)
                (void)syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
            break;
        }
    }
    int ofd = t_out_fd - 1;
    t_out_fd = 0;
    if (ofd >= 0)
        drop_outsider_byte(ofd);
    clear_held();
}

/* ---- segment creation and validation ------------------------------------- */

/* The mapping and its descriptor become g's; the descriptor's file is
 * remembered so that a number the program closed and reused for another
 * file is never closed or unlocked by us (gm_grpi_fd_ours). */
void gm_grpi_adopt(struct gm_group *g, struct gm_group_seg *mem, int fd)
{
    struct stat st;
    g->seg = mem;
    g->len = SEG_SIZE;
    g->fd = fd;
    g->file_dev = g->file_ino = 0;
    if (fstat(fd, &st) == 0) {
        g->file_dev = (uint64_t)st.st_dev;
        g->file_ino = (uint64_t)st.st_ino;
    }
}

/* Whether g->fd still is the segment's descriptor. */
bool gm_grpi_fd_ours(const struct gm_group *g)
{
    struct stat st;
    return g->fd >= 0 && fstat(g->fd, &st) == 0 && g->file_ino != 0 &&
           (uint64_t)st.st_dev == g->file_dev &&
           (uint64_t)st.st_ino == g->file_ino;
}

/* A descriptor of our own on the segment, to test the other members'
 * liveness locks (one whose number nobody else can reuse meanwhile), or -1
 * when the path holds another file now (then only pids are tested). */
int gm_grpi_probe_open(const struct gm_group *g)
{
    int fd = open(g->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_dev != g->file_dev ||
        (uint64_t)st.st_ino != g->file_ino) {
        close(fd);
        return -1;
    }
    return fd;
}

void gm_grpi_unlink_if_same(const char *path, int fd)
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
        LD(&h->total_size) != SEG_SIZE ||
        LD(&h->lock_size) != sizeof h->lock.word) {
        gm_msgf(msg, cap, "%s has an unexpected layout; refusing it", path);
        return -1;
    }
    char n[sizeof h->name];
    for (size_t i = 0; i < sizeof n; i++)
        n[i] = LD(&h->name[i]);
    if (memchr(n, '\0', sizeof n) == NULL || !gm_grpi_name_ok(n, GM_NAME_MAX) ||
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
    h->lock.word = 0;
    h->magic = GM_GROUP_MAGIC;
    h->version = GM_GROUP_VERSION;
    h->hdr_size = sizeof(struct gm_group_hdr);
    h->dev_size = sizeof(struct gm_group_dev);
    h->slot_size = sizeof(struct gm_group_slot);
    h->max_devices = GM_GROUP_MAX_DEVICES;
    h->max_members = GM_GROUP_MAX_MEMBERS;
    h->total_size = SEG_SIZE;
    h->lock_size = sizeof h->lock.word;
    h->pidns = gm_grpi_pidns_inode();
    h->created_ns = gm_clock_realtime_ns();
    snprintf(h->name, sizeof h->name, "%s", name);
    /* Last: pairs with the acquire load in wait_initialised. */
    __atomic_store_n(&h->initialised, 1u, __ATOMIC_RELEASE);
    return 0;
}

/* Creates the segment. Returns 0 (g->seg mapped), 1 when it exists, -1. */
int gm_grpi_create_seg(struct gm_group *g, char *msg, size_t cap)
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
        gm_msgf(msg, cap, "cannot size %s to %zu bytes: %s%s", g->path,
                (size_t)SEG_SIZE, strerror(e),
                e == ENOSPC ? " (its directory is full; free space there "
                              "or set GPUMEM_SHM_DIR to another)" :
                e == EFBIG ? " (the file size limit, RLIMIT_FSIZE, is "
                             "below it)" : "");
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
    gm_grpi_adopt(g, mem, fd);
    return 0;
}

/* The file is empty or uninitialised past the wait: when its magic is 0
 * or ours (what a creator stores) and nobody holds the creator's lock, the
 * creator died; remove the file (returns 1: retry). Otherwise -1 (msg):
 * a file of another kind is never removed. */
static int stale_or_busy(int fd, const char *path, uint64_t magic, char *msg,
                         size_t cap)
{
    if (magic != 0 && magic != GM_GROUP_MAGIC) {
        gm_msgf(msg, cap, "%s is not a gpumem group segment (bad magic); "
                "refusing it", path);
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
        gm_grpi_unlink_if_same(path, fd);
        return 1;
    }
    gm_msgf(msg, cap, "%s is still being created by another process; "
            "giving up", path);
    return -1;
}

/* Opens and validates an existing segment read-write. Returns 0 (mapped
 * into *mem, fd in *fdp), 1 to retry from the start, -1 (msg). */
int gm_grpi_open_existing(const char *path, const char *name, bool ours,
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
        rc = stale_or_busy(fd, path, 0, msg, cap);   /* empty: no magic */
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
        rc = stale_or_busy(fd, path, LD(&s->hdr.magic), msg, cap);
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

/* Drops the mapping and its descriptor (both exist together; a number
 * that now names another file is not ours to close). Never unlocks: in a
 * fork child the open file, and its liveness lock, are the parent's.
 * A mapping whose lock this thread still holds (a signal handler left the
 * group from inside its critical section) is kept, with its descriptor:
 * the interrupted critical section may still write into it, and the
 * descriptor's liveness lock says the holder is alive until the process
 * ends; then the next member takes the lock over and repairs it. */
void gm_grpi_unmap(struct gm_group *g)
{
    if (g->seg != NULL && gm_grpi_seg_held(g->seg)) {
        /* kept until the process ends (see above) */
    } else if (g->seg != NULL) {
        if (gm_grpi_fd_ours(g))
            close(g->fd);
        munmap(g->seg, g->len);
    }
    g->seg = NULL;
    g->fd = -1;
    g->slot = -1;
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
    int ln = snprintf(lead, sizeof lead, "%s.group@", prefix);
    int count = 0;
    struct dirent *e;
    while (ln > 0 && (size_t)ln < sizeof lead && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, lead, (size_t)ln) != 0 ||
            !gm_grpi_name_ok(e->d_name + ln, GM_NAME_MAX))
            continue;
        char path[GM_PATH_MAX];
        if (gm_grpi_build_path(path, sizeof path, dir, prefix, e->d_name + ln) != 0)
            continue;
        count++;
        if (fn != NULL && fn(arg, path, e->d_name + ln) != 0)
            break;
    }
    closedir(d);
    return count;
}

/* The file's first len bytes into buf between two equal, even readings
 * of `gen` (*consistent), or the last of `tries` copies (200 us apart)
 * when every try straddled an update (each field is still whole). -1 on
 * a short read. The syscalls order the copies. */
static int copy_between_updates(int fd, void *buf, size_t len, int tries,
                                bool *consistent)
{
    const off_t gen_off = (off_t)offsetof(struct gm_group_hdr, gen);
    *consistent = false;
    for (int t = 0; t < tries; t++) {
        uint64_t g1, g2;
        if (!gm_pread_all(fd, &g1, sizeof g1, gen_off) ||
            !gm_pread_all(fd, buf, len, 0) ||
            !gm_pread_all(fd, &g2, sizeof g2, gen_off))
            return -1;
        if (g1 == g2 && (g1 & 1u) == 0) {
            *consistent = true;
            return 0;
        }
        sleep_ns(200000);
    }
    return 0;
}

/* The whole file (the tools' snapshot). */
static int take_copy(int fd, struct gm_group_seg *c, bool *consistent)
{
    return copy_between_updates(fd, c, sizeof *c, SNAP_TRIES, consistent);
}

/* fd: the file the copy came from, for the members' liveness locks. */
static void fill_view(const struct gm_group_seg *c, struct gm_group_view *v,
                      int fd)
{
    memcpy(v->name, c->hdr.name, sizeof v->name - 1);
    v->name[sizeof v->name - 1] = '\0';
    v->pidns = c->hdr.pidns;
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
    uint64_t total = gm_grpi_live_weight_all(c, NULL);
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
        o->alive = !gm_grpi_member_gone_seen(fd, c->hdr.pidns, s->pid,
                                             s->start_ticks, i);
        o->joined_ns = s->joined_ns;
        o->waiting = s->waiting;
        for (int d = 0; d < GM_GROUP_MAX_DEVICES; d++) {
            o->used[d] = s->charged[d];
            o->share[d] = v->dev[d].present && v->dev[d].limit
                ? gm_grpi_share_of(v->dev[d].limit, w, total) : 0;
        }
    }
}

/* The NAME of ".../<prefix>.group@<NAME>" into buf; false when the path
 * is not named like a group segment. Neither prefixes nor names hold an
 * '@', so the last one is the separator. */
static bool name_from_path(const char *path, char *buf, size_t cap)
{
    static const char tag[] = ".group";
    const size_t tn = sizeof tag - 1;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *at = strrchr(base, '@');
    if (at == NULL || (size_t)(at - base) <= tn ||
        memcmp(at - tn, tag, tn) != 0)
        return false;
    const char *n = at + 1;
    if (!gm_grpi_name_ok(n, GM_NAME_MAX) || strlen(n) >= cap)
        return false;
    snprintf(buf, cap, "%s", n);
    return true;
}

/* The header and the device blocks, copied between updates. */
struct card_copy {
    struct gm_group_hdr h;
    struct gm_group_dev dev[GM_GROUP_MAX_DEVICES];
};

static bool take_card_copy(int fd, struct card_copy *c)
{
    /* Few tries: an NVML query waits for it, and a writer that died with
     * `gen` odd would make every try straddle until a member repairs. */
    bool consistent;
    return copy_between_updates(fd, c, sizeof *c, 4, &consistent) == 0;
}

int gm_group_card(const char *dir, const char *prefix, const char *name,
                  const unsigned char uuid[16], uint64_t *limit,
                  uint64_t *used, char *err, size_t cap)
{
    char path[GM_PATH_MAX];
    gm_msgf(err, cap, "%s", "");
    if (dir == NULL || dir[0] == '\0')
        dir = "/dev/shm";
    if (prefix == NULL || prefix[0] == '\0')
        prefix = "gpumem";
    if (!gm_grpi_name_ok(name, GM_NAME_MAX) ||
        gm_grpi_build_path(path, sizeof path, dir, prefix, name) != 0) {
        gm_msgf(err, cap, "no group segment path for \"%s\" in %s",
                name ? name : "", dir);
        return -1;
    }
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        gm_msgf(err, cap, errno == ELOOP ? "%s is a symbolic link; refusing "
                "to follow it" : "cannot open %s", path);
        return -1;
    }
    int rc = check_file(fd, path, true, err, cap);
    struct card_copy c;
    if (rc == 0 && !take_card_copy(fd, &c)) {
        gm_msgf(err, cap, "%s was truncated while being read", path);
        rc = -1;
    }
    if (rc == 0 && c.h.initialised != 1)
        rc = 1;   /* being created: nothing registered yet */
    if (rc == 0 && check_hdr(&c.h, name, path, err, cap) != 0)
        rc = -1;
    close(fd);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    for (int d = 0; d < GM_GROUP_MAX_DEVICES; d++) {
        if (c.dev[d].present != 1 || memcmp(c.dev[d].uuid, uuid, 16) != 0)
            continue;
        *limit = c.dev[d].limit;
        *used = c.dev[d].used;
        return 1;
    }
    return 0;
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
    char name[GM_NAME_MAX + 1];
    if (rc != 0) {
        rc = -1;
    } else if (copy.hdr.initialised != 1) {
        gm_msgf(err, cap, "%s is not initialised (being created?)", path);
        rc = -1;
    } else if (!name_from_path(path, name, sizeof name)) {
        gm_msgf(err, cap, "%s is not named like a group segment", path);
        rc = -1;
    } else if (check_hdr(&copy.hdr, name, path, err, cap) != 0) {
        rc = -1;
    } else {
        fill_view(&copy, out, fd);
        out->consistent = consistent;
    }
    close(fd);
    return rc;
}

/* gc on a mapped, validated segment: 1 removed, 0 live members. */
static int gc_mapped(struct gm_group_seg *s, int fd, const char *path,
                     char *err, size_t cap)
{
    if (gm_grpi_seg_lock(s, fd, -1, NULL) < 0) {
        gm_msgf(err, cap, "the lock of %s does not respond; left alone",
                path);
        return -1;
    }
    unsigned live = 0;
    for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++) {
        struct gm_group_slot *m = &s->slot[i];
        if (LD(&m->state) == GM_GROUP_SLOT_LIVE &&
            !gm_grpi_member_gone_seen(fd, LD(&s->hdr.pidns), LD(&m->pid),
                                      LD(&m->start_ticks), i))
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
        gm_grpi_unlink_if_same(path, fd);
    }
    gm_grpi_seg_unlock(s);
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
    int rc = gm_grpi_open_existing(path, name, true, &s, &fd, err, cap);
    if (rc == 1)
        return 1;  /* vanished, or an abandoned creation removed */
    if (rc < 0)
        return -1;
    rc = gc_mapped(s, fd, path, err, cap);
    munmap(s, SEG_SIZE);
    close(fd);
    return rc;
}
