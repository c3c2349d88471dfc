/*
 * shim/record/record.c — the recording sink (see record.h).
 *
 * The file grows by windows of WINDOW bytes: each window is reserved with
 * posix_fallocate (so a full disk is an error code here, never a SIGBUS
 * on a store; a window past RLIMIT_FSIZE is not asked for, so never a
 * SIGXFSZ) and mapped shared; a record is a
 * 64-byte store into the window under one lock, which also gives the
 * records of all threads one order (seq). A window left behind stays in
 * the page cache and reaches the file whatever becomes of the process.
 *
 * Invariants: `n` records are in the file after the header; lost records
 * are counted in `lost` (and the header's lost and first_lost_seq
 * rewritten at each loss) and announced by one GM_RO_LOST record when
 * storing resumes; the header's count and CLOSED flag are written only by
 * gm_rec_close, which also truncates the file to its exact length. A
 * file is never left with records and no header: when the header's block
 * cannot be had the process says so on stderr and records nothing, and
 * the empty file tells gpumem record its records are lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shim/base/clock.h"
#include "shim/base/safefile.h"
#include "shim/base/shmfile.h"
#include "shim/record/record.h"

#define WINDOW (1u << 20)  /* bytes mapped at a time (a multiple of 64) */
#define RETRY_EVERY 256u   /* after a loss, try to grow again every N */
#define CLOSE_WAIT_NS 1000000000ull /* how long gm_rec_close waits */

int gm_rec_on;

/* The lock: the holder's thread id, 0 when free. Not a mutex, so that a
 * thread can tell it holds it already (a signal handler that interrupted
 * a record: its record is dropped and counted in sig_lost; its exit()
 * leaves the section unclosed), and gm_rec_close can give up waiting. */
static int rec_owner;
static uint64_t sig_lost;           /* dropped in a handler, not yet counted */
static char rec_dir[4096];
static int rec_fd = -1;
static int rec_failed;              /* the file could not be opened */
static uint64_t rec_dev, rec_ino;   /* the file rec_fd was opened on */
static char rec_path[sizeof rec_dir + 64]; /* and its name */
static unsigned char *win;          /* mapping of [win_off, win_off+WINDOW) */
static uint64_t win_off;
static uint64_t n;                  /* records stored */
static uint64_t seq;                /* records made (stored or lost) */
static uint64_t lost, first_lost, pending_lost, since_try;
static uint64_t start_mono, start_real;
static uint32_t start_ppid;

/* Whether fd is the file the recording opened (device and inode saved at
 * the open). */
static bool names_file(int fd)
{
    struct stat st;
    return fd >= 0 && rec_ino != 0 && fstat(fd, &st) == 0 &&
           (uint64_t)st.st_dev == rec_dev && (uint64_t)st.st_ino == rec_ino;
}

/* Whether rec_fd still is the recording's file: a program that closed
 * every descriptor may have opened its own under the number (the group
 * code's gm_grpi_fd_ours does the same). When it is not, the file is
 * opened again by its name (never following a link), and kept when it is
 * still the same file: the old number, maybe the program's file now, is
 * never touched, and the mapping of the window, which outlives its
 * descriptor, goes on. When the file is gone or another, recording stops,
 * without a word on stderr (which may be the program's file too): the
 * section stays unclosed (records already in the mapping are in the
 * file), what follows is not recorded. */
static bool fd_ours(void)
{
    if (names_file(rec_fd))
        return true;
    if (rec_ino != 0 && rec_path[0] != '\0') {
        int fd = open(rec_path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (names_file(fd)) {
            rec_fd = fd;
            return true;
        }
        if (fd >= 0)
            close(fd);
    }
    if (win != NULL)
        munmap(win, WINDOW);
    win = NULL;
    rec_fd = -1;
    rec_failed = 1;
    __atomic_store_n(&gm_rec_on, 0, __ATOMIC_RELAXED);
    return false;
}

/* Write the header; whether it reached the file whole. */
static bool put_header(uint32_t flags)
{
    if (!fd_ours())
        return false;
    struct gm_rec_header h = {
        .magic = GM_REC_MAGIC, .version = GM_REC_VERSION,
        .header_size = sizeof h, .record_size = GM_REC_SIZE,
        .pid = (uint32_t)getpid(), .ppid = start_ppid,
        .flags = flags, .start_ns = start_real,
        .count = (flags & GM_REC_F_CLOSED) ? n : 0, .lost = lost,
        .first_lost_seq = lost ? first_lost : 0,
    };
    return pwrite(rec_fd, &h, sizeof h, 0) == (ssize_t)sizeof h;
}

enum { LK_TAKEN, LK_MINE, LK_BUSY };

/* Take the lock; wait at most wait_ns (0: as long as it takes). */
static int lock_take(uint64_t wait_ns)
{
    int me = (int)gm_thread_id();
    uint64_t since = 0;
    for (unsigned spins = 0;; spins++) {
        int cur = 0;
        if (__atomic_compare_exchange_n(&rec_owner, &cur, me, false,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return LK_TAKEN;
        if (cur == me)
            return LK_MINE;
        if (spins < 100)
            continue;
        sched_yield();
        if (wait_ns == 0 || spins % 64 != 0)
            continue;
        uint64_t now = gm_clock_monotonic_ns();
        if (since == 0)
            since = now;
        else if (now - since > wait_ns)
            return LK_BUSY;
    }
}

static void lock_drop(void)
{
    __atomic_store_n(&rec_owner, 0, __ATOMIC_RELEASE);
}

/* The losses into the header as they happen, so that a section never
 * closed (killed) still says them. */
static void put_lost(void)
{
    if (!fd_ours())
        return;
    uint64_t v[2] = { lost, first_lost };
    (void)!pwrite(rec_fd, v, sizeof v,
                  (off_t)offsetof(struct gm_rec_header, lost));
}

/* Open DIR/<pid>.<k>.gmr, new (O_EXCL: an exec'd image of the same pid
 * takes the next k; a planted file or link is never written). */
static int open_file(void)
{
    char *path = rec_path;
    for (unsigned k = 0; k < 1000; k++) {
        snprintf(path, sizeof rec_path, "%s/%ld.%u.gmr", rec_dir,
                 (long)getpid(), k);
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
                      O_CLOEXEC, 0600);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST)
            break;
    }
    path[0] = '\0';
    return -1;
}

/* Say on stderr why this process is not recorded (what, in which path,
 * the error) and give the recording up. */
static int give_up(const char *what, const char *path, int err)
{
    char msg[sizeof rec_path + 200];
    int k = snprintf(msg, sizeof msg, "gpumem: GPUMEM_RECORD: cannot %s "
                     "%s: %s; this process is not recorded\n", what, path,
                     strerror(err));
    if (k > 0)
        (void)gm_write_all(STDERR_FILENO, msg,
                           (size_t)k < sizeof msg ? (size_t)k
                                                  : sizeof msg - 1);
    rec_failed = 1;
    return -1;
}

/* Reserve the header's block and write it: a file left without one
 * (full directory, file size limit) is one a reader names as a process
 * whose records are lost. Never past RLIMIT_FSIZE (no SIGXFSZ). */
static int first_header(void)
{
    int err = EFBIG;
    if (!gm_shm_fsize_over(sizeof(struct gm_rec_header))) {
        err = posix_fallocate(rec_fd, 0, sizeof(struct gm_rec_header));
        errno = 0;
        if (err == 0 && put_header(0))
            return 0;
        if (err == 0)
            err = errno != 0 ? errno : EIO;
    }
    close(rec_fd);
    rec_fd = -1;
    return give_up("write the header of", rec_path, err);
}

static int start_file(void)
{
    rec_fd = open_file();
    if (rec_fd < 0)
        return give_up("create a file in", rec_dir, errno);
    struct stat st;
    rec_dev = rec_ino = 0;
    if (fstat(rec_fd, &st) == 0) {
        rec_dev = (uint64_t)st.st_dev;
        rec_ino = (uint64_t)st.st_ino;
    }
    start_ppid = (uint32_t)getppid();
    start_mono = gm_clock_monotonic_ns();
    start_real = gm_clock_realtime_ns();
    n = seq = lost = first_lost = pending_lost = since_try = 0;
    win = NULL;
    win_off = 0;
    return first_header();
}

/* Map the window holding file offset `off`; NULL when it cannot be had. */
static int map_window(uint64_t off)
{
    uint64_t base = off - off % WINDOW;
    if (win != NULL) {
        munmap(win, WINDOW);
        win = NULL;
    }
    if (!fd_ours())
        return -1;
    /* Past RLIMIT_FSIZE, posix_fallocate would raise SIGXFSZ (by default
     * fatal): a window that would pass the limit is never asked for. */
    if (gm_shm_fsize_over((size_t)(base + WINDOW)) ||
        posix_fallocate(rec_fd, (off_t)base, WINDOW) != 0)
        return -1;
    void *p = mmap(NULL, WINDOW, PROT_READ | PROT_WRITE, MAP_SHARED, rec_fd,
                   (off_t)base);
    if (p == MAP_FAILED)
        return -1;
    win = p;
    win_off = base;
    return 0;
}

/* A slot for the next record, or NULL (counted lost by the caller). */
static struct gm_rec *slot(void)
{
    uint64_t off = sizeof(struct gm_rec_header) + n * GM_REC_SIZE;
    if (win != NULL && off >= win_off && off < win_off + WINDOW)
        return (struct gm_rec *)(win + (off - win_off));
    if (pending_lost && since_try++ % RETRY_EVERY != 0)
        return NULL;
    if (map_window(off) != 0)
        return NULL;
    return (struct gm_rec *)(win + (off - win_off));
}

static void store(const struct gm_rec *r)
{
    uint64_t dropped = __atomic_exchange_n(&sig_lost, 0, __ATOMIC_RELAXED);
    if (dropped) {
        if (lost == 0)
            first_lost = seq + 1;
        seq += dropped;
        lost += dropped;
        pending_lost += dropped;
        put_lost();
    }
    seq++;
    if (pending_lost) {
        struct gm_rec *s = slot();
        if (s == NULL)
            goto lose;
        struct gm_rec l = { .seq = seq, .t_ns = r->t_ns, .size = pending_lost,
                            .addr = first_lost, .op = GM_RO_LOST,
                            .dev = 255 };
        *s = l;
        n++;
        seq++;
        pending_lost = 0;
    }
    struct gm_rec *s = slot();
    if (s == NULL)
        goto lose;
    *s = *r;
    s->seq = seq;
    n++;
    return;
lose:
    if (lost == 0)
        first_lost = seq;
    lost++;
    pending_lost++;
    put_lost();
}

int gm_rec_open(const char *dir, char *err, size_t errcap)
{
    struct stat st;
    if (dir == NULL || dir[0] == '\0')
        return 0;
    if (strlen(dir) >= sizeof rec_dir) {
        snprintf(err, errcap, "GPUMEM_RECORD: the path is too long");
        return -1;
    }
    int rc = lstat(dir, &st);
    if (rc != 0 || !S_ISDIR(st.st_mode)) {
        const char *what = rc != 0 ? strerror(errno)
                         : S_ISLNK(st.st_mode) ? "a symbolic link, never "
                                                 "followed"
                                               : "a file of another kind";
        snprintf(err, errcap, "GPUMEM_RECORD='%s' is not a directory: %s; "
                 "use an existing directory of yours, mode 0700 (gpumem "
                 "record makes one)", dir, what);
        return -1;
    }
    if (st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
        snprintf(err, errcap, "GPUMEM_RECORD='%s' is writable by others or "
                 "not ours; use a private directory (mode 0700)", dir);
        return -1;
    }
    memcpy(rec_dir, dir, strlen(dir) + 1);
    rec_fd = -1;
    rec_failed = 0;
    __atomic_store_n(&gm_rec_on, 1, __ATOMIC_RELAXED);
    return 0;
}

void gm_rec_put(unsigned op, unsigned flags, int dev, uint64_t size,
                uint64_t addr, uint64_t aux, uint64_t aux2, uint32_t rc)
{
    struct gm_rec r = {
        .size = size, .addr = addr, .aux = aux, .aux2 = aux2, .rc = rc,
        .tid = gm_thread_id(), .op = (uint16_t)op,
        .dev = dev < 0 || dev > 254 ? 255 : (uint8_t)dev,
        .flags = (uint8_t)flags,
    };
    if (lock_take(0) == LK_MINE) {
        /* A handler that interrupted this thread's record: the state is
         * half updated; the record is counted lost by the next store. */
        if (rec_fd >= 0)
            __atomic_fetch_add(&sig_lost, 1, __ATOMIC_RELAXED);
        return;
    }
    if (!__atomic_load_n(&gm_rec_on, __ATOMIC_RELAXED) ||
        (rec_fd < 0 && (rec_failed || start_file() != 0))) {
        lock_drop();
        return;
    }
    r.t_ns = gm_clock_monotonic_ns() - start_mono;
    store(&r);
    lock_drop();
}

void gm_rec_close(void)
{
    /* Never waits long: when the lock is this thread's (exit() from a
     * handler that interrupted a record) or its holder does not let it go
     * within CLOSE_WAIT_NS, the section is left unclosed, as after a
     * crash (readers count its records). */
    if (lock_take(CLOSE_WAIT_NS) != LK_TAKEN) {
        __atomic_store_n(&gm_rec_on, 0, __ATOMIC_RELAXED);
        return;
    }
    if (rec_fd >= 0 && fd_ours()) {
        if (win != NULL)
            munmap(win, WINDOW);
        win = NULL;
        uint64_t len = sizeof(struct gm_rec_header) + n * GM_REC_SIZE;
        (void)!ftruncate(rec_fd, (off_t)len);
        (void)put_header(GM_REC_F_CLOSED); /* not written: left unclosed */
        close(rec_fd);
        rec_fd = -1;
    }
    __atomic_store_n(&gm_rec_on, 0, __ATOMIC_RELAXED);
    lock_drop();
}

void gm_rec_fork_child(void)
{
    /* The parent's mapping and descriptor are the parent's: drop ours
     * without touching the file. The lock may have been held by a thread
     * that does not exist here. */
    if (win != NULL)
        munmap(win, WINDOW);
    win = NULL;
    /* Only while the number still names the recording: a program that
     * closed it may have a file of its own there. */
    if (names_file(rec_fd))
        close(rec_fd);
    rec_fd = -1;
    rec_failed = 0;
    sig_lost = 0;
    __atomic_store_n(&rec_owner, 0, __ATOMIC_RELAXED);
}
