/*
 * tests/unit/test_oomsum.c — the OOM snapshot's summary of live
 * allocations (shim/telemetry/oomsum.c) and its report line
 * (gm_report_oom_line, shim/telemetry/report.c): grouping by API and
 * power-of-two class, the 16 largest kept and the rest summed, ages from
 * 16.8 ms birth stamps (also across their wrap), unknown births; the line
 * with steps, without steps, with a size range, one block, no class, the
 * fragmentation and truncation notes.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "shim/telemetry/oomsum.h"
#include "shim/telemetry/report.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define SEC 1000000000ull

static struct gm_oomsum sum; /* 10 KiB */

START_TEST(test_groups_sorted_and_counted)
{
    uint64_t now = 1000 * SEC;
    gm_oomsum_init(&sum, now);
    uint32_t t = (uint32_t)(now >> 24);
    /* 128 blocks of 16 MiB born at steps 112..239, 10 s to 1 s ago. */
    for (unsigned i = 0; i < 128; i++) {
        uint32_t age = (uint32_t)((10 * SEC - i * (9 * SEC / 127)) >> 24);
        gm_oomsum_add(&sum, 16 * MiB, GM_API_MEM_ALLOC, t - age, 112 + i);
    }
    /* One 1 GiB weight, unknown birth; 3 managed blocks of 20-24 MiB. */
    gm_oomsum_add(&sum, GiB, GM_API_MEM_ALLOC, 0, 0);
    gm_oomsum_add(&sum, 20 * MiB, GM_API_MEM_ALLOC_MANAGED, t, 300);
    gm_oomsum_add(&sum, 24 * MiB, GM_API_MEM_ALLOC_MANAGED, t, 301);
    gm_oomsum_add(&sum, 17 * MiB, GM_API_MEM_ALLOC_MANAGED, t, 302);
    struct gm_abi_oom o;
    memset(&o, 0, sizeof o);
    gm_oomsum_finish(&sum, &o);
    ck_assert_uint_eq(o.nclasses, 3);
    ck_assert_uint_eq(o.live_allocs, 132);
    ck_assert_uint_eq(o.live_bytes, 128 * 16 * MiB + GiB + 61 * MiB);
    const struct gm_abi_oom_class *c = o.classes;
    ck_assert_uint_eq(c[0].bytes, 2 * GiB);        /* largest first */
    ck_assert_uint_eq(c[0].count, 128);
    ck_assert_uint_eq(c[0].size_log2, 24);
    ck_assert_uint_eq(c[0].oldest_step, 112);
    ck_assert_uint_eq(c[0].newest_step, 239);
    /* Ages in 16.8 ms units: within one unit of the truth. */
    ck_assert_uint_le(now - c[0].oldest_ns, 10 * SEC + (1u << 24));
    ck_assert_uint_ge(now - c[0].oldest_ns, 10 * SEC - (1u << 24));
    ck_assert_uint_le(now - c[0].newest_ns, 1 * SEC + (1u << 24));
    ck_assert_uint_eq(c[1].bytes, GiB);
    ck_assert_uint_eq(c[1].oldest_ns, 0);           /* unknown birth */
    ck_assert_uint_eq(c[2].api, GM_API_MEM_ALLOC_MANAGED);
    ck_assert_uint_eq(c[2].count, 3);
    ck_assert_uint_eq(c[2].size_min, 17 * MiB);
    ck_assert_uint_eq(c[2].size_max, 24 * MiB);
    ck_assert_uint_eq(o.other_count, 0);
}
END_TEST

START_TEST(test_more_than_16_classes_and_wrap)
{
    /* now_t wraps below the births: ages are modular. */
    uint64_t now = (1ull << 56) | (5ull << 24); /* 32-bit units: 5 */
    gm_oomsum_init(&sum, now);
    gm_oomsum_add(&sum, 4096, GM_API_MEM_ALLOC, 0, 0);
    for (unsigned k = 13; k < 13 + 20; k++)   /* 20 more classes; the */
        gm_oomsum_add(&sum, 1ull << k, GM_API_MEM_ALLOC_ASYNC,   /* largest */
                      k == 32 ? UINT32_MAX - 2 : 0, 0);  /* born before */
    struct gm_abi_oom o;
    memset(&o, 0, sizeof o);
    gm_oomsum_finish(&sum, &o);
    ck_assert_uint_eq(o.nclasses, 16);
    ck_assert_uint_eq(o.live_allocs, 21);
    ck_assert_uint_eq(o.other_count, 5);
    /* The 5 smallest classes (4 KiB and 8..64 KiB... sorted out). */
    uint64_t kept = 0;
    for (unsigned i = 0; i < 16; i++) {
        kept += o.classes[i].bytes;
        if (i > 0)
            ck_assert_uint_le(o.classes[i].bytes, o.classes[i - 1].bytes);
    }
    ck_assert_uint_eq(kept + o.other_bytes, o.live_bytes);
    ck_assert_uint_eq(o.classes[0].bytes, 1ull << 32);
    /* The wrapped birth, 8 units ago, is found in the kept class. */
    ck_assert_uint_eq(o.classes[0].size_log2, 32);
    ck_assert_uint_eq(now - o.classes[0].oldest_ns, 8ull << 24);
}
END_TEST

static struct gm_abi_oom base_oom(void)
{
    struct gm_abi_oom o;
    memset(&o, 0, sizeof o);
    o.state = GM_ABI_OOM_DONE;
    o.ts_ns = 100 * SEC;
    o.size = 256 * MiB;
    o.used = 3380 * MiB;   /* "3.3 GiB" */
    o.limit = 4 * GiB;
    o.step = 412;
    o.nclasses = 1;
    o.classes[0] = (struct gm_abi_oom_class){
        .size_min = 16 * MiB, .size_max = 16 * MiB, .bytes = 2 * GiB,
        .count = 128, .oldest_ns = 40 * SEC, .newest_ns = 99 * SEC,
        .oldest_step = 112, .newest_step = 411, .api = GM_API_MEM_ALLOC,
        .size_log2 = 24 };
    return o;
}

START_TEST(test_line_forms)
{
    char buf[512];
    struct gm_abi_oom o = base_oom();
    gm_report_oom_line(&o, 10 * SEC, true, buf, sizeof buf);
    ck_assert_str_eq(buf, "refused 256 MiB at step 412: 3.3 GiB used, 61% "
                          "in 128 blocks of 16 MiB allocated over the last "
                          "300 steps");
    /* Without steps: the time since start and the oldest block's age. */
    gm_report_oom_line(&o, 10 * SEC, false, buf, sizeof buf);
    ck_assert_str_eq(buf, "refused 256 MiB at 90.0 s: 3.3 GiB used, 61% in "
                          "128 blocks of 16 MiB allocated over the last "
                          "60.0 s");
    /* A range, one block, born this step; fragmentation; truncation. */
    o.classes[0].size_max = 24 * MiB;
    o.classes[0].count = 1;
    o.classes[0].oldest_step = 412;
    o.flags = GM_ABI_OOMF_FRAG | GM_ABI_OOMF_TRUNCATED;
    o.largest_free = 12 * MiB;
    o.frag_ppm = 41234;
    gm_report_oom_line(&o, 10 * SEC, true, buf, sizeof buf);
    ck_assert_str_eq(buf, "refused 256 MiB at step 412: 3.3 GiB used, 61% "
                          "in 1 block of 16-24 MiB allocated in this step; "
                          "largest free gap 12 MiB (frag 4.1%) "
                          "(allocation table walk truncated)");
    /* Sizes of different units; no class at all. */
    o.classes[0].size_min = 512 * 1024;
    gm_report_oom_line(&o, 10 * SEC, true, buf, sizeof buf);
    ck_assert(strstr(buf, "of 512 KiB-24 MiB ") != NULL);
    o.nclasses = 0;
    o.flags = 0;
    gm_report_oom_line(&o, 10 * SEC, true, buf, sizeof buf);
    ck_assert_str_eq(buf, "refused 256 MiB at step 412: 3.3 GiB used, no "
                          "live allocation of its own");
    /* snprintf-like. */
    ck_assert_uint_eq(gm_report_oom_line(&o, 10 * SEC, true, buf, 8),
                      strlen("refused 256 MiB at step 412: 3.3 GiB used, no "
                             "live allocation of its own"));
    ck_assert_uint_eq(strlen(buf), 7);
}
END_TEST

START_TEST(test_size_short)
{
    char b[32];
    static const struct { uint64_t v; const char *s; } c[] = {
        { 0, "0 B" }, { 1023, "1023 B" }, { 1024, "1 KiB" },
        { 1536, "1.5 KiB" }, { 16 * MiB, "16 MiB" },
        { 4187593113ull, "3.9 GiB" }, { GiB - 1, "1.0 GiB" },
        { 10 * GiB - 40 * MiB, "10.0 GiB" }, { UINT64_MAX, "16.0 EiB" },
    };
    for (unsigned i = 0; i < sizeof c / sizeof *c; i++) {
        gm_format_size_short(c[i].v, b, sizeof b);
        ck_assert_str_eq(b, c[i].s);
    }
}
END_TEST

static Suite *oomsum_suite(void)
{
    Suite *s = suite_create("oomsum");
    TCase *tc = tcase_create("oomsum");
    tcase_add_test(tc, test_groups_sorted_and_counted);
    tcase_add_test(tc, test_more_than_16_classes_and_wrap);
    tcase_add_test(tc, test_line_forms);
    tcase_add_test(tc, test_size_short);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(oomsum_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
