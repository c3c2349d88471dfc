/*
 * tests/unit/test_report.c — the exit report (shim/telemetry/report.c): text and
 * JSON for a known sequence of gm_tel_* calls, figure by figure; the
 * quantile rule of log2 histograms; latency formatting; events lost; live
 * vs exit wording; inconsistent devices; JSON string escaping; truncation
 * into a small buffer; the shim's own entry point.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/telemetry/report.h"
#include "shim/telemetry/telemetry.h"

#define MiB (1ull << 20)
#define START_NS 1000000000000000000ull

struct seg {
    struct gm_tel t;
    void *mem;
    struct gm_snapshot *snap;
};

static void seg_open(struct seg *s, uint32_t ring)
{
    struct gm_tel_params p = { .ring_events = ring, .dev_slots = 2 };
    size_t len = gm_tel_layout_size(ring, 2);
    s->mem = aligned_alloc(64, (len + 63) / 64 * 64);
    ck_assert_int_eq(gm_tel_open_mem(&s->t, s->mem, len, &p), 0);
    s->snap = malloc(sizeof *s->snap);
}

static void seg_free(struct seg *s)
{
    free(s->snap);
    free(s->mem);
}

/* The known workload: a context, ten 100 MiB allocations (nine timed at
 * 50 µs, one at 300 µs), fragmentation at the peak, six frees, a refusal;
 * on device 1 one allocation and a spill. */
static void workload(struct gm_tel *t)
{
    gm_tel_device(t, 0, 80ull << 30, 4ull << 30, NULL);
    uint64_t used = 300 * MiB;
    gm_tel_context(t, 0, 300 * MiB, used, used);
    for (uint64_t i = 0; i < 10; i++) {
        used += 100 * MiB;
        gm_tel_alloc(t, 0, GM_API_MEM_ALLOC, 0x100000 * (i + 1), 100 * MiB,
                     i == 7 ? 300000 : 50000, used, used);
    }
    gm_tel_frag(t, 0, 32000); /* at the peak */
    for (uint64_t i = 0; i < 6; i++) {
        used -= 100 * MiB;
        gm_tel_free(t, 0, GM_API_MEM_FREE, 0x100000 * (i + 1), 100 * MiB,
                    9000, used);
    }
    gm_tel_frag(t, 0, 150000); /* below the peak: frag at peak stays */
    gm_tel_refuse(t, 0, GM_API_MEM_ALLOC, 4ull << 30, used, 4ull << 30, 0);
    gm_tel_alloc(t, 1, GM_API_MEM_CREATE, 0x2000, 2 * MiB, 0, 2 * MiB,
                 2 * MiB);
    gm_tel_event(t, GM_EV_SPILL, 1, GM_API_MEM_ALLOC, 1ull << 30, 0xdead,
                 2 * MiB);
}

/* Snapshot with the clock-dependent figures pinned. */
static void pinned_snapshot(struct seg *s)
{
    ck_assert_int_eq(gm_tel_snapshot(&s->t, s->snap), 0);
    s->snap->pid = 4242;
    s->snap->mode = 0;
    s->snap->on_oom = 0;
    snprintf(s->snap->cmdline, sizeof s->snap->cmdline,
             "trainsim --steps 10");
    snprintf(s->snap->policy, sizeof s->snap->policy,
             "limit=4.0GiB mode=grow on_oom=fail");
    s->snap->start_realtime_ns = START_NS;
    s->snap->dev[0].peak_ns = START_NS + 12345678901ull;
    s->snap->dev[1].peak_ns = START_NS + 500000000ull;
}

static const char expected_text[] =
    "gpumem: device 0: peak 1.3 GiB of 4.0 GiB limit at 12.3 s; context "
    "300.0 MiB; 10 allocs, 6 frees, 1 refused; 4 live (400.0 MiB) at exit; "
    "frag at peak 3.2%; alloc latency p50 65.5 µs p99 524.3 µs; "
    "0 events lost\n"
    "gpumem: device 1: peak 2.0 MiB (no limit) at 0.5 s; context 0 B; "
    "1 allocs, 0 frees, 0 refused, 1 spilled (1.0 GiB); 1 live (2.0 MiB) "
    "at exit; frag at peak 0.0%; alloc latency p50 2 ns p99 2 ns; "
    "0 events lost\n";

static const char expected_json[] =
    "{\"pid\":4242,\"command\":\"trainsim --steps 10\","
    "\"policy\":\"limit=4.0GiB mode=grow on_oom=fail\",\"mode\":\"grow\","
    "\"on_oom\":\"fail\",\"state\":\"exit\","
    "\"start_realtime_ns\":1000000000000000000,\"host_pinned_bytes\":0,"
    "\"events_written\":20,\"events_dropped\":0,\"events_lost\":0,"
    "\"steps\":0,\"marks\":0,"
    "\"devices\":["
    "{\"device\":0,\"consistent\":true,\"physical_bytes\":85899345920,"
    "\"limit_bytes\":4294967296,\"used_bytes\":734003200,"
    "\"peak_bytes\":1363148800,\"peak_at_s\":12.345,"
    "\"context_bytes\":314572800,\"context_peak_bytes\":314572800,"
    "\"pool_reserve_bytes\":0,\"allocs\":10,"
    "\"frees\":6,\"refused\":1,\"spills\":0,\"spilled_bytes\":0,"
    "\"over_limit\":0,\"total_allocated_bytes\":1048576000,"
    "\"live_allocs\":4,\"live_bytes\":419430400,\"context_freed_bytes\":0,"
    "\"frag_ppm\":150000,"
    "\"frag_at_peak_ppm\":32000,\"alloc_latency_p50_ns\":65536,"
    "\"alloc_latency_p99_ns\":524288,\"alloc_latency_mean_ns\":75000,"
    "\"oom\":null},"
    "{\"device\":1,\"consistent\":true,\"physical_bytes\":0,"
    "\"limit_bytes\":null,\"used_bytes\":2097152,\"peak_bytes\":2097152,"
    "\"peak_at_s\":0.500,\"context_bytes\":0,\"context_peak_bytes\":0,"
    "\"pool_reserve_bytes\":0,"
    "\"allocs\":1,\"frees\":0,\"refused\":0,\"spills\":1,"
    "\"spilled_bytes\":1073741824,\"over_limit\":0,"
    "\"total_allocated_bytes\":2097152,\"live_allocs\":1,"
    "\"live_bytes\":2097152,\"context_freed_bytes\":0,\"frag_ppm\":0,"
    "\"frag_at_peak_ppm\":0,"
    "\"alloc_latency_p50_ns\":2,\"alloc_latency_p99_ns\":2,"
    "\"alloc_latency_mean_ns\":0,\"oom\":null}]}\n";

START_TEST(test_text_exact)
{
    struct seg s;
    seg_open(&s, 64);
    workload(&s.t);
    pinned_snapshot(&s);
    char buf[4096];
    size_t n = gm_report_text(s.snap, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, expected_text);
    ck_assert_uint_eq(n, strlen(expected_text));
    seg_free(&s);
}
END_TEST

START_TEST(test_json_exact)
{
    struct seg s;
    seg_open(&s, 64);
    workload(&s.t);
    pinned_snapshot(&s);
    char buf[8192];
    size_t n = gm_report_json(s.snap, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, expected_json);
    ck_assert_uint_eq(n, strlen(expected_json));
    seg_free(&s);
}
END_TEST

/* A context's end freed two blocks the program had left: not frees, no
 * record each (one CTX_FREED for both), out of the live figures, into
 * context freed; the text says so after the live figure. */
START_TEST(test_context_freed)
{
    struct seg s;
    seg_open(&s, 64);
    gm_tel_device(&s.t, 0, 80ull << 30, 4ull << 30, NULL);
    gm_tel_alloc(&s.t, 0, GM_API_MEM_ALLOC, 0x100000, 100 * MiB, 1000,
                 100 * MiB, 100 * MiB);
    gm_tel_alloc(&s.t, 0, GM_API_MEM_ALLOC, 0x200000, 50 * MiB, 1000,
                 150 * MiB, 150 * MiB);
    uint64_t head = s.t.hdr->ring_head;
    gm_tel_free(&s.t, 0, GM_API_CTX_END, 0x100000, 100 * MiB, 0, 50 * MiB);
    gm_tel_free(&s.t, 0, GM_API_CTX_END, 0x200000, 50 * MiB, 0, 0);
    ck_assert_uint_eq(s.t.hdr->ring_head, head); /* no FREE record */
    gm_tel_ctx_freed(&s.t, 0, 150 * MiB, 2, 0, 1);
    ck_assert_uint_eq(s.t.hdr->ring_head, head + 1);
    pinned_snapshot(&s);
    const struct gm_abi_dev *d = &s.snap->dev[0];
    ck_assert_uint_eq(d->allocs, 2);
    ck_assert_uint_eq(d->frees, 0);
    ck_assert_uint_eq(d->live_allocs, 0);
    ck_assert_uint_eq(d->live_bytes, 0);
    ck_assert_uint_eq(d->ended_bytes, 150 * MiB);
    ck_assert_uint_eq(d->used, 0);
    char buf[4096];
    gm_report_text(s.snap, 0, buf, sizeof buf);
    ck_assert_msg(strstr(buf, "2 allocs, 0 frees, 0 refused; 0 live (0 B) at "
                              "exit; 150.0 MiB never freed (freed with its "
                              "context); frag") != NULL, "%s", buf);
    gm_report_json(s.snap, 0, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"context_freed_bytes\":157286400,"));
    seg_free(&s);
}
END_TEST

START_TEST(test_small_buffer_truncates)
{
    struct seg s;
    seg_open(&s, 64);
    workload(&s.t);
    pinned_snapshot(&s);
    char buf[16];
    memset(buf, 'x', sizeof buf);
    ck_assert_uint_eq(gm_report_text(s.snap, 0, buf, 10),
                      strlen(expected_text));
    ck_assert_uint_eq(strlen(buf), 9);
    ck_assert_int_eq(strncmp(buf, expected_text, 9), 0);
    ck_assert_int_eq(buf[10], 'x');
    ck_assert_uint_eq(gm_report_json(s.snap, 0, NULL, 0),
                      strlen(expected_json));
    seg_free(&s);
}
END_TEST

START_TEST(test_events_lost_live_and_inconsistent)
{
    struct seg s;
    seg_open(&s, 16);
    for (int i = 0; i < 40; i++)
        gm_tel_alloc(&s.t, 0, 1, (uint64_t)i, 4096, 1000, 4096, 4096);
    ck_assert_int_eq(gm_tel_snapshot(&s.t, s.snap), 0);
    ck_assert_uint_eq(gm_snapshot_events_lost(s.snap), 24);
    s.snap->ring_dropped = 3;
    ck_assert_uint_eq(gm_snapshot_events_lost(s.snap), 27);
    s.snap->dev_state[0] = GM_SNAP_BUSY;
    char buf[4096];
    gm_report_text(s.snap, GM_REPORT_LIVE, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "; 40 live (160.0 KiB) now;"));
    ck_assert_ptr_nonnull(strstr(buf, "; 27 events lost (inconsistent "
                                      "snapshot)\n"));
    ck_assert_ptr_nonnull(strstr(buf, "alloc latency p50 1.0 µs p99 1.0 µs"));
    gm_report_json(s.snap, GM_REPORT_LIVE, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"state\":\"live\""));
    ck_assert_ptr_nonnull(strstr(buf, "\"events_written\":40,"
                                      "\"events_dropped\":3,"
                                      "\"events_lost\":27,"));
    ck_assert_ptr_nonnull(strstr(buf, "{\"device\":0,\"consistent\":false"));
    seg_free(&s);
    /* One lost: the singular. */
    seg_open(&s, 16);
    for (int i = 0; i < 17; i++)
        gm_tel_alloc(&s.t, 0, 1, (uint64_t)i, 4096, 1000, 4096, 4096);
    ck_assert_int_eq(gm_tel_snapshot(&s.t, s.snap), 0);
    gm_report_text(s.snap, GM_REPORT_LIVE, buf, sizeof buf);
    ck_assert_msg(strstr(buf, "; 1 event lost\n") != NULL, "%s", buf);
    seg_free(&s);
}
END_TEST

START_TEST(test_nothing_used)
{
    struct seg s;
    seg_open(&s, 16);
    gm_tel_device(&s.t, 0, 1ull << 30, 0, NULL);
    ck_assert_int_eq(gm_tel_snapshot(&s.t, s.snap), 0);
    char buf[1024];
    gm_report_text(s.snap, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "gpumem: no device memory was used\n");
    gm_report_json(s.snap, 0, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"devices\":[]}\n"));
    seg_free(&s);
}
END_TEST

START_TEST(test_from_segment_matches_snapshot)
{
    struct seg s;
    seg_open(&s, 64);
    workload(&s.t);
    ck_assert_int_eq(gm_tel_snapshot(&s.t, s.snap), 0);
    char a[4096], b[4096];
    gm_report_text(s.snap, 0, a, sizeof a);
    size_t n = gm_report_from_segment(&s.t, false, b, sizeof b);
    ck_assert_str_eq(a, b);
    ck_assert_uint_eq(n, strlen(a));
    char ja[8192], jb[8192];
    gm_report_json(s.snap, 0, ja, sizeof ja);
    gm_report_from_segment(&s.t, true, jb, sizeof jb);
    ck_assert_str_eq(ja, jb);
    ck_assert_uint_eq(gm_report_from_segment(NULL, false, b, sizeof b), 0);
    ck_assert_str_eq(b, "");
    seg_free(&s);
}
END_TEST

START_TEST(test_json_escaping)
{
    struct seg s;
    seg_open(&s, 16);
    ck_assert_int_eq(gm_tel_snapshot(&s.t, s.snap), 0);
    snprintf(s.snap->cmdline, sizeof s.snap->cmdline,
             "a\"b\\c\x01\x7f\xff\xc3\xa9\xe2\x82\xac\xed\xa0\x80z");
    char buf[4096];
    gm_report_json(s.snap, 0, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"command\":\"a\\\"b\\\\c\\u0001"
                                      "\\u007f\\ufffd\xc3\xa9\xe2\x82\xac"
                                      "\\ufffd\\ufffd\\ufffdz\""));
    seg_free(&s);
}
END_TEST

START_TEST(test_quantiles)
{
    uint64_t h[GM_ABI_LAT_BUCKETS] = { 0 };
    ck_assert_uint_eq(gm_hist_quantile(h, GM_ABI_LAT_BUCKETS, 500), 0);
    h[0] = 1;
    ck_assert_uint_eq(gm_hist_quantile(h, GM_ABI_LAT_BUCKETS, 500), 2);
    h[0] = 0;
    h[10] = 50;
    h[20] = 49;
    h[30] = 1;
    /* 100 values: rank 50 -> bucket 10, rank 51 -> 20, rank 99 -> 20,
     * rank 100 -> 30. */
    ck_assert_uint_eq(gm_hist_quantile(h, GM_ABI_LAT_BUCKETS, 500), 2048);
    ck_assert_uint_eq(gm_hist_quantile(h, GM_ABI_LAT_BUCKETS, 510),
                      1ull << 21);
    ck_assert_uint_eq(gm_hist_quantile(h, GM_ABI_LAT_BUCKETS, 990),
                      1ull << 21);
    ck_assert_uint_eq(gm_hist_quantile(h, GM_ABI_LAT_BUCKETS, 1000),
                      1ull << 31);
    ck_assert_uint_eq(gm_hist_quantile(h, GM_ABI_LAT_BUCKETS, 5000),
                      1ull << 31);
    ck_assert_uint_eq(gm_hist_quantile(h, GM_ABI_LAT_BUCKETS, 0), 2048);
    memset(h, 0, sizeof h);
    h[GM_ABI_LAT_BUCKETS - 1] = UINT64_MAX - 1; /* total exactly MAX */
    h[0] = 1;
    ck_assert_uint_eq(gm_hist_quantile(h, GM_ABI_LAT_BUCKETS, 990),
                      1ull << GM_ABI_LAT_BUCKETS);
    uint64_t big[64] = { 0 };
    big[63] = 5;
    ck_assert_uint_eq(gm_hist_quantile(big, 64, 500), UINT64_MAX);
}
END_TEST

START_TEST(test_latency_format)
{
    static const struct { uint64_t ns; const char *want; } cases[] = {
        { 0, "0 ns" }, { 999, "999 ns" }, { 1000, "1.0 µs" },
        { 65536, "65.5 µs" }, { 999949, "999.9 µs" }, { 999950, "1.0 ms" },
        { 1234567, "1.2 ms" }, { 5000000000ull, "5.0 s" },
        { 1000000000000ull, "1000.0 s" },
    };
    char buf[32];
    for (unsigned i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t n = gm_format_latency(cases[i].ns, buf, sizeof buf);
        ck_assert_str_eq(buf, cases[i].want);
        ck_assert_uint_eq(n, strlen(cases[i].want));
    }
}
END_TEST

static Suite *report_suite(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("report");
    tcase_add_test(tc, test_text_exact);
    tcase_add_test(tc, test_json_exact);
    tcase_add_test(tc, test_small_buffer_truncates);
    tcase_add_test(tc, test_context_freed);
    tcase_add_test(tc, test_events_lost_live_and_inconsistent);
    tcase_add_test(tc, test_nothing_used);
    tcase_add_test(tc, test_from_segment_matches_snapshot);
    tcase_add_test(tc, test_json_escaping);
    tcase_add_test(tc, test_quantiles);
    tcase_add_test(tc, test_latency_format);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(report_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
