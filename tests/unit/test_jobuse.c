/*
 * tests/unit/test_jobuse.c — the job's charge on a device from its
 * processes' segments (shim/telemetry/jobuse.c): UUID text, and a
 * directory of hand-made segments, each case a file that must count or
 * must not (another UUID, closed, a dead writer, one that let go of its
 * lock, a planted symbolic link, a truncated file, another ABI version,
 * another Slurm job, a writer that stays inside its block). The test
 * holds each segment's lock as its writer would.
 */
#include <check.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim/base/clock.h"
#include "shim/telemetry/abi.h"
#include "shim/telemetry/jobuse.h"

static const unsigned char U1[16] = { 0xc1, 0x5c, 0x02, 0x89, 0xec, 0x2d, 0x0a,
                                      0x91, 0x53, 0x66, 0x01, 0x3a, 0x80, 0x0b,
                                      0xca, 0x7d };
static const unsigned char U2[16] = { 1 };

START_TEST(uuid_text)
{
    unsigned char u[16];
    ck_assert(gm_uuid_parse("GPU-c15c0289-ec2d-0a91-5366-013a800bca7d", u));
    ck_assert_mem_eq(u, U1, 16);
    ck_assert(gm_uuid_parse("C15C0289-EC2D-0A91-5366-013A800BCA7D", u));
    ck_assert_mem_eq(u, U1, 16);
    ck_assert(!gm_uuid_parse("GPU-c15c0289-ec2d-0a91-5366-013a800bca7", u));
    ck_assert(!gm_uuid_parse("GPU-c15c0289-ec2d-0a91-5366-013a800bca7d00", u));
    ck_assert(!gm_uuid_parse("GPU-c15c0289-ec2d-0a91-5366-013a800bcaZd", u));
    ck_assert(!gm_uuid_parse("MIG-c15c0289-ec2d-0a91-5366-013a800bca7d", u));
    ck_assert(!gm_uuid_parse("", u));
    ck_assert(!gm_uuid_parse(NULL, u));
}
END_TEST

static char dir[64];

struct seg {
    struct gm_abi_header h;
    struct gm_abi_dev d[2];
};

/* A segment of this (live) process holding `used` on a device `uuid`. */
static void make(struct seg *s, const unsigned char uuid[16], uint64_t used)
{
    memset(s, 0, sizeof *s);
    s->h.magic = GM_ABI_MAGIC;
    s->h.abi_version = GM_ABI_VERSION;
    s->h.header_size = sizeof s->h;
    s->h.dev_size = sizeof s->d[0];
    s->h.dev_slots = 2;
    s->h.dev_offset = sizeof s->h;
    s->h.dev_seen = 1;
    s->h.pid = (uint32_t)getpid();
    ck_assert_int_eq(gm_proc_start_ticks(0, &s->h.start_ticks), 0);
    s->h.ident.uid = (uint32_t)getuid();
    s->d[0].present = 1;
    s->d[0].used = used;
    memcpy(s->d[0].uuid, uuid, 16);
}

static int held[16];
static int nheld;

/* Write a segment file; `lock`: hold its lock from here on, as a live
 * writer does. */
static void put_as(const char *name, const struct seg *s, size_t len, bool lock)
{
    char path[160];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, s, len), (ssize_t)len);
    if (lock && nheld < 16) {
        ck_assert_int_eq(flock(fd, LOCK_EX), 0);
        held[nheld++] = fd;
    } else {
        close(fd);
    }
}

static void put(const char *name, const struct seg *s, size_t len)
{
    put_as(name, s, len, true);
}

static uint64_t used_of(const unsigned char uuid[16], const char *job,
                        unsigned *procs)
{
    return gm_job_used(dir, "gmj", getuid(), job, uuid, procs);
}

static void setup(void)
{
    /* tmpfs, as a segment directory is (it lists the newest names first). */
    snprintf(dir, sizeof dir, "/dev/shm/gmjob.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    while (nheld > 0)
        close(held[--nheld]);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(live_segments_of_the_uuid_count)
{
    struct seg s;
    char name[64];
    unsigned procs = 9;
    ck_assert_uint_eq(used_of(U1, NULL, &procs), 0);
    ck_assert_uint_eq(procs, 0);
    make(&s, U1, 100);
    snprintf(name, sizeof name, "gmj.%d", (int)getpid());
    put(name, &s, sizeof s);
    /* A writer in another pid namespace: named by its pid there. */
    make(&s, U1, 20);
    s.h.pid = 7;
    put("gmj.7.ns4026532000", &s, sizeof s);
    ck_assert_uint_eq(used_of(U1, NULL, &procs), 120);
    ck_assert_uint_eq(procs, 2);
    ck_assert_uint_eq(used_of(U2, NULL, &procs), 0);
    ck_assert_uint_eq(procs, 0);
    /* Other names, another prefix, a group file: not segments. */
    make(&s, U1, 5);
    put("gmjx.1", &s, sizeof s);
    put("gmj.group@x", &s, sizeof s);
    put("gmj.12a", &s, sizeof s);
    put("gmj.1.nsx", &s, sizeof s);
    ck_assert_uint_eq(used_of(U1, NULL, NULL), 120);
}
END_TEST

START_TEST(foreign_and_dead_segments_do_not)
{
    struct seg s;
    char name[64], path[160], target[160];
    make(&s, U1, 1);
    s.h.closed_ns = 1;                       /* closed */
    snprintf(name, sizeof name, "gmj.%d", (int)getpid());
    put(name, &s, sizeof s);
    ck_assert_uint_eq(used_of(U1, NULL, NULL), 0);
    make(&s, U1, 2);
    s.h.abi_version = GM_ABI_VERSION - 1;    /* another version */
    put(name, &s, sizeof s);
    ck_assert_uint_eq(used_of(U1, NULL, NULL), 0);
    make(&s, U1, 4);
    put(name, &s, sizeof s.h + 100);         /* truncated */
    ck_assert_uint_eq(used_of(U1, NULL, NULL), 0);
    make(&s, U1, 8);
    s.h.start_ticks += 1;                    /* the pid is another process's */
    put(name, &s, sizeof s);
    ck_assert_uint_eq(used_of(U1, NULL, NULL), 0);
    make(&s, U1, 16);
    s.h.ident.uid = (uint32_t)getuid() + 1;  /* recorded by another user */
    put(name, &s, sizeof s);
    ck_assert_uint_eq(used_of(U1, NULL, NULL), 0);
    make(&s, U1, 12);
    s.h.ident.pidns = 4026532999ull;         /* another pid namespace's */
    put(name, &s, sizeof s);
    ck_assert_uint_eq(used_of(U1, NULL, NULL), 0);
    make(&s, U1, 24);
    put_as(name, &s, sizeof s, false);       /* nobody holds its lock */
    ck_assert_uint_eq(used_of(U1, NULL, NULL), 0);
    make(&s, U1, 48);                        /* a dead writer elsewhere */
    s.h.pid = 7;
    put_as("gmj.7.ns4026532000", &s, sizeof s, false);
    ck_assert_uint_eq(used_of(U1, NULL, NULL), 0);
    /* A symbolic link planted under a segment's name. */
    make(&s, U1, 32);
    put("real", &s, sizeof s);
    snprintf(target, sizeof target, "%s/real", dir);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
    ck_assert_int_eq(symlink(target, path), 0);
    ck_assert_uint_eq(used_of(U1, NULL, NULL), 0);
    /* A directory that cannot be read: nothing. */
    ck_assert_uint_eq(gm_job_used("/nonexistent/gm", "gmj", getuid(), NULL, U1,
                                  NULL), 0);
}
END_TEST

START_TEST(slurm_job_and_busy_writer)
{
    struct seg s;
    char name[64];
    make(&s, U1, 64);
    snprintf(s.h.ident.job_id, sizeof s.h.ident.job_id, "123");
    snprintf(name, sizeof name, "gmj.%d", (int)getpid());
    put(name, &s, sizeof s);
    ck_assert_uint_eq(used_of(U1, "123", NULL), 64);
    ck_assert_uint_eq(used_of(U1, "456", NULL), 0);
    ck_assert_uint_eq(used_of(U1, "", NULL), 64);
    /* A writer that stays inside its block (died there): its last copy,
     * after the bounded retries. */
    make(&s, U1, 128);
    s.d[0].wbegin = 5;
    s.d[0].wdone = 4;
    put(name, &s, sizeof s);
    ck_assert_uint_eq(used_of(U1, NULL, NULL), 128);
}
END_TEST

/* Another user's files do not count toward the bound on files read: a
 * flood of them does not hide the job's segment (needs root to make
 * files of another owner). */
START_TEST(another_users_flood_hides_nothing)
{
    if (getuid() != 0) {
        fprintf(stderr, "another_users_flood_hides_nothing: not root, "
                "not run (it makes files of another owner)\n");
        return;
    }
    struct seg s;
    char name[64], path[160];
    make(&s, U1, 256);
    snprintf(name, sizeof name, "gmj.%d", (int)getpid());
    put(name, &s, sizeof s);
    /* Made after it: tmpfs lists the newest names first. */
    for (unsigned i = 1; i <= GM_JOBUSE_MAX + 8; i++) {
        snprintf(path, sizeof path, "%s/gmj.%u", dir, 1000000 + i);
        int fd = open(path, O_WRONLY | O_CREAT, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(fchown(fd, 12345, 12345), 0);
        close(fd);
    }
    ck_assert_uint_eq(used_of(U1, NULL, NULL), 256);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("jobuse");
    TCase *t = tcase_create("jobuse");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, uuid_text);
    tcase_add_test(t, live_segments_of_the_uuid_count);
    tcase_add_test(t, foreign_and_dead_segments_do_not);
    tcase_add_test(t, slurm_job_and_busy_writer);
    tcase_add_test(t, another_users_flood_hides_nothing);
    tcase_set_timeout(t, 30);
    suite_add_tcase(su, t);
    SRunner *r = srunner_create(su);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
