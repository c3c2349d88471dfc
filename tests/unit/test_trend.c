/*
 * tests/unit/test_trend.c — the leak verdict and forecast (shim/telemetry/trend.c)
 * on synthetic floor series with known figures: exact slopes, a warm-up
 * that levels off, periodic spikes, a steady and a noisy workload, the
 * window cap, the thresholds' edges, the verdict line, and the
 * repeated-median slope against a brute-force one (sorting).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shim/telemetry/trend.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define N 120

static struct gm_trend_point pts[2000];

/* Point k of a per-step series: 0.1 s per step. */
static void put(size_t k, uint64_t floor, uint64_t excursion)
{
    pts[k].t = 0.1 * (double)k;
    pts[k].step = (double)k;
    pts[k].floor = floor;
    pts[k].peak = floor + excursion;
    pts[k].live = 0;
}

static uint64_t lcg = 12345;
static double uniform(void) /* [-1, 1) */
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(lcg >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
}

static struct gm_trend fit(size_t n, uint64_t limit)
{
    struct gm_trend r;
    ck_assert_int_eq(gm_trend_fit(pts, n, limit, NULL, &r), 0);
    return r;
}

START_TEST(exact_leak)
{
    for (size_t k = 0; k < N; k++) {
        put(k, GiB + k * 16 * MiB, 100 * MiB);
        pts[k].live = 12 + k;
    }
    struct gm_trend r = fit(N, 4 * GiB);
    ck_assert_int_eq(r.verdict, GM_TREND_GROWS);
    ck_assert_int_eq(r.by_step, 1);
    ck_assert_double_eq_tol(r.bytes_per_step, 16.0 * MiB, 1e-3);
    ck_assert_double_eq_tol(r.bytes_per_second, 160.0 * MiB, 1e-2);
    ck_assert_double_eq_tol(r.steps, 119, 1e-9);
    ck_assert_double_eq_tol(r.floor_now, (double)(GiB + 119 * 16 * MiB), 1);
    ck_assert_uint_eq(r.excursion, 100 * MiB);
    ck_assert_uint_eq(r.live_first, 12);
    ck_assert_uint_eq(r.live_last, 131);
    double head = 4.0 * GiB - (GiB + 119.0 * 16 * MiB) - 100.0 * MiB;
    ck_assert_double_eq_tol(r.steps_to_limit, head / (16.0 * MiB), 1e-6);
    ck_assert_double_eq_tol(r.seconds_to_limit, head / (160.0 * MiB), 1e-6);
    /* Without a limit: the verdict, no forecast. */
    r = fit(N, 0);
    ck_assert_int_eq(r.verdict, GM_TREND_GROWS);
    ck_assert(isnan(r.steps_to_limit) && isnan(r.seconds_to_limit));
    /* Already past the limit: 0 left, never negative. */
    r = fit(N, 2 * GiB);
    ck_assert_double_eq(r.steps_to_limit, 0);
}
END_TEST

/* Several slopes, each recovered exactly; the time axis when no step is
 * known gives bytes per second and no per-step figure. */
START_TEST(slopes_and_time_axis)
{
    static const uint64_t leak[] = {1 * MiB + 4096, 3 * MiB, 16 * MiB, 64 * MiB};
    for (size_t l = 0; l < sizeof leak / sizeof *leak; l++) {
        for (size_t k = 0; k < N; k++)
            put(k, 2 * GiB + k * leak[l], 0);
        struct gm_trend r = fit(N, 0);
        ck_assert_int_eq(r.verdict, GM_TREND_GROWS);
        ck_assert_double_eq_tol(r.bytes_per_step, (double)leak[l], 1e-3);
        for (size_t k = 0; k < N; k++)
            pts[k].step = -1;
        r = fit(N, 0);
        ck_assert_int_eq(r.verdict, GM_TREND_GROWS);
        ck_assert_int_eq(r.by_step, 0);
        ck_assert(isnan(r.bytes_per_step));
        ck_assert(isnan(r.steps));
        ck_assert_double_eq_tol(r.bytes_per_second, 10.0 * (double)leak[l],
                                1e-2);
    }
}
END_TEST

/* A caching allocator filling up: linear growth that stops, and an
 * exponential approach. Neither persists into the last third. */
START_TEST(warmup_levels_off)
{
    for (size_t k = 0; k < N; k++)
        put(k, GiB + (k < 40 ? k : 40) * 32 * MiB, 0);
    ck_assert_int_eq(fit(N, 8 * GiB).verdict, GM_TREND_STEADY);
    for (size_t k = 0; k < N; k++)
        put(k, GiB + (uint64_t)(2.0 * GiB * (1 - exp(-(double)k / 12))), 0);
    ck_assert_int_eq(fit(N, 8 * GiB).verdict, GM_TREND_STEADY);
    /* Growth over most of the window (the overall fit sees it), levelled
     * off only in the last third: the persistence test refuses it. */
    for (size_t k = 0; k < N; k++)
        put(k, GiB + (k < 90 ? k : 90) * 32 * MiB, 0);
    struct gm_trend w = fit(N, 8 * GiB);
    ck_assert_double_eq_tol(w.bytes_per_step, 32.0 * MiB, 1e-3);
    ck_assert_int_eq(w.verdict, GM_TREND_STEADY);
    for (size_t k = 0; k < N; k++)
        put(k, GiB + (uint64_t)(4.0 * GiB * (1 - exp(-(double)k / 40))), 0);
    w = fit(N, 8 * GiB);
    ck_assert_double_gt(w.bytes_per_step, 8.0 * MiB);
    ck_assert_int_eq(w.verdict, GM_TREND_STEADY);
    /* The same warm-up followed by a real leak, once the window holds only
     * the leak: a verdict with the leak's slope. */
    for (size_t k = 0; k < 300; k++)
        put(k, GiB + (k < 40 ? k * 32 * MiB : 40 * 32 * MiB + (k - 40) * 2 * MiB), 0);
    struct gm_trend r = fit(300, 8 * GiB);
    ck_assert_int_eq(r.verdict, GM_TREND_GROWS);
    ck_assert_double_eq_tol(r.bytes_per_step, 2.0 * MiB, 1e-3);
    ck_assert_uint_eq(r.points, GM_TREND_MAX_POINTS);
}
END_TEST

/* An evaluation every 10 steps whose buffer outlives the step boundary
 * lifts one floor in ten by 512 MiB: no verdict when steady, the leak's
 * slope when leaking. */
START_TEST(periodic_spikes)
{
    for (size_t k = 0; k < N; k++)
        put(k, GiB + (k % 10 == 9 ? 512 * MiB : 0), 600 * MiB);
    struct gm_trend r = fit(N, 8 * GiB);
    ck_assert_int_eq(r.verdict, GM_TREND_STEADY);
    ck_assert_double_eq_tol(r.bytes_per_step, 0, 1e-9);
    for (size_t k = 0; k < N; k++)
        put(k, GiB + k * 4 * MiB + (k % 10 == 9 ? 512 * MiB : 0), 600 * MiB);
    r = fit(N, 8 * GiB);
    ck_assert_int_eq(r.verdict, GM_TREND_GROWS);
    ck_assert_double_eq_tol(r.bytes_per_step, 4.0 * MiB, 1e-3);
    ck_assert_uint_eq(r.excursion, 600 * MiB);
}
END_TEST

START_TEST(steady_and_noisy)
{
    for (size_t k = 0; k < N; k++)
        put(k, 3 * GiB, 200 * MiB);
    struct gm_trend r = fit(N, 8 * GiB);
    ck_assert_int_eq(r.verdict, GM_TREND_STEADY);
    ck_assert(isnan(r.steps_to_limit));
    /* Noise of +-8 MiB around a constant: no verdict, whatever the seed. */
    for (uint64_t seed = 1; seed <= 50; seed++) {
        lcg = seed;
        for (size_t k = 0; k < N; k++)
            put(k, 3 * GiB + (uint64_t)(8.0 * MiB * uniform()), 0);
        ck_assert_int_eq(fit(N, 8 * GiB).verdict, GM_TREND_STEADY);
    }
    /* A 4 MiB/step leak under the same noise: found within 5%. */
    for (uint64_t seed = 1; seed <= 50; seed++) {
        lcg = seed;
        for (size_t k = 0; k < N; k++)
            put(k, 3 * GiB + k * 4 * MiB + (uint64_t)(8.0 * MiB * uniform()), 0);
        r = fit(N, 8 * GiB);
        ck_assert_int_eq(r.verdict, GM_TREND_GROWS);
        ck_assert_double_le(fabs(r.bytes_per_step - 4.0 * MiB), 0.05 * 4 * MiB);
    }
}
END_TEST

/* The thresholds at their edges. */
START_TEST(thresholds)
{
    struct gm_trend_params p;
    gm_trend_defaults(&p);
    struct gm_trend r;
    /* 11 points: too few; 12: judged. */
    for (size_t k = 0; k < 12; k++)
        put(k, GiB + k * 16 * MiB, 0);
    ck_assert_int_eq(fit(11, 0).verdict, GM_TREND_UNKNOWN);
    ck_assert_int_eq(fit(12, 0).verdict, GM_TREND_GROWS);
    /* 12 points over 9 steps: too short a span. */
    for (size_t k = 0; k < 12; k++)
        pts[k].step = 0.75 * (double)k;
    ck_assert_int_eq(fit(12, 0).verdict, GM_TREND_UNKNOWN);
    /* Growth below min_growth (1 MiB over the window): steady. */
    for (size_t k = 0; k < N; k++)
        put(k, GiB + k * 8192, 0);
    ck_assert_int_eq(fit(N, 0).verdict, GM_TREND_STEADY);
    p.min_growth = 512 * 1024;
    ck_assert_int_eq(gm_trend_fit(pts, N, 0, &p, &r), 0);
    ck_assert_int_eq(r.verdict, GM_TREND_GROWS);
    /* ... and below 0.1% of a large limit: steady. */
    ck_assert_int_eq(gm_trend_fit(pts, N, 1024 * GiB, &p, &r), 0);
    ck_assert_int_eq(r.verdict, GM_TREND_STEADY);
    /* Shrinking: steady. */
    for (size_t k = 0; k < N; k++)
        put(k, 4 * GiB - k * 16 * MiB, 0);
    ck_assert_int_eq(fit(N, 0).verdict, GM_TREND_STEADY);
    /* Degenerate: every point at the same step and time. */
    for (size_t k = 0; k < N; k++) {
        put(k, GiB + k * MiB, 0);
        pts[k].t = 1;
        pts[k].step = 5;
    }
    ck_assert_int_eq(fit(N, 0).verdict, GM_TREND_UNKNOWN);
    /* Bad arguments. */
    ck_assert_int_eq(gm_trend_fit(NULL, 3, 0, NULL, &r), -1);
    ck_assert_int_eq(gm_trend_fit(pts, 3, 0, NULL, NULL), -1);
    ck_assert_int_eq(gm_trend_fit(NULL, 0, 0, NULL, &r), 0);
    ck_assert_int_eq(r.verdict, GM_TREND_UNKNOWN);
}
END_TEST

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double brute_median(double *a, size_t n)
{
    qsort(a, n, sizeof *a, cmpd);
    return n % 2 ? a[n / 2] : (a[n / 2 - 1] + a[n / 2]) / 2;
}

static double brute_slope(const double *x, const double *y, size_t n)
{
    double in[GM_TREND_MAX_POINTS], out[GM_TREND_MAX_POINTS];
    size_t no = 0;
    for (size_t i = 0; i < n; i++) {
        size_t ni = 0;
        for (size_t j = 0; j < n; j++)
            if (j != i && x[j] != x[i])
                in[ni++] = (y[j] - y[i]) / (x[j] - x[i]);
        if (ni)
            out[no++] = brute_median(in, ni);
    }
    return no ? brute_median(out, no) : NAN;
}

/* The selection-based slope equals the sorting one on random data with
 * many ties (small integer values), odd and even sizes. */
START_TEST(slope_matches_brute_force)
{
    double x[GM_TREND_MAX_POINTS], y[GM_TREND_MAX_POINTS];
    lcg = 7;
    for (size_t n = 2; n <= GM_TREND_MAX_POINTS; n += 7) {
        for (int rep = 0; rep < 4; rep++) {
            for (size_t i = 0; i < n; i++) {
                x[i] = (double)(int)(10 * (uniform() + 1));
                y[i] = (double)(int)(5 * (uniform() + 1));
            }
            double want = brute_slope(x, y, n), got = gm_trend_slope(x, y, n);
            if (isnan(want))
                ck_assert(isnan(got));
            else
                ck_assert_double_eq_tol(got, want, 1e-12);
        }
    }
    ck_assert(isnan(gm_trend_slope(x, y, 1)));
    ck_assert(isnan(gm_trend_slope(NULL, y, 4)));
}
END_TEST

START_TEST(verdict_line)
{
    char line[256];
    struct gm_trend r;
    /* 16 MiB per step at 0.5 s per step over 121 steps. */
    for (size_t k = 0; k <= N; k++) {
        put(k, GiB + k * 16 * MiB, 64 * MiB);
        pts[k].t = 0.5 * (double)k;
    }
    ck_assert_int_eq(gm_trend_fit(pts, N + 1, 8 * GiB, NULL, &r), 0);
    struct gm_trend_evidence ev = {16 * MiB, 12, 132};
    size_t len = gm_trend_format(line, sizeof line, 0, &r, &ev);
    ck_assert_str_eq(line,
                     "device 0: grows 16.0 MiB per step (32.0 MiB/s) over the "
                     "last 120 steps; live allocations of 16 MiB rose from 12 "
                     "to 132; limit in about 324 steps (2.7 min)");
    ck_assert_uint_eq(len, strlen(line));
    /* Truncation keeps the full length and a terminated prefix. */
    char small[10];
    ck_assert_uint_eq(gm_trend_format(small, sizeof small, 0, &r, &ev), len);
    ck_assert_str_eq(small, "device 0:");
    ck_assert_uint_eq(gm_trend_format(NULL, 0, 0, &r, &ev), len);
    struct gm_trend_evidence partial = {4096, UINT64_MAX, 120};
    gm_trend_format(line, sizeof line, 0, &r, &partial);
    ck_assert_ptr_nonnull(strstr(line, "; 120 more live allocations of 4 KiB; limit"));

    for (size_t k = 0; k <= N; k++)
        put(k, GiB, 0);
    gm_trend_fit(pts, N + 1, 8 * GiB, NULL, &r);
    gm_trend_format(line, sizeof line, 1, &r, NULL);
    ck_assert_str_eq(line, "device 1: no growth over the last 120 steps");
    gm_trend_fit(pts, 5, 8 * GiB, NULL, &r);
    gm_trend_format(line, sizeof line, 1, &r, NULL);
    ck_assert_str_eq(line,
                     "device 1: not enough history for a verdict (5 points)");
    for (size_t k = 0; k <= N; k++) {
        put(k, GiB + k * MiB, 0);
        pts[k].step = -1;
    }
    gm_trend_fit(pts, N + 1, 0, NULL, &r);
    gm_trend_format(line, sizeof line, 2, &r, NULL);
    ck_assert_str_eq(line, "device 2: grows 10.0 MiB/s over the last 12 s");

    gm_trend_format_seconds(0.26, line, sizeof line);
    ck_assert_str_eq(line, "0.3 s");
    gm_trend_format_seconds(7200, line, sizeof line);
    ck_assert_str_eq(line, "2 h");
    gm_trend_format_seconds(NAN, line, sizeof line);
    ck_assert_str_eq(line, "?");
}
END_TEST

/* Steps to the limit are whole steps rounded down, as the JSON's "steps"
 * (3.7 steps left: "about 3"). */
START_TEST(verdict_line_rounds_steps_down)
{
    char line[256];
    struct gm_trend r;
    memset(&r, 0, sizeof r);
    r.verdict = GM_TREND_GROWS;
    r.by_step = 1;
    r.points = 20;
    r.steps = 20;
    r.seconds = 10;
    r.bytes_per_step = 1 << 20;
    r.bytes_per_second = 2 << 20;
    r.steps_to_limit = 3.7;
    r.seconds_to_limit = 1.85;
    gm_trend_format(line, sizeof line, 0, &r, NULL);
    ck_assert_msg(strstr(line, "limit in about 3 steps") != NULL, "%s", line);
}
END_TEST

static Suite *trend_suite(void)
{
    Suite *s = suite_create("trend");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, exact_leak);
    tcase_add_test(tc, slopes_and_time_axis);
    tcase_add_test(tc, warmup_levels_off);
    tcase_add_test(tc, periodic_spikes);
    tcase_add_test(tc, steady_and_noisy);
    tcase_add_test(tc, thresholds);
    tcase_add_test(tc, slope_matches_brute_force);
    tcase_add_test(tc, verdict_line);
    tcase_add_test(tc, verdict_line_rounds_steps_down);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(trend_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
