/*
 * tests/unit/test_reader.c — the reader library (tools/lib/reader.c): listing
 * segments of a prefix (both name forms), lock holders from /proc/locks, refusing invalid images with a clear reason for
 * every header check, refusing symbolic links and files whose header is
 * not their name's process, snapshots equal to what was
 * written, bounded reads of a block whose writer died mid-update, invariant
 * checks, liveness (alive, exited, dead), and a segment file truncated
 * after it was mapped.
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
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim/base/clock.h"
#include "shim/telemetry/telemetry.h"
#include "tools/lib/reader.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/gmrd.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* A valid image in aligned memory, with a little activity. */
struct image {
    void *mem;
    size_t len;
    struct gm_tel t;
};

static void image_make(struct image *im, uint32_t ring, uint32_t slots)
{
    struct gm_tel_params p = { .ring_events = ring, .dev_slots = slots,
                               .policy_summary = "limit=2.0GiB", .mode = 2 };
    im->len = gm_tel_layout_size(ring, slots);
    im->mem = aligned_alloc(64, (im->len + 63) / 64 * 64);
    ck_assert_int_eq(gm_tel_open_mem(&im->t, im->mem, im->len, &p), 0);
    gm_tel_device(&im->t, 0, 80ull << 30, 2ull << 30, NULL);
    gm_tel_alloc(&im->t, 0, GM_API_MEM_ALLOC, 0x7000, 1 << 20, 3000,
                 1 << 20, 1 << 20);
    gm_tel_free(&im->t, 0, GM_API_MEM_FREE, 0x7000, 1 << 20, 800, 0);
}

static struct gm_abi_header *hdr(struct image *im)
{
    return im->mem;
}

static void write_file(const char *path, const void *p, size_t n)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, p, n), (ssize_t)n);
    close(fd);
}

/* Refusal of a modified image, with the reason containing `want`. */
static void expect_refused(struct image *im, size_t len, const char *want)
{
    char err[256] = "";
    struct gm_seg s;
    ck_assert_int_eq(gm_seg_open_mem(&s, im->mem, len, err, sizeof err), -1);
    ck_assert_msg(strstr(err, want) != NULL, "reason \"%s\" lacks \"%s\"",
                  err, want);
    ck_assert_int_eq(gm_reader_check_bytes(im->mem, len), -1);
}

/* ---- listing ------------------------------------------------------------- */

START_TEST(test_list_prefix)
{
    static const char *const names[] = {
        "gmrd.123", "gmrd.456", "gmrd.group.train", "gmrd.abc", "gmrd.0123",
        "gmrd.12x", "gmrd.", "other.77", "gmrdx.5", "gmrd.99999999999",
        "gmrd.7",
    };
    char path[256];
    for (unsigned i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        write_file(path, "x", 1);
    }
    int pids[8];
    ck_assert_int_eq(gm_reader_list(dir, "gmrd", pids, 8), 3);
    ck_assert_int_eq(pids[0], 7);
    ck_assert_int_eq(pids[1], 123);
    ck_assert_int_eq(pids[2], 456);
    ck_assert_int_eq(gm_reader_list(dir, "gmrd", pids, 1), 3);
    ck_assert_int_eq(gm_reader_list(dir, "other", pids, 8), 1);
    ck_assert_int_eq(pids[0], 77);
    ck_assert_int_eq(gm_reader_list(dir, "none", pids, 8), 0);
    char missing[128];
    snprintf(missing, sizeof missing, "%s/missing", dir);
    ck_assert_int_eq(gm_reader_list(missing, "gmrd", pids, 8), -1);
}
END_TEST

/* Both name forms, "<prefix>.<pid>" and "<prefix>.<pid>.ns<inode>", in
 * (pid, namespace) order; malformed namespace suffixes skipped. */
START_TEST(test_list_ids)
{
    static const char *const names[] = {
        "gmrd.5.ns4026532001", "gmrd.5", "gmrd.5.ns4026531999",
        "gmrd.3.ns7", "gmrd.group@x", "gmrd.5.ns", "gmrd.5.ns0",
        "gmrd.5.nsx", "gmrd.5.ns12.x", "gmrd.5.ns99999999999999999999",
        "gmrd.5.pid", "gmrd.0.ns5", "gmrd.6.ns18446744073709551615",
    };
    char path[256];
    for (unsigned i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        write_file(path, "x", 1);
    }
    struct gm_seg_id ids[8];
    ck_assert_int_eq(gm_reader_list_ids(dir, "gmrd", ids, 8), 5);
    ck_assert_int_eq(ids[0].pid, 3);
    ck_assert_uint_eq(ids[0].pidns, 7);
    ck_assert_int_eq(ids[1].pid, 5);
    ck_assert_uint_eq(ids[1].pidns, 0);
    ck_assert_uint_eq(ids[2].pidns, 4026531999ull);
    ck_assert_uint_eq(ids[3].pidns, 4026532001ull);
    ck_assert_int_eq(ids[4].pid, 6);
    ck_assert_uint_eq(ids[4].pidns, 18446744073709551615ull);
    /* The plain listing keeps to plain names. */
    int pids[8];
    ck_assert_int_eq(gm_reader_list(dir, "gmrd", pids, 8), 1);
    ck_assert_int_eq(pids[0], 5);
    /* Opening by id reaches the namespaced file and notes its namespace. */
    struct gm_seg sg;
    char err[256];
    struct gm_seg_id want = { 3, 7 };
    ck_assert_int_eq(gm_seg_open_id(&sg, dir, "gmrd", &want, err, sizeof err),
                     -1);
    ck_assert_msg(strstr(err, "gmrd.3.ns7") != NULL, "%s", err);
}
END_TEST

/* Past max, the lowest ids are the ones kept, in order, whatever order
 * the directory lists the names in (created here highest first and
 * lowest first, shuffled). */
START_TEST(test_list_ids_keeps_the_lowest)
{
    static const int pids[] = { 1063, 1001, 1040, 1000, 1022, 1002, 1050,
                                1010, 1003, 1061, 1030, 1004, 1062, 1011 };
    char path[256];
    for (unsigned i = 0; i < sizeof pids / sizeof *pids; i++) {
        snprintf(path, sizeof path, "%s/gmrd.%d", dir, pids[i]);
        write_file(path, "x", 1);
    }
    snprintf(path, sizeof path, "%s/gmrd.1000.ns9", dir);
    write_file(path, "x", 1);
    struct gm_seg_id ids[5];
    ck_assert_int_eq(gm_reader_list_ids(dir, "gmrd", ids, 5), 15);
    static const struct gm_seg_id want[5] = {
        { 1000, 0 }, { 1000, 9 }, { 1001, 0 }, { 1002, 0 }, { 1003, 0 } };
    for (unsigned i = 0; i < 5; i++) {
        ck_assert_int_eq(ids[i].pid, want[i].pid);
        ck_assert_uint_eq(ids[i].pidns, want[i].pidns);
    }
    ck_assert_int_eq(gm_reader_list_ids(dir, "gmrd", ids, 1), 15);
    ck_assert_int_eq(ids[0].pid, 1000);
    ck_assert_uint_eq(ids[0].pidns, 0);
}
END_TEST

/* /proc/locks lines: only FLOCK WRITE holders count; waiters ("->"),
 * POSIX and OFD locks, readers, malformed lines are skipped. */
START_TEST(test_locks_parse)
{
    static const char text[] =
        "1: FLOCK  ADVISORY  WRITE 18744 fe:00:10970615 0 EOF\n"
        "2: FLOCK  ADVISORY  WRITE 18743 00:1a:10970614 0 EOF\n"
        "3: POSIX  ADVISORY  WRITE 500 fe:00:77 0 EOF\n"
        "4: OFDLCK ADVISORY  WRITE -1 fe:00:78 0 EOF\n"
        "5: FLOCK  ADVISORY  READ  600 fe:00:79 0 EOF\n"
        "5: -> FLOCK  ADVISORY  WRITE 601 fe:00:79 0 EOF\n"
        "6: FLOCK  ADVISORY  WRITE 0 fe:00:80 0 EOF\n"
        "garbage\n"
        "7: FLOCK  ADVISORY  WRITE 700 fe:00"; /* cut short */
    struct gm_locks lm = { NULL, 0, 0 };
    ck_assert_uint_eq(gm_locks_parse(&lm, text, sizeof text - 1), 2);
    ck_assert_int_eq(gm_locks_holder(&lm, makedev(0xfe, 0), 10970615), 18744);
    ck_assert_int_eq(gm_locks_holder(&lm, makedev(0, 0x1a), 10970614), 18743);
    ck_assert_int_eq(gm_locks_holder(&lm, makedev(0xfe, 0), 10970614), 0);
    ck_assert_int_eq(gm_locks_holder(&lm, makedev(0xfe, 0), 77), 0);
    ck_assert_int_eq(gm_locks_holder(&lm, makedev(0xfe, 0), 79), 0);
    gm_locks_free(&lm);
    /* Many entries: the table grows. */
    char line[96];
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(line, sizeof line,
                         "%d: FLOCK  ADVISORY  WRITE %d 08:01:%d 0 EOF\n",
                         i + 1, i + 100, i + 5000);
        gm_locks_parse(&lm, line, (size_t)n);
    }
    ck_assert_uint_eq(lm.n, 1000);
    ck_assert_int_eq(gm_locks_holder(&lm, makedev(8, 1), 5999), 1099);
    gm_locks_free(&lm);
    /* The real file: our own lock on a file of ours is found there. */
    char path[256];
    snprintf(path, sizeof path, "%s/locked", dir);
    write_file(path, "x", 1);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(flock(fd, LOCK_EX), 0);
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    ck_assert_int_eq(gm_locks_load(&lm, NULL), 0);
    ck_assert_int_eq(gm_locks_holder(&lm, st.st_dev, st.st_ino), getpid());
    gm_locks_free(&lm);
    close(fd);
}
END_TEST

/* ---- validation ---------------------------------------------------------- */

START_TEST(test_valid_image_accepted)
{
    struct image im;
    image_make(&im, 64, 4);
    char err[256] = "";
    struct gm_seg s;
    ck_assert_msg(gm_seg_open_mem(&s, im.mem, im.len, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_uint_eq(s.dev_slots, 4);
    ck_assert_uint_eq(s.ring_capacity, 64);
    ck_assert_uint_eq(s.pid, (uint32_t)getpid());
    ck_assert_uint_eq(s.ring_offset, 2048 + 4 * 1024);
    ck_assert_uint_eq(s.total_size, im.len);
    ck_assert_int_eq(gm_reader_check_bytes(im.mem, im.len), 0);
    /* Unaligned copies are fine through the checker. */
    char *odd = malloc(im.len + 1);
    memcpy(odd + 1, im.mem, im.len);
    ck_assert_int_eq(gm_reader_check_bytes(odd + 1, im.len), 0);
    ck_assert_int_eq(gm_seg_open_mem(&s, odd + 1, im.len, err, sizeof err),
                     -1);
    free(odd);
    free(im.mem);
}
END_TEST

START_TEST(test_each_header_check)
{
    struct image im;
    image_make(&im, 64, 4);
    struct gm_abi_header *h = hdr(&im);
    struct gm_abi_header saved = *h;
#define RESTORE() (*h = saved)
    h->magic = 0;
    expect_refused(&im, im.len, "not initialised");
    h->magic = 0x1234;
    expect_refused(&im, im.len, "bad magic");
    RESTORE();
    h->abi_version = GM_ABI_VERSION + 1;
    char next[32];
    snprintf(next, sizeof next, "ABI version %u", GM_ABI_VERSION + 1);
    expect_refused(&im, im.len, next);
    h->abi_version = 3; /* before every context was charged */
    expect_refused(&im, im.len, "ABI version 3");
    h->abi_version = 2; /* before the history */
    expect_refused(&im, im.len, "ABI version 2");
    h->abi_version = 1; /* the single-writer seqlock layout */
    expect_refused(&im, im.len, "ABI version 1");
    RESTORE();
    h->header_size = 1024;
    expect_refused(&im, im.len, "layout sizes");
    RESTORE();
    h->dev_size = 512;
    expect_refused(&im, im.len, "layout sizes");
    RESTORE();
    h->record_size = 32;
    expect_refused(&im, im.len, "layout sizes");
    RESTORE();
    h->dev_slots = 0;
    expect_refused(&im, im.len, "device slots 0");
    h->dev_slots = 65;
    expect_refused(&im, im.len, "device slots 65");
    RESTORE();
    h->ring_capacity = 48;
    expect_refused(&im, im.len, "not a power of two");
    h->ring_capacity = 8;
    expect_refused(&im, im.len, "not a power of two");
    h->ring_capacity = 1u << 31;
    expect_refused(&im, im.len, "not a power of two");
    RESTORE();
    h->ring_capacity = 32; /* a power of two, but not what the size says */
    expect_refused(&im, im.len, "inconsistent offsets");
    RESTORE();
    h->dev_offset = 4096;
    expect_refused(&im, im.len, "inconsistent offsets");
    RESTORE();
    h->total_size += 64;
    expect_refused(&im, im.len, "inconsistent offsets");
    RESTORE();
    h->hist_offset += 64;
    expect_refused(&im, im.len, "inconsistent offsets");
    RESTORE();
    h->hist_size -= 64;
    expect_refused(&im, im.len, "inconsistent offsets");
    RESTORE();
    h->hist_slots = 5;
    expect_refused(&im, im.len, "history geometry");
    RESTORE();
    h->hist_buckets = 1024;
    expect_refused(&im, im.len, "history geometry");
    RESTORE();
    h->hist_tiers = 4;
    expect_refused(&im, im.len, "history geometry");
    RESTORE();
    h->hist_bucket_size = 32;
    expect_refused(&im, im.len, "history geometry");
    RESTORE();
    h->marks_capacity = 1u << 31;
    expect_refused(&im, im.len, "history geometry");
    RESTORE();
    h->hist_dev_size = 0;
    expect_refused(&im, im.len, "history geometry");
    RESTORE();
    memset(h->cmdline, 'A', sizeof h->cmdline);
    expect_refused(&im, im.len, "unterminated");
    RESTORE();
    memset(h->policy, 'B', sizeof h->policy);
    expect_refused(&im, im.len, "unterminated");
    RESTORE();
    h->pid = 0;
    expect_refused(&im, im.len, "bad pid");
    RESTORE();
    expect_refused(&im, im.len - 1, "truncated");
    expect_refused(&im, 1000, "smaller than the header");
    expect_refused(&im, 4, "too small");
    expect_refused(&im, 0, "too small");
    /* Restored: accepted again (the checks above were the cause). */
    char err[256];
    struct gm_seg s;
    ck_assert_int_eq(gm_seg_open_mem(&s, im.mem, im.len, err, sizeof err), 0);
#undef RESTORE
    free(im.mem);
}
END_TEST

START_TEST(test_file_open_refuses_links_and_others)
{
    struct image im;
    image_make(&im, 64, 2);
    char path[256], link[256], err[256];
    snprintf(path, sizeof path, "%s/real", dir);
    snprintf(link, sizeof link, "%s/gmrd.4242", dir);
    write_file(path, im.mem, im.len);
    ck_assert_int_eq(symlink(path, link), 0);
    struct gm_seg s;
    ck_assert_int_eq(gm_seg_open(&s, dir, "gmrd", 4242, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "symbolic link"));
    ck_assert_int_eq(s.fd, -1);
    ck_assert_int_eq(gm_seg_open_path(&s, path, err, sizeof err), 0);
    gm_seg_close(&s);
    ck_assert_int_eq(gm_seg_open_path(&s, dir, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "not a regular"));
    write_file(path, "", 0);
    ck_assert_int_eq(gm_seg_open_path(&s, path, err, sizeof err), -1);
    write_file(path, im.mem, 3000);
    ck_assert_int_eq(gm_seg_open_path(&s, path, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "truncated"));
    free(im.mem);
}
END_TEST

/* Opening path refuses with a reason holding both `a` and `b`. */
static void expect_foreign(const char *path, const char *a, const char *b)
{
    struct gm_seg s;
    char err[512] = "";
    ck_assert_int_eq(gm_seg_open_path(&s, path, err, sizeof err), -1);
    ck_assert_int_eq(s.fd, -1);
    ck_assert_msg(strstr(err, a) != NULL && strstr(err, b) != NULL &&
                  strstr(err, "a copy, or another process") != NULL,
                  "reason \"%s\" lacks %s and %s", err, a, b);
}

static void expect_opens(const char *path, uint64_t name_ns)
{
    struct gm_seg s;
    char err[512] = "";
    ck_assert_msg(gm_seg_open_path(&s, path, err, sizeof err) == 0, "%s",
                  err);
    ck_assert_uint_eq(s.name_ns, name_ns);
    gm_seg_close(&s);
}

/* A file named for a process holds that process's header: a copy under
 * another pid's name, or another pid namespace's header under a name
 * that says otherwise, is refused with both pids (namespaces). */
START_TEST(test_header_must_be_the_names)
{
    struct image im;
    image_make(&im, 64, 2);
    char path[256];
    hdr(&im)->pid = 4000001;
    snprintf(path, sizeof path, "%s/gmrd.4000002", dir);
    write_file(path, im.mem, im.len);
    expect_foreign(path, "4000001", "4000002");
    struct gm_seg_id ids[4];
    ck_assert_int_eq(gm_reader_list_ids(dir, "gmrd", ids, 4), 1);
    struct gm_seg s;
    char err[512];
    ck_assert_int_eq(gm_seg_open_id(&s, dir, "gmrd", &ids[0], err,
                                    sizeof err), -1);
    snprintf(path, sizeof path, "%s/gmrd.4000001", dir);
    write_file(path, im.mem, im.len);
    expect_opens(path, 0);
    /* A dotted prefix: the pid is the last component. */
    snprintf(path, sizeof path, "%s/gm.4000002.4000001", dir);
    write_file(path, im.mem, im.len);
    expect_opens(path, 0);
    /* Pid namespaces: the name's against the header's. */
    snprintf(path, sizeof path, "%s/gmrd.4000001.ns4026532077", dir);
    write_file(path, im.mem, im.len);   /* header: namespace unknown */
    expect_foreign(path, "pid namespace 0", "4026532077");
    hdr(&im)->ident.pidns = 4026532078ull;
    write_file(path, im.mem, im.len);
    expect_foreign(path, "4026532078", "4026532077");
    hdr(&im)->ident.pidns = 4026532077ull;
    write_file(path, im.mem, im.len);
    expect_opens(path, 4026532077ull);
    snprintf(path, sizeof path, "%s/gmrd.4000001", dir);
    write_file(path, im.mem, im.len);   /* a container's under a plain name */
    expect_foreign(path, "4026532077", "initial one");
    hdr(&im)->ident.pidns = GM_PIDNS_INIT;
    write_file(path, im.mem, im.len);
    expect_opens(path, 0);
    /* A name that gives no pid is not checked. */
    snprintf(path, sizeof path, "%s/real", dir);
    write_file(path, im.mem, im.len);
    expect_opens(path, 0);
    free(im.mem);
}
END_TEST

/* ---- snapshots ----------------------------------------------------------- */

START_TEST(test_snapshot_matches_writes)
{
    struct image im;
    image_make(&im, 64, 4);
    gm_tel_alloc(&im.t, 2, GM_API_MEM_CREATE, 0x9000, 3 << 20, 70000,
                 3 << 20, 5 << 20);
    gm_tel_host(&im.t, GM_API_MEM_HOST_ALLOC, 0xabc, 4096);
    struct gm_seg s;
    char err[128];
    ck_assert_int_eq(gm_seg_open_mem(&s, im.mem, im.len, err, sizeof err), 0);
    struct gm_proc *pr = malloc(sizeof *pr);
    ck_assert_int_eq(gm_seg_summary(&s, pr), 0);
    ck_assert_int_eq(pr->pid, getpid());
    ck_assert_int_eq(pr->state, GM_SEG_ALIVE);
    ck_assert_uint_eq(pr->uid, getuid());
    const struct gm_snapshot *sn = &pr->snap;
    ck_assert_uint_eq(sn->dev_count, 3);
    ck_assert_uint_eq(sn->mode, 2);
    ck_assert_str_eq(sn->policy, "limit=2.0GiB");
    ck_assert_uint_eq(sn->host_pinned, 4096);
    ck_assert_uint_eq(sn->ring_head, 4);
    ck_assert_uint_eq(sn->dev[0].present, 1);
    ck_assert_uint_eq(sn->dev[0].physical, 80ull << 30);
    ck_assert_uint_eq(sn->dev[0].limit, 2ull << 30);
    ck_assert_uint_eq(sn->dev[0].allocs, 1);
    ck_assert_uint_eq(sn->dev[0].frees, 1);
    ck_assert_uint_eq(sn->dev[0].live_allocs, 0);
    ck_assert_uint_eq(sn->dev[0].peak, 1 << 20);
    ck_assert_uint_eq(sn->dev[0].used, 0);
    ck_assert_uint_eq(sn->dev[1].present, 0);
    ck_assert_uint_eq(sn->dev[2].peak, 5 << 20);
    ck_assert_uint_eq(sn->dev[2].size_hist[21], 1);
    ck_assert_uint_eq(sn->dev[2].lat_hist[16], 1);
    for (unsigned i = 0; i < 3; i++)
        ck_assert_int_eq(sn->dev_state[i], GM_SNAP_OK);
    /* Events, including the host record's layout. */
    struct gm_cursor c;
    gm_cursor_init(&c, &s, false);
    struct gm_abi_record r[8];
    uint64_t lost;
    ck_assert_uint_eq(gm_seg_drain(&s, &c, r, 8, 0, &lost), 4);
    ck_assert_int_eq(r[3].kind, GM_EV_HOST);
    ck_assert_uint_eq(r[3].dev, GM_ABI_NO_DEVICE);
    ck_assert_uint_eq(r[3].size, 4096);
    ck_assert_uint_eq(r[3].addr, 4096);
    ck_assert_uint_eq(r[3].extra, 0xabc);
    ck_assert_str_eq(gm_ev_kind_name(r[3].kind), "host");
    ck_assert_str_eq(gm_api_name(r[2].api), "cuMemCreate");
    ck_assert_str_eq(gm_ev_kind_name(999), "?");
    ck_assert_str_eq(gm_api_name(GM_API_COUNT), "?");
    char b[GM_ABI_NAME_CAP], want[GM_ABI_NAME_CAP];
    ck_assert_str_eq(gm_ev_kind_text(999, b, sizeof b), "kind999");
    ck_assert_str_eq(gm_ev_kind_text(4294967295u, b, sizeof b),
                     "kind4294967295");
    ck_assert_str_eq(gm_ev_kind_text(GM_EV_HOST, b, sizeof b), "host");
    snprintf(want, sizeof want, "api%u", (unsigned)GM_API_COUNT);
    ck_assert_str_eq(gm_api_text(GM_API_COUNT, b, sizeof b), want);
    ck_assert_str_eq(gm_api_text(GM_API_MEM_CREATE, b, sizeof b),
                     "cuMemCreate");
    free(pr);
    free(im.mem);
}
END_TEST

START_TEST(test_dead_writer_inside_bounded)
{
    struct image im;
    image_make(&im, 64, 2);
    struct gm_abi_dev *d =
        (struct gm_abi_dev *)((char *)im.mem + hdr(&im)->dev_offset);
    d->wbegin += 1; /* a writer killed between entering and leaving */
    struct gm_seg s;
    char err[128];
    ck_assert_int_eq(gm_seg_open_mem(&s, im.mem, im.len, err, sizeof err), 0);
    struct gm_snapshot *sn = malloc(sizeof *sn);
    uint64_t t0 = gm_clock_monotonic_ns();
    ck_assert_int_eq(gm_seg_snapshot(&s, sn), 1);
    uint64_t dt = gm_clock_monotonic_ns() - t0;
    ck_assert_int_eq(sn->dev_state[0], GM_SNAP_BUSY);
    ck_assert_uint_eq(sn->dev[0].allocs, 1); /* last attempt's values */
    ck_assert_uint_lt(dt, 50000000ull);
    d->wdone += 1;
    ck_assert_int_eq(gm_seg_snapshot(&s, sn), 0);
    ck_assert_int_eq(sn->dev_state[0], GM_SNAP_OK);
    free(sn);
    free(im.mem);
}
END_TEST

START_TEST(test_invariant_breaks_flagged)
{
    struct image im;
    image_make(&im, 64, 2);
    struct gm_abi_dev *d =
        (struct gm_abi_dev *)((char *)im.mem + hdr(&im)->dev_offset);
    struct gm_abi_dev saved = *d, out;
    ck_assert_int_eq(gm_tel_read_dev(d, &out), GM_SNAP_OK);
    d->used = d->peak + 1;
    ck_assert_int_eq(gm_tel_read_dev(d, &out), GM_SNAP_INSANE);
    *d = saved;
    d->live_allocs = d->allocs + 1;
    ck_assert_int_eq(gm_tel_read_dev(d, &out), GM_SNAP_INSANE);
    *d = saved;
    d->size_hist[3]++;
    ck_assert_int_eq(gm_tel_read_dev(d, &out), GM_SNAP_INSANE);
    *d = saved;
    d->frag_ppm = 1000001;
    ck_assert_int_eq(gm_tel_read_dev(d, &out), GM_SNAP_INSANE);
    *d = saved;
    d->present = 7;
    ck_assert_int_eq(gm_tel_read_dev(d, &out), GM_SNAP_INSANE);
    *d = saved;
    ck_assert_int_eq(gm_tel_read_dev(d, &out), GM_SNAP_OK);
    free(im.mem);
}
END_TEST

/* ---- liveness ------------------------------------------------------------ */

static pid_t dead_pid(void)
{
    pid_t c = fork();
    if (c == 0)
        _exit(0);
    int st;
    waitpid(c, &st, 0);
    return c;
}

START_TEST(test_liveness_states)
{
    struct image im;
    image_make(&im, 64, 2);
    char path[256], err[256];
    /* Our own pid and start time: alive. */
    struct gm_seg s;
    ck_assert_int_eq(gm_seg_open_mem(&s, im.mem, im.len, err, sizeof err), 0);
    ck_assert_int_eq(gm_seg_state(&s), GM_SEG_ALIVE);
    /* Our pid with another start time and no lock: a predecessor. */
    hdr(&im)->start_ticks += 5;
    snprintf(path, sizeof path, "%s/gmrd.%d", dir, getpid());
    write_file(path, im.mem, im.len);
    ck_assert_int_eq(gm_seg_open_path(&s, path, err, sizeof err), 0);
    ck_assert_int_eq(gm_seg_state(&s), GM_SEG_DEAD);
    gm_seg_close(&s);
    /* A pid that exited: dead, or exited when it closed cleanly. */
    pid_t gone = dead_pid();
    hdr(&im)->pid = (uint32_t)gone;
    unlink(path);
    snprintf(path, sizeof path, "%s/gmrd.%d", dir, (int)gone);
    write_file(path, im.mem, im.len);
    ck_assert_int_eq(gm_seg_open_path(&s, path, err, sizeof err), 0);
    ck_assert_int_eq(gm_seg_state(&s), GM_SEG_DEAD);
    ck_assert_str_eq(gm_seg_state_name(gm_seg_state(&s)), "dead");
    gm_seg_close(&s);
    hdr(&im)->flags = GM_ABI_F_CLOSED | GM_ABI_F_KEPT;
    write_file(path, im.mem, im.len);
    ck_assert_int_eq(gm_seg_open_path(&s, path, err, sizeof err), 0);
    ck_assert_int_eq(gm_seg_state(&s), GM_SEG_EXITED);
    /* Same file, but a process holds its lock (another pid namespace). */
    int holder = open(path, O_RDWR);
    ck_assert_int_eq(flock(holder, LOCK_EX), 0);
    ck_assert_int_eq(gm_seg_state(&s), GM_SEG_ALIVE);
    close(holder);
    ck_assert_int_eq(gm_seg_state(&s), GM_SEG_EXITED);
    gm_seg_close(&s);
    free(im.mem);
}
END_TEST

START_TEST(test_truncated_after_mapping)
{
    struct gm_tel t;
    struct gm_tel_params p = { .prefix = "gmrd", .ring_events = 1024,
                               .shm_dir = dir, .dev_slots = 2 };
    char err[256];
    ck_assert_int_eq(gm_tel_open(&t, &p, err, sizeof err), 0);
    for (int i = 0; i < 100; i++)
        gm_tel_alloc(&t, 0, 1, (uint64_t)i, 4096, 10, 4096, 4096);
    struct gm_seg s;
    ck_assert_int_eq(gm_seg_open(&s, dir, "gmrd", getpid(), err, sizeof err),
                     0);
    struct gm_snapshot *sn = malloc(sizeof *sn);
    ck_assert_int_eq(gm_seg_snapshot(&s, sn), 0);
    struct gm_cursor c;
    gm_cursor_init(&c, &s, false);
    struct gm_abi_record r[16];
    uint64_t lost = 7;
    ck_assert_uint_eq(gm_seg_drain(&s, &c, r, 16, 0, &lost), 16);
    /* The owner truncates the file under the reader's mapping. */
    ck_assert_int_eq(truncate(t.path, 0), 0);
    ck_assert_int_eq(gm_seg_snapshot(&s, sn), -1);
    uint64_t before = c.next;
    ck_assert_uint_eq(gm_seg_drain(&s, &c, r, 16, 0, &lost), 0);
    ck_assert_uint_eq(lost, 0);
    ck_assert_uint_eq(c.next, before);
    ck_assert_int_eq(gm_seg_state(&s), GM_SEG_ALIVE);
    gm_seg_close(&s);
    /* A SIGBUS that is not ours still reaches its previous disposition. */
    pid_t k = fork();
    if (k == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2); /* a sanitizer's handler may report it: expected */
        raise(SIGBUS);
        _exit(4);
    }
    int st;
    ck_assert_int_eq(waitpid(k, &st, 0), k);
    ck_assert_msg(!WIFEXITED(st) || WEXITSTATUS(st) != 4,
                  "a foreign SIGBUS was swallowed");
    free(sn);
    /* The writer's mapping is gone too; re-size before closing. */
    ck_assert_int_eq(truncate(t.path, (off_t)gm_tel_layout_size(1024, 2)),
                     0);
    gm_tel_close(&t, false);
}
END_TEST

static Suite *reader_suite(void)
{
    Suite *s = suite_create("reader");
    TCase *tc = tcase_create("reader");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_list_prefix);
    tcase_add_test(tc, test_list_ids);
    tcase_add_test(tc, test_list_ids_keeps_the_lowest);
    tcase_add_test(tc, test_locks_parse);
    tcase_add_test(tc, test_valid_image_accepted);
    tcase_add_test(tc, test_each_header_check);
    tcase_add_test(tc, test_file_open_refuses_links_and_others);
    tcase_add_test(tc, test_header_must_be_the_names);
    tcase_add_test(tc, test_snapshot_matches_writes);
    tcase_add_test(tc, test_dead_writer_inside_bounded);
    tcase_add_test(tc, test_invariant_breaks_flagged);
    tcase_add_test(tc, test_liveness_states);
    tcase_add_test(tc, test_truncated_after_mapping);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(reader_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
