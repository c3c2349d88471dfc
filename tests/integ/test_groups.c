/*
 * tests/integ/test_groups.c — shared budgets through the preloaded shim:
 * several processes under one GPUMEM_GROUP limit never pass it together
 * (the group segment is sampled while they run), a SIGKILLed member's
 * memory becomes available to the others within a second,
 * GPUMEM_ON_OOM=wait waits for another process to free, members'
 * contexts count in the group past its limit, a request the group
 * refuses is not published as the process's use, a member's
 * cuMemGetInfo and NVML show the group's limit and room, and `gpumem gc`
 * never takes a group file for a process segment (by its name or its
 * contents).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gm_spawn.h"
#include "shim/group/group.h"

static char out[1 << 16];
static char prefix[64], env_prefix[96], env_group[96];
static char la[128], lb[128];   /* the logs of members a and b */
static char env_limit[96], env_ctx[96];
static const char *menv[8];     /* a member's environment (member_env) */

static void unique(const char *tag)
{
    static int n;
    snprintf(prefix, sizeof prefix, "gmtg%s%d_%d", tag, (int)getpid(), n++);
    snprintf(env_prefix, sizeof env_prefix, "GPUMEM_SHM_PREFIX=%s", prefix);
    snprintf(env_group, sizeof env_group, "GPUMEM_GROUP=team");
    snprintf(la, sizeof la, "/tmp/%s.a.log", prefix);
    snprintf(lb, sizeof lb, "/tmp/%s.b.log", prefix);
}

/* menv: the test's prefix and group, GPUMEM_GROUP_LIMIT=limit,
 * SIMCUDA_CONTEXT=ctx, and up to two more variables (NULL: none). */
static void member_env(const char *limit, const char *ctx, const char *more,
                       const char *more2)
{
    snprintf(env_limit, sizeof env_limit, "GPUMEM_GROUP_LIMIT=%s", limit);
    snprintf(env_ctx, sizeof env_ctx, "SIMCUDA_CONTEXT=%s", ctx);
    const char *e[] = { env_prefix, env_group, env_limit, env_ctx, more,
                        more2, NULL };
    memcpy(menv, e, sizeof e);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Start `prog` (a path in the build tree) under the shim without
 * waiting; output to `log`. */
static pid_t start_prog(const char *const *env, const char *log,
                        const char *prog_rel, const char *const *args)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    FILE *f = fopen(log, "w");
    if (f) {
        dup2(fileno(f), 1);
        dup2(fileno(f), 2);
    }
    char abs[2048];
    if (realpath(gm_build_dir(), abs) == NULL)
        _exit(126);
    char lib[2200], sim[2200], prog[2200];
    snprintf(lib, sizeof lib, "%s/libgpumem.so", abs);
    snprintf(sim, sizeof sim, "%s/sim", abs);
    snprintf(prog, sizeof prog, "%s/%s", abs, prog_rel);
    setenv("LD_LIBRARY_PATH", sim, 1);
    setenv("LD_PRELOAD", lib, 1);
    for (const char *const *e = env; *e; e++)
        putenv((char *)*e);
    const char *argv[16] = { prog, "--via", "gpa" };
    int n = 3;
    for (const char *const *a = args; *a && n < 15; a++)
        argv[n++] = *a;
    argv[n] = NULL;
    execv(prog, (char *const *)argv);
    _exit(127);
}

/* Start apicheck under the shim without waiting; output to `log`. */
static pid_t start(const char *const *env, const char *log,
                   const char *const *args)
{
    return start_prog(env, log, "tests/progs/apicheck", args);
}

static int finish(pid_t pid)
{
    int st;
    if (waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void group_path(char *buf, size_t cap)
{
    snprintf(buf, cap, "/dev/shm/%s.group@team", prefix);
}

static int file_contains(const char *path, const char *what)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(out, 1, sizeof out - 1, f);
    fclose(f);
    out[n] = '\0';
    return strstr(out, what) != NULL;
}

/* Waits up to 10 s for `what` in the log of a member. */
static void wait_for(const char *log, const char *what)
{
    double t0 = now_ms();
    while (!file_contains(log, what) && now_ms() - t0 < 10000) {
        struct timespec ts = { 0, 10000000 };
        nanosleep(&ts, NULL);
    }
    ck_assert_msg(file_contains(log, what), "no \"%s\" in %s: %s", what,
                  log, out);
}

/* Starts member a (menv, log la) holding `size` bytes for `ms`
 * milliseconds, and waits until it holds them. */
static pid_t start_holding(const char *size, const char *ms)
{
    const char *hold[] = { "hold", size, ms, NULL };
    pid_t a = start(menv, la, hold);
    wait_for(la, "holding");
    return a;
}

/* The members churn from one moment, each context made before (a
 * context is charged past a full group: docs/design.md, so a member
 * that started late, into a full group, put the group its context over
 * the limit, and the bound below was broken by 6 to 15 MiB now and
 * then). */
START_TEST(four_processes_never_pass_the_limit)
{
    unique("s");
    char go[160], env_go[192];
    snprintf(go, sizeof go, "/tmp/%s.go", prefix);
    snprintf(env_go, sizeof env_go, "APICHECK_GO=%s", go);
    member_env("512M", "8M", "GPUMEM_LOG_LEVEL=error", env_go);
    const char *args[] = { "churn", "1500", NULL };
    pid_t kids[4];
    char logs[4][128];
    for (int i = 0; i < 4; i++) {
        snprintf(logs[i], sizeof logs[i], "/tmp/%s.%d.log", prefix, i);
        kids[i] = start(menv, logs[i], args);
    }
    for (int i = 0; i < 4; i++)
        wait_for(logs[i], "ready");
    int gfd = open(go, O_WRONLY | O_CREAT | O_EXCL, 0600);
    ck_assert_int_ge(gfd, 0);
    close(gfd);
    char path[256];
    group_path(path, sizeof path);
    unsigned samples = 0, members_max = 0;
    uint64_t peak_seen = 0;
    double t0 = now_ms();
    while (now_ms() - t0 < 1400) {
        struct gm_group_view v;
        char err[256];
        if (gm_group_snapshot(path, &v, err, sizeof err) == 0 &&
            v.consistent && v.ndev > 0) {
            samples++;
            uint64_t sum = 0;
            for (unsigned m = 0; m < v.nmembers; m++)
                sum += v.member[m].used[0];
            ck_assert_uint_le(v.dev[0].used, 512ull << 20);
            ck_assert_uint_eq(sum, v.dev[0].used);
            if (v.dev[0].used > peak_seen)
                peak_seen = v.dev[0].used;
            if (v.nmembers > members_max)
                members_max = v.nmembers;
        }
        struct timespec ts = { 0, 5000000 };
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < 4; i++) {
        int rc = finish(kids[i]);
        ck_assert_msg(rc == 0, "member %d exit %d: %s", i, rc,
                      file_contains(logs[i], "") ? out : "");
        ck_assert(file_contains(logs[i], "churn:"));
        unlink(logs[i]);
    }
    unlink(go);
    ck_assert_uint_gt(samples, 10);
    ck_assert_uint_eq(members_max, 4);
    ck_assert_uint_gt(peak_seen, 256ull << 20); /* the limit was contended */
    struct stat sb;
    ck_assert_msg(stat(path, &sb) != 0, "the last member left it behind");
}
END_TEST

START_TEST(killed_member_is_reclaimed)
{
    unique("k");
    member_env("1G", "8M", "GPUMEM_LOG_LEVEL=error", NULL);
    pid_t a = start_holding("629145600", "60000"); /* 600M */
    const char *grab[] = { "grab", "629145600", "5000", NULL };
    pid_t b = start(menv, lb, grab);
    struct timespec ts = { 0, 300000000 };
    nanosleep(&ts, NULL); /* b is refused meanwhile */
    kill(a, SIGKILL);
    double tk = now_ms();
    ck_assert_int_eq(finish(a), 128 + SIGKILL);
    int rc = finish(b);
    double waited = now_ms() - tk;
    ck_assert_msg(rc == 0, "b exit %d: %s", rc,
                  file_contains(lb, "") ? out : "");
    ck_assert_msg(waited < 1500, "reclaimed after %.0f ms", waited);
    ck_assert(file_contains(lb, "granted after"));
    unlink(la);
    unlink(lb);
    char seg[256];   /* a killed process cannot remove its segment */
    snprintf(seg, sizeof seg, "/dev/shm/%s.%d", prefix, (int)a);
    unlink(seg);
}
END_TEST

START_TEST(wait_across_processes)
{
    unique("w");
    member_env("1G", "8M", "GPUMEM_ON_OOM=wait:10s", NULL);
    pid_t a = start_holding("629145600", "800");
    /* b asks once: its one cuMemAlloc waits until a frees. */
    const char *grab[] = { "grab", "629145600", "1", NULL };
    double tb = now_ms();
    pid_t b = start(menv, lb, grab);
    ck_assert_int_eq(finish(a), 0);
    int rc = finish(b);
    double took = now_ms() - tb;
    ck_assert_msg(rc == 0, "b exit %d: %s", rc,
                  file_contains(lb, "") ? out : "");
    ck_assert(file_contains(lb, "waits for memory"));
    ck_assert_msg(took > 300 && took < 5000, "b took %.0f ms", took);
    unlink(la);
    unlink(lb);
}
END_TEST

/* Members' primary contexts count in the group as in their processes,
 * past its limit if need be: the group's use stays the sum of its
 * members' charges, and what no longer fits is refused. */
START_TEST(contexts_count_in_the_group_past_its_limit)
{
    unique("x");
    member_env("1000M", "300M", "GPUMEM_LOG_LEVEL=error", NULL);
    pid_t a = start_holding("629145600", "6000"); /* 600M */
    const char *try[] = { "try", "104857600", "sleep:3000", NULL };
    pid_t b = start(menv, lb, try);
    wait_for(lb, "try 104857600 rc");
    char path[256], err[256];
    group_path(path, sizeof path);
    struct gm_group_view v;
    ck_assert_msg(gm_group_snapshot(path, &v, err, sizeof err) == 0, "%s",
                  err);
    uint64_t sum = 0;
    for (unsigned m = 0; m < v.nmembers; m++)
        sum += v.member[m].used[0];
    ck_assert_uint_eq(v.nmembers, 2);
    ck_assert_uint_eq(v.dev[0].used, 1200ull << 20); /* 2 contexts + 600M */
    ck_assert_uint_eq(sum, v.dev[0].used);
    ck_assert_msg(file_contains(lb, "try 104857600 rc 2"), "%s", out);
    ck_assert_int_eq(finish(b), 0);
    ck_assert_int_eq(finish(a), 0);
    unlink(la);
    unlink(lb);
}
END_TEST

/* A request the group refuses leaves the process's published use and
 * peak as they were, as a refusal by the process limit does. */
START_TEST(group_refusal_is_not_published_as_use)
{
    unique("r");
    member_env("1000M", "0", NULL, NULL);
    pid_t a = start_holding("996147200", "4000"); /* 950M */
    const char *try[] = { "try", "104857600", NULL };
    member_env("1000M", "0", "GPUMEM_LIMIT=150M", "GPUMEM_REPORT=1");
    pid_t b = start(menv, lb, try);
    ck_assert_int_eq(finish(b), 0);
    ck_assert_msg(file_contains(lb, "try 104857600 rc 2"), "%s", out);
    ck_assert_msg(file_contains(lb, "peak 0 B of 150.0 MiB limit"), "%s", out);
    ck_assert_msg(file_contains(lb, "refused 100 MiB at 0.0 s: 0 B used"),
                  "%s", out);
    ck_assert_int_eq(finish(a), 0);
    unlink(la);
    unlink(lb);
}
END_TEST

/* A refusal that the priority rule makes (the room left is kept for a
 * member of a higher weight) says how much is kept and what fits: it
 * said only "100.0 MiB used of 1000.0 MiB limit", as if 900 MiB were
 * free. */
START_TEST(priority_refusal_names_what_is_kept)
{
    unique("p");
    member_env("1000M", "0", "GPUMEM_PRIORITY=high", NULL);
    pid_t a = start_holding("104857600", "4000"); /* 100M */
    const char *try[] = { "try", "629145600", NULL }; /* 600M */
    member_env("1000M", "0", "GPUMEM_PRIORITY=low", NULL);
    pid_t b = start(menv, lb, try);
    ck_assert_int_eq(finish(b), 0);
    ck_assert_msg(file_contains(lb, "try 629145600 rc 2"), "%s", out);
    /* a's share: 1000M * 1.5 / 2.2 = 681.8M, 581.8M of it unused */
    ck_assert_msg(file_contains(lb, "cuMemAlloc of 600.0 MiB refused: group "
                                    "'team' has 100.0 MiB used of 1000.0 MiB "
                                    "limit; 581.8 MiB of it is kept for "
                                    "higher-priority members, so at most "
                                    "318.2 MiB fits now"), "%s", out);
    ck_assert_int_eq(finish(a), 0);
    unlink(la);
    unlink(lb);
}
END_TEST

#define MIB (1ull << 20)

/* A member sees its group in cuMemGetInfo, cuDeviceTotalMem and NVML:
 * another member holds 600 MiB and its 50 MiB context of a 1000 MiB
 * group, so this one, with its own 50 MiB context, sees total 1000 MiB
 * and free 300 MiB whatever its own limit (8G, or none); exactly that
 * fits and one MiB more does not; NVML agrees (used 700 MiB) and its own
 * process entry is its own charge. It saw its own limit's 8 GiB (or the
 * device's 80 GiB), of which 300 MiB could be allocated. */
START_TEST(member_sees_the_groups_room)
{
    unique("v");
    member_env("1000M", "50M", "GPUMEM_LOG_LEVEL=error", NULL);
    pid_t a = start_holding("629145600", "3000"); /* 600M */
    const char *own[] = { "GPUMEM_LIMIT=8G", "GPUMEM_LIMIT" };
    char want[256];
    for (int i = 0; i < 2; i++) {
        member_env("1000M", "50M", "GPUMEM_LOG_LEVEL=error", own[i]);
        const char *argv[] = { gm_bpath("tests/progs/nvmlview"), "--via",
                               "dlsym", "fit", NULL };
        int rc = gm_run(menv, 1, argv, out, sizeof out);
        ck_assert_msg(rc == 0, "%s: exit %d: %s", own[i], rc, out);
        snprintf(want, sizeof want, "cuda total=%llu free=%llu devtotal=%llu\n",
                 1000 * MIB, 300 * MIB, 1000 * MIB);
        ck_assert_msg(strstr(out, want) != NULL, "%s: no '%s' in:\n%s",
                      own[i], want, out);
        snprintf(want, sizeof want, "nvml total=%llu free=%llu used=%llu\n"
                 "nvml2 total=%llu free=%llu used=%llu reserved=0\n",
                 1000 * MIB, 300 * MIB, 700 * MIB, 1000 * MIB, 300 * MIB,
                 700 * MIB);
        ck_assert_msg(strstr(out, want) != NULL, "%s: no '%s' in:\n%s",
                      own[i], want, out);
        snprintf(want, sizeof want, "own %llu\nfit 0 more 2\nown after %llu\n",
                 50 * MIB, 350 * MIB);
        ck_assert_msg(strstr(out, want) != NULL, "%s: no '%s' in:\n%s",
                      own[i], want, out);
    }
    /* A group whose copies never settle (`gen` left odd, as by a locker
     * mid-update, once this member's context is charged and before it
     * looks) is asked under its lock: the same figures, never the
     * process's own 8 GiB. The lock's own unlock makes `gen` even again. */
    char path[256], go[300], lv[160];
    group_path(path, sizeof path);
    snprintf(go, sizeof go, "%s.go", path);
    snprintf(lv, sizeof lv, "%s.v", la);
    unlink(go);
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    struct gm_group_seg *seg = mmap(NULL, sizeof *seg, PROT_READ | PROT_WRITE,
                                    MAP_SHARED, fd, 0);
    ck_assert(seg != MAP_FAILED);
    member_env("1000M", "50M", "GPUMEM_LOG_LEVEL=error", own[0]);
    const char *busy[] = { "fit", go, NULL };
    pid_t v = start_prog(menv, lv, "tests/progs/nvmlview", busy);
    wait_for(lv, "ready");
    __atomic_fetch_or(&seg->hdr.gen, 1u, __ATOMIC_SEQ_CST);
    int gfd = open(go, O_CREAT | O_WRONLY, 0600);
    ck_assert_int_ge(gfd, 0);
    close(gfd);
    int rc = finish(v);
    uint64_t gen = __atomic_load_n(&seg->hdr.gen, __ATOMIC_SEQ_CST);
    munmap(seg, sizeof *seg);
    close(fd);
    unlink(go);
    ck_assert_msg(file_contains(lv, "ready"), "busy: no output");
    ck_assert_msg(rc == 0, "busy: exit %d: %s", rc, out);
    snprintf(want, sizeof want, "cuda total=%llu free=%llu devtotal=%llu\n",
             1000 * MIB, 300 * MIB, 1000 * MIB);
    ck_assert_msg(strstr(out, want) != NULL, "busy: no '%s' in:\n%s", want,
                  out);
    ck_assert_msg((gen & 1u) == 0, "gen %llu left odd", (unsigned long long)gen);
    unlink(lv);
    ck_assert_int_eq(finish(a), 0);
    unlink(la);
}
END_TEST

/* Beside a high member holding 100 MiB of 1000 MiB, a low one is shown
 * as free what the priority rule admits for it (318.2 MiB: the high
 * one's share, 681.8 MiB, is kept), and exactly that fits. */
START_TEST(low_member_sees_what_the_rule_admits)
{
    unique("q");
    member_env("1000M", "0", "GPUMEM_PRIORITY=high", NULL);
    pid_t a = start_holding("104857600", "3000"); /* 100M */
    member_env("1000M", "0", "GPUMEM_PRIORITY=low", "GPUMEM_LOG_LEVEL=error");
    const char *argv[] = { gm_bpath("tests/progs/nvmlview"), "--via", "dlsym",
                           "fit", NULL };
    int rc = gm_run(menv, 1, argv, out, sizeof out);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    /* share = floor(1000 MiB * 1.5 / 2.2); free = 1000 MiB - 100 MiB -
     * (share - 100 MiB) = 1000 MiB - share */
    unsigned long long share = 1000 * MIB * 1500 / 2200;
    char want[256];
    snprintf(want, sizeof want, "cuda total=%llu free=%llu devtotal=%llu\n"
             "nvml total=%llu free=%llu used=%llu\n", 1000 * MIB,
             1000 * MIB - share, 1000 * MIB, 1000 * MIB, 1000 * MIB - share,
             share);
    ck_assert_msg(strstr(out, want) != NULL, "no '%s' in:\n%s", want, out);
    ck_assert_msg(strstr(out, "fit 0 more 2\n") != NULL, "%s", out);
    ck_assert_int_eq(finish(a), 0);
    unlink(la);
    unlink(lb);
}
END_TEST

/* The same refusal in a group of the longest name (64 characters) is
 * printed whole: its line ends with what fits now. A 160-byte buffer cut
 * it after "kept for higher-priority me". */
START_TEST(priority_refusal_of_a_long_group_name_is_whole)
{
    static const char name[] = "g123456789abcdefghijklmnopqrstuvwxyz"
                               "ABCDEFGHIJKLMNOPQRSTUVWXYZ_.";
    ck_assert_uint_eq(strlen(name), 64);
    unique("n");
    snprintf(env_group, sizeof env_group, "GPUMEM_GROUP=%s", name);
    member_env("1000M", "0", "GPUMEM_PRIORITY=high", NULL);
    pid_t a = start_holding("104857600", "4000"); /* 100M */
    const char *try[] = { "try", "629145600", NULL }; /* 600M */
    member_env("1000M", "0", "GPUMEM_PRIORITY=low", NULL);
    pid_t b = start(menv, lb, try);
    ck_assert_int_eq(finish(b), 0);
    char want[512];
    snprintf(want, sizeof want, "gpumem: device 0: cuMemAlloc of 600.0 MiB "
             "refused: group '%s' has 100.0 MiB used of 1000.0 MiB limit; "
             "581.8 MiB of it is kept for higher-priority members, so at "
             "most 318.2 MiB fits now\n", name);
    ck_assert_msg(file_contains(lb, want), "want %s in:\n%s", want, out);
    ck_assert_int_eq(finish(a), 0);
    unlink(la);
    unlink(lb);
}
END_TEST

static unsigned live_members(const struct gm_group_view *v)
{
    unsigned n = 0;
    for (unsigned i = 0; i < v->nmembers && i < GM_GROUP_MAX_MEMBERS; i++)
        n += v->member[i].alive;
    return n;
}

/* GPUMEM_KEEP=1 keeps the group file when its last member leaves, with
 * the group's peak, for a look afterwards (gpumem ps); the next member
 * is the group's first again, its limit applies, and without GPUMEM_KEEP
 * it removes the file as it leaves. The file went with the last member
 * whatever GPUMEM_KEEP said. */
START_TEST(keep_keeps_the_group_file)
{
    unique("e");
    char path[256], err[256], seg[256];
    struct gm_group_view v;
    struct stat sb;
    group_path(path, sizeof path);
    member_env("1000M", "0", "GPUMEM_KEEP=1", NULL);
    const char *hold[] = { "hold", "104857600", "10", NULL }; /* 100M */
    pid_t a = start(menv, la, hold);
    ck_assert_int_eq(finish(a), 0);
    snprintf(seg, sizeof seg, "/dev/shm/%s.%d", prefix, (int)a);
    unlink(seg);    /* its own segment, kept too */
    unlink(la);     /* for b's "holding" */
    ck_assert_msg(stat(path, &sb) == 0, "GPUMEM_KEEP=1 did not keep %s", path);
    ck_assert_msg(gm_group_snapshot(path, &v, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(live_members(&v), 0);
    ck_assert_uint_eq(v.dev[0].used, 0);
    ck_assert_uint_eq(v.dev[0].peak, 100ull << 20);
    ck_assert_uint_eq(v.dev[0].limit, 1000ull << 20);
    /* the next member starts the group over, with its own limit */
    member_env("500M", "0", NULL, NULL);
    pid_t b = start_holding("52428800", "300");
    ck_assert_msg(gm_group_snapshot(path, &v, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(live_members(&v), 1);
    ck_assert_uint_eq(v.dev[0].limit, 500ull << 20);
    ck_assert_uint_eq(v.dev[0].peak, 50ull << 20);
    ck_assert_int_eq(finish(b), 0);
    ck_assert_msg(!file_contains(la, "already has a limit"), "%s", out);
    ck_assert_msg(stat(path, &sb) != 0, "the last member left it behind");
    unlink(la);
}
END_TEST

/* Static mode under warn: a request its arena has no block for passes
 * the process's limit from the driver, but never the group's. */
START_TEST(static_warn_past_the_arena_keeps_the_group_limit)
{
    unique("s");
    member_env("1000M", "0", "GPUMEM_MODE=static", "GPUMEM_ON_OOM=warn");
    const char *e[] = { menv[0], menv[1], menv[2], menv[3], menv[4], menv[5],
                        "GPUMEM_LIMIT=200M", NULL };
    /* the arena is 200M of the group's 1000M; the second line waits out
     * the refusal lines' rate limit (one a second) */
    const char *try[] = { "try", "262144000", "sleep:1100", "943718400",
                          NULL };
    pid_t b = start(e, lb, try);
    ck_assert_int_eq(finish(b), 0);
    ck_assert_msg(file_contains(lb, "try 262144000 rc 0\n") &&
                      file_contains(lb, "cuMemAlloc of 250.0 MiB allowed past "
                                        "the limit, from the driver outside "
                                        "the arena") &&
                      file_contains(lb, "try 943718400 rc 2\n") &&
                      file_contains(lb, "cuMemAlloc of 900.0 MiB refused: "
                                        "group 'team' has 200.0 MiB used of "
                                        "1000.0 MiB limit"), "%s", out);
    unlink(lb);
}
END_TEST

/* A group file kept with GPUMEM_KEEP=1 has no member: gpumem gc removes
 * it, "(group NAME, no member)", and its help says so, with that line
 * among its examples. The help named only killed members and creators
 * that died, and its example said "no live member", a line gc never
 * prints alone. */
START_TEST(gc_removes_a_kept_group_as_its_help_says)
{
    unique("k");
    char path[256], seg[256], want[512];
    struct stat sb;
    group_path(path, sizeof path);
    member_env("1000M", "0", "GPUMEM_KEEP=1", NULL);
    const char *hold[] = { "hold", "1048576", "10", NULL };
    pid_t a = start(menv, la, hold);
    ck_assert_int_eq(finish(a), 0);
    unlink(la);
    snprintf(seg, sizeof seg, "/dev/shm/%s.%d", prefix, (int)a);
    ck_assert_msg(stat(path, &sb) == 0, "GPUMEM_KEEP=1 did not keep %s", path);
    const char *gc[] = { gm_bpath("gpumem"), "gc", "--prefix", prefix, NULL };
    int rc = gm_run(NULL, 0, gc, out, sizeof out);
    bool gone = stat(path, &sb) != 0;
    unlink(seg);
    unlink(path);
    ck_assert_int_eq(rc, 0);
    ck_assert_msg(gone, "gc left the kept group %s: %s", path, out);
    snprintf(want, sizeof want, "removed %s (group team, no member)\n", path);
    ck_assert_msg(strstr(out, want) != NULL, "want %s in:\n%s", want, out);
    const char *help[] = { gm_bpath("gpumem"), "gc", "--help", NULL };
    ck_assert_int_eq(gm_run(NULL, 0, help, out, sizeof out), 0);
    /* the description's words run across indented lines: compare them
     * with each run of blanks as one space */
    size_t w = 0;
    for (size_t r = 0; out[r] != '\0'; r++) {
        char c = out[r] == '\n' ? ' ' : out[r];
        if (c != ' ' || (w > 0 && out[w - 1] != ' '))
            out[w++] = c;
    }
    out[w] = '\0';
    ck_assert_msg(strstr(out, "the last member left with GPUMEM_KEEP=1") !=
                      NULL && strstr(out, "(group train, no member)") != NULL &&
                      strstr(out, "no live member)") == NULL, "%s", out);
}
END_TEST

/* A member that cannot join (here: a file of the wrong size at the
 * group's path) cannot have the group limit enforced: by default
 * (GPUMEM_ON_BAD_CONFIG=exit) it exits with status 2 at its first CUDA
 * call, before any allocation, saying why; under warn it runs with its
 * process limit only and says that the group limit is not enforced. */
START_TEST(failed_join_exits_or_says_the_group_limit_is_not_enforced)
{
    unique("j");
    char path[256];
    group_path(path, sizeof path);
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "x", 1), 1);
    close(fd);
    const char *try[] = { "try", "104857600", NULL };
    member_env("1000M", "0", NULL, NULL);
    ck_assert_int_eq(finish(start(menv, la, try)), 2);
    ck_assert_msg(file_contains(la, "gpumem: cannot join group 'team' ("),
                  "%s", out);
    ck_assert_msg(file_contains(la, "); the group limit cannot be enforced "
                                    "in this process; exiting with status 2 "
                                    "(set GPUMEM_ON_BAD_CONFIG=warn to run "
                                    "with the process limit only)"),
                  "%s", out);
    ck_assert_msg(!file_contains(la, "try 104857600"), "%s", out);
    member_env("1000M", "0", "GPUMEM_ON_BAD_CONFIG=warn", NULL);
    ck_assert_int_eq(finish(start(menv, la, try)), 0);
    ck_assert_msg(file_contains(la, "cannot join group 'team' ("), "%s", out);
    ck_assert_msg(file_contains(la, "the group limit is not enforced in this "
                                    "process, running with the process "
                                    "limit only"), "%s", out);
    ck_assert_msg(file_contains(la, "try 104857600 rc 0"), "%s", out);
    unlink(path);
    unlink(la);
}
END_TEST

/* Members that end by exit() from a signal handler, at a random point of
 * their allocations (inside the group's critical section too), never
 * wait on their own lock at exit, and the group stays usable: every next
 * member joins (tests/progs/sigexit.c). */
START_TEST(exit_from_a_signal_handler_leaves_the_group_usable)
{
    unique("s");
    member_env("2G", "0", NULL, NULL);
    char abs[2048], lib[2200], sim[2200], prog[2200];
    ck_assert_ptr_nonnull(realpath(gm_build_dir(), abs));
    snprintf(lib, sizeof lib, "%s/libgpumem.so", abs);
    snprintf(sim, sizeof sim, "%s/sim", abs);
    snprintf(prog, sizeof prog, "%s/tests/progs/sigexit", abs);
    for (int i = 0; i < 12; i++) {
        double t0 = now_ms();
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            FILE *f = fopen(la, "w");
            if (f) {
                dup2(fileno(f), 1);
                dup2(fileno(f), 2);
            }
            setenv("LD_LIBRARY_PATH", sim, 1);
            setenv("LD_PRELOAD", lib, 1);
            for (const char *const *e = menv; *e; e++)
                putenv((char *)*e);
            execl(prog, prog, "50", (char *)NULL);
            _exit(127);
        }
        ck_assert_int_eq(finish(pid), 0);
        double ms = now_ms() - t0;
        ck_assert_msg(!file_contains(la, "cannot join"), "run %d: %s", i,
                      out);
        ck_assert_msg(!file_contains(la, "became unusable"), "run %d: %s",
                      i, out);
        ck_assert_msg(ms < 1500, "run %d took %.0f ms", i, ms);
    }
    char path[256];
    group_path(path, sizeof path);
    unlink(path);
    unlink(la);
}
END_TEST

struct found { const char *name; char path[256]; };

static int find_group(void *arg, const char *path, const char *name)
{
    struct found *f = arg;
    if (strcmp(name, f->name) != 0)
        return 0;
    snprintf(f->path, sizeof f->path, "%s", path);
    return 1;
}

static void copy_file(const char *from, const char *to)
{
    static char buf[1 << 16];
    int in = open(from, O_RDONLY), o = open(to, O_CREAT | O_EXCL | O_WRONLY,
                                            0600);
    ck_assert_int_ge(in, 0);
    ck_assert_int_ge(o, 0);
    ssize_t n = read(in, buf, sizeof buf);
    ck_assert_int_gt(n, 0);
    ck_assert_int_eq(write(o, buf, (size_t)n), n);
    close(in);
    close(o);
}

START_TEST(gc_never_takes_a_group_for_a_process_segment)
{
    unique("c");
    /* A pid that is gone, and a live group named after it. */
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    ck_assert_int_eq(finish(dead), 0);
    char name[16], msg[512];
    snprintf(name, sizeof name, "%d", (int)dead);
    struct gm_group g;
    struct gm_group_params p = {
        .prefix = prefix, .name = name, .weight = 1.0,
        .limit = { .kind = GM_LIMIT_BYTES, .bytes = 1ull << 30 },
    };
    ck_assert_msg(gm_group_join(&g, &p, msg, sizeof msg) == 0, "%s", msg);
    struct found f = { .name = name };
    ck_assert_int_eq(gm_group_list(NULL, prefix, find_group, &f), 1);
    /* gc of the prefix "<prefix>.group", whose process segments are named
     * "<prefix>.group.<pid>": the group file is not one of them. */
    char pfx[96];
    snprintf(pfx, sizeof pfx, "%s.group", prefix);
    const char *gc1[] = { gm_bpath("gpumem"), "gc", "--prefix", pfx, NULL };
    int rc1 = gm_run(NULL, 0, gc1, out, sizeof out);
    struct stat st;
    if (stat(f.path, &st) != 0) {
        gm_group_leave(&g);
        ck_abort_msg("gc removed the live group %s: %s", f.path, out);
    }
    /* The group's file under a process segment's name of a pid that is
     * gone: gc cannot read it as one, and it is not of that kind. */
    char copy[256];
    snprintf(copy, sizeof copy, "/dev/shm/%s.%d", prefix, (int)dead);
    copy_file(f.path, copy);
    const char *gc2[] = { gm_bpath("gpumem"), "gc", "--prefix", prefix, NULL };
    int rc2 = gm_run(NULL, 0, gc2, out, sizeof out);
    bool kept = stat(copy, &st) == 0, group_kept = stat(f.path, &st) == 0;
    unlink(copy);
    gm_group_leave(&g);   /* the last member: removes the file */
    ck_assert_msg(kept, "gc removed %s: %s", copy, out);
    ck_assert_int_eq(rc1, 0);
    ck_assert_int_eq(rc2, 0);
    ck_assert_ptr_nonnull(strstr(out, "not a gpumem telemetry segment"));
    ck_assert(group_kept);
    ck_assert_int_eq(stat(f.path, &st), -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("groups");
    TCase *t = tcase_create("shim");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, four_processes_never_pass_the_limit);
    tcase_add_test(t, killed_member_is_reclaimed);
    tcase_add_test(t, wait_across_processes);
    tcase_add_test(t, contexts_count_in_the_group_past_its_limit);
    tcase_add_test(t, group_refusal_is_not_published_as_use);
    tcase_add_test(t, priority_refusal_names_what_is_kept);
    tcase_add_test(t, member_sees_the_groups_room);
    tcase_add_test(t, low_member_sees_what_the_rule_admits);
    tcase_add_test(t, priority_refusal_of_a_long_group_name_is_whole);
    tcase_add_test(t, keep_keeps_the_group_file);
    tcase_add_test(t, gc_removes_a_kept_group_as_its_help_says);
    tcase_add_test(t, static_warn_past_the_arena_keeps_the_group_limit);
    tcase_add_test(t, failed_join_exits_or_says_the_group_limit_is_not_enforced);
    tcase_add_test(t, exit_from_a_signal_handler_leaves_the_group_usable);
    tcase_add_test(t, gc_never_takes_a_group_for_a_process_segment);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int f = srunner_ntests_failed(r);
    srunner_free(r);
    return f ? 1 : 0;
}
