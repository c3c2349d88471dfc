/*
 * tests/unit/test_tel_fuzz.c — hostile segments in `make check`: thousands
 * of deterministic pseudo-random corruptions of a valid image (truncations,
 * bit flips, header fields set to extreme values, huge counters, writers
 * stuck inside a device block, wild ring heads, random bytes) through
 * gm_reader_check_bytes(), the same entry point the libFuzzer target
 * (tests/fuzz/fuzz_reader.c) drives, and a share of them as files through
 * the path a tool takes (open, pread snapshot, mapped events). The reader
 * must never crash or hang (Check's timeout), must refuse what breaks the
 * header contract, and must still read an image whose only damage is in
 * the stats or the ring.
 */
#include <check.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim/base/clock.h"
#include "shim/telemetry/marks.h"
#include "shim/telemetry/telemetry.h"
#include "tools/lib/reader.h"

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static unsigned char *tmpl, *img;
static size_t len;
static uint64_t worst_ns;

static void setup(void)
{
    struct gm_tel_params p = { .ring_events = 64, .dev_slots = 4,
                               .policy_summary = "limit=1.0GiB" };
    len = gm_tel_layout_size(64, 4);
    tmpl = aligned_alloc(64, len);
    img = aligned_alloc(64, len);
    struct gm_tel t;
    ck_assert_int_eq(gm_tel_open_mem(&t, tmpl, len, &p), 0);
    gm_tel_device(&t, 0, 1ull << 34, 1ull << 30, NULL);
    for (uint64_t i = 0; i < 100; i++) /* wraps the ring */
        gm_tel_alloc(&t, (unsigned)(i % 3), 1, 0x1000 * i, 4096 << (i % 9),
                     1000 * i, 4096 * i, 4096 * i);
    for (uint64_t i = 0; i < 30; i++)
        gm_tel_free(&t, (unsigned)(i % 3), 4, 0x1000 * i, 4096 << (i % 9), 9,
                    0);
    gm_tel_refuse(&t, 1, 1, 1ull << 31, 4096, 1ull << 30, 0);
    gm_tel_host(&t, 16, 0xabc, 8192);
    gm_tel_step(&t, 3);
    gm_tel_mark(&t, "epoch 1");
    worst_ns = 0;
}

static void teardown(void)
{
    free(tmpl);
    free(img);
}

static int check(size_t n)
{
    uint64_t t0 = gm_clock_monotonic_ns();
    int rc = gm_reader_check_bytes(img, n);
    uint64_t dt = gm_clock_monotonic_ns() - t0;
    if (dt > worst_ns)
        worst_ns = dt;
    return rc;
}

/* The same image as a file, read as a tool reads one: it must be accepted
 * exactly when the in-memory check accepts it, and then snapshot and
 * drain without harm. */
static void check_file(size_t n, int want)
{
    /* A name the reader cannot take for a process's: a last part of
     * digits only (mkstemp's six letters are that about once in 55,000
     * files) names a pid, and the header's pid would not match it. */
    char path[] = "/tmp/gmtfuzz.XXXXXX.seg";
    int fd = mkstemps(path, 4);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, img, n), (ssize_t)n);
    close(fd);
    struct gm_seg s;
    char err[256];
    int rc = gm_seg_open_path(&s, path, err, sizeof err);
    unlink(path);
    ck_assert_msg(rc == want, "file of %zu bytes: open %d, memory check %d "
                  "(%s)", n, rc, want, err);
    if (rc != 0)
        return;
    static struct gm_snapshot snap;
    (void)gm_seg_snapshot(&s, &snap);
    struct gm_cursor c;
    gm_cursor_init(&c, &s, false);
    static struct gm_abi_record rec[128];
    uint64_t lost = 0;
    (void)gm_seg_drain(&s, &c, rec, 128, GM_DRAIN_FLUSH, &lost);
    static struct gm_hist_point pts[GM_HIST_POINTS_MAX];
    static struct gm_mark_info mk[GM_ABI_MARKS];
    struct gm_abi_oom o;
    (void)gm_seg_history(&s, 0, pts, GM_HIST_POINTS_MAX, err, sizeof err);
    (void)gm_seg_marks(&s, mk, GM_ABI_MARKS, err, sizeof err);
    (void)gm_seg_oom(&s, 0, &o, err, sizeof err);
    gm_seg_close(&s);
}

static void reset(void)
{
    memcpy(img, tmpl, len);
}

static void put64(size_t off, uint64_t v)
{
    memcpy(img + off, &v, sizeof v);
}

static uint64_t extreme(void)
{
    static const uint64_t v[] = { 0, 1, 63, 64, 65, UINT32_MAX,
                                  (uint64_t)UINT32_MAX + 1, 1ull << 63,
                                  UINT64_MAX, UINT64_MAX - 1 };
    return next_rand() % 2 ? v[next_rand() % (sizeof v / sizeof *v)]
                           : next_rand();
}

START_TEST(test_template_accepted)
{
    reset();
    ck_assert_int_eq(check(len), 0);
}
END_TEST

START_TEST(test_truncations_refused)
{
    for (int i = 0; i < 1500; i++) {
        reset();
        size_t n = next_rand() % len;
        ck_assert_msg(check(n) == -1, "truncated to %zu accepted", n);
        if (i % 10 == 0 && n > 0)
            check_file(n, -1);
    }
    reset();
    ck_assert_int_eq(check(len - 1), -1);
    ck_assert_int_eq(check(0), -1);
}
END_TEST

START_TEST(test_bit_flips)
{
    unsigned accepted = 0;
    for (int i = 0; i < 3000; i++) {
        reset();
        unsigned flips = 1 + (unsigned)(next_rand() % 16);
        for (unsigned f = 0; f < flips; f++) {
            size_t bit = next_rand() % (len * 8);
            img[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        }
        int rc = check(len);
        accepted += rc == 0;
        if (i % 10 == 0)
            check_file(len, rc);
    }
    /* Most flips land in stats and ring, which stay readable. */
    ck_assert_uint_gt(accepted, 1000);
}
END_TEST

START_TEST(test_header_fields_extreme)
{
    /* Every 8-byte word of the header's fixed part, the strings' ends and
     * the ring head get extreme values; geometry words must be refused. */
    for (int i = 0; i < 3000; i++) {
        reset();
        size_t off = (next_rand() % (1216 / 8)) * 8;
        if (next_rand() % 4 == 0)
            off = 1152; /* ring_head */
        put64(off, extreme());
        int rc = check(len);
        if (i % 10 == 0)
            check_file(len, rc);
        if (off >= 8 && off < 56 && memcmp(img + off, tmpl + off, 8) != 0)
            ck_assert_msg(rc == -1, "geometry word %zu accepted", off);
        if (off >= 128 + 8 && off < 640 - 8 && off != 1152)
            ck_assert_msg(rc == 0, "cmdline bytes at %zu refused", off);
    }
}
END_TEST

START_TEST(test_stats_and_ring_garbage_readable)
{
    for (int i = 0; i < 3000; i++) {
        reset();
        unsigned words = 1 + (unsigned)(next_rand() % 64);
        for (unsigned w = 0; w < words; w++) {
            size_t off = 2048 + (next_rand() % ((len - 2048) / 8)) * 8;
            put64(off, extreme());
        }
        ck_assert_int_eq(check(len), 0);
    }
}
END_TEST

/* The history region: complete-looking OOM snapshots full of garbage
 * (class counts, sizes, times), buckets claiming plausible and absurd
 * indices, labels without a NUL, wild mark and step counts. Readable,
 * in memory and as a file. */
START_TEST(test_history_garbage_readable)
{
    const struct gm_abi_header *th = (const struct gm_abi_header *)tmpl;
    size_t marks = th->hist_offset;
    size_t hist0 = marks + GM_ABI_MARKS * sizeof(struct gm_abi_mark);
    for (int i = 0; i < 400; i++) {
        reset();
        for (unsigned d = 0; d < th->hist_slots; d++) {
            size_t h = hist0 + d * sizeof(struct gm_abi_hist);
            for (size_t o = 8; o < sizeof(struct gm_abi_oom); o += 8)
                put64(h + o, next_rand() % 4 ? extreme() : next_rand());
            put64(h, GM_ABI_OOM_DONE);
            for (unsigned k = 0; k < 64; k++) {
                unsigned t = (unsigned)(next_rand() % GM_ABI_HIST_TIERS);
                unsigned slot = (unsigned)(next_rand() % GM_ABI_HIST_BUCKETS);
                size_t b = h + sizeof(struct gm_abi_oom) +
                           (t * GM_ABI_HIST_BUCKETS + slot) *
                               sizeof(struct gm_abi_bucket);
                uint64_t idx = next_rand() % 2
                                   ? slot + GM_ABI_HIST_BUCKETS *
                                                (next_rand() % 100000)
                                   : extreme();
                put64(b, idx + 1);
                for (size_t o = 8; o < sizeof(struct gm_abi_bucket); o += 8)
                    put64(b + o, extreme());
            }
        }
        for (size_t o = marks; o < hist0; o += 8)
            put64(o, next_rand() % 3 ? next_rand() : extreme());
        put64(offsetof(struct gm_abi_header, marks), extreme());
        put64(offsetof(struct gm_abi_header, steps), extreme());
        ck_assert_int_eq(check(len), 0);
        if (i % 40 == 0)
            check_file(len, 0);
    }
}
END_TEST

START_TEST(test_stuck_writers_and_heads)
{
    for (int i = 0; i < 200; i++) {
        reset();
        for (unsigned d = 0; d < 4; d++)
            if (next_rand() % 2)
                put64(2048 + d * 1024, next_rand() | 1); /* wbegin: a writer
                                                            stuck inside */
        put64(1152, extreme()); /* ring_head */
        put64(104, next_rand() % 128); /* dev_seen: up to 127 */
        ck_assert_int_eq(check(len), 0);
        if (i % 10 == 0)
            check_file(len, 0);
    }
}
END_TEST

START_TEST(test_random_bytes_refused)
{
    for (int i = 0; i < 300; i++) {
        for (size_t k = 0; k < len; k += 8)
            put64(k, next_rand());
        int rc = check(len);
        uint64_t magic;
        memcpy(&magic, img, 8);
        if (magic != GM_ABI_MAGIC)
            ck_assert_int_eq(rc, -1);
    }
}
END_TEST

static void check_worst(void)
{
    ck_assert_msg(worst_ns < 2000000000ull, "one check took %llu ns",
                  (unsigned long long)worst_ns);
}

static Suite *fuzz_suite(void)
{
    Suite *s = suite_create("tel_fuzz");
    TCase *tc = tcase_create("tel_fuzz");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_checked_fixture(tc, NULL, check_worst);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_template_accepted);
    tcase_add_test(tc, test_truncations_refused);
    tcase_add_test(tc, test_bit_flips);
    tcase_add_test(tc, test_header_fields_extreme);
    tcase_add_test(tc, test_stats_and_ring_garbage_readable);
    tcase_add_test(tc, test_stuck_writers_and_heads);
    tcase_add_test(tc, test_history_garbage_readable);
    tcase_add_test(tc, test_random_bytes_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(fuzz_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
