/*
 * tests/unit/test_group.c — shared budgets (shim/group/) with real
 * processes: members are forked children driven over pipes, so every
 * cross-process path (robust mutex, futex wake-ups, /proc liveness) runs
 * as in production. Covers: the segment file (mode, size, removal), the
 * device table and the mismatched-limit warning, the exact limit edge, the
 * priority rule, a 4-process stress that must never pass the limit and must
 * end at zero, reclaim of SIGKILLed members (on refusal, by the reaper, as
 * zombies), a group whose members all died starting over, pid reuse, lock
 * recovery after members die holding it, waits across processes, the
 * creation race, hostile or truncated segments, the fail-open rule, the
 * device view's lock-free peek (nothing from a damaged or unsettled
 * segment), and the tools' list/snapshot/gc. Then the hardening:
 * liveness through the slot lock (a member that execs is gone, one that
 * closed its descriptors is not), forged or zeroed mutexes (every wait
 * bounded, the group broken), and names that never meet a process
 * segment's (nor is a file of another kind ever removed as stale).
 *
 * Each test uses its own directory under /tmp; children exit with _exit
 * and die with their pipes or, when stuck, with their parent
 * (PR_SET_PDEATHSIG), so a failed assertion leaves nothing running.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim/base/clock.h"
#include "shim/group/group.h"
#include "shim/group/group_int.h"
#include "shim/telemetry/telemetry.h"

__extension__ typedef unsigned __int128 u128;

/* Faults for the outsider byte: while fault_left > 0, a write lock of
 * the outsider byte through F_OFD_SETLK fails with fault_errno (this
 * file's fcntl is the one the group code in this executable calls). */
static int fault_errno, fault_left;

int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    const struct flock *l = arg;
    if (cmd == F_OFD_SETLK && fault_left > 0 && l->l_type == F_WRLCK &&
        l->l_start == (off_t)GM_GROUP_OUTSIDER_LOCK_OFF) {
        fault_left--;
        errno = fault_errno;
        return -1;
    }
    return (int)syscall(SYS_fcntl, fd, cmd, arg);
}

#define PREFIX "gmgrp"
#define PHYS (80ull << 30)
#define MS 1000000ull

static const unsigned char UUID0[16] = { 0xa1, 0x02, 0x03, 0x04, 0x05, 0x06,
                                         0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c,
                                         0x0d, 0x0e, 0x0f, 0x10 };

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/gmgrp.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void seg_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s.group@%s", dir, PREFIX, name);
}

static struct gm_limit bytes_limit(uint64_t b)
{
    return (struct gm_limit){ .kind = GM_LIMIT_BYTES, .bytes = b };
}

static struct gm_group_params params(const char *name, double w, uint64_t l)
{
    return (struct gm_group_params){ .dir = dir, .prefix = PREFIX,
                                     .name = name, .weight = w,
                                     .limit = bytes_limit(l) };
}

/* The documented share: floor(limit * w / W), weights in thousandths. */
static uint64_t share(uint64_t limit, double w, double total)
{
    uint64_t wm = (uint64_t)(w * 1000 + 0.5), tm = (uint64_t)(total * 1000 + 0.5);
    return (uint64_t)((u128)limit * wm / tm);
}

static void join_ok(struct gm_group *g, const struct gm_group_params *p,
                    int *gdev)
{
    char msg[512];
    int rc = gm_group_join(g, p, msg, sizeof msg);
    ck_assert_msg(rc == 0, "join: %s", msg);
    if (gdev != NULL) {
        *gdev = gm_group_device(g, UUID0, PHYS, msg, sizeof msg);
        ck_assert_int_ge(*gdev, 0);
    }
}

static void snap_ok(const char *name, struct gm_group_view *v)
{
    char path[256], err[512];
    seg_path(path, sizeof path, name);
    int rc = gm_group_snapshot(path, v, err, sizeof err);
    ck_assert_msg(rc == 0, "snapshot: %s", err);
}

/* ---- child members driven over pipes ------------------------------------ */

struct cmd { char op; uint64_t a, b; };
struct rep { int64_t ok; uint64_t v; char msg[240]; };

struct kid { pid_t pid; int wr, rd; struct rep join; };

static void put(int fd, const void *p, size_t n)
{
    ck_assert_int_eq(write(fd, p, n), (ssize_t)n);
}

static bool get(int fd, void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

/* Dies with its parent (the test), even when stuck in a call. */
static void die_with_parent(pid_t parent)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(4);
}

/* In a member: forks a child that drops its copy of the membership as the
 * shim's atfork handler does, then lives on. Returns its pid or -1. */
static pid_t fork_forgetting_child(struct gm_group *g)
{
    int done[2];
    if (pipe(done) != 0)
        return -1;
    pid_t me = getpid(), c = fork();
    if (c == 0) {
        die_with_parent(me);
        gm_group_forget(g);
        (void)!write(done[1], "f", 1);
        for (;;)
            pause();
    }
    char x = 0;
    close(done[1]);
    bool ok = c > 0 && read(done[0], &x, 1) == 1;
    close(done[0]);
    return ok ? c : -1;
}

/* Commands: R reserve a; F release a; W wait for a up to b ns (v: ns
 * taken); D reply, sleep b ns, release a; S reserve/release forever;
 * U usage (v: available); L leave and exit (v: whether the descriptor X
 * opened is still open); P start the reaper every a ns; B broken?;
 * C reserve/release sizes up to a for b ns, then reply (ok: broken);
 * X close every descriptor but the pipes and open /dev/null (v: it got
 * the group's old descriptor number); K fork a child that forgets the
 * membership and lives on (v: its pid); E reply, then exec sleep. */
static void kid_main(int rd, int wr, int gate, struct gm_group_params p)
{
    struct gm_group g;
    struct rep r;
    memset(&r, 0, sizeof r);
    int devnull = -1;
    char c;
    if (gate >= 0 && read(gate, &c, 1) < 0)
        _exit(3);
    r.ok = gm_group_join(&g, &p, r.msg, sizeof r.msg);
    int gdev = -1;
    if (r.ok == 0) {
        gdev = gm_group_device(&g, UUID0, PHYS, r.msg, sizeof r.msg);
        r.v = (uint64_t)gdev;
    }
    if (write(wr, &r, sizeof r) != (ssize_t)sizeof r || r.ok != 0)
        _exit(2);
    struct cmd m;
    uint64_t seed = (uint64_t)getpid();
    while (get(rd, &m, sizeof m)) {
        memset(&r, 0, sizeof r);
        if (m.op == 'R') {
            r.ok = gm_group_reserve(&g, gdev, m.a, &r.v);
        } else if (m.op == 'F') {
            gm_group_release(&g, gdev, m.a);
            r.ok = 1;
        } else if (m.op == 'W') {
            uint64_t t0 = gm_clock_monotonic_ns();
            r.ok = gm_group_wait(&g, gdev, m.a, t0 + m.b, NULL);
            r.v = gm_clock_monotonic_ns() - t0;
        } else if (m.op == 'U') {
            struct gm_group_usage u;
            r.ok = gm_group_query(&g, gdev, &u) == 0;
            r.v = u.available;
        } else if (m.op == 'L') {
            gm_group_leave(&g);
            r.ok = 1;
            r.v = devnull >= 0 && fcntl(devnull, F_GETFD) != -1;
        } else if (m.op == 'P') {
            r.ok = gm_group_start_reaper(&g, m.a) == 0;
        } else if (m.op == 'B') {
            r.ok = gm_group_broken(&g);
        } else if (m.op == 'C') {
            uint64_t end = gm_clock_monotonic_ns() + m.b;
            while (gm_clock_monotonic_ns() < end) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                uint64_t sz = 1 + (seed >> 33) % m.a;
                if (gm_group_reserve(&g, gdev, sz, NULL))
                    gm_group_release(&g, gdev, sz);
                r.v++;
            }
            r.ok = gm_group_broken(&g);
        } else if (m.op == 'X') {
            int old = g.fd;
            for (int fd = 3; fd < 1024; fd++)
                if (fd != rd && fd != wr)
                    close(fd);
            devnull = open("/dev/null", O_RDONLY);
            r.ok = devnull >= 0;
            r.v = devnull == old;
        } else if (m.op == 'K') {
            pid_t child = fork_forgetting_child(&g);
            r.ok = child > 0;
            r.v = (uint64_t)child;
        } else if (m.op == 'E') {
            r.ok = 1;
        }
        if (m.op != 'S' && write(wr, &r, sizeof r) != (ssize_t)sizeof r)
            _exit(2);
        if (m.op == 'L')
            _exit(0);
        if (m.op == 'E') {
            execlp("sleep", "sleep", "60", (char *)NULL);
            _exit(9);
        }
        if (m.op == 'D') {
            struct timespec ts = { (time_t)(m.b / 1000000000ull),
                                   (long)(m.b % 1000000000ull) };
            nanosleep(&ts, NULL);
            gm_group_release(&g, gdev, m.a);
        }
        if (m.op == 'S') {
            r.ok = 1;
            if (write(wr, &r, sizeof r) != (ssize_t)sizeof r)
                _exit(2);
            for (;;) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                uint64_t sz = 1 + (seed >> 33) % m.a;
                if (gm_group_reserve(&g, gdev, sz, NULL))
                    gm_group_release(&g, gdev, sz);
            }
        }
    }
    gm_group_leave(&g);
    _exit(0);
}

static struct kid spawn_gated(struct gm_group_params p, int gate)
{
    int down[2], up[2];
    ck_assert_int_eq(pipe(down), 0);
    ck_assert_int_eq(pipe(up), 0);
    pid_t parent = getpid(), pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        die_with_parent(parent);
        /* Keep only our own pipes: other members' pipes held here would
         * delay their end-of-file when this test process dies. */
        for (int fd = 3; fd < 256; fd++)
            if (fd != down[0] && fd != up[1] && fd != gate)
                close(fd);
        kid_main(down[0], up[1], gate, p);
    }
    close(down[0]);
    close(up[1]);
    return (struct kid){ .pid = pid, .wr = down[1], .rd = up[0] };
}

static struct rep kid_reply(struct kid *k)
{
    struct rep r;
    ck_assert_msg(get(k->rd, &r, sizeof r), "member %d died", (int)k->pid);
    return r;
}

/* A reply within ns, or false (the member is stuck). */
static bool reply_within(struct kid *k, struct rep *r, uint64_t ns)
{
    uint64_t end = gm_clock_monotonic_ns() + ns;
    size_t got = 0;
    while (got < sizeof *r) {
        uint64_t now = gm_clock_monotonic_ns();
        if (now >= end)
            return false;
        struct pollfd pf = { .fd = k->rd, .events = POLLIN };
        int n = poll(&pf, 1, (int)((end - now) / MS) + 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return false;
        if (n == 0)
            continue;
        ssize_t x = read(k->rd, (char *)r + got, sizeof *r - got);
        if (x < 0 && errno == EINTR)
            continue;
        if (x <= 0)
            return false;
        got += (size_t)x;
    }
    return true;
}

static struct kid spawn(struct gm_group_params p)
{
    struct kid k = spawn_gated(p, -1);
    k.join = kid_reply(&k);
    ck_assert_msg(k.join.ok == 0, "member join: %s", k.join.msg);
    return k;
}

static struct rep ask(struct kid *k, char op, uint64_t a, uint64_t b)
{
    struct cmd m = { op, a, b };
    put(k->wr, &m, sizeof m);
    return kid_reply(k);
}

static void kid_quit(struct kid *k)
{
    ck_assert_int_eq(ask(k, 'L', 0, 0).ok, 1);
    int st;
    ck_assert_int_eq(waitpid(k->pid, &st, 0), k->pid);
    close(k->wr);
    close(k->rd);
}

static void kid_kill(struct kid *k, bool reap)
{
    kill(k->pid, SIGKILL);
    if (reap)
        ck_assert_int_eq(waitpid(k->pid, NULL, 0), k->pid);
    close(k->wr);
    close(k->rd);
}

/* A process that holds the liveness locks of the slots in `mask` of the
 * segment `name` through its own open file, as live members do, until it
 * is killed. */
static pid_t spawn_holder(const char *name, uint64_t mask)
{
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    pid_t parent = getpid(), pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        die_with_parent(parent);
        char path[256], ok;
        seg_path(path, sizeof path, name);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        ok = fd >= 0;
        for (int i = 0; ok && i < GM_GROUP_MAX_MEMBERS; i++) {
            if (!(mask & (1ull << i)))
                continue;
            struct flock l;
            memset(&l, 0, sizeof l);
            l.l_type = F_WRLCK;
            l.l_whence = SEEK_SET;
            l.l_start = (off_t)GM_GROUP_LIVE_LOCK_OFF(i);
            l.l_len = 1;
            ok = fcntl(fd, F_OFD_SETLK, &l) == 0;
        }
        (void)!write(ready[1], &ok, 1);
        for (;;)
            pause();
    }
    close(ready[1]);
    char ok = 0;
    ck_assert_int_eq(read(ready[0], &ok, 1), 1);
    close(ready[0]);
    ck_assert_msg(ok, "the holder could not lock its slots");
    return pid;
}

static void stop_pid(pid_t pid)
{
    kill(pid, SIGKILL);
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
}

/* ---- reclaim callback ---------------------------------------------------- */

struct seen { int calls, gdev, pid; uint64_t bytes; };

static void on_reclaim(void *arg, int gdev, int pid, uint64_t bytes)
{
    struct seen *s = arg;
    __atomic_store_n(&s->gdev, gdev, __ATOMIC_RELAXED);
    __atomic_store_n(&s->pid, pid, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->bytes, bytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->calls, 1, __ATOMIC_RELEASE);
}

/* ---- the segment --------------------------------------------------------- */

START_TEST(join_creates_private_segment_and_last_leave_removes_it)
{
    mode_t old = umask(0);
    struct gm_group g;
    struct gm_group_params p = params("train", 1.5, 1000);
    int gdev;
    join_ok(&g, &p, &gdev);
    umask(old);
    char path[256];
    seg_path(path, sizeof path, "train");
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_uint_eq(st.st_mode & 07777, 0600);
    ck_assert_uint_eq((uint64_t)st.st_size, sizeof(struct gm_group_seg));
    struct gm_group_view v;
    snap_ok("train", &v);
    ck_assert_str_eq(v.name, "train");
    ck_assert(v.consistent);
    ck_assert_uint_eq(v.nmembers, 1);
    ck_assert_int_eq(v.member[0].pid, (int)getpid());
    ck_assert(v.member[0].alive);
    ck_assert_double_eq_tol(v.member[0].weight, 1.5, 1e-9);
    ck_assert_uint_eq(v.ndev, 1);
    ck_assert_uint_eq(v.dev[0].limit, 1000);
    ck_assert_mem_eq(v.dev[0].uuid, UUID0, 16);
    gm_group_leave(&g);
    ck_assert_int_eq(access(path, F_OK), -1);
    /* keep: the file stays, with no member. */
    p.keep = true;
    join_ok(&g, &p, NULL);
    gm_group_leave(&g);
    snap_ok("train", &v);
    ck_assert_uint_eq(v.nmembers, 0);
}
END_TEST

START_TEST(bad_names_are_refused)
{
    struct gm_group g;
    char msg[256];
    struct gm_group_params p = params("a/b", 1, 10);
    ck_assert_int_eq(gm_group_join(&g, &p, msg, sizeof msg), -1);
    ck_assert_ptr_nonnull(strstr(msg, "invalid group name"));
    p.name = "";
    ck_assert_int_eq(gm_group_join(&g, &p, msg, sizeof msg), -1);
    p = params("ok", 1, 10);
    p.prefix = "../x";
    ck_assert_int_eq(gm_group_join(&g, &p, msg, sizeof msg), -1);
    ck_assert_ptr_nonnull(strstr(msg, "prefix"));
    gm_group_leave(&g);  /* harmless after a failed join */
    /* ... and on a zeroed struct: descriptor 0 stays open. */
    if (fcntl(0, F_GETFD) == -1)
        ck_assert_int_eq(open("/dev/null", O_RDONLY), 0);
    memset(&g, 0, sizeof g);
    gm_group_leave(&g);
    gm_group_forget(&g);
    ck_assert_int_ne(fcntl(0, F_GETFD), -1);
}
END_TEST

START_TEST(device_table_by_uuid)
{
    struct gm_group g;
    struct gm_group_params p = params("devs", 1, 0);
    p.limit = (struct gm_limit){ .kind = GM_LIMIT_PERCENT, .fraction = 0.5 };
    join_ok(&g, &p, NULL);
    char msg[256];
    unsigned char u[16];
    memcpy(u, UUID0, 16);
    for (int d = 0; d < GM_GROUP_MAX_DEVICES; d++) {
        u[15] = (unsigned char)d;
        ck_assert_int_eq(gm_group_device(&g, u, 1000 + (uint64_t)d * 2, msg,
                                         sizeof msg), d);
        ck_assert_str_eq(msg, "");
    }
    u[15] = 3;
    ck_assert_int_eq(gm_group_device(&g, u, 1006, msg, sizeof msg), 3);
    u[15] = 200;
    ck_assert_int_eq(gm_group_device(&g, u, 1000, msg, sizeof msg), -1);
    ck_assert_ptr_nonnull(strstr(msg, "16 devices"));
    struct gm_group_view v;
    snap_ok("devs", &v);
    ck_assert_uint_eq(v.ndev, GM_GROUP_MAX_DEVICES);
    ck_assert_uint_eq(v.dev[5].limit, (1000 + 10) / 2);
    ck_assert_uint_eq(v.dev[5].physical, 1010);
    ck_assert_uint_eq(v.dev[5].uuid[15], 5);
    /* An index that was never registered is refused. */
    ck_assert(!gm_group_reserve(&g, GM_GROUP_MAX_DEVICES, 1, NULL));
    ck_assert(!gm_group_reserve(&g, -1, 1, NULL));
    gm_group_leave(&g);
}
END_TEST

START_TEST(mismatched_limit_warns_and_uses_the_groups)
{
    struct gm_group g;
    struct gm_group_params p = params("train", 1, 8ull << 30);
    int gdev;
    join_ok(&g, &p, &gdev);
    /* The same value, in bytes or as a percentage: silent. */
    struct kid same = spawn(params("train", 1, 8ull << 30));
    ck_assert_str_eq(same.join.msg, "");
    kid_quit(&same);
    struct gm_group_params pc = params("train", 1, 0);
    pc.limit = (struct gm_limit){ .kind = GM_LIMIT_PERCENT, .fraction = 0.1 };
    same = spawn(pc);
    ck_assert_str_eq(same.join.msg, "");
    kid_quit(&same);
    /* Another value: a warning naming both, and the group's limit. */
    struct kid k = spawn(params("train", 1, 4ull << 30));
    ck_assert_str_eq(k.join.msg,
                     "group 'train' already has a limit of 8.0 GiB on this "
                     "device; ignoring GPUMEM_GROUP_LIMIT=4.0 GiB");
    ck_assert_uint_eq(ask(&k, 'U', 0, 0).v, 8ull << 30);
    ck_assert_int_eq(ask(&k, 'R', 6ull << 30, 0).ok, 1);
    kid_quit(&k);
    pc.limit.fraction = 0.05;
    k = spawn(pc);
    ck_assert_str_eq(k.join.msg,
                     "group 'train' already has a limit of 8.0 GiB on this "
                     "device; ignoring GPUMEM_GROUP_LIMIT=5% (4.0 GiB)");
    kid_quit(&k);
    gm_group_leave(&g);
}
END_TEST

START_TEST(limit_edge_is_exact_and_release_is_clamped)
{
    struct gm_group g;
    struct gm_group_params p = params("edge", 1, 1000);
    int gdev;
    join_ok(&g, &p, &gdev);
    uint64_t u = 0;
    ck_assert(gm_group_reserve(&g, gdev, 600, &u));
    ck_assert_uint_eq(u, 600);
    ck_assert(!gm_group_reserve(&g, gdev, 401, &u));
    ck_assert_uint_eq(u, 600);
    ck_assert(!gm_group_reserve(&g, gdev, UINT64_MAX, &u));
    ck_assert(gm_group_reserve(&g, gdev, 400, &u));
    ck_assert_uint_eq(u, 1000);
    ck_assert(!gm_group_reserve(&g, gdev, 1, &u));
    struct gm_group_usage us;
    ck_assert_int_eq(gm_group_query(&g, gdev, &us), 0);
    ck_assert_uint_eq(us.used, 1000);
    ck_assert_uint_eq(us.mine, 1000);
    ck_assert_uint_eq(us.available, 0);
    ck_assert_uint_eq(us.members, 1);
    ck_assert_uint_eq(us.share, 1000);
    gm_group_release(&g, gdev, 5000);   /* more than charged */
    gm_group_release(&g, gdev, 5000);
    ck_assert_int_eq(gm_group_query(&g, gdev, &us), 0);
    ck_assert_uint_eq(us.used, 0);
    ck_assert_uint_eq(us.mine, 0);
    ck_assert_uint_eq(us.available, 1000);
    ck_assert(!gm_group_broken(&g));
    gm_group_leave(&g);
    /* Without a limit everything is admitted and still counted. */
    p = params("free", 1, 0);
    p.limit.kind = GM_LIMIT_NONE;
    join_ok(&g, &p, &gdev);
    ck_assert(gm_group_reserve(&g, gdev, 1ull << 50, &u));
    ck_assert(gm_group_reserve(&g, gdev, 1ull << 50, &u));
    ck_assert_uint_eq(u, 2ull << 50);
    gm_group_leave(&g);
}
END_TEST

/* The peak is memory held: an admission the driver then refuses (reserve,
 * release) leaves none; a committed one (note_peak) raises it; a forced
 * charge (a pool that grew) and give (it shrank) follow the driver. */
START_TEST(peak_is_raised_at_commit_not_at_admission)
{
    struct gm_group g;
    struct gm_group_params p = params("peak", 1, 1000);
    int gdev;
    join_ok(&g, &p, &gdev);
    struct gm_group_view v;
    uint64_t u = 0;
    ck_assert(gm_group_reserve(&g, gdev, 900, &u));
    gm_group_release(&g, gdev, 900);            /* the driver refused */
    snap_ok("peak", &v);
    ck_assert_uint_eq(v.dev[gdev].peak, 0);
    ck_assert(gm_group_reserve(&g, gdev, 300, &u));
    gm_group_note_peak(&g, gdev);               /* committed */
    snap_ok("peak", &v);
    ck_assert_uint_eq(v.dev[gdev].peak, 300);
    gm_group_charge(&g, gdev, 800, 0);          /* a pool grew past it */
    struct gm_group_usage us;
    ck_assert_int_eq(gm_group_query(&g, gdev, &us), 0);
    ck_assert_uint_eq(us.used, 1100);
    ck_assert_uint_eq(us.mine, 1100);
    gm_group_charge(&g, gdev, 0, 5000);         /* shrank: clamped at 0 */
    ck_assert_int_eq(gm_group_query(&g, gdev, &us), 0);
    ck_assert_uint_eq(us.used, 0);
    ck_assert_uint_eq(us.mine, 0);
    gm_group_leave(&g);
}
END_TEST

/* ---- priorities ---------------------------------------------------------- */

START_TEST(low_cannot_take_high_share_high_takes_idle_low)
{
    const uint64_t L = 12000;
    struct gm_group g;
    struct gm_group_params p = params("prio", 0.7, L);  /* we are low */
    int gdev;
    join_ok(&g, &p, &gdev);
    struct kid h = spawn(params("prio", 1.5, L));
    uint64_t sh = share(L, 1.5, 2.2), sl = share(L, 0.7, 2.2);
    ck_assert_uint_eq(sh, 8181);
    ck_assert_uint_eq(sl, 3818);
    /* All 12000 are free, but 8181 are the high member's unused share:
     * we get the rest, 3819 (our share plus the byte the floors leave). */
    ck_assert(!gm_group_reserve(&g, gdev, L - sh + 1, NULL));
    ck_assert(gm_group_reserve(&g, gdev, L - sh, NULL));
    ck_assert_uint_le(L - sh - sl, 1);
    struct gm_group_usage us;
    ck_assert_int_eq(gm_group_query(&g, gdev, &us), 0);
    ck_assert_uint_eq(us.share, sl);
    ck_assert_uint_eq(us.reserved_above, sh);
    ck_assert_uint_eq(us.available, 0);
    /* The high member reaches its share, which is all that is left. */
    ck_assert_uint_eq(ask(&h, 'U', 0, 0).v, sh);
    ck_assert_int_eq(ask(&h, 'R', sh, 0).ok, 1);
    ck_assert(!gm_group_reserve(&g, gdev, 1, NULL));
    /* Memory the low member lets go is idle: the high one takes it. */
    gm_group_release(&g, gdev, L - sh);
    ck_assert_int_eq(ask(&h, 'R', L - sh, 0).ok, 1);
    ck_assert_int_eq(ask(&h, 'R', 1, 0).ok, 0);
    ck_assert(!gm_group_reserve(&g, gdev, 1, NULL));
    kid_quit(&h);
    /* Alone now: the whole limit is ours. */
    ck_assert(gm_group_reserve(&g, gdev, L, NULL));
    gm_group_leave(&g);
}
END_TEST

START_TEST(low_uses_idle_memory_of_its_peers_not_of_higher_ones)
{
    const uint64_t L = 12000;
    struct gm_group g;
    struct gm_group_params p = params("prio3", 0.7, L);
    int gdev;
    join_ok(&g, &p, &gdev);
    struct kid h = spawn(params("prio3", 1.5, L));
    struct kid b = spawn(params("prio3", 0.7, L));   /* idle low peer */
    uint64_t sh = share(L, 1.5, 2.9), sl = share(L, 0.7, 2.9);
    ck_assert_uint_eq(sh, 6206);
    ck_assert_uint_eq(sl, 2896);
    /* Our share plus the idle low peer's, never the high one's. */
    ck_assert(!gm_group_reserve(&g, gdev, L - sh + 1, NULL));
    ck_assert(gm_group_reserve(&g, gdev, L - sh, NULL));
    ck_assert_uint_gt(L - sh, sl);
    ck_assert_uint_eq(ask(&b, 'U', 0, 0).v, 0);
    ck_assert_int_eq(ask(&h, 'R', sh, 0).ok, 1);
    /* The high one leaves: its share is free for everyone. */
    kid_quit(&h);
    ck_assert(gm_group_reserve(&g, gdev, sh, NULL));
    kid_quit(&b);
    gm_group_leave(&g);
}
END_TEST

/* docs/groups.md's worked example, in thousandths of a GiB. */
START_TEST(worked_example_of_the_docs)
{
    const uint64_t L = 12000;
    struct gm_group g;
    struct gm_group_params p = params("doc", 0.7, L);   /* we are C */
    int gdev;
    join_ok(&g, &p, &gdev);
    struct kid a = spawn(params("doc", 1.5, L));
    struct kid b = spawn(params("doc", 1.0, L));
    ck_assert_uint_eq(share(L, 1.5, 3.2), 5625);
    ck_assert_uint_eq(share(L, 1.0, 3.2), 3750);
    ck_assert_uint_eq(share(L, 0.7, 3.2), 2625);
    ck_assert(!gm_group_reserve(&g, gdev, 4000, NULL));        /* 1 */
    ck_assert_uint_eq(ask(&a, 'U', 0, 0).v, L);
    ck_assert(!gm_group_reserve(&g, gdev, 2626, NULL));
    ck_assert(gm_group_reserve(&g, gdev, 2500, NULL));         /* 2 */
    ck_assert_int_eq(ask(&b, 'R', 5000, 0).ok, 0);             /* 3 */
    ck_assert_uint_eq(ask(&b, 'U', 0, 0).v, 3875);
    ck_assert_int_eq(ask(&b, 'R', 3875, 0).ok, 1);             /* 4 */
    ck_assert_int_eq(ask(&a, 'R', 5625, 0).ok, 1);             /* 5 */
    ck_assert_int_eq(ask(&b, 'F', 2000, 0).ok, 1);             /* 6 */
    ck_assert(!gm_group_reserve(&g, gdev, 1000, NULL));        /* 7 */
    struct gm_group_usage us;
    ck_assert_int_eq(gm_group_query(&g, gdev, &us), 0);
    ck_assert_uint_eq(us.reserved_above, 1875);
    ck_assert_uint_eq(us.available, 125);
    ck_assert_int_eq(ask(&a, 'R', 2000, 0).ok, 1);             /* 8 */
    ck_assert_int_eq(gm_group_query(&g, gdev, &us), 0);
    ck_assert_uint_eq(us.used, L);
    kid_quit(&a);
    kid_quit(&b);
    gm_group_leave(&g);
}
END_TEST

START_TEST(equal_weights_borrow_freely)
{
    const uint64_t L = 12000;
    struct gm_group g;
    struct gm_group_params p = params("eq", 1.0, L);
    int gdev;
    join_ok(&g, &p, &gdev);
    struct kid k = spawn(params("eq", 1.0, L));
    ck_assert(gm_group_reserve(&g, gdev, L, NULL));
    ck_assert_int_eq(ask(&k, 'R', 1, 0).ok, 0);
    kid_quit(&k);
    gm_group_leave(&g);
}
END_TEST

/* ---- the stress test ----------------------------------------------------- */

#define STRESS_KIDS 4
#define STRESS_NS (1200 * MS)

struct stress_out { uint64_t ok, refused, violations; };

static void stress_kid(double w, uint64_t L, int out)
{
    struct gm_group g;
    struct gm_group_params p = params("stress", w, L);
    struct stress_out r = { 0, 0, 0 };
    char msg[256];
    if (gm_group_join(&g, &p, msg, sizeof msg) != 0)
        _exit(2);
    int gdev = gm_group_device(&g, UUID0, PHYS, msg, sizeof msg);
    uint64_t held[8] = { 0 }, mine = 0;
    uint64_t seed = (uint64_t)getpid() * 2654435761u;
    uint64_t end = gm_clock_monotonic_ns() + STRESS_NS;
    for (unsigned it = 0; gm_clock_monotonic_ns() < end; it++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        unsigned k = (unsigned)(seed >> 60) & 7u;
        if (held[k] == 0) {
            uint64_t sz = 1 + (seed >> 20) % (L / 3), u = 0;
            if (gm_group_reserve(&g, gdev, sz, &u)) {
                gm_group_note_peak(&g, gdev); /* held, as at a commit */
                r.ok++;
                r.violations += u > L;
                held[k] = sz;
                mine += sz;
            } else {
                r.refused++;
            }
        } else {
            gm_group_release(&g, gdev, held[k]);
            mine -= held[k];
            held[k] = 0;
        }
        if ((it & 255u) == 0) {
            struct gm_group_usage us;
            r.violations += gm_group_query(&g, gdev, &us) != 0 ||
                            us.mine != mine || us.used > L;
        }
    }
    for (int k = 0; k < 8; k++)
        gm_group_release(&g, gdev, held[k]);
    struct gm_group_usage us;
    r.violations += gm_group_query(&g, gdev, &us) != 0 || us.mine != 0;
    gm_group_leave(&g);
    _exit(write(out, &r, sizeof r) == (ssize_t)sizeof r ? 0 : 2);
}

START_TEST(four_processes_never_pass_the_limit_and_end_at_zero)
{
    const uint64_t L = 1ull << 20;
    const double w[STRESS_KIDS] = { 1.5, 1.0, 1.0, 0.7 };
    struct gm_group g;
    struct gm_group_params p = params("stress", 1.0, L);
    int gdev;
    join_ok(&g, &p, &gdev);   /* holds nothing; keeps the file */
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pids[STRESS_KIDS];
    for (int i = 0; i < STRESS_KIDS; i++) {
        pids[i] = fork();
        ck_assert_int_ge(pids[i], 0);
        if (pids[i] == 0) {
            close(fds[0]);
            stress_kid(w[i], L, fds[1]);
        }
    }
    close(fds[1]);
    /* Watch from outside while they run: never above the limit, and
     * every consistent copy adds up. */
    char path[256], err[256];
    seg_path(path, sizeof path, "stress");
    static struct gm_group_view v;
    unsigned consistent = 0;
    uint64_t end = gm_clock_monotonic_ns() + STRESS_NS;
    while (gm_clock_monotonic_ns() < end) {
        ck_assert_int_eq(gm_group_snapshot(path, &v, err, sizeof err), 0);
        if (!v.consistent)
            continue;
        consistent++;
        uint64_t sum = 0;
        for (unsigned i = 0; i < v.nmembers; i++)
            sum += v.member[i].used[gdev];
        ck_assert_uint_eq(sum, v.dev[gdev].used);
        ck_assert_uint_le(v.dev[gdev].used, L);
        usleep(2000);
    }
    struct stress_out tot = { 0, 0, 0 };
    for (int i = 0; i < STRESS_KIDS; i++) {
        struct stress_out r;
        ck_assert(get(fds[0], &r, sizeof r));
        tot.ok += r.ok;
        tot.refused += r.refused;
        tot.violations += r.violations;
    }
    for (int i = 0; i < STRESS_KIDS; i++) {
        int st;
        ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    ck_assert_uint_eq(tot.violations, 0);
    ck_assert_uint_gt(tot.ok, 1000);
    ck_assert_uint_gt(tot.refused, 0);   /* the limit was really reached */
    ck_assert_uint_gt(consistent, 0);
    snap_ok("stress", &v);
    ck_assert_uint_eq(v.dev[gdev].used, 0);
    ck_assert_uint_le(v.dev[gdev].peak, L);
    ck_assert_uint_ge(v.dev[gdev].peak, L / 2);
    ck_assert_uint_eq(v.nmembers, 1);
    ck_assert_uint_eq(v.reclaims, 0);
    ck_assert_uint_eq(v.joins, 1 + STRESS_KIDS);
    gm_group_leave(&g);
}
END_TEST

/* ---- crashes ------------------------------------------------------------- */

START_TEST(killed_member_reclaimed_on_refusal)
{
    const uint64_t L = 1000;
    struct seen s = { 0, -1, 0, 0 };
    struct gm_group g;
    struct gm_group_params p = params("kill", 1.0, L);
    p.on_reclaim = on_reclaim;
    p.arg = &s;
    int gdev;
    join_ok(&g, &p, &gdev);
    struct kid k = spawn(params("kill", 1.0, L));
    ck_assert_int_eq(ask(&k, 'R', L / 2, 0).ok, 1);
    ck_assert(gm_group_reserve(&g, gdev, L / 2, NULL));
    pid_t dead = k.pid;
    kid_kill(&k, true);
    uint64_t t0 = gm_clock_monotonic_ns(), u = 0;
    ck_assert(gm_group_reserve(&g, gdev, L / 2, &u));
    ck_assert_uint_lt(gm_clock_monotonic_ns() - t0, 1000 * MS);
    ck_assert_uint_eq(u, L);
    ck_assert_int_eq(s.calls, 1);
    ck_assert_int_eq(s.pid, dead);
    ck_assert_int_eq(s.gdev, gdev);
    ck_assert_uint_eq(s.bytes, L / 2);
    struct gm_group_view v;
    snap_ok("kill", &v);
    ck_assert_uint_eq(v.reclaims, 1);
    ck_assert_uint_eq(v.reclaimed_bytes, L / 2);
    ck_assert_uint_eq(v.dev[gdev].reclaimed_bytes, L / 2);
    ck_assert_uint_eq(v.nmembers, 1);
    ck_assert_uint_eq(v.dev[gdev].used, L);
    gm_group_leave(&g);
}
END_TEST

/* A group whose members all died starts over with its next member, the
 * group's first live one: its limit applies, as in a new file, and a
 * member joining while it lives keeps that limit. */
START_TEST(group_of_dead_members_starts_over)
{
    struct kid k = spawn(params("again", 1, 8ull << 30));
    ck_assert_int_eq(ask(&k, 'R', 6ull << 30, 0).ok, 1);
    kid_kill(&k, true);
    struct gm_group g;
    struct gm_group_params p = params("again", 1, 2ull << 30);
    char msg[512];
    ck_assert_int_eq(gm_group_join(&g, &p, msg, sizeof msg), 0);
    int gdev = gm_group_device(&g, UUID0, PHYS, msg, sizeof msg);
    ck_assert_int_ge(gdev, 0);
    ck_assert_str_eq(msg, "");
    struct gm_group_view v;
    snap_ok("again", &v);
    ck_assert_uint_eq(v.dev[gdev].limit, 2ull << 30);
    ck_assert_uint_eq(v.dev[gdev].used, 0);
    ck_assert_uint_eq(v.nmembers, 1);
    ck_assert_uint_eq(v.reclaims, 1);
    ck_assert(!gm_group_reserve(&g, gdev, (2ull << 30) + 1, NULL));
    ck_assert(gm_group_reserve(&g, gdev, 1ull << 30, NULL));
    struct kid b = spawn(params("again", 1, 8ull << 30));
    ck_assert_str_eq(b.join.msg,
                     "group 'again' already has a limit of 2.0 GiB on this "
                     "device; ignoring GPUMEM_GROUP_LIMIT=8.0 GiB");
    ck_assert_int_eq(ask(&b, 'R', 1ull << 30, 0).ok, 1);
    ck_assert_int_eq(ask(&b, 'R', 1, 0).ok, 0);
    kid_quit(&b);
    gm_group_release(&g, gdev, 1ull << 30);
    gm_group_leave(&g);
}
END_TEST

/* A zombie whose last thread is gone (state 'Z', one thread: field 20):
 * a killed process's leader shows 'Z' a moment before its other threads,
 * a sanitizer's own say, are gone. */
static bool is_zombie(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *q = strrchr(buf, ')');
    if (q == NULL || q[1] != ' ' || q[2] != 'Z')
        return false;
    int field = 3;
    for (q += 2; *q != '\0' && field < 20; q++)
        field += *q == ' ';
    return atoi(q) == 1;
}

START_TEST(unreaped_zombie_member_is_dead)
{
    const uint64_t L = 1000;
    struct gm_group g;
    struct gm_group_params p = params("zombie", 1.0, L);
    int gdev;
    join_ok(&g, &p, &gdev);
    struct kid k = spawn(params("zombie", 1.0, L));
    ck_assert_int_eq(ask(&k, 'R', L, 0).ok, 1);
    pid_t z = k.pid;
    kid_kill(&k, false);
    for (int i = 0; i < 1000 && !is_zombie(z); i++)
        usleep(1000);
    ck_assert(is_zombie(z));
    ck_assert(gm_group_reserve(&g, gdev, L, NULL));
    ck_assert_int_eq(waitpid(z, NULL, 0), z);
    gm_group_leave(&g);
}
END_TEST

START_TEST(reaper_reclaims_within_a_second)
{
    const uint64_t L = 1000;
    struct seen s = { 0, -1, 0, 0 };
    struct gm_group g;
    struct gm_group_params p = params("reap", 1.0, L);
    p.on_reclaim = on_reclaim;
    p.arg = &s;
    int gdev;
    join_ok(&g, &p, &gdev);
    struct kid k = spawn(params("reap", 1.0, L));
    ck_assert_int_eq(ask(&k, 'R', 600, 0).ok, 1);
    ck_assert_int_eq(gm_group_start_reaper(&g, 0), 0);
    ck_assert_int_eq(gm_group_start_reaper(&g, 0), -1);
    pid_t dead = k.pid;
    kid_kill(&k, true);
    uint64_t t0 = gm_clock_monotonic_ns();
    struct gm_group_view v;
    do {
        usleep(5000);
        snap_ok("reap", &v);
    } while (v.dev[gdev].used != 0 && gm_clock_monotonic_ns() - t0 < 3000 * MS);
    uint64_t took = gm_clock_monotonic_ns() - t0;
    ck_assert_uint_eq(v.dev[gdev].used, 0);
    ck_assert_uint_le(took, 1300 * MS);
    ck_assert_int_eq(__atomic_load_n(&s.calls, __ATOMIC_ACQUIRE), 1);
    ck_assert_int_eq(__atomic_load_n(&s.pid, __ATOMIC_RELAXED), dead);
    ck_assert_uint_eq(__atomic_load_n(&s.bytes, __ATOMIC_RELAXED), 600);
    gm_group_leave(&g);   /* stops the reaper */
}
END_TEST

static struct gm_group_seg *map_rw(const char *name, int *fd)
{
    char path[256];
    seg_path(path, sizeof path, name);
    *fd = open(path, O_RDWR);
    ck_assert_int_ge(*fd, 0);
    void *m = mmap(NULL, sizeof(struct gm_group_seg), PROT_READ | PROT_WRITE,
                   MAP_SHARED, *fd, 0);
    ck_assert_ptr_ne(m, MAP_FAILED);
    return m;
}

static void unmap_rw(struct gm_group_seg *s, int fd)
{
    munmap(s, sizeof *s);
    close(fd);
}

/* The header's live mask names exactly the LIVE slots. */
static void mask_matches(const char *name)
{
    int fd;
    struct gm_group_seg *s = map_rw(name, &fd);
    uint64_t want = 0;
    for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++)
        if (__atomic_load_n(&s->slot[i].state, __ATOMIC_RELAXED) ==
            GM_GROUP_SLOT_LIVE)
            want |= 1ull << i;
    uint64_t got = __atomic_load_n(&s->hdr.live_mask, __ATOMIC_RELAXED);
    unmap_rw(s, fd);
    ck_assert_msg(got == want, "live mask %#llx, live slots %#llx",
                  (unsigned long long)got, (unsigned long long)want);
}

/* Plants a live slot (pid, start) holding `bytes` on gdev. */
static void plant(struct gm_group_seg *s, int gdev, int pid, uint64_t start,
                  uint64_t bytes)
{
    for (int i = 0; i < GM_GROUP_MAX_MEMBERS; i++) {
        struct gm_group_slot *m = &s->slot[i];
        if (m->state != GM_GROUP_SLOT_FREE)
            continue;
        memset(m, 0, sizeof *m);
        m->pid = pid;
        m->start_ticks = start;
        m->weight = 1000;
        m->charged[gdev] = bytes;
        s->dev[gdev].used += bytes;
        m->state = GM_GROUP_SLOT_LIVE;
        s->hdr.live_mask |= 1ull << i;
        return;
    }
    ck_abort_msg("no free slot");
}

START_TEST(pid_reuse_is_not_the_same_process)
{
    const uint64_t L = 1000;
    struct seen s = { 0, -1, 0, 0 };
    struct gm_group g;
    struct gm_group_params p = params("reuse", 1.0, L);
    p.on_reclaim = on_reclaim;
    p.arg = &s;
    int gdev;
    join_ok(&g, &p, &gdev);
    uint64_t mine;
    ck_assert_int_eq(gm_proc_start_ticks(0, &mine), 0);
    pid_t other = fork();
    ck_assert_int_ge(other, 0);
    if (other == 0) {
        pause();
        _exit(0);
    }
    uint64_t ostart = 0;
    ck_assert_int_eq(gm_proc_start_ticks(other, &ostart), 0);
    int fd;
    struct gm_group_seg *seg = map_rw("reuse", &fd);
    /* Every planted slot's liveness lock is held: pids and start times
     * decide here. */
    pid_t holder = spawn_holder("reuse", ~(1ull << g.slot));
    /* A live process with its own start time: a member, kept. */
    plant(seg, gdev, other, ostart, 300);
    ck_assert_uint_eq(gm_group_reclaim(&g), 0);
    ck_assert(!gm_group_reserve(&g, gdev, L - 299, NULL));
    /* The same pid with another start time: an earlier process. */
    plant(seg, gdev, other, ostart + 1, 200);
    ck_assert_uint_eq(gm_group_reclaim(&g), 200);
    ck_assert_int_eq(s.pid, other);
    /* Our own pid, another start time; and our own pid and start time in
     * a slot that is not ours (this process's image before exec). */
    plant(seg, gdev, (int)getpid(), mine + 12345, 100);
    plant(seg, gdev, (int)getpid(), mine, 50);
    ck_assert_uint_eq(gm_group_reclaim(&g), 150);
    ck_assert_int_eq(s.pid, (int)getpid());
    ck_assert_int_eq(s.calls, 3);
    ck_assert(gm_group_reserve(&g, gdev, L - 300, NULL));
    kill(other, SIGKILL);
    waitpid(other, NULL, 0);
    stop_pid(holder);
    unmap_rw(seg, fd);
    gm_group_leave(&g);
}
END_TEST

START_TEST(full_group_refuses_a_65th_member)
{
    struct gm_group g;
    struct gm_group_params p = params("full", 1.0, 1000);
    int gdev;
    join_ok(&g, &p, &gdev);
    uint64_t init_start;
    ck_assert_int_eq(gm_proc_start_ticks(1, &init_start), 0);
    int fd;
    struct gm_group_seg *seg = map_rw("full", &fd);
    for (int i = 1; i < GM_GROUP_MAX_MEMBERS; i++)
        plant(seg, gdev, 1, init_start, 0);   /* pid 1 lives on */
    /* Their liveness locks: slot 5's in a process of its own. */
    ck_assert_int_eq(g.slot, 0);
    pid_t most = spawn_holder("full", ~1ull & ~(1ull << 5));
    pid_t five = spawn_holder("full", 1ull << 5);
    struct kid k = spawn_gated(params("full", 1.0, 1000), -1);
    struct rep r = kid_reply(&k);
    ck_assert_int_eq(r.ok, -1);
    ck_assert_str_eq(r.msg, "group 'full' already has 64 live members, the "
                            "most it can hold");
    waitpid(k.pid, NULL, 0);
    /* One of them turns out to be gone: its pid lives on with its start
     * time, but nobody holds its slot's lock any more. Its slot is reused
     * (and so would one whose start time changed: pid_reuse...). */
    stop_pid(five);
    k = spawn(params("full", 1.0, 1000));
    ck_assert_int_eq(ask(&k, 'R', 10, 0).ok, 1);
    static struct gm_group_view v;
    snap_ok("full", &v);
    ck_assert_uint_eq(v.nmembers, GM_GROUP_MAX_MEMBERS);
    ck_assert_uint_eq(v.reclaims, 1);
    unsigned in5 = 0;
    for (unsigned i = 0; i < v.nmembers; i++)
        if (v.member[i].slot == 5) {
            ck_assert_int_eq(v.member[i].pid, k.pid);
            in5++;
        }
    ck_assert_uint_eq(in5, 1);
    kid_quit(&k);
    stop_pid(most);
    unmap_rw(seg, fd);
    gm_group_leave(&g);
}
END_TEST

START_TEST(lock_survives_members_killed_inside_it)
{
    const uint64_t L = 1000;
    struct gm_group g;
    struct gm_group_params p = params("robust", 1.0, L);
    int gdev;
    join_ok(&g, &p, &gdev);
    static struct gm_group_view v;
    for (int i = 0; i < 40; i++) {
        struct kid k = spawn(params("robust", 1.0, L));
        ck_assert_int_eq(ask(&k, 'S', 300, 0).ok, 1);
        usleep(500 + 250 * (unsigned)(i % 8));
        kid_kill(&k, true);
        (void)gm_group_reclaim(&g);
        uint64_t u = 0;
        ck_assert_msg(gm_group_reserve(&g, gdev, L, &u), "round %d", i);
        ck_assert_uint_eq(u, L);
        gm_group_release(&g, gdev, L);
        snap_ok("robust", &v);
        ck_assert(v.consistent);
        ck_assert_uint_eq(v.dev[gdev].used, 0);
        ck_assert_uint_eq(v.nmembers, 1);
    }
    ck_assert(!gm_group_broken(&g));
    snap_ok("robust", &v);
    ck_assert_uint_gt(v.repairs, 0);   /* some kill did land inside it */
    ck_assert_uint_eq(v.reclaims, 40);
    mask_matches("robust");
    gm_group_leave(&g);
}
END_TEST

/* A member that leaves while its own thread holds the mutex (a signal
 * handler calling exit() inside the critical section) neither waits on
 * itself nor unmaps the held mutex: the kernel marks it owner-dead at exit
 * and the next member joins at once, repairing it. */
START_TEST(leave_while_holding_the_lock_does_not_break_the_group)
{
    const uint64_t L = 1000;
    struct gm_group_params p = params("selfheld", 1.0, L);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct gm_group g;
        char msg[512];
        if (gm_group_join(&g, &p, msg, sizeof msg) != 0)
            _exit(10);
        struct gm_group_seg *seg = g.seg;
        if (gm_grpi_seg_lock(seg, g.fd, g.slot, &g) < 0)
            _exit(11);
        uint64_t t0 = gm_clock_monotonic_ns();
        gm_group_leave(&g);
        if (gm_clock_monotonic_ns() - t0 > 500 * MS)
            _exit(12);   /* waited on itself */
        if (!gm_grpi_seg_held(seg) || seg->hdr.magic != GM_GROUP_MAGIC)
            _exit(13);   /* the held mutex must stay mapped */
        _exit(0);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    struct gm_group g2;
    uint64_t t0 = gm_clock_monotonic_ns();
    join_ok(&g2, &p, NULL);
    ck_assert_uint_lt(gm_clock_monotonic_ns() - t0, 1000 * MS);
    ck_assert(!gm_group_broken(&g2));
    static struct gm_group_view v;
    snap_ok("selfheld", &v);
    ck_assert_uint_ge(v.repairs, 1);
    ck_assert_uint_eq(v.nmembers, 1);   /* the child's slot reclaimed */
    gm_group_leave(&g2);
}
END_TEST

/* An outsider (a process without a slot: gc, one joining) that dies
 * holding the lock: its byte lock goes with it, and the next member takes
 * the lock over (instead of waiting out the bound), repairs (the live
 * mask too), and another
 * outsider after it is not refused. */
START_TEST(outsider_dying_inside_the_lock_is_taken_over)
{
    const uint64_t L = 1000;
    struct gm_group g;
    struct gm_group_params p = params("outsider", 1.0, L);
    int gdev;
    join_ok(&g, &p, &gdev);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd;
        struct gm_group_seg *seg = map_rw("outsider", &fd);
        _exit(gm_grpi_seg_lock(seg, fd, -1, NULL) == 0 ? 0 : 11);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    int fd;
    struct gm_group_seg *seg = map_rw("outsider", &fd);
    ck_assert_uint_eq(seg->hdr.lock.word & GM_GROUP_LOCK_HOLDER,
                      GM_GROUP_LOCK_OUTSIDER);   /* left held */
    /* What a death inside an update can leave: the mask apart from the
     * slots. The take-over's repair recomputes it. */
    __atomic_store_n(&seg->hdr.live_mask, 0, __ATOMIC_RELAXED);
    uint64_t u = 0;
    ck_assert(gm_group_reserve(&g, gdev, L, &u));
    ck_assert(!gm_group_broken(&g));   /* taken over, not timed out */
    ck_assert_uint_eq(u, L);
    gm_group_release(&g, gdev, L);
    static struct gm_group_view v;
    snap_ok("outsider", &v);
    ck_assert_uint_ge(v.repairs, 1);
    ck_assert_uint_eq(v.dev[gdev].used, 0);
    mask_matches("outsider");
    struct gm_group g2;
    join_ok(&g2, &p, NULL);   /* an outsider itself while it joins */
    gm_group_leave(&g2);
    unmap_rw(seg, fd);
    gm_group_leave(&g);
}
END_TEST

/* The outsider byte's lock failing: a lack of lock records (ENOLCK) or
 * a busy byte is waited out within the bound, then taken; any other
 * failure refuses the lock at once, without the word; a file system
 * without such locks (EINVAL) takes the word without the byte. Never is
 * the word left held on a refusal. */
START_TEST(outsider_byte_failures_are_bounded_and_never_hold_the_word)
{
    struct gm_group g;
    struct gm_group_params p = params("byte", 1.0, 1000);
    int gdev;
    join_ok(&g, &p, &gdev);
    int fd, fd2;
    struct gm_group_seg *seg = map_rw("byte", &fd);
    struct gm_group_seg *seg2 = map_rw("byte", &fd2);
    const uint32_t *word = &seg->hdr.lock.word;
    struct flock q;

    fault_errno = ENOLCK;   /* a few times: waited out, then taken */
    fault_left = 5;
    ck_assert_int_eq(gm_grpi_seg_lock(seg, fd, -1, NULL), 0);
    ck_assert_int_eq(fault_left, 0);
    ck_assert_uint_eq(__atomic_load_n(word, __ATOMIC_RELAXED) &
                      GM_GROUP_LOCK_HOLDER, GM_GROUP_LOCK_OUTSIDER);
    memset(&q, 0, sizeof q);
    q.l_type = F_WRLCK;
    q.l_start = (off_t)GM_GROUP_OUTSIDER_LOCK_OFF;
    q.l_len = 1;
    ck_assert_int_eq(fcntl(fd2, F_OFD_GETLK, &q), 0);
    ck_assert_int_ne(q.l_type, F_UNLCK);   /* the byte is held with it */
    gm_grpi_seg_unlock(seg);
    ck_assert_uint_eq(__atomic_load_n(word, __ATOMIC_RELAXED) &
                      GM_GROUP_LOCK_HOLDER, 0);

    fault_errno = EIO;      /* any other failure: refused at once */
    fault_left = 1;
    uint64_t t0 = gm_clock_monotonic_ns();
    ck_assert_int_eq(gm_grpi_seg_lock(seg, fd, -1, NULL), -1);
    ck_assert_uint_lt(gm_clock_monotonic_ns() - t0, 500 * MS);
    ck_assert_uint_eq(__atomic_load_n(word, __ATOMIC_RELAXED) &
                      GM_GROUP_LOCK_HOLDER, 0);
    ck_assert(!gm_grpi_seg_held(seg));

    fault_errno = EINVAL;   /* no such locks here: the word alone */
    fault_left = 1;
    ck_assert_int_eq(gm_grpi_seg_lock(seg, fd, -1, NULL), 0);
    ck_assert_uint_eq(__atomic_load_n(word, __ATOMIC_RELAXED) &
                      GM_GROUP_LOCK_HOLDER, GM_GROUP_LOCK_OUTSIDER);
    gm_grpi_seg_unlock(seg);

    fault_errno = ENOLCK;   /* for good: refused at the bound */
    fault_left = 1 << 30;
    t0 = gm_clock_monotonic_ns();
    ck_assert_int_eq(gm_grpi_seg_lock(seg, fd, -1, NULL), -1);
    uint64_t took = gm_clock_monotonic_ns() - t0;
    fault_left = 0;
    ck_assert_uint_ge(took, 1900 * MS);
    ck_assert_uint_lt(took, 4000 * MS);
    ck_assert_uint_eq(__atomic_load_n(word, __ATOMIC_RELAXED) &
                      GM_GROUP_LOCK_HOLDER, 0);
    uint64_t u = 0;         /* and the group goes on */
    ck_assert(gm_group_reserve(&g, gdev, 10, &u));
    ck_assert_uint_eq(u, 10);
    gm_group_release(&g, gdev, 10);
    ck_assert(!gm_group_broken(&g));
    unmap_rw(seg2, fd2);
    unmap_rw(seg, fd);
    gm_group_leave(&g);
}
END_TEST

/* A joiner that finds itself the only live member starts the group over
 * (limits, use and peak cleared). That is decided from every slot, not
 * from the live mask: with the mask cleared by a foreign write, a live
 * member's charge and the registered limit survive the next join. */
/* Joins group `name` (limit l), holds `hold` bytes and maps its file for
 * the test to write into (*fd: unmap_rw's). */
static struct gm_group_seg *join_holding(struct gm_group *g, const char *name,
                                         uint64_t l, uint64_t hold, int *gdev,
                                         int *fd)
{
    struct gm_group_params p = params(name, 1.0, l);
    uint64_t u = 0;
    join_ok(g, &p, gdev);
    ck_assert(gm_group_reserve(g, *gdev, hold, &u));
    return map_rw(name, fd);
}

START_TEST(start_over_reads_the_slots_not_the_mask)
{
    const uint64_t L = 1000;
    struct gm_group g;
    int gdev, fd;
    struct gm_group_seg *seg = join_holding(&g, "nomask", L, 300, &gdev, &fd);
    __atomic_store_n(&seg->hdr.live_mask, 0, __ATOMIC_RELAXED);
    struct kid k = spawn(params("nomask", 1.0, L));
    static struct gm_group_view v;
    snap_ok("nomask", &v);
    ck_assert_uint_eq(v.dev[gdev].limit, L);
    ck_assert_uint_eq(v.dev[gdev].used, 300);
    ck_assert_uint_eq(v.nmembers, 2);
    struct rep r = ask(&k, 'L', 0, 0);
    ck_assert_int_eq(r.ok, 1);
    waitpid(k.pid, NULL, 0);
    unmap_rw(seg, fd);
    gm_group_release(&g, gdev, 300);
    gm_group_leave(&g);
}
END_TEST

/* A device's `used` written low (a damaged or foreign write while the
 * lock is free) let the group past its limit until a member happened to
 * take the lock over from a dead holder. The reaper's pass and a join
 * correct it from the slots' charges, counted as a repair. */
START_TEST(damaged_used_is_corrected_by_reaper_and_join)
{
    const uint64_t L = 1000;
    struct gm_group g;
    int gdev, fd;
    uint64_t u = 0;
    struct gm_group_seg *seg = join_holding(&g, "drift", L, 600, &gdev, &fd);
    uint32_t rep0 = __atomic_load_n(&seg->hdr.repairs, __ATOMIC_RELAXED);
    __atomic_store_n(&seg->dev[gdev].used, 0, __ATOMIC_RELAXED);
    (void)gm_group_reclaim(&g);           /* what the reaper runs */
    ck_assert_uint_eq(__atomic_load_n(&seg->dev[gdev].used, __ATOMIC_RELAXED),
                      600);
    ck_assert_uint_eq(__atomic_load_n(&seg->hdr.repairs, __ATOMIC_RELAXED),
                      rep0 + 1);
    ck_assert(!gm_group_reserve(&g, gdev, 401, &u));
    (void)gm_group_reclaim(&g);           /* nothing off: no repair */
    ck_assert_uint_eq(__atomic_load_n(&seg->hdr.repairs, __ATOMIC_RELAXED),
                      rep0 + 1);
    /* Written low again; a process joining corrects it before it asks. */
    __atomic_store_n(&seg->dev[gdev].used, 1, __ATOMIC_RELAXED);
    struct kid k = spawn(params("drift", 1.0, L));
    struct rep r = ask(&k, 'R', 401, 0);
    ck_assert_int_eq(r.ok, 0);
    ck_assert_uint_eq(r.v, 600);
    r = ask(&k, 'R', 400, 0);
    ck_assert_int_eq(r.ok, 1);
    ck_assert_uint_eq(r.v, 1000);
    r = ask(&k, 'L', 0, 0);
    waitpid(k.pid, NULL, 0);
    /* Written high: corrected too (it refused what fits). */
    __atomic_store_n(&seg->dev[gdev].used, UINT64_MAX, __ATOMIC_RELAXED);
    (void)gm_group_reclaim(&g);
    ck_assert(gm_group_reserve(&g, gdev, 400, &u));
    ck_assert_uint_eq(u, 1000);
    unmap_rw(seg, fd);
    gm_group_release(&g, gdev, 1000);
    gm_group_leave(&g);
}
END_TEST

/* The group's file removed while members live (rm, systemd-logind's
 * RemoveIPC): a process joining afterwards made a new file and, alone in
 * it, was admitted past the limit the others already filled. Each
 * member's reaper now moves it to the file at the path with its charges
 * (a waiter going on waiting there), keeping its device index, also while
 * other threads call the group without a pause. */
static char moved_note[512];
static pthread_mutex_t note_mu = PTHREAD_MUTEX_INITIALIZER;
static void note_moved(void *arg, const char *text)
{
    (void)arg;
    pthread_mutex_lock(&note_mu);
    snprintf(moved_note, sizeof moved_note, "%s", text);
    pthread_mutex_unlock(&note_mu);
}

static bool note_has(const char *what)
{
    pthread_mutex_lock(&note_mu);
    bool has = strstr(moved_note, what) != NULL;
    pthread_mutex_unlock(&note_mu);
    return has;
}

/* Reserves and releases a byte until told to stop: a stream of calls
 * the move must not be starved by. */
struct spinarg { struct gm_group *g; int gdev; int stop; unsigned long n; };
static void *spinner_main(void *arg)
{
    struct spinarg *a = arg;
    while (!__atomic_load_n(&a->stop, __ATOMIC_RELAXED)) {
        if (gm_group_reserve(a->g, a->gdev, 1, NULL))
            gm_group_release(a->g, a->gdev, 1);
        a->n++;
    }
    return NULL;
}

struct waitarg { struct gm_group *g; int gdev; bool ok; };
static void *waiter_main(void *arg)
{
    struct waitarg *w = arg;
    w->ok = gm_group_wait(w->g, w->gdev, 200,
                          gm_clock_monotonic_ns() + 10000000000ull, NULL);
    return NULL;
}

START_TEST(removed_file_members_move_to_the_new_one)
{
    const uint64_t L = 1000;
    struct gm_group g;
    struct gm_group_params p = params("moved", 1.0, L);
    p.on_note = note_moved;
    int gdev;
    join_ok(&g, &p, &gdev);
    uint64_t u = 0;
    ck_assert(gm_group_reserve(&g, gdev, 600, &u));
    struct kid k1 = spawn(params("moved", 1.0, L));
    ck_assert_int_eq(ask(&k1, 'R', 300, 0).ok, 1);
    ck_assert_int_eq(ask(&k1, 'P', 20000000, 0).ok, 1);
    ck_assert_int_eq(gm_group_start_reaper(&g, 20000000), 0);
    /* A waiter for 200 (900 held of 1000), asleep across the move. */
    struct waitarg w = { &g, gdev, false };
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, waiter_main, &w), 0);
    struct spinarg sp[2] = { { &g, gdev, 0, 0 }, { &g, gdev, 0, 0 } };
    pthread_t spt[2];
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&spt[i], NULL, spinner_main, &sp[i]),
                         0);
    usleep(100000);
    char path[256];
    seg_path(path, sizeof path, "moved");
    ck_assert_int_eq(unlink(path), 0);
    static struct gm_group_view v;
    char err[256];
    bool both = false;
    for (int i = 0; i < 200 && !both; i++) {
        usleep(10000);
        both = gm_group_snapshot(path, &v, err, sizeof err) == 0 &&
               v.nmembers == 2 && v.dev[0].used >= 900;
    }
    /* 900, or 1100 when the waiter was served in the old file between
     * the two moves (one pass apart: each side admits alone then, and
     * the group is over its limit until its members free memory). */
    for (int i = 0; i < 2; i++) {
        __atomic_store_n(&sp[i].stop, 1, __ATOMIC_RELAXED);
        pthread_join(spt[i], NULL);
        ck_assert_uint_gt(sp[i].n, 0);
    }
    ck_assert_msg(both, "the members did not move to the new file: "
                  "%u members, %llu used (%s)", v.nmembers,
                  (unsigned long long)v.dev[0].used, err);
    /* The note follows the move (a moment later for the last mover). */
    for (int i = 0; i < 200 && !note_has("moved to"); i++)
        usleep(10000);
    ck_assert(note_has("moved to"));
    ck_assert(note_has(" B it holds"));
    /* A newcomer meets what the others hold. */
    struct kid k2 = spawn(params("moved", 1.0, L));
    struct rep r = ask(&k2, 'R', 101, 0);
    ck_assert_int_eq(r.ok, 0);
    ck_assert_uint_ge(r.v, 900);
    /* A release there wakes the waiter that slept in the old file. */
    ck_assert_int_eq(ask(&k1, 'F', 300, 0).ok, 1);
    pthread_join(th, NULL);
    ck_assert(w.ok);
    ck_assert_int_eq(ask(&k2, 'R', 201, 0).ok, 0);
    ck_assert_int_eq(ask(&k2, 'R', 200, 0).ok, 1);
    struct gm_group_usage us;
    ck_assert_int_eq(gm_group_query(&g, gdev, &us), 0);
    ck_assert_uint_eq(us.used, 1000);
    ck_assert_uint_eq(us.mine, 800);
    ask(&k1, 'L', 0, 0);
    ask(&k2, 'L', 0, 0);
    waitpid(k1.pid, NULL, 0);
    waitpid(k2.pid, NULL, 0);
    gm_group_release(&g, gdev, 800);
    ck_assert_int_eq(gm_group_query(&g, gdev, &us), 0);
    ck_assert_uint_eq(us.used, 0);
    gm_group_leave(&g);
    ck_assert_int_eq(access(path, F_OK), -1);   /* the last one removed it */
}
END_TEST

/* Registers UUID0 and a second device in turn until told to stop; counts
 * the registrations refused (a move must never make one fail). */
static const unsigned char UUID_B[16] = { 0xb2, 0x02 };
struct regarg { struct gm_group *g; int stop; unsigned long n, refused; };
static void *registrar_main(void *arg)
{
    struct regarg *a = arg;
    char msg[256];
    while (!__atomic_load_n(&a->stop, __ATOMIC_RELAXED)) {
        const unsigned char *u = (a->n++ & 1) ? UUID_B : UUID0;
        if (gm_group_device(a->g, u, PHYS, msg, sizeof msg) < 0)
            a->refused++;
    }
    return NULL;
}

/* The file removed again and again while threads register devices and
 * reserve: every removal is followed by a move, no registration is
 * refused (one read the struct outside the gate while a move cleared
 * it), the charge is neither lost nor doubled, the group never broken. */
START_TEST(repeated_removals_under_load_lose_nothing)
{
    struct gm_group g;
    struct gm_group_params p = params("churn", 1.0, 1000);
    int gdev;
    join_ok(&g, &p, &gdev);
    ck_assert(gm_group_reserve(&g, gdev, 500, NULL));
    ck_assert_int_eq(gm_group_start_reaper(&g, 2000000), 0);
    struct regarg ra = { &g, 0, 0, 0 };
    struct spinarg sp = { &g, gdev, 0, 0 };
    pthread_t rt, st;
    ck_assert_int_eq(pthread_create(&rt, NULL, registrar_main, &ra), 0);
    ck_assert_int_eq(pthread_create(&st, NULL, spinner_main, &sp), 0);
    char path[256];
    seg_path(path, sizeof path, "churn");
    unsigned removed = 0;
    for (int i = 0; i < 40; i++) {
        /* Each removal after the last move landed (the path exists). */
        for (int w = 0; w < 500 && access(path, F_OK) != 0; w++)
            usleep(2000);
        removed += unlink(path) == 0;
        usleep(8000);
    }
    for (int w = 0; w < 500 && access(path, F_OK) != 0; w++)
        usleep(2000);
    __atomic_store_n(&ra.stop, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&sp.stop, 1, __ATOMIC_RELAXED);
    pthread_join(rt, NULL);
    pthread_join(st, NULL);
    ck_assert_uint_eq(ra.refused, 0);
    ck_assert_uint_gt(ra.n, 0);
    /* The path is made when the move joins it; the move ends after. */
    unsigned moved = 0;
    for (int w = 0; w < 200; w++) {
        moved = __atomic_load_n(&g.moves, __ATOMIC_RELAXED);
        if (moved == removed)
            break;
        usleep(10000);
    }
    ck_assert_uint_eq(moved, removed);
    ck_assert_uint_gt(removed, 30);
    ck_assert(!gm_group_broken(&g));
    struct gm_group_usage us;
    ck_assert_int_eq(gm_group_query(&g, gdev, &us), 0);
    ck_assert_uint_eq(us.used, 500);
    ck_assert_uint_eq(us.mine, 500);
    gm_group_release(&g, gdev, 500);
    gm_group_leave(&g);
}
END_TEST

/* A registration made while this thread already registers (a signal
 * handler that interrupted gm_group_device) gives up at the bound with
 * a message; it waited on itself for ever. */
START_TEST(registration_inside_a_registration_is_bounded)
{
    struct gm_group g;
    struct gm_group_params p = params("regself", 1.0, 1000);
    int gdev;
    join_ok(&g, &p, &gdev);
    char msg[256];
    ck_assert_int_eq(pthread_mutex_lock(&g.reg_mu), 0);
    ck_assert_int_eq(gm_group_device(&g, UUID_B, PHYS, msg, sizeof msg), -1);
    ck_assert_ptr_nonnull(strstr(msg, "another registration does not end"));
    ck_assert_int_eq(pthread_mutex_unlock(&g.reg_mu), 0);
    ck_assert_int_eq(gm_group_device(&g, UUID0, PHYS, msg, sizeof msg), gdev);
    gm_group_leave(&g);
}
END_TEST

/* A member that dies holding the lock after its group's file was removed
 * (rm, systemd's RemoveIPC): its liveness lock cannot be asked about (no
 * descriptor of the file can be opened), so its pid tells, and the next
 * member takes the lock over instead of waiting out the bound. */
START_TEST(holder_is_asked_by_pid_when_the_file_is_gone)
{
    const uint64_t L = 1000;
    struct gm_group g;
    struct gm_group_params p = params("unlinked", 1.0, L);
    int gdev;
    join_ok(&g, &p, &gdev);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct gm_group c;
        char msg[512];
        if (gm_group_join(&c, &p, msg, sizeof msg) != 0)
            _exit(10);
        _exit(gm_grpi_seg_lock(c.seg, c.fd, c.slot, &c) == 0 ? 0 : 11);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    char path[256];
    seg_path(path, sizeof path, "unlinked");
    ck_assert_int_eq(unlink(path), 0);
    uint64_t u = 0;
    ck_assert(gm_group_reserve(&g, gdev, L, &u));
    ck_assert(!gm_group_broken(&g));   /* taken over, not timed out */
    ck_assert_uint_eq(u, L);
    gm_group_release(&g, gdev, L);
    gm_group_leave(&g);
}
END_TEST

/* ---- waiting ------------------------------------------------------------- */

START_TEST(wait_is_served_by_another_process_release)
{
    const uint64_t L = 1000;
    struct gm_group g;
    struct gm_group_params p = params("wait", 1.0, L);
    int gdev;
    join_ok(&g, &p, &gdev);
    struct kid k = spawn(params("wait", 1.0, L));
    ck_assert_int_eq(ask(&k, 'R', L, 0).ok, 1);
    ck_assert_int_eq(ask(&k, 'D', L / 2, 300 * MS).ok, 0);
    uint64_t t0 = gm_clock_monotonic_ns(), u = 0;
    ck_assert(gm_group_wait(&g, gdev, L / 2, t0 + 3000 * MS, &u));
    uint64_t took = gm_clock_monotonic_ns() - t0;
    ck_assert_uint_eq(u, L);
    ck_assert_uint_ge(took, 250 * MS);
    ck_assert_uint_le(took, 800 * MS);   /* woken, not polled at 1 s */
    /* Nothing more is released: the wait ends at its deadline. */
    t0 = gm_clock_monotonic_ns();
    ck_assert(!gm_group_wait(&g, gdev, 1, t0 + 300 * MS, &u));
    took = gm_clock_monotonic_ns() - t0;
    ck_assert_uint_ge(took, 290 * MS);
    ck_assert_uint_le(took, 900 * MS);
    /* The other way round: the child waits, we release. */
    struct cmd m = { 'W', L / 2, 3000 * MS };
    put(k.wr, &m, sizeof m);
    usleep(200 * 1000);
    gm_group_release(&g, gdev, L / 2);
    struct rep r = kid_reply(&k);
    ck_assert_int_eq(r.ok, 1);
    ck_assert_uint_ge(r.v, 150 * MS);
    ck_assert_uint_le(r.v, 800 * MS);
    /* A waiter killed while blocked leaves no count behind (the child
     * holds the whole limit now). */
    m = (struct cmd){ 'W', 1, 30000 * MS };
    put(k.wr, &m, sizeof m);
    struct gm_group_view v;
    for (int i = 0; i < 1000; i++) {
        snap_ok("wait", &v);
        if (v.waiters == 1)
            break;
        usleep(1000);
    }
    ck_assert_uint_eq(v.waiters, 1);
    ck_assert_uint_eq(v.nmembers, 2);
    for (unsigned i = 0; i < v.nmembers; i++)
        ck_assert_uint_eq(v.member[i].waiting, v.member[i].pid == k.pid);
    kid_kill(&k, true);
    ck_assert_uint_eq(gm_group_reclaim(&g), L);
    snap_ok("wait", &v);
    ck_assert_uint_eq(v.waiters, 0);
    gm_group_leave(&g);
}
END_TEST

/* ---- creation ------------------------------------------------------------ */

START_TEST(simultaneous_first_members_share_one_segment)
{
    enum { N = 8 };
    int gate[2];
    ck_assert_int_eq(pipe(gate), 0);
    struct kid k[N];
    for (int i = 0; i < N; i++)
        k[i] = spawn_gated(params("race", 1.0, 1000), gate[0]);
    char go[N];
    memset(go, 'g', sizeof go);
    put(gate[1], go, sizeof go);
    for (int i = 0; i < N; i++) {
        k[i].join = kid_reply(&k[i]);
        ck_assert_msg(k[i].join.ok == 0, "member %d: %s", i, k[i].join.msg);
        ck_assert_int_eq((int)k[i].join.v, 0);
    }
    struct gm_group_view v;
    snap_ok("race", &v);
    ck_assert_uint_eq(v.nmembers, N);
    ck_assert_uint_eq(v.joins, N);
    for (int i = 0; i < N; i++) {
        int found = 0;
        for (unsigned j = 0; j < v.nmembers; j++)
            found += v.member[j].pid == k[i].pid;
        ck_assert_int_eq(found, 1);
    }
    for (int i = 0; i < N; i++)
        kid_quit(&k[i]);
    char path[256];
    seg_path(path, sizeof path, "race");
    ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

START_TEST(abandoned_creation_is_taken_over_live_one_is_not)
{
    char path[256], msg[512];
    seg_path(path, sizeof path, "half");
    int fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0600);
    ck_assert_int_ge(fd, 0);
    /* A creator that is alive holds its lock: refused after the wait. */
    ck_assert_int_eq(flock(fd, LOCK_EX), 0);
    struct gm_group g;
    struct gm_group_params p = params("half", 1.0, 1000);
    uint64_t t0 = gm_clock_monotonic_ns();
    ck_assert_int_eq(gm_group_join(&g, &p, msg, sizeof msg), -1);
    ck_assert_uint_ge(gm_clock_monotonic_ns() - t0, 900 * MS);
    ck_assert_ptr_nonnull(strstr(msg, "still being created"));
    ck_assert_int_eq(access(path, F_OK), 0);
    /* Its creator died (lock released, file still empty): replaced. */
    close(fd);
    int gdev;
    join_ok(&g, &p, &gdev);
    ck_assert(gm_group_reserve(&g, gdev, 1000, NULL));
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq((uint64_t)st.st_size, sizeof(struct gm_group_seg));
    gm_group_leave(&g);
    /* One that died after sizing the file, before its header (magic 0). */
    static const struct gm_group_seg zeros;
    seg_path(path, sizeof path, "half0");
    fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fchmod(fd, 0600), 0);
    ck_assert_int_eq(write(fd, &zeros, sizeof zeros), (ssize_t)sizeof zeros);
    close(fd);
    p = params("half0", 1.0, 1000);
    join_ok(&g, &p, &gdev);
    ck_assert(gm_group_reserve(&g, gdev, 1000, NULL));
    gm_group_leave(&g);
}
END_TEST

/* ---- hostile segments ---------------------------------------------------- */

static void template_image(struct gm_group_seg *img)
{
    struct gm_group g;
    struct gm_group_params p = params("tmpl", 1.0, 1000);
    p.keep = true;
    join_ok(&g, &p, NULL);
    gm_group_leave(&g);
    char path[256];
    seg_path(path, sizeof path, "tmpl");
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(read(fd, img, sizeof *img), (ssize_t)sizeof *img);
    close(fd);
}

static void write_file(const char *path, const void *buf, size_t n,
                       mode_t mode)
{
    unlink(path);
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, mode);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fchmod(fd, mode), 0);
    ck_assert_int_eq(write(fd, buf, n), (ssize_t)n);
    close(fd);
}

/* join and snapshot refuse the file at "h" with `why`; it stays as it was. */
static void refused(const char *why, bool snapshot_too)
{
    char path[256], msg[512];
    seg_path(path, sizeof path, "h");
    struct stat before, after;
    ck_assert_int_eq(lstat(path, &before), 0);
    struct gm_group g;
    struct gm_group_params p = params("h", 1.0, 1000);
    ck_assert_int_eq(gm_group_join(&g, &p, msg, sizeof msg), -1);
    ck_assert_msg(strstr(msg, why) != NULL, "'%s' lacks '%s'", msg, why);
    ck_assert_ptr_nonnull(strstr(msg, path));
    gm_group_leave(&g);
    ck_assert_int_eq(lstat(path, &after), 0);
    ck_assert_uint_eq(after.st_ino, before.st_ino);
    ck_assert_uint_eq(after.st_size, before.st_size);
    ck_assert_uint_eq(after.st_mtime, before.st_mtime);
    if (snapshot_too) {
        static struct gm_group_view v;
        ck_assert_int_eq(gm_group_snapshot(path, &v, msg, sizeof msg), -1);
        ck_assert_msg(strstr(msg, why) != NULL, "'%s' lacks '%s'", msg, why);
    }
    ck_assert_int_eq(gm_group_gc(path, msg, sizeof msg), -1);
    ck_assert_int_eq(lstat(path, &after), 0);
}

START_TEST(hostile_or_truncated_segments_are_refused)
{
    static struct gm_group_seg img, bad;
    template_image(&img);
    char path[256], tmpl[256];
    seg_path(path, sizeof path, "h");
    seg_path(tmpl, sizeof tmpl, "tmpl");
    bad = img;
    bad.hdr.magic ^= 1;
    write_file(path, &bad, sizeof bad, 0600);
    refused("bad magic", true);
    bad = img;
    bad.hdr.version = 99;
    write_file(path, &bad, sizeof bad, 0600);
    refused("version 99", true);
    bad = img;
    bad.hdr.slot_size = 1;
    write_file(path, &bad, sizeof bad, 0600);
    refused("unexpected layout", true);
    bad = img;
    bad.hdr.lock_size = 1;
    write_file(path, &bad, sizeof bad, 0600);
    refused("unexpected layout", true);
    /* A valid segment of another group under this name. */
    write_file(path, &img, sizeof img, 0600);
    refused("does not hold the group", true);
    bad = img;
    memset(bad.hdr.name, 'x', sizeof bad.hdr.name);
    write_file(path, &bad, sizeof bad, 0600);
    refused("does not hold the group", true);
    /* Truncated, and too long. */
    write_file(path, &img, 100, 0600);
    refused("has 100 bytes", true);
    write_file(path, &img, sizeof img / 2, 0600);
    refused("bytes", true);
    static char big[sizeof img + 4096];
    memcpy(big, &img, sizeof img);
    write_file(path, big, sizeof big, 0600);
    refused("bytes", true);
    /* Readable by others. */
    write_file(path, &img, sizeof img, 0644);
    refused("mode 0644", false);
    /* A symbolic link to a valid segment: not followed, target intact. */
    unlink(path);
    ck_assert_int_eq(symlink(tmpl, path), 0);
    refused("symbolic link", true);
    static struct gm_group_seg again;
    int fd = open(tmpl, O_RDONLY);
    ck_assert_int_eq(read(fd, &again, sizeof again), (ssize_t)sizeof again);
    close(fd);
    ck_assert_mem_eq(&again, &img, sizeof img);
    /* A directory, a FIFO. */
    unlink(path);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    refused("not a regular file", true);
    rmdir(path);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    refused("not a regular file", true);
    unlink(path);
    /* Another user's file (only root can make one). */
    if (geteuid() == 0) {
        write_file(path, &img, sizeof img, 0600);
        ck_assert_int_eq(chown(path, 65534, 65534), 0);
        refused("another user", false);
    }
}
END_TEST

START_TEST(lost_slot_fails_open)
{
    struct gm_group g;
    struct gm_group_params p = params("lost", 1.0, 100);
    int gdev;
    join_ok(&g, &p, &gdev);
    ck_assert(gm_group_reserve(&g, gdev, 100, NULL));
    ck_assert(!gm_group_reserve(&g, gdev, 1, NULL));
    int fd;
    struct gm_group_seg *seg = map_rw("lost", &fd);
    seg->slot[g.slot].pid += 1;   /* the slot is not ours any more */
    ck_assert(gm_group_reserve(&g, gdev, 1000, NULL));
    ck_assert(gm_group_broken(&g));
    gm_group_release(&g, gdev, 100);   /* ignored */
    ck_assert_uint_eq(seg->dev[gdev].used, 100);
    unmap_rw(seg, fd);
    gm_group_leave(&g);
}
END_TEST

/* The device view's lock-free read: the limit, the use of every member
 * and what the rule admits now (a higher member's unused share kept);
 * busy (-2) from a copy that never settles (a locker's odd `gen`), when
 * the lock still answers; nothing (-1) from a header that is not a group's any more, a use below this
 * member's own charge, a slot that is not ours, or a broken group. */
START_TEST(peek_reads_the_group_or_nothing)
{
    struct gm_group g;
    struct gm_group_params p = params("peek", 1.0, 1000);
    int gdev;
    join_ok(&g, &p, &gdev);
    struct kid k = spawn(p);
    ck_assert(gm_group_reserve(&g, gdev, 300, NULL));
    ck_assert_int_eq(ask(&k, 'R', 200, 0).ok, 1);
    struct gm_group_peek v = { 0, 0, 0 };
    ck_assert_int_eq(gm_group_peek(&g, gdev, &v), 0);
    ck_assert_uint_eq(v.limit, 1000);
    ck_assert_uint_eq(v.used, 500);
    ck_assert_uint_eq(v.available, 500);
    ck_assert_int_eq(gm_group_peek(&g, gdev + 1, &v), -1);
    /* A high member's unused share is kept from us: W = 3.5. */
    struct kid hi = spawn(params("peek", 1.5, 1000));
    ck_assert_int_eq(gm_group_peek(&g, gdev, &v), 0);
    ck_assert_uint_eq(v.used, 500);
    ck_assert_uint_eq(v.available, 500 - share(1000, 1.5, 3.5));
    kid_quit(&hi);
    ck_assert_int_eq(gm_group_peek(&g, gdev, &v), 0);
    ck_assert_uint_eq(v.available, 500);
    int fd;
    struct gm_group_seg *seg = map_rw("peek", &fd);
    uint64_t gen = seg->hdr.gen;
    seg->hdr.gen = gen | 1u;          /* a locker that never leaves */
    v.limit = v.used = 7;
    ck_assert_int_eq(gm_group_peek(&g, gdev, &v), -2);   /* busy */
    ck_assert_uint_eq(v.limit, 7);
    ck_assert_uint_eq(v.used, 7);
    /* ... where the lock still answers: what the view falls back to. */
    struct gm_group_usage u;
    ck_assert_int_eq(gm_group_query(&g, gdev, &u), 0);
    ck_assert_uint_eq(u.limit, 1000);
    ck_assert_uint_eq(u.available, 500);
    seg->hdr.gen = gen;
    seg->hdr.magic ^= 1u;
    ck_assert_int_eq(gm_group_peek(&g, gdev, &v), -1);
    seg->hdr.magic ^= 1u;
    seg->dev[gdev].used = 100;        /* below this member's 300 */
    ck_assert_int_eq(gm_group_peek(&g, gdev, &v), -1);
    seg->dev[gdev].used = 500;
    ck_assert_int_eq(gm_group_peek(&g, gdev, &v), 0);
    seg->slot[g.slot].pid += 1;       /* the slot is not ours any more */
    ck_assert_int_eq(gm_group_peek(&g, gdev, &v), -1);
    ck_assert(gm_group_reserve(&g, gdev, 1, NULL));   /* breaks it */
    seg->slot[g.slot].pid -= 1;
    ck_assert(gm_group_broken(&g));
    ck_assert_int_eq(gm_group_peek(&g, gdev, &v), -1);
    unmap_rw(seg, fd);
    kid_quit(&k);
    gm_group_leave(&g);
}
END_TEST

/* ---- liveness through the slot lock -------------------------------------- */

static bool comm_is(pid_t pid, const char *want)
{
    char path[64], buf[64] = "";
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    bool ok = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return ok && strcmp(buf, want) == 0;
}

/* Whether the snapshot of `name` shows pid as a live member. */
static bool shown_alive(const char *name, pid_t pid)
{
    static struct gm_group_view v;
    snap_ok(name, &v);
    for (unsigned i = 0; i < v.nmembers; i++)
        if (v.member[i].pid == pid)
            return v.member[i].alive;
    return false;
}

START_TEST(exec_into_another_program_returns_the_charge)
{
    const uint64_t L = 1000;
    struct seen s = { 0, -1, 0, 0 };
    struct gm_group g;
    struct gm_group_params p = params("exec", 1.0, L);
    p.on_reclaim = on_reclaim;
    p.arg = &s;
    int gdev;
    join_ok(&g, &p, &gdev);
    struct kid k = spawn(params("exec", 1.0, L));
    ck_assert_int_eq(ask(&k, 'R', 800, 0).ok, 1);
    /* A fork child that dropped its copy of the membership (what the
     * shim's atfork handler does) and lives on. */
    ck_assert_int_eq(ask(&k, 'K', 0, 0).ok, 1);
    /* Still a member: its own descriptor and mapping hold its lock. */
    ck_assert_uint_eq(gm_group_reclaim(&g), 0);
    ck_assert(!gm_group_reserve(&g, gdev, L - 799, NULL));
    ck_assert(shown_alive("exec", k.pid));
    uint64_t before = 0, after = 0;
    ck_assert_int_eq(gm_proc_start_ticks(k.pid, &before), 0);
    /* It calls exec: a program that never uses CUDA, with the same pid
     * and start time. */
    ck_assert_int_eq(ask(&k, 'E', 0, 0).ok, 1);
    bool alive = true;
    for (int i = 0; i < 5000 && alive; i++) {
        alive = shown_alive("exec", k.pid) || !comm_is(k.pid, "sleep");
        if (alive)
            usleep(2000);
    }
    ck_assert_msg(!alive, "member %d still counted as alive 10 s after it "
                  "called exec", (int)k.pid);
    ck_assert_int_eq(gm_proc_start_ticks(k.pid, &after), 0);
    ck_assert_uint_eq(after, before);
    /* Its charge comes back: to a reclaim, and to a refused request. */
    ck_assert_uint_eq(gm_group_reclaim(&g), 800);
    ck_assert_int_eq(s.pid, k.pid);
    ck_assert_uint_eq(s.bytes, 800);
    ck_assert(gm_group_reserve(&g, gdev, L, NULL));
    kid_kill(&k, true);
    gm_group_leave(&g);
}
END_TEST

START_TEST(exec_member_is_reclaimed_on_refusal)
{
    const uint64_t L = 1000;
    struct gm_group g;
    struct gm_group_params p = params("exec2", 1.0, L);
    int gdev;
    join_ok(&g, &p, &gdev);
    struct kid k = spawn(params("exec2", 1.0, L));
    ck_assert_int_eq(ask(&k, 'R', L, 0).ok, 1);
    ck_assert_int_eq(ask(&k, 'E', 0, 0).ok, 1);
    bool ok = false;
    for (int i = 0; i < 5000 && !ok; i++) {
        ok = gm_group_reserve(&g, gdev, L, NULL);   /* reclaims on refusal */
        if (!ok)
            usleep(2000);
    }
    ck_assert_msg(ok, "the limit is still held 10 s after its member "
                  "called exec");
    struct gm_group_view v;
    snap_ok("exec2", &v);
    ck_assert_uint_eq(v.nmembers, 1);
    ck_assert_uint_eq(v.reclaims, 1);
    ck_assert_uint_eq(v.dev[gdev].used, L);
    kid_kill(&k, true);
    gm_group_leave(&g);
}
END_TEST

START_TEST(member_without_its_descriptor_stays_alive)
{
    const uint64_t L = 1000;
    struct gm_group g;
    struct gm_group_params p = params("fds", 1.0, L);
    int gdev;
    join_ok(&g, &p, &gdev);
    struct kid k = spawn(params("fds", 1.0, L));
    ck_assert_int_eq(ask(&k, 'R', 600, 0).ok, 1);
    /* It closes every descriptor it has, and its group descriptor's
     * number goes to another file. */
    struct rep r = ask(&k, 'X', 0, 0);
    ck_assert_int_eq(r.ok, 1);
    ck_assert_uint_eq(r.v, 1);
    /* Its mapping still holds its lock: a member, charge kept. */
    ck_assert_uint_eq(gm_group_reclaim(&g), 0);
    ck_assert(!gm_group_reserve(&g, gdev, L - 599, NULL));
    ck_assert(shown_alive("fds", k.pid));
    ck_assert_int_eq(ask(&k, 'R', 400, 0).ok, 1);
    ck_assert_int_eq(ask(&k, 'B', 0, 0).ok, 0);
    /* Leaving returns everything, and leaves the program's file open. */
    ck_assert_int_eq(ask(&k, 'L', 0, 0).v, 1);
    waitpid(k.pid, NULL, 0);
    close(k.wr);
    close(k.rd);
    struct gm_group_view v;
    snap_ok("fds", &v);
    ck_assert_uint_eq(v.dev[gdev].used, 0);
    ck_assert_uint_eq(v.nmembers, 1);
    ck_assert_uint_eq(v.reclaims, 0);
    gm_group_leave(&g);
}
END_TEST

/* ---- forged locks: every wait bounded ------------------------------------ */

#define BOUND_NS (20000 * MS)   /* generous: the library's bound is 2 s */

static void kill_all(struct kid *k, int n)
{
    for (int i = 0; i < n; i++)
        if (k[i].pid > 0)
            kill(k[i].pid, SIGKILL);
}

/* Sends a command and wants its reply within BOUND_NS; on a timeout the
 * members in all[] are killed (they would hang forever) and the test
 * fails. */
static struct rep ask_bounded(struct kid *k, char op, uint64_t a, uint64_t b,
                              struct kid *all, int n, const char *what)
{
    struct cmd m = { op, a, b };
    struct rep r;
    put(k->wr, &m, sizeof m);
    if (!reply_within(k, &r, BOUND_NS)) {
        kill_all(all, n);
        ck_abort_msg("%s: no answer within %llu s", what,
                     (unsigned long long)(BOUND_NS / 1000000000ull));
    }
    return r;
}

START_TEST(forged_lock_owner_breaks_the_group_within_a_bound)
{
    const uint64_t L = 1000;
    struct kid k[2];
    k[0] = spawn(params("forge", 1.0, L));
    k[1] = spawn(params("forge", 1.0, L));
    ck_assert_int_eq(ask(&k[1], 'R', 300, 0).ok, 1);
    ck_assert_int_eq(ask(&k[0], 'P', 20 * MS, 0).ok, 1);   /* its reaper */
    /* A same-user process writes into the lock word the name of a live
     * member that does not hold it (k[0], whose liveness lock says it is
     * alive). */
    static struct gm_group_view v;
    snap_ok("forge", &v);
    int live = -1;
    for (unsigned i = 0; i < v.nmembers; i++)
        if (v.member[i].pid == k[0].pid)
            live = v.member[i].slot;
    ck_assert_int_ge(live, 0);
    int fd;
    struct gm_group_seg *seg = map_rw("forge", &fd);
    uint32_t w = __atomic_load_n(&seg->hdr.lock.word, __ATOMIC_SEQ_CST);
    __atomic_store_n(&seg->hdr.lock.word,
                     ((w & ~0xffu) + GM_GROUP_LOCK_TAKEN) | (uint32_t)(live + 1),
                     __ATOMIC_SEQ_CST);
    /* A member dies: the reaper of the other goes for the lock. */
    kid_kill(&k[1], true);
    k[1].pid = 0;
    usleep(100 * 1000);
    /* reserve: within the bound, failing open, the group broken. */
    struct rep r = ask_bounded(&k[0], 'R', L, 0, k, 1, "reserve");
    ck_assert_int_eq(r.ok, 1);
    r = ask_bounded(&k[0], 'B', 0, 0, k, 1, "broken");
    ck_assert_int_eq(r.ok, 1);
    /* A new member: refused within the bound, saying why. */
    struct kid n = spawn_gated(params("forge", 1.0, L), -1);
    if (!reply_within(&n, &r, BOUND_NS)) {
        kill(n.pid, SIGKILL);
        kill_all(k, 1);
        ck_abort_msg("join: no answer within the bound");
    }
    ck_assert_int_eq(r.ok, -1);
    ck_assert_msg(strstr(r.msg, "does not respond") != NULL, "%s", r.msg);
    waitpid(n.pid, NULL, 0);
    /* gc: left alone. */
    char path[256], err[512];
    seg_path(path, sizeof path, "forge");
    ck_assert_int_eq(gm_group_gc(path, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "does not respond"));
    ck_assert_int_eq(access(path, F_OK), 0);
    /* leave: the reaper stops, the member exits. */
    r = ask_bounded(&k[0], 'L', 0, 0, k, 1, "leave");
    ck_assert_int_eq(r.ok, 1);
    ck_assert_int_eq(waitpid(k[0].pid, NULL, 0), k[0].pid);
    unmap_rw(seg, fd);
}
END_TEST

/* Every churning member answers within the bound (one that died is
 * named with its signal), having churned, then leaves. */
static void churned_and_left(struct kid *k, int n)
{
    for (int i = 0; i < n; i++) {
        struct rep r;
        if (!reply_within(&k[i], &r, BOUND_NS)) {
            int st = 0;
            bool dead = waitpid(k[i].pid, &st, WNOHANG) == k[i].pid;
            kill_all(k, n);
            ck_abort_msg("member %d of %d: %s %d", i + 1, n,
                         dead && WIFSIGNALED(st) ? "killed by signal"
                                                 : "no answer, status",
                         dead && WIFSIGNALED(st) ? WTERMSIG(st) : st);
        }
        ck_assert_uint_gt(r.v, 0);
    }
    for (int i = 0; i < n; i++) {
        struct rep r = ask_bounded(&k[i], 'L', 0, 0, k, n, "leave");
        ck_assert_int_eq(r.ok, 1);
        waitpid(k[i].pid, NULL, 0);
    }
}

START_TEST(zeroed_lock_hangs_no_member)
{
    enum { N = 3 };
    const uint64_t L = 1000;
    struct kid k[N];
    for (int i = 0; i < N; i++)
        k[i] = spawn(params("zero", 1.0, L));
    int fd;
    struct gm_group_seg *seg = map_rw("zero", &fd);
    for (int i = 0; i < N; i++) {
        struct cmd m = { 'C', 300, 1500 * MS };
        put(k[i].wr, &m, sizeof m);
    }
    usleep(100 * 1000);
    /* Zeroed while they churn: the word reads free while one of them
     * may hold it. */
    memset(&seg->hdr.lock, 0, sizeof seg->hdr.lock);
    churned_and_left(k, N);
    unmap_rw(seg, fd);
}
END_TEST

/* The lock's words zeroed one at a time while members churn, again and
 * again, its first bytes put back between writes: no member crashes
 * (a C library's robust mutex there made its holder follow the list
 * pointers a foreign write left in the file) and every member answers
 * within the bound. */
START_TEST(zeroed_lock_words_crash_no_member)
{
    enum { N = 3 };
    const uint64_t L = 1000;
    struct kid k[N];
    for (int i = 0; i < N; i++)
        k[i] = spawn(params("junk", 1.0, L));
    int fd;
    struct gm_group_seg *seg = map_rw("junk", &fd);
    unsigned char pristine[sizeof seg->hdr.lock];
    memcpy(pristine, &seg->hdr.lock, sizeof pristine);
    for (int i = 0; i < N; i++) {
        struct cmd m = { 'C', 300, 1500 * MS };
        put(k[i].wr, &m, sizeof m);
    }
    uint64_t seed = 0x9e3779b97f4a7c15ull, end = gm_clock_monotonic_ns() +
                                                   600 * MS;
    while (gm_clock_monotonic_ns() < end) {
        uint64_t *q = (uint64_t *)(void *)&seg->hdr.lock;
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        if ((seed >> 33) % 2 == 0)
            memcpy(&seg->hdr.lock, pristine, sizeof pristine);
        else
            __atomic_store_n(&q[(seed >> 40) % (sizeof pristine / 8)], 0,
                             __ATOMIC_RELAXED);
        usleep(20);
    }
    churned_and_left(k, N);
    unmap_rw(seg, fd);
}
END_TEST

/* gm_group_card reads one card's limit and charge without joining: what
 * a member reserved, 0 for a card or a group not there, and a planted
 * symbolic link or a file a member would refuse is refused, untouched. */
START_TEST(card_reads_the_group_without_joining)
{
    const uint64_t L = 1000;
    struct gm_group g;
    struct gm_group_params p = params("card", 1.0, L);
    int gdev;
    join_ok(&g, &p, &gdev);
    uint64_t u = 0, lim = 7, used = 7;
    ck_assert(gm_group_reserve(&g, gdev, 300, &u));
    char err[512];
    ck_assert_int_eq(gm_group_card(dir, PREFIX, "card", UUID0, &lim, &used,
                                   err, sizeof err), 1);
    ck_assert_uint_eq(lim, L);
    ck_assert_uint_eq(used, 300);
    static struct gm_group_view v;
    snap_ok("card", &v);
    ck_assert_uint_eq(v.nmembers, 1);   /* it took no slot */
    unsigned char other[16];
    memcpy(other, UUID0, sizeof other);
    other[15] ^= 1;
    ck_assert_int_eq(gm_group_card(dir, PREFIX, "card", other, &lim, &used,
                                   err, sizeof err), 0);
    ck_assert_int_eq(gm_group_card(dir, PREFIX, "nosuch", UUID0, &lim, &used,
                                   err, sizeof err), 0);
    char path[256], link[256];
    seg_path(path, sizeof path, "card");
    seg_path(link, sizeof link, "linked");
    ck_assert_int_eq(symlink(path, link), 0);
    ck_assert_int_eq(gm_group_card(dir, PREFIX, "linked", UUID0, &lim, &used,
                                   err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "symbolic link"));
    unlink(link);
    ck_assert_int_eq(chmod(path, 0644), 0);
    ck_assert_int_eq(gm_group_card(dir, PREFIX, "card", UUID0, &lim, &used,
                                   err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "not 0600"));
    ck_assert_int_eq(chmod(path, 0600), 0);
    gm_group_release(&g, gdev, 300);
    gm_group_leave(&g);
}
END_TEST

/* ---- names and kinds ----------------------------------------------------- */

struct find_arg { const char *name; char path[256]; };

static int find_group(void *arg, const char *path, const char *name)
{
    struct find_arg *f = arg;
    if (strcmp(name, f->name) != 0)
        return 0;
    snprintf(f->path, sizeof f->path, "%s", path);
    return 1;
}

struct tel_rep { int rc; char path[256]; };

/* A child that opens its telemetry segment under `prefix` in dir once told
 * (a byte on go), answers on back, and closes it at the next byte. */
static pid_t spawn_tel(const char *prefix, int go, int back)
{
    pid_t parent = getpid(), pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid != 0)
        return pid;
    die_with_parent(parent);
    char c;
    if (read(go, &c, 1) != 1)
        _exit(2);
    struct gm_tel t;
    struct tel_rep r;
    char err[256];
    struct gm_tel_params tp = { .prefix = prefix, .shm_dir = dir };
    memset(&r, 0, sizeof r);
    r.rc = gm_tel_open(&t, &tp, err, sizeof err);
    snprintf(r.path, sizeof r.path, "%s", r.rc == 0 ? t.path : err);
    if (write(back, &r, sizeof r) != (ssize_t)sizeof r)
        _exit(2);
    if (read(go, &c, 1) != 1)
        _exit(2);
    gm_tel_close(&t, false);
    _exit(0);
}

START_TEST(group_file_never_meets_a_process_segment)
{
    const uint64_t L = 1000;
    int go[2], back[2];
    ck_assert_int_eq(pipe(go), 0);
    ck_assert_int_eq(pipe(back), 0);
    /* A process whose telemetry prefix is "<PREFIX>.group", and the group
     * named after its pid under PREFIX. */
    pid_t w = spawn_tel(PREFIX ".group", go[0], back[1]);
    struct find_arg f = { .name = NULL };
    char name[16];
    snprintf(name, sizeof name, "%d", (int)w);
    f.name = name;
    struct gm_group g;
    struct gm_group_params p = params(name, 1.0, L);
    int gdev;
    join_ok(&g, &p, &gdev);
    ck_assert(gm_group_reserve(&g, gdev, 900, NULL));
    ck_assert_int_eq(gm_group_list(dir, PREFIX, find_group, &f), 1);
    struct stat st0, st1;
    ck_assert_int_eq(stat(f.path, &st0), 0);
    put(go[1], "g", 1);
    struct tel_rep r;
    ck_assert(get(back[0], &r, sizeof r));
    ck_assert_msg(r.rc == 0, "telemetry: %s", r.path);
    ck_assert_str_ne(r.path, f.path);
    ck_assert_int_eq(stat(f.path, &st1), 0);
    ck_assert_uint_eq(st1.st_ino, st0.st_ino);
    /* A second member joins that group, under its limit. */
    struct kid k = spawn(params(name, 1.0, L));
    ck_assert_int_eq(ask(&k, 'R', 900, 0).ok, 0);
    ck_assert_int_eq(ask(&k, 'R', 100, 0).ok, 1);
    static struct gm_group_view v;
    char err[256];
    ck_assert_int_eq(gm_group_snapshot(f.path, &v, err, sizeof err), 0);
    ck_assert_uint_eq(v.nmembers, 2);
    ck_assert_uint_eq(v.dev[gdev].used, L);
    kid_quit(&k);
    put(go[1], "q", 1);
    ck_assert_int_eq(waitpid(w, NULL, 0), w);
    ck_assert_int_eq(access(r.path, F_OK), -1);   /* closed: removed */
    gm_group_leave(&g);
}
END_TEST

START_TEST(file_of_another_kind_is_never_removed_as_stale)
{
    static struct gm_group_seg img, bad;
    template_image(&img);
    /* A group segment at this process's telemetry path, nobody holding
     * it: not a telemetry leftover; private telemetry, the file kept. */
    int go[2], back[2];
    ck_assert_int_eq(pipe(go), 0);
    ck_assert_int_eq(pipe(back), 0);
    pid_t w = spawn_tel(PREFIX, go[0], back[1]);
    char tpath[256];
    snprintf(tpath, sizeof tpath, "%s/%s.%d", dir, PREFIX, (int)w);
    write_file(tpath, &img, sizeof img, 0600);
    struct stat st0, st1;
    ck_assert_int_eq(stat(tpath, &st0), 0);
    put(go[1], "g", 1);
    struct tel_rep r;
    ck_assert(get(back[0], &r, sizeof r));
    ck_assert_msg(r.rc == 1, "rc %d: %s", r.rc, r.path);
    ck_assert_ptr_nonnull(strstr(r.path, "not a gpumem telemetry segment"));
    put(go[1], "q", 1);
    ck_assert_int_eq(waitpid(w, NULL, 0), w);
    ck_assert_int_eq(stat(tpath, &st1), 0);
    ck_assert_uint_eq(st1.st_ino, st0.st_ino);
    ck_assert_uint_eq((uint64_t)st1.st_size, sizeof img);
    /* A file of another kind, never initialised, at a group's path:
     * refused and kept (only magic 0 or ours is a dead creator's). */
    bad = img;
    bad.hdr.initialised = 0;
    bad.hdr.magic = GM_ABI_MAGIC;
    char path[256];
    seg_path(path, sizeof path, "h");
    write_file(path, &bad, sizeof bad, 0600);
    refused("bad magic", false);
}
END_TEST

/* ---- tools --------------------------------------------------------------- */

static int collect(void *arg, const char *path, const char *name)
{
    char *names = arg;
    (void)path;
    strcat(names, name);
    strcat(names, " ");
    return 0;
}

START_TEST(list_snapshot_and_gc)
{
    const uint64_t L = 12000;
    struct kid live = spawn(params("g1", 1.5, L));
    struct gm_group g;
    struct gm_group_params p = params("g2", 1.0, L);
    p.keep = true;
    join_ok(&g, &p, NULL);
    gm_group_leave(&g);
    struct kid dead = spawn(params("g3", 0.7, L));
    struct kid peer = spawn(params("g1", 0.7, L));
    ck_assert_int_eq(ask(&peer, 'R', 1000, 0).ok, 1);
    ck_assert_int_eq(ask(&dead, 'R', 700, 0).ok, 1);
    kid_kill(&dead, true);
    char other[256];
    snprintf(other, sizeof other, "%s/%s.123", dir, PREFIX);
    write_file(other, "x", 1, 0600);
    snprintf(other, sizeof other, "%s/%s.group@", dir, PREFIX);
    write_file(other, "x", 1, 0600);
    snprintf(other, sizeof other, "%s/other.group@g9", dir);
    write_file(other, "x", 1, 0600);
    snprintf(other, sizeof other, "%s/%s.group.g8", dir, PREFIX);
    write_file(other, "x", 1, 0600);   /* the old name: not a group */
    char names[256] = "";
    ck_assert_int_eq(gm_group_list(dir, PREFIX, collect, names), 3);
    ck_assert_ptr_nonnull(strstr(names, "g1 "));
    ck_assert_ptr_nonnull(strstr(names, "g2 "));
    ck_assert_ptr_nonnull(strstr(names, "g3 "));
    ck_assert_int_eq(gm_group_list("/nonexistent/dir", PREFIX, NULL, NULL),
                     -1);
    /* Shares and liveness as the tools see them. */
    struct gm_group_view v;
    snap_ok("g1", &v);
    ck_assert_uint_eq(v.nmembers, 2);
    for (unsigned i = 0; i < v.nmembers; i++) {
        bool high = v.member[i].pid == live.pid;
        ck_assert(v.member[i].alive);
        ck_assert_uint_eq(v.member[i].share[0],
                          share(L, high ? 1.5 : 0.7, 2.2));
        ck_assert_uint_eq(v.member[i].used[0], high ? 0 : 1000);
    }
    snap_ok("g3", &v);
    ck_assert_uint_eq(v.nmembers, 1);
    ck_assert(!v.member[0].alive);
    ck_assert_uint_eq(v.dev[0].used, 700);
    /* gc: live members keep a group; dead or empty ones go. */
    char path[256], err[256];
    seg_path(path, sizeof path, "g1");
    ck_assert_int_eq(gm_group_gc(path, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "2 live members"));
    ck_assert_int_eq(access(path, F_OK), 0);
    seg_path(path, sizeof path, "g2");
    ck_assert_int_eq(gm_group_gc(path, err, sizeof err), 1);
    ck_assert_int_eq(access(path, F_OK), -1);
    seg_path(path, sizeof path, "g3");
    ck_assert_int_eq(gm_group_gc(path, err, sizeof err), 1);
    ck_assert_int_eq(access(path, F_OK), -1);
    /* A member leaving returns its charge without any reclaim. */
    kid_quit(&peer);
    snap_ok("g1", &v);
    ck_assert_uint_eq(v.dev[0].used, 0);
    ck_assert_uint_eq(v.reclaims, 0);
    kid_quit(&live);
    seg_path(path, sizeof path, "g1");
    ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("group");
    TCase *t = tcase_create("core");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, join_creates_private_segment_and_last_leave_removes_it);
    tcase_add_test(t, bad_names_are_refused);
    tcase_add_test(t, device_table_by_uuid);
    tcase_add_test(t, mismatched_limit_warns_and_uses_the_groups);
    tcase_add_test(t, limit_edge_is_exact_and_release_is_clamped);
    tcase_add_test(t, peak_is_raised_at_commit_not_at_admission);
    tcase_add_test(t, low_cannot_take_high_share_high_takes_idle_low);
    tcase_add_test(t, low_uses_idle_memory_of_its_peers_not_of_higher_ones);
    tcase_add_test(t, worked_example_of_the_docs);
    tcase_add_test(t, equal_weights_borrow_freely);
    tcase_add_test(t, four_processes_never_pass_the_limit_and_end_at_zero);
    tcase_add_test(t, killed_member_reclaimed_on_refusal);
    tcase_add_test(t, group_of_dead_members_starts_over);
    tcase_add_test(t, unreaped_zombie_member_is_dead);
    tcase_add_test(t, reaper_reclaims_within_a_second);
    tcase_add_test(t, pid_reuse_is_not_the_same_process);
    tcase_add_test(t, full_group_refuses_a_65th_member);
    tcase_add_test(t, lock_survives_members_killed_inside_it);
    tcase_add_test(t, leave_while_holding_the_lock_does_not_break_the_group);
    tcase_add_test(t, outsider_dying_inside_the_lock_is_taken_over);
    tcase_add_test(t, outsider_byte_failures_are_bounded_and_never_hold_the_word);
    tcase_add_test(t, start_over_reads_the_slots_not_the_mask);
    tcase_add_test(t, damaged_used_is_corrected_by_reaper_and_join);
    tcase_add_test(t, removed_file_members_move_to_the_new_one);
    tcase_add_test(t, repeated_removals_under_load_lose_nothing);
    tcase_add_test(t, registration_inside_a_registration_is_bounded);
    tcase_add_test(t, holder_is_asked_by_pid_when_the_file_is_gone);
    tcase_add_test(t, wait_is_served_by_another_process_release);
    tcase_add_test(t, simultaneous_first_members_share_one_segment);
    tcase_add_test(t, abandoned_creation_is_taken_over_live_one_is_not);
    tcase_add_test(t, hostile_or_truncated_segments_are_refused);
    tcase_add_test(t, lost_slot_fails_open);
    tcase_add_test(t, peek_reads_the_group_or_nothing);
    tcase_add_test(t, list_snapshot_and_gc);
    tcase_add_test(t, exec_into_another_program_returns_the_charge);
    tcase_add_test(t, exec_member_is_reclaimed_on_refusal);
    tcase_add_test(t, member_without_its_descriptor_stays_alive);
    tcase_add_test(t, forged_lock_owner_breaks_the_group_within_a_bound);
    tcase_add_test(t, zeroed_lock_hangs_no_member);
    tcase_add_test(t, zeroed_lock_words_crash_no_member);
    tcase_add_test(t, card_reads_the_group_without_joining);
    tcase_add_test(t, group_file_never_meets_a_process_segment);
    tcase_add_test(t, file_of_another_kind_is_never_removed_as_stale);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int f = srunner_ntests_failed(r);
    srunner_free(r);
    return f ? 1 : 0;
}
