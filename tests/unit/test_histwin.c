/*
 * tests/unit/test_histwin.c — which histogram buckets a narrow view shows
 * (gm_hist_window, tools/lib/util.c): all of the used range when it fits,
 * else the window of consecutive buckets holding the most counts, so
 * outliers at either end never hide the bulk.
 */
#include <check.h>
#include <stdint.h>

#include "tools/lib/util.h"

#include "tests/unit/gm_expect.h"

START_TEST(empty_and_fitting)
{
    uint64_t h[40] = { 0 };
    unsigned lo = 99, hi = 99;
    EXPECT_EQ(gm_hist_window(h, 40, 7, &lo, &hi), false);
    EXPECT_EQ(lo, 99);
    h[12] = 5;
    h[15] = 1;
    EXPECT_EQ(gm_hist_window(h, 40, 7, &lo, &hi), true);
    EXPECT_EQ(lo, 12);
    EXPECT_EQ(hi, 15);
    EXPECT_EQ(gm_hist_window(h, 40, 0, &lo, &hi), true); /* one row */
    EXPECT_EQ(lo, 12);
    EXPECT_EQ(hi, 12);
}
END_TEST

/* Latencies of a loaded machine: the bulk at 16-64 µs (buckets 14-16) and
 * a few outliers in milliseconds (21-23): the bulk is shown, not the
 * highest buckets. */
START_TEST(bulk_beats_outliers)
{
    uint64_t h[40] = { 0 };
    h[14] = 1000;
    h[15] = 36000;
    h[16] = 900;
    h[21] = 38;
    h[22] = 50;
    h[23] = 3;
    unsigned lo, hi;
    EXPECT_EQ(gm_hist_window(h, 40, 4, &lo, &hi), true);
    EXPECT_EQ(lo, 14);
    EXPECT_EQ(hi, 17);
    /* The bulk at the top: the window ends there. */
    uint64_t g[40] = { 0 };
    g[2] = 1;
    g[30] = 10;
    g[31] = 20;
    EXPECT_EQ(gm_hist_window(g, 40, 3, &lo, &hi), true);
    EXPECT_EQ(lo, 29);
    EXPECT_EQ(hi, 31);
    /* A tie: the lowest window. */
    uint64_t t[8] = { 0, 5, 0, 0, 0, 0, 5, 0 };
    EXPECT_EQ(gm_hist_window(t, 8, 2, &lo, &hi), true);
    EXPECT_EQ(lo, 1);
    EXPECT_EQ(hi, 2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("histwin");
    TCase *t = tcase_create("core");
    tcase_add_test(t, empty_and_fitting);
    tcase_add_test(t, bulk_beats_outliers);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int f = srunner_ntests_failed(r);
    srunner_free(r);
    return f ? 1 : 0;
}
