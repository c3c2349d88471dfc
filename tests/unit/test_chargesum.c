/*
 * tests/unit/test_chargesum.c — the published sum of pool charges
 * (shim/account/chargesum.h): deltas applied out of order end at the true
 * sum, never stuck at a growth a clamp kept, and a negative moment shows
 * as 0.
 */
#include <check.h>
#include <stdatomic.h>
#include <stdint.h>

#include "shim/account/chargesum.h"

#define MIB (1ull << 20)

/* Two refreshes of one pool: the first exchanged 0 -> 32 MiB (+32), the
 * second 32 -> 0 (-32), but the second's delta arrives first. */
START_TEST(shrink_before_growth_ends_at_zero)
{
    _Atomic uint64_t sum = 0;
    uint64_t v = gm_chargesum_add(&sum, -(int64_t)(32 * MIB));
    ck_assert_uint_eq(gm_chargesum_shown(v), 0);
    v = gm_chargesum_add(&sum, (int64_t)(32 * MIB));
    ck_assert_uint_eq(v, 0);
    ck_assert_uint_eq(gm_chargesum_shown(v), 0);
}
END_TEST

START_TEST(in_order_deltas_are_the_sum)
{
    _Atomic uint64_t sum = 0;
    gm_chargesum_add(&sum, (int64_t)(100 * MIB));
    gm_chargesum_add(&sum, (int64_t)(28 * MIB));
    uint64_t v = gm_chargesum_add(&sum, -(int64_t)(64 * MIB));
    ck_assert_uint_eq(v, 64 * MIB);
    ck_assert_uint_eq(gm_chargesum_shown(v), 64 * MIB);
}
END_TEST

/* Every order of a pool's life (+a, +b, -(a+b)) ends at 0. */
START_TEST(every_order_ends_at_zero)
{
    const int64_t d[3] = { 8 * MIB, 24 * MIB, -32 * (int64_t)MIB };
    const int order[6][3] = { { 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 },
                              { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 } };
    for (int k = 0; k < 6; k++) {
        _Atomic uint64_t sum = 0;
        uint64_t v = 0;
        for (int i = 0; i < 3; i++)
            v = gm_chargesum_add(&sum, d[order[k][i]]);
        ck_assert_msg(v == 0, "order %d ends at %llu", k,
                      (unsigned long long)v);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("chargesum");
    TCase *t = tcase_create("core");
    tcase_add_test(t, shrink_before_growth_ends_at_zero);
    tcase_add_test(t, in_order_deltas_are_the_sum);
    tcase_add_test(t, every_order_ends_at_zero);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
