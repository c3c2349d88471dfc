/*
 * tests/unit/test_parse.c — Check suite for policy/parse.c: every size,
 * percentage, duration, number and integer form, each refusal reason,
 * boundaries and overflow, and the formatters.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "policy/parse.h"

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)
#define TiB (1024ull * GiB)
#define SENTINEL 0xdeadbeefull

struct size_case {
    const char *s;
    uint64_t bytes;
};

static const struct size_case good_sizes[] = {
    { "0", 0 },
    { "1", 1 },
    { "1B", 1 },
    { "1b", 1 },
    { "1073741824", GiB },
    { "512k", 512 * KiB },
    { "1K", KiB },
    { "1KB", KiB },
    { "1kib", KiB },
    { "3M", 3 * MiB },
    { "3mB", 3 * MiB },
    { "3MiB", 3 * MiB },
    { "4G", 4 * GiB },
    { "4g", 4 * GiB },
    { "4GB", 4 * GiB },
    { "4gb", 4 * GiB },
    { "4GiB", 4 * GiB },
    { "4gIB", 4 * GiB },
    { "1.5G", GiB + GiB / 2 },
    { "1.5g", GiB + GiB / 2 },
    { "0.5K", 512 },
    { "0.1K", 102 },          /* 102.4 floors to 102 */
    { "1.0", 1 },
    { "2T", 2 * TiB },
    { "0.25TiB", TiB / 4 },
    { "18446744073709551615", UINT64_MAX },
    { "17179869183G", 17179869183ull * GiB },
    { "007", 7 },
};

START_TEST(size_forms)
{
    const struct size_case *c = &good_sizes[_i];
    uint64_t v = SENTINEL;

    ck_assert_msg(gm_parse_size_ex(c->s, &v, NULL) == GM_PERR_OK,
                  "'%s' refused", c->s);
    ck_assert_msg(v == c->bytes, "'%s' -> %llu, want %llu", c->s,
                  (unsigned long long)v, (unsigned long long)c->bytes);
    v = SENTINEL;
    ck_assert_int_eq(gm_parse_size(c->s, &v), 0);
    ck_assert_uint_eq(v, c->bytes);
}
END_TEST

struct bad_case {
    const char *s;
    enum gm_perr e;
    size_t junk;    /* for GM_PERR_TRAILING */
};

static const struct bad_case bad_sizes[] = {
    { "", GM_PERR_EMPTY, 0 },
    { "-1", GM_PERR_NEGATIVE, 0 },
    { "-4G", GM_PERR_NEGATIVE, 0 },
    { "99999999T", GM_PERR_OVERFLOW, 0 },
    { "18446744073709551616", GM_PERR_OVERFLOW, 0 },
    { "17179869184G", GM_PERR_OVERFLOW, 0 },
    { "99999999999999999999999K", GM_PERR_OVERFLOW, 0 },
    { "4 gigs", GM_PERR_SYNTAX, 0 },
    { "4 G", GM_PERR_SYNTAX, 0 },
    { " 4G", GM_PERR_SYNTAX, 0 },
    { "abc", GM_PERR_SYNTAX, 0 },
    { "4x", GM_PERR_SYNTAX, 0 },
    { "+4G", GM_PERR_SYNTAX, 0 },
    { ".5G", GM_PERR_SYNTAX, 0 },
    { "1.G", GM_PERR_SYNTAX, 0 },
    { "4Gx", GM_PERR_TRAILING, 2 },
    { "4G!", GM_PERR_TRAILING, 2 },
    { "4GiBB", GM_PERR_TRAILING, 4 },
    { "4G ", GM_PERR_TRAILING, 2 },
    { "4gigs", GM_PERR_TRAILING, 2 },
    { "1.5.2G", GM_PERR_TRAILING, 3 },
    { "50%", GM_PERR_TRAILING, 2 },
    { "1.5", GM_PERR_FRACTION, 0 },
    { "1.5B", GM_PERR_FRACTION, 0 },
    { "0.0001K", GM_PERR_FRACTION, 0 },
    /* Digits past the 18th decimal place still count: more than zero is
     * never 0 (no limit). */
    { "0.0000000000000000001G", GM_PERR_FRACTION, 0 },
    { "0.00000000000000000000000001M", GM_PERR_FRACTION, 0 },
    { "0.00000000000000000001", GM_PERR_FRACTION, 0 },
    { "1.0000000000000000009B", GM_PERR_FRACTION, 0 },
};

START_TEST(size_refusals)
{
    const struct bad_case *c = &bad_sizes[_i];
    uint64_t v = SENTINEL;
    size_t junk = 999;
    enum gm_perr e = gm_parse_size_ex(c->s, &v, &junk);

    ck_assert_msg(e == c->e, "'%s': got %d want %d", c->s, e, c->e);
    ck_assert_uint_eq(v, SENTINEL);
    if (c->e == GM_PERR_TRAILING)
        ck_assert_uint_eq(junk, c->junk);
    ck_assert_int_eq(gm_parse_size(c->s, &v), -1);
    ck_assert_uint_eq(v, SENTINEL);
}
END_TEST

START_TEST(size_null)
{
    uint64_t v = SENTINEL;

    ck_assert_int_eq(gm_parse_size_ex(NULL, &v, NULL), GM_PERR_EMPTY);
    ck_assert_int_eq(gm_parse_size(NULL, &v), -1);
    ck_assert_uint_eq(v, SENTINEL);
}
END_TEST

START_TEST(percent_forms)
{
    double f = -1, pct = -1;
    size_t junk = 0;

    ck_assert_int_eq(gm_parse_percent("50%", &f), 0);
    ck_assert(f == 0.5);
    ck_assert_int_eq(gm_parse_percent("12.5%", &f), 0);
    ck_assert(f == 0.125);
    ck_assert_int_eq(gm_parse_percent("100%", &f), 0);
    ck_assert(f == 1.0);
    ck_assert_int_eq(gm_parse_percent("0.5%", &f), 0);
    ck_assert(f == 0.005);
    f = -1;
    ck_assert_int_eq(gm_parse_percent("0%", &f), -1);
    ck_assert_int_eq(gm_parse_percent("100.1%", &f), -1);
    /* Just above 100, past a double's precision or the digits kept. */
    ck_assert_int_eq(gm_parse_percent("100.0000000000000001%", &f), -1);
    ck_assert_int_eq(gm_parse_percent("100.0000000000000000001%", &f), -1);
    ck_assert_int_eq(gm_parse_percent("100.0000000000000000000%", &f), 0);
    ck_assert(f == 1.0);
    f = -1;
    ck_assert_int_eq(gm_parse_percent("101%", &f), -1);
    ck_assert_int_eq(gm_parse_percent("50", &f), -1);
    ck_assert_int_eq(gm_parse_percent("-5%", &f), -1);
    ck_assert_int_eq(gm_parse_percent("", &f), -1);
    ck_assert(f == -1);

    ck_assert_int_eq(gm_parse_pct_ex("0%", &pct, NULL), GM_PERR_OK);
    ck_assert(pct == 0.0);
    ck_assert_int_eq(gm_parse_pct_ex("1000%", &pct, NULL), GM_PERR_OK);
    ck_assert(pct == 1000.0);
    ck_assert_int_eq(gm_parse_pct_ex("50", &pct, NULL), GM_PERR_NO_UNIT);
    ck_assert_int_eq(gm_parse_pct_ex("50 %", &pct, NULL), GM_PERR_SYNTAX);
    ck_assert_int_eq(gm_parse_pct_ex("50%%", &pct, &junk), GM_PERR_TRAILING);
    ck_assert_uint_eq(junk, 3);
    ck_assert_int_eq(gm_parse_pct_ex("50x%", &pct, &junk), GM_PERR_TRAILING);
    ck_assert_uint_eq(junk, 2);
    ck_assert_int_eq(gm_parse_pct_ex("-1%", &pct, NULL), GM_PERR_NEGATIVE);
    ck_assert_int_eq(gm_parse_pct_ex("", &pct, NULL), GM_PERR_EMPTY);
    ck_assert_int_eq(gm_parse_pct_ex("%", &pct, NULL), GM_PERR_SYNTAX);
    ck_assert_int_eq(gm_parse_pct_ex("99999999999999999999999%", &pct, NULL),
                     GM_PERR_OVERFLOW);
}
END_TEST

START_TEST(duration_forms)
{
    uint64_t ns = 0;

    ck_assert_int_eq(gm_parse_duration("30s", &ns), 0);
    ck_assert_uint_eq(ns, 30000000000ull);
    ck_assert_int_eq(gm_parse_duration("5m", &ns), 0);
    ck_assert_uint_eq(ns, 300000000000ull);
    ck_assert_int_eq(gm_parse_duration("1500ms", &ns), 0);
    ck_assert_uint_eq(ns, 1500000000ull);
    ck_assert_int_eq(gm_parse_duration("2h", &ns), 0);
    ck_assert_uint_eq(ns, 7200000000000ull);
    ck_assert_int_eq(gm_parse_duration("100us", &ns), 0);
    ck_assert_uint_eq(ns, 100000ull);
    ck_assert_int_eq(gm_parse_duration("10ns", &ns), 0);
    ck_assert_uint_eq(ns, 10ull);
    ck_assert_int_eq(gm_parse_duration("1.5s", &ns), 0);
    ck_assert_uint_eq(ns, 1500000000ull);
    ck_assert_int_eq(gm_parse_duration("30S", &ns), 0);
    ck_assert_uint_eq(ns, 30000000000ull);
    ck_assert_int_eq(gm_parse_duration("1MS", &ns), 0);
    ck_assert_uint_eq(ns, 1000000ull);
}
END_TEST

static const struct bad_case bad_durations[] = {
    { "", GM_PERR_EMPTY, 0 },
    { "30", GM_PERR_NO_UNIT, 0 },
    { "0s", GM_PERR_ZERO, 0 },
    { "0.1ns", GM_PERR_ZERO, 0 },
    { "-5s", GM_PERR_NEGATIVE, 0 },
    { "30x", GM_PERR_SYNTAX, 0 },
    { "30 s", GM_PERR_SYNTAX, 0 },
    { "s", GM_PERR_SYNTAX, 0 },
    { "30sec", GM_PERR_TRAILING, 3 },
    { "30s5", GM_PERR_TRAILING, 3 },
    { "30%", GM_PERR_TRAILING, 2 },
    { "99999999999h", GM_PERR_OVERFLOW, 0 },
};

START_TEST(duration_refusals)
{
    const struct bad_case *c = &bad_durations[_i];
    uint64_t ns = SENTINEL;
    size_t junk = 999;
    enum gm_perr e = gm_parse_duration_ex(c->s, &ns, &junk);

    ck_assert_msg(e == c->e, "'%s': got %d want %d", c->s, e, c->e);
    if (c->e == GM_PERR_TRAILING)
        ck_assert_uint_eq(junk, c->junk);
    ck_assert_int_eq(gm_parse_duration(c->s, &ns), -1);
    ck_assert_uint_eq(ns, SENTINEL);
}
END_TEST

START_TEST(number_forms)
{
    double v = -1;
    size_t junk = 0;

    ck_assert_int_eq(gm_parse_number("0.7", &v), 0);
    ck_assert(v == 0.7);
    ck_assert_int_eq(gm_parse_number("10", &v), 0);
    ck_assert(v == 10.0);
    ck_assert_int_eq(gm_parse_number("0.1", &v), 0);
    ck_assert(v == 0.1);
    ck_assert_int_eq(gm_parse_number("1.00000000000000001", &v), 0);
    ck_assert(v > 1.0); /* above 1, though no double lies between */
    ck_assert_int_eq(gm_parse_number("10.0000000000000000000001", &v), 0);
    ck_assert(v > 10.0);
    ck_assert_int_eq(gm_parse_number("10.000000000000000000000", &v), 0);
    ck_assert(v == 10.0);
    v = -1;
    ck_assert_int_eq(gm_parse_number_ex("1e3", &v, &junk), GM_PERR_TRAILING);
    ck_assert_uint_eq(junk, 1);
    ck_assert_int_eq(gm_parse_number_ex("1.5.2", &v, &junk), GM_PERR_TRAILING);
    ck_assert_uint_eq(junk, 3);
    ck_assert_int_eq(gm_parse_number_ex("", &v, NULL), GM_PERR_EMPTY);
    ck_assert_int_eq(gm_parse_number_ex("-1", &v, NULL), GM_PERR_NEGATIVE);
    ck_assert_int_eq(gm_parse_number_ex("x", &v, NULL), GM_PERR_SYNTAX);
    ck_assert_int_eq(gm_parse_number_ex("1 ", &v, NULL), GM_PERR_SYNTAX);
    ck_assert_int_eq(gm_parse_number_ex("99999999999999999999", &v, NULL),
                     GM_PERR_OVERFLOW);
    ck_assert(v == -1);
}
END_TEST

START_TEST(uint_forms)
{
    uint64_t v = SENTINEL;
    size_t junk = 0;

    ck_assert_int_eq(gm_parse_uint("1024", &v), 0);
    ck_assert_uint_eq(v, 1024);
    ck_assert_int_eq(gm_parse_uint("18446744073709551615", &v), 0);
    ck_assert_uint_eq(v, UINT64_MAX);
    v = SENTINEL;
    ck_assert_int_eq(gm_parse_uint_ex("18446744073709551616", &v, NULL),
                     GM_PERR_OVERFLOW);
    ck_assert_int_eq(gm_parse_uint_ex("1.0", &v, NULL), GM_PERR_FRACTION);
    ck_assert_int_eq(gm_parse_uint_ex("12a", &v, &junk), GM_PERR_TRAILING);
    ck_assert_uint_eq(junk, 2);
    ck_assert_int_eq(gm_parse_uint_ex("", &v, NULL), GM_PERR_EMPTY);
    ck_assert_int_eq(gm_parse_uint_ex("-3", &v, NULL), GM_PERR_NEGATIVE);
    ck_assert_uint_eq(v, SENTINEL);
}
END_TEST

struct fmt_case {
    uint64_t bytes;
    const char *text;
};

static const struct fmt_case sizes_text[] = {
    { 0, "0 B" },
    { 512, "512 B" },
    { 1023, "1023 B" },
    { 1024, "1.0 KiB" },
    { 1536, "1.5 KiB" },
    { 268435456, "256.0 MiB" },
    { 4 * GiB, "4.0 GiB" },
    { GiB + GiB / 2, "1.5 GiB" },
    { MiB - 1, "1.0 MiB" },
    { 2 * TiB, "2.0 TiB" },
    { UINT64_MAX, "16.0 EiB" },
    { 1023 * GiB + 9 * GiB / 10, "1023.9 GiB" }, /* the longest */
};

START_TEST(format_size)
{
    const struct fmt_case *c = &sizes_text[_i];
    char buf[32];
    size_t n = gm_format_size(c->bytes, buf, sizeof buf);

    ck_assert_str_eq(buf, c->text);
    ck_assert_uint_eq(n, strlen(c->text));
    ck_assert_uint_le(n, GM_SIZE_TEXT_MAX);
}
END_TEST

START_TEST(format_size_truncates)
{
    char buf[4];
    size_t n = gm_format_size(4 * GiB, buf, sizeof buf);

    ck_assert_uint_eq(n, strlen("4.0 GiB"));
    ck_assert_str_eq(buf, "4.0");
    ck_assert_uint_eq(gm_format_size(4 * GiB, NULL, 0), strlen("4.0 GiB"));
}
END_TEST

START_TEST(format_duration)
{
    char buf[32];

    gm_format_duration(60000000000ull, buf, sizeof buf);
    ck_assert_str_eq(buf, "60s");
    gm_format_duration(300000000000ull, buf, sizeof buf);
    ck_assert_str_eq(buf, "5m");
    gm_format_duration(1500000000ull, buf, sizeof buf);
    ck_assert_str_eq(buf, "1500ms");
    gm_format_duration(7200000000000ull, buf, sizeof buf);
    ck_assert_str_eq(buf, "2h");
    gm_format_duration(3600000000000ull, buf, sizeof buf);
    ck_assert_str_eq(buf, "60m");
    gm_format_duration(100000ull, buf, sizeof buf);
    ck_assert_str_eq(buf, "100us");
    gm_format_duration(7ull, buf, sizeof buf);
    ck_assert_str_eq(buf, "7ns");
    gm_format_duration(0, buf, sizeof buf);
    ck_assert_str_eq(buf, "0s");
}
END_TEST

START_TEST(format_decimal)
{
    char buf[32];

    gm_format_decimal(1.5, 3, buf, sizeof buf);
    ck_assert_str_eq(buf, "1.5");
    gm_format_decimal(0.125, 9, buf, sizeof buf);
    ck_assert_str_eq(buf, "0.125");
    gm_format_decimal(10.0, 9, buf, sizeof buf);
    ck_assert_str_eq(buf, "10");
    gm_format_decimal(0.29 * 100.0, 7, buf, sizeof buf);
    ck_assert_str_eq(buf, "29");
    gm_format_decimal(0.9999, 3, buf, sizeof buf);
    ck_assert_str_eq(buf, "1");
    gm_format_decimal(0.7, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "1");
    gm_format_decimal(-2.0, 3, buf, sizeof buf);
    ck_assert_str_eq(buf, "0");
    gm_format_decimal(2e18, 3, buf, sizeof buf);
    ck_assert_str_eq(buf, "1e18+");
}
END_TEST

START_TEST(ascii_case)
{
    ck_assert(gm_ascii_ieq("Static", "static"));
    ck_assert(gm_ascii_ieq("GROW", "grow"));
    ck_assert(!gm_ascii_ieq("grow", "grows"));
    ck_assert(!gm_ascii_ieq("grows", "grow"));
    ck_assert(!gm_ascii_ieq("gr0w", "grow"));
    ck_assert(gm_ascii_ieq("", ""));
}
END_TEST

START_TEST(phrases_distinct)
{
    enum gm_perr a, b;

    for (a = GM_PERR_OK; a <= GM_PERR_FRACTION; a++)
        for (b = a + 1; b <= GM_PERR_FRACTION; b++)
            ck_assert_str_ne(gm_perr_phrase(a), gm_perr_phrase(b));
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *parse_suite(void)
{
    Suite *s = suite_create("parse");
    TCase *t = tcase_create("sizes");

    tcase_add_loop_test(t, size_forms, 0, N(good_sizes));
    tcase_add_loop_test(t, size_refusals, 0, N(bad_sizes));
    tcase_add_test(t, size_null);
    suite_add_tcase(s, t);
    t = tcase_create("others");
    tcase_add_test(t, percent_forms);
    tcase_add_test(t, duration_forms);
    tcase_add_loop_test(t, duration_refusals, 0, N(bad_durations));
    tcase_add_test(t, number_forms);
    tcase_add_test(t, uint_forms);
    tcase_add_test(t, ascii_case);
    tcase_add_test(t, phrases_distinct);
    suite_add_tcase(s, t);
    t = tcase_create("format");
    tcase_add_loop_test(t, format_size, 0, N(sizes_text));
    tcase_add_test(t, format_size_truncates);
    tcase_add_test(t, format_duration);
    tcase_add_test(t, format_decimal);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(parse_suite());
    int failed;

    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
