/*
 * tests/unit/test_sizes.c — one rounding rule for every size the tools
 * print: the short form (gm_size_short, "1.5G") shows the same number as
 * the long one (gm_format_size, "1.5 GiB").
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "policy/parse.h"
#include "tools/lib/util.h"

static void same_number(uint64_t v)
{
    char s[32], l[32], want[32];
    gm_size_short(v, s, sizeof s);
    gm_format_size(v, l, sizeof l);
    /* "1.5 GiB" -> "1.5G"; "512 B" -> "512B" */
    char num[24] = "", unit[8] = "";
    ck_assert_int_eq(sscanf(l, "%23s %7s", num, unit), 2);
    snprintf(want, sizeof want, "%s%c", num, unit[0]);
    ck_assert_msg(strcmp(s, want) == 0, "%llu: short %s, long %s",
                  (unsigned long long)v, s, l);
}

START_TEST(short_and_long_forms_agree)
{
    const uint64_t M = 1ull << 20, G = 1ull << 30;
    const uint64_t cases[] = {
        0, 1, 1023, 1024, 1536, 1500 * M, 1023 * M + 1000 * 1024,
        G - 1, G, G + G / 20, (uint64_t)(1.45 * (double)G), 80 * G,
        143771 * M, UINT64_MAX,
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        same_number(cases[i]);
    for (uint64_t v = 1; v < (1ull << 40); v = v * 3 + 7)
        same_number(v);
    char s[32];
    gm_size_short(1500 * M, s, sizeof s);
    ck_assert_str_eq(s, "1.5G");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sizes");
    TCase *t = tcase_create("core");
    tcase_add_test(t, short_and_long_forms_agree);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int f = srunner_ntests_failed(r);
    srunner_free(r);
    return f ? 1 : 0;
}
