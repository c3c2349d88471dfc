/*
 * tests/unit/test_budget.c — reserve/release against a limit: the exact
 * edge, no wrap, no negative, and 8 racing threads that can never pass
 * the limit together (the peak is the proof) and end at zero.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "policy/budget.h"

START_TEST(edge_is_exact)
{
    struct gm_budget b = { 0 };
    gm_budget_set_limit(&b, 1000);
    uint64_t u;
    ck_assert(gm_budget_reserve(&b, 999, &u));
    ck_assert_uint_eq(u, 999);
    ck_assert(gm_budget_reserve(&b, 1, &u));
    ck_assert_uint_eq(u, 1000);
    ck_assert(!gm_budget_reserve(&b, 1, &u));
    ck_assert_uint_eq(u, 1000);
    ck_assert_uint_eq(gm_budget_room(&b), 0);
    ck_assert_uint_eq(gm_budget_release(&b, 1000), 0);
    ck_assert_uint_eq(gm_budget_peak(&b), 1000);
}
END_TEST

START_TEST(never_wraps_or_goes_negative)
{
    struct gm_budget b = { 0 };
    uint64_t u;
    ck_assert(gm_budget_reserve(&b, UINT64_MAX - 5, &u));
    ck_assert(!gm_budget_reserve(&b, 10, &u)); /* would wrap */
    ck_assert_uint_eq(gm_budget_force(&b, 10), UINT64_MAX);
    ck_assert_uint_eq(gm_budget_release(&b, UINT64_MAX), 0);
    ck_assert_uint_eq(gm_budget_release(&b, 5), 0);
    ck_assert_uint_eq(gm_budget_room(&b), UINT64_MAX); /* no limit */
}
END_TEST

static struct gm_budget shared;
static _Atomic uint64_t over; /* reservations that saw used > limit */

static void *racer(void *arg)
{
    unsigned s = (unsigned)(uintptr_t)arg;
    uint64_t held[16] = { 0 };
    for (int i = 0; i < 200000; i++) {
        s = s * 1103515245u + 12345u;
        unsigned k = (s >> 16) & 15;
        uint64_t u;
        if (held[k]) {
            gm_budget_release(&shared, held[k]);
            held[k] = 0;
        } else {
            uint64_t sz = 1 + ((s >> 4) % 1000);
            if (gm_budget_reserve(&shared, sz, &u)) {
                over += u > 10000;
                held[k] = sz;
            }
        }
    }
    for (int k = 0; k < 16; k++)
        gm_budget_release(&shared, held[k]);
    return NULL;
}

START_TEST(threads_never_pass_the_limit)
{
    gm_budget_set_limit(&shared, 10000);
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, racer, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    ck_assert_uint_eq(over, 0);
    ck_assert_uint_le(gm_budget_peak(&shared), 10000);
    ck_assert_uint_eq(gm_budget_used(&shared), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("budget");
    TCase *t = tcase_create("core");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, edge_is_exact);
    tcase_add_test(t, never_wraps_or_goes_negative);
    tcase_add_test(t, threads_never_pass_the_limit);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int f = srunner_ntests_failed(r);
    srunner_free(r);
    return f ? 1 : 0;
}
