/*
 * tests/unit/test_group.c — shared budgets (shim/group.c) with real
 * processes: members are forked children driven over pipes, so every
 * cross-process path (robust mutex, futex wake-ups, /proc liveness) runs
 * as in production. Covers: the segment file (mode, size, removal), the
 * device table and the mismatched-limit warning, the exact limit edge, the
 * priority rule, a 4-process stress that must never pass the limit and must
 * end at zero, reclaim of SIGKILLed members (on refusal, by the reaper, as
 * zombies), pid reuse, lock recovery after members die holding it, waits
 * across processes, the creation race, hostile or truncated segments, the
 * fail-open rule, and the tools' list/snapshot/gc.
 *
 * Each test uses its own directory under /tmp; children exit with _exit
 * and die with their pipes, so a failed assertion leaves nothing running.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim/clock.h"
#include "shim/group.h"

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
    snprintf(buf, cap, "%s/%s.group.%s", dir, PREFIX, name);
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
    return (uint64_t)((unsigned __int128)limit * wm / tm);
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

/* Commands: R reserve a; F release a; W wait for a up to b ns (v: ns
 * taken); D reply, sleep b ns, release a; S reserve/release forever;
 * U usage (v: available); L leave and exit. */
static void kid_main(int rd, int wr, int gate, struct gm_group_params p)
{
    struct gm_group g;
    struct rep r;
    memset(&r, 0, sizeof r);
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
        }
        if (m.op != 'S' && write(wr, &r, sizeof r) != (ssize_t)sizeof r)
            _exit(2);
        if (m.op == 'L')
            _exit(0);
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
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(down[1]);
        close(up[0]);
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

