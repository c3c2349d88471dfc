/*
 * tests/unit/test_frag.c — the fragmentation tracker (shim/telemetry/frag.c) against
 * hand-computed patterns and a brute-force reference model (a sorted array
 * of intervals, rescanned after every operation).
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shim/telemetry/frag.h"

#include "tests/unit/gm_expect.h"

/* ---- reference model ---------------------------------------------------- */

struct ref_iv {
    uint64_t start, end;
};

struct ref {
    struct ref_iv *v;
    size_t n, cap;
};

static size_t ref_find(const struct ref *r, uint64_t start)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->v[mid].start < start)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int ref_insert(struct ref *r, uint64_t start, uint64_t size)
{
    if (size == 0 || size > UINT64_MAX - start)
        return -EINVAL;
    size_t i = ref_find(r, start);
    if (i < r->n && r->v[i].start == start)
        return -EEXIST;
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->v = realloc(r->v, r->cap * sizeof *r->v);
        ck_assert_ptr_nonnull(r->v);
    }
    memmove(&r->v[i + 1], &r->v[i], (r->n - i) * sizeof *r->v);
    r->v[i].start = start;
    r->v[i].end = start + size;
    r->n++;
    return 0;
}

static int ref_remove(struct ref *r, uint64_t start)
{
    size_t i = ref_find(r, start);
    if (i == r->n || r->v[i].start != start)
        return -ENOENT;
    memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof *r->v);
    r->n--;
    return 0;
}

struct figures {
    uint64_t total, largest, count;
    uint32_t ppm;
};

static struct figures ref_figures(const struct ref *r)
{
    struct figures fg = { 0, 0, r->n, 0 };
    for (size_t i = 1; i < r->n; i++) {
        uint64_t e = r->v[i - 1].end, s = r->v[i].start;
        uint64_t g = s > e ? s - e : 0;
        fg.total += g;
        if (g > fg.largest)
            fg.largest = g;
    }
    if (fg.total)
        fg.ppm = (uint32_t)((double)(fg.total - fg.largest) * 1e6 /
                            (double)fg.total);
    return fg;
}

static struct figures frag_figures(const struct gm_frag *f)
{
    struct figures fg = { gm_frag_total_free(f), gm_frag_largest_free(f),
                          gm_frag_count(f), gm_frag_ppm(f) };
    return fg;
}

static void same_figures(const struct figures *a, const struct figures *b)
{
    EXPECT_EQ(a->count, b->count);
    EXPECT_EQ(a->total, b->total);
    EXPECT_EQ(a->largest, b->largest);
    /* The reference rounds through double: allow one ppm either way. */
    if (a->ppm > b->ppm + 1 || b->ppm > a->ppm + 1)
        ck_abort_msg("ppm %u, reference %u", a->ppm, b->ppm);
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* ---- constructed patterns --------------------------------------------- */

START_TEST(test_known_pattern)
{
    struct gm_frag f;
    ck_assert_int_eq(gm_frag_init(&f), 0);
    ck_assert_uint_eq(gm_frag_ppm(&f), 0);
    ck_assert_int_eq(gm_frag_insert(&f, 400, 1000), 0);   /* [400,1400) */
    ck_assert_int_eq(gm_frag_insert(&f, 0, 100), 0);      /* [0,100) */
    ck_assert_uint_eq(gm_frag_total_free(&f), 300);
    ck_assert_uint_eq(gm_frag_ppm(&f), 0);                /* one gap */
    ck_assert_int_eq(gm_frag_insert(&f, 200, 100), 0);    /* [200,300) */
    /* gaps 100 and 100: frag = 1 - 100/200 */
    ck_assert_uint_eq(gm_frag_count(&f), 3);
    ck_assert_uint_eq(gm_frag_total_free(&f), 200);
    ck_assert_uint_eq(gm_frag_largest_free(&f), 100);
    ck_assert_uint_eq(gm_frag_ppm(&f), 500000);
    ck_assert_int_eq(gm_frag_check(&f), 0);

    /* A fourth block splitting the second gap: gaps 100, 40, 10. */
    ck_assert_int_eq(gm_frag_insert(&f, 340, 50), 0);     /* [340,390) */
    ck_assert_uint_eq(gm_frag_total_free(&f), 150);
    ck_assert_uint_eq(gm_frag_largest_free(&f), 100);
    ck_assert_uint_eq(gm_frag_ppm(&f), 333333);           /* 50/150 */

    /* Remove the middle block: gaps 240 (100..340) and 10. */
    ck_assert_int_eq(gm_frag_remove(&f, 200), 0);
    ck_assert_uint_eq(gm_frag_total_free(&f), 250);
    ck_assert_uint_eq(gm_frag_largest_free(&f), 240);
    ck_assert_uint_eq(gm_frag_ppm(&f), 40000);            /* 10/250 */

    /* Remove the leftmost: the span shrinks, one gap of 10 left. */
    ck_assert_int_eq(gm_frag_remove(&f, 0), 0);
    ck_assert_uint_eq(gm_frag_total_free(&f), 10);
    ck_assert_uint_eq(gm_frag_largest_free(&f), 10);
    ck_assert_uint_eq(gm_frag_ppm(&f), 0);

    /* Remove the rightmost: a single interval, no free space. */
    ck_assert_int_eq(gm_frag_remove(&f, 400), 0);
    ck_assert_uint_eq(gm_frag_total_free(&f), 0);
    ck_assert_uint_eq(gm_frag_count(&f), 1);
    ck_assert_int_eq(gm_frag_check(&f), 0);
    ck_assert_int_eq(gm_frag_remove(&f, 340), 0);
    ck_assert_uint_eq(gm_frag_count(&f), 0);
    ck_assert_uint_eq(gm_frag_largest_free(&f), 0);
    gm_frag_destroy(&f);
}
END_TEST

START_TEST(test_bad_calls_change_nothing)
{
    struct gm_frag f;
    gm_frag_init(&f);
    ck_assert_int_eq(gm_frag_remove(&f, 123), -ENOENT);   /* empty */
    ck_assert_int_eq(gm_frag_insert(&f, 0, 100), 0);
    ck_assert_int_eq(gm_frag_insert(&f, 1000, 100), 0);
    ck_assert_int_eq(gm_frag_insert(&f, 5000, 100), 0);
    struct figures before = frag_figures(&f);

    ck_assert_int_eq(gm_frag_remove(&f, 50), -ENOENT);    /* inside a block */
    ck_assert_int_eq(gm_frag_remove(&f, 3000), -ENOENT);  /* in a gap */
    ck_assert_int_eq(gm_frag_remove(&f, 9999), -ENOENT);  /* past the end */
    ck_assert_int_eq(gm_frag_insert(&f, 1000, 7), -EEXIST);
    ck_assert_int_eq(gm_frag_insert(&f, 1000, 100), -EEXIST);
    ck_assert_int_eq(gm_frag_insert(&f, 2000, 0), -EINVAL);
    ck_assert_int_eq(gm_frag_insert(&f, UINT64_MAX - 10, 11), -EINVAL);
    ck_assert_int_eq(gm_frag_insert(&f, 1, UINT64_MAX), -EINVAL);

    struct figures after = frag_figures(&f);
    ck_assert_uint_eq(before.count, after.count);
    ck_assert_uint_eq(before.total, after.total);
    ck_assert_uint_eq(before.largest, after.largest);
    ck_assert_uint_eq(before.ppm, after.ppm);
    ck_assert_int_eq(gm_frag_check(&f), 0);
    /* A removed start is unknown afterwards (no double remove). */
    ck_assert_int_eq(gm_frag_remove(&f, 1000), 0);
    ck_assert_int_eq(gm_frag_remove(&f, 1000), -ENOENT);
    ck_assert_uint_eq(gm_frag_count(&f), 2);
    ck_assert_uint_eq(gm_frag_total_free(&f), 4900);
    /* The very top of the address space is usable. */
    ck_assert_int_eq(gm_frag_insert(&f, UINT64_MAX - 10, 10), 0);
    ck_assert_uint_eq(gm_frag_largest_free(&f), UINT64_MAX - 10 - 5100);
    ck_assert_int_eq(gm_frag_check(&f), 0);
    gm_frag_destroy(&f);
}
END_TEST

/* A start added again before its remove (gm_frag_insert_over) takes the
 * later extent and stays until as many removes as adds. */
START_TEST(test_insert_over_counts_holders)
{
    struct gm_frag f;
    gm_frag_init(&f);
    ck_assert_int_eq(gm_frag_insert_over(&f, 0, 100), 0);
    ck_assert_int_eq(gm_frag_insert_over(&f, 1000, 100), 0);
    ck_assert_int_eq(gm_frag_insert(&f, 5000, 100), 0);
    ck_assert_uint_eq(gm_frag_total_free(&f), 900 + 3900);
    ck_assert_int_eq(gm_frag_insert_over(&f, 1000, 1000), 1); /* longer */
    ck_assert_uint_eq(gm_frag_count(&f), 3);
    ck_assert_uint_eq(gm_frag_total_free(&f), 900 + 3000);
    ck_assert_int_eq(gm_frag_insert_over(&f, 1000, 1000), 1); /* same */
    ck_assert_int_eq(gm_frag_check(&f), 0);
    ck_assert_int_eq(gm_frag_remove(&f, 1000), 0);
    ck_assert_int_eq(gm_frag_remove(&f, 1000), 0);
    ck_assert_uint_eq(gm_frag_count(&f), 3); /* one add still holds it */
    ck_assert_uint_eq(gm_frag_total_free(&f), 900 + 3000);
    ck_assert_int_eq(gm_frag_remove(&f, 1000), 0);
    ck_assert_uint_eq(gm_frag_count(&f), 2);
    ck_assert_uint_eq(gm_frag_total_free(&f), 4900);
    ck_assert_int_eq(gm_frag_remove(&f, 1000), -ENOENT);
    ck_assert_int_eq(gm_frag_insert_over(&f, 2000, 0), -EINVAL);
    ck_assert_int_eq(gm_frag_check(&f), 0);
    gm_frag_destroy(&f);
}
END_TEST

START_TEST(test_overlap_clamps)
{
    struct gm_frag f;
    gm_frag_init(&f);
    /* [0,1000) holds [100,200) and [500,600): gaps clamp at 0 against the
     * predecessor in start order, so only 200..500 counts as free. */
    ck_assert_int_eq(gm_frag_insert(&f, 0, 1000), 0);
    ck_assert_int_eq(gm_frag_insert(&f, 100, 100), 0);
    ck_assert_uint_eq(gm_frag_total_free(&f), 0);
    ck_assert_int_eq(gm_frag_insert(&f, 500, 100), 0);
    ck_assert_uint_eq(gm_frag_total_free(&f), 300);
    ck_assert_uint_eq(gm_frag_largest_free(&f), 300);
    ck_assert_uint_eq(gm_frag_ppm(&f), 0);
    ck_assert_int_eq(gm_frag_insert(&f, 2000, 10), 0);    /* gap 1400 */
    ck_assert_uint_eq(gm_frag_total_free(&f), 1700);
    ck_assert_uint_eq(gm_frag_ppm(&f), 176470);           /* 300/1700 */
    ck_assert_int_eq(gm_frag_remove(&f, 100), 0);         /* 0..1000 -> 500 */
    ck_assert_uint_eq(gm_frag_total_free(&f), 1400);
    ck_assert_uint_eq(gm_frag_largest_free(&f), 1400);
    ck_assert_int_eq(gm_frag_remove(&f, 0), 0);           /* 600..2000 */
    ck_assert_uint_eq(gm_frag_total_free(&f), 1400);
    ck_assert_int_eq(gm_frag_check(&f), 0);
    gm_frag_destroy(&f);
}
END_TEST

/* ---- random sequences against the model -------------------------------- */

/* overlap = 0: blocks are placed in distinct slots of a grid (allocator
 * like, never overlapping); overlap = 1: any start, any size. */
static void random_run(uint64_t seed, int ops, size_t target, int overlap)
{
    struct gm_frag f;
    struct ref r = { NULL, 0, 0 };
    gm_frag_init(&f);
    uint64_t s = seed;
    for (int op = 0; op < ops; op++) {
        uint64_t x = rng_next(&s);
        int do_insert = r.n == 0 || (x % (2 * target)) >= r.n;
        int rc_ref, rc;
        if (do_insert) {
            uint64_t start, size;
            if (overlap) {
                start = rng_next(&s) % (target * 4096);
                size = 1 + rng_next(&s) % 8192;
            } else {
                uint64_t slot = rng_next(&s) % (target * 4);
                start = slot << 20;
                size = 1 + rng_next(&s) % (1u << 20);
            }
            if (rng_next(&s) % 64 == 0 && r.n)   /* a duplicate start */
                start = r.v[rng_next(&s) % r.n].start;
            rc_ref = ref_insert(&r, start, size);
            rc = gm_frag_insert(&f, start, size);
        } else {
            uint64_t start;
            if (rng_next(&s) % 32 == 0)
                start = rng_next(&s) | 1;   /* almost surely unknown */
            else
                start = r.v[rng_next(&s) % r.n].start;
            rc_ref = ref_remove(&r, start);
            rc = gm_frag_remove(&f, start);
        }
        EXPECT_EQ(rc, rc_ref);
        struct figures a = frag_figures(&f), b = ref_figures(&r);
        same_figures(&a, &b);
        if (op % 97 == 0)
            EXPECT_EQ(gm_frag_check(&f), 0);
    }
    /* Drain in random order. */
    while (r.n) {
        uint64_t start = r.v[rng_next(&s) % r.n].start;
        EXPECT_EQ(ref_remove(&r, start), 0);
        EXPECT_EQ(gm_frag_remove(&f, start), 0);
        struct figures a = frag_figures(&f), b = ref_figures(&r);
        same_figures(&a, &b);
    }
    EXPECT_EQ(gm_frag_check(&f), 0);
    EXPECT_EQ(gm_frag_total_free(&f), 0);
    gm_frag_destroy(&f);
    free(r.v);
}

START_TEST(test_random_disjoint)
{
    static const uint64_t seeds[] = { 1, 0x9e3779b97f4a7c15ull, 42, 777 };
    random_run(seeds[_i], 20000, 300, 0);
}
END_TEST

START_TEST(test_random_overlapping)
{
    static const uint64_t seeds[] = { 3, 0xdeadbeefull, 12345, 99 };
    random_run(seeds[_i], 20000, 300, 1);
}
END_TEST

START_TEST(test_random_small)
{
    /* Tiny sets churn through every rotation case near the root. */
    for (uint64_t seed = 1; seed <= 200; seed++)
        random_run(seed * 7919, 300, 6, (int)(seed & 1));
}
END_TEST

/* ---- a million intervals ----------------------------------------------- */

static void shuffle_all(uint32_t *v, size_t n, uint64_t *s)
{
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = rng_next(s) % (i + 1);
        uint32_t t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* Shuffles within consecutive windows of 4096 entries: orders stay
 * scrambled locally (every rebalancing case occurs) while the tree's
 * working set stays in cache, so a million operations take well under a
 * second. */
static void shuffle(uint32_t *v, size_t n, uint64_t *s)
{
    for (size_t w = 0; w < n; w += 4096)
        shuffle_all(v + w, n - w < 4096 ? n - w : 4096, s);
}

START_TEST(test_million)
{
    const size_t n = 1000000;
    const uint64_t stride = 1u << 16;
    uint32_t *perm = malloc(n * sizeof *perm);
    ck_assert_ptr_nonnull(perm);
    for (size_t i = 0; i < n; i++)
        perm[i] = (uint32_t)i;
    uint64_t s = 2024;
    shuffle(perm, n, &s);

    /* Slot i holds [i*stride, i*stride + stride - gap(i)); gap(i) is the
     * free space after it, a function of i alone. */
    struct gm_frag f;
    gm_frag_init(&f);
    for (size_t k = 0; k < n; k++) {
        uint64_t i = perm[k];
        uint64_t gap = (i * 2654435761u) % stride;
        EXPECT_EQ(gm_frag_insert(&f, i * stride, stride - gap), 0);
    }
    uint64_t total = 0, largest = 0;
    for (uint64_t i = 0; i + 1 < n; i++) {
        uint64_t gap = (i * 2654435761u) % stride;
        total += gap;
        if (gap > largest)
            largest = gap;
    }
    EXPECT_EQ(gm_frag_count(&f), n);
    EXPECT_EQ(gm_frag_total_free(&f), total);
    EXPECT_EQ(gm_frag_largest_free(&f), largest);
    EXPECT_EQ(gm_frag_check(&f), 0);

    shuffle(perm, n, &s);
    for (size_t k = 0; k < n; k++) {
        EXPECT_EQ(gm_frag_remove(&f, (uint64_t)perm[k] * stride), 0);
        if (k == n / 2)
            EXPECT_EQ(gm_frag_check(&f), 0);
    }
    EXPECT_EQ(gm_frag_count(&f), 0);
    EXPECT_EQ(gm_frag_total_free(&f), 0);
    EXPECT_EQ(gm_frag_largest_free(&f), 0);
    EXPECT_EQ(gm_frag_check(&f), 0);
    gm_frag_destroy(&f);
    free(perm);
}
END_TEST

START_TEST(test_ascending_and_reuse)
{
    /* Sorted insertion (the worst case for an unbalanced tree), then the
     * tracker is destroyed and used again. */
    struct gm_frag f;
    for (int round = 0; round < 2; round++) {
        gm_frag_init(&f);
        for (uint64_t i = 0; i < 100000; i++)
            EXPECT_EQ(gm_frag_insert(&f, i * 1024, 512 + (i % 3) * 128), 0);
        EXPECT_EQ(gm_frag_check(&f), 0);
        EXPECT_EQ(gm_frag_largest_free(&f), 512);
        for (uint64_t i = 0; i < 100000; i += 2)
            EXPECT_EQ(gm_frag_remove(&f, i * 1024), 0);
        EXPECT_EQ(gm_frag_check(&f), 0);
        EXPECT_EQ(gm_frag_count(&f), 50000);
        gm_frag_destroy(&f);
        EXPECT_EQ(gm_frag_count(&f), 0);
    }
}
END_TEST

static Suite *frag_suite(void)
{
    Suite *s = suite_create("frag");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_known_pattern);
    tcase_add_test(tc, test_bad_calls_change_nothing);
    tcase_add_test(tc, test_insert_over_counts_holders);
    tcase_add_test(tc, test_overlap_clamps);
    tcase_add_loop_test(tc, test_random_disjoint, 0, 4);
    tcase_add_loop_test(tc, test_random_overlapping, 0, 4);
    tcase_add_test(tc, test_random_small);
    tcase_add_test(tc, test_million);
    tcase_add_test(tc, test_ascending_and_reuse);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(frag_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
