/*
 * tests/unit/test_expo.c — the Prometheus and OpenMetrics text forms
 * (tools/lib/expo.c): label values escaped ('"', '\', newline) with every
 * control character and invalid byte replaced, cut on a character
 * boundary; pseudo-random byte strings that must come out as one valid
 * label; family headers in both formats (counter and info names, UNIT
 * lines); sample lines; the size bound of a buffer; content negotiation
 * from Accept headers, Prometheus's own among them.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/lib/escape.h"
#include "tools/lib/expo.h"

static char out[4096];

static const char *label(const char *v, size_t max)
{
    struct gm_expo_buf b;
    gm_expo_buf_init(&b, 0);
    gm_expo_label(&b, false, "l", v, max);
    snprintf(out, sizeof out, "%s", b.p ? b.p : "");
    gm_expo_buf_free(&b);
    return out;
}

START_TEST(test_label_escapes)
{
    ck_assert_str_eq(label("plain", 0), "l=\"plain\"");
    ck_assert_str_eq(label("a\"b\\c\nd", 0), "l=\"a\\\"b\\\\c\\nd\"");
    ck_assert_str_eq(label("tab\there", 0), "l=\"tab\xef\xbf\xbdhere\"");
    ck_assert_str_eq(label("x\xff y", 0), "l=\"x\xef\xbf\xbd y\"");
    ck_assert_str_eq(label("\x1b[31m", 0), "l=\"\xef\xbf\xbd[31m\"");
    ck_assert_str_eq(label("del\x7f", 0), "l=\"del\xef\xbf\xbd\"");
    ck_assert_str_eq(label("c1\xc2\x85", 0), "l=\"c1\xef\xbf\xbd\"");
    ck_assert_str_eq(label("caf\xc3\xa9", 0), "l=\"caf\xc3\xa9\"");
    ck_assert_str_eq(label("", 0), "l=\"\"");
    ck_assert_str_eq(label(NULL, 0), "l=\"\"");
}
END_TEST

START_TEST(test_label_cut)
{
    /* "é" is two bytes: three of them do not fit in 5, two do. */
    ck_assert_str_eq(label("\xc3\xa9\xc3\xa9\xc3\xa9", 5),
                     "l=\"\xc3\xa9\xc3\xa9\"");
    ck_assert_str_eq(label("abcdef", 3), "l=\"abc\"");
    ck_assert_str_eq(label("abc", 3), "l=\"abc\"");
    /* The cut counts source bytes: an escaped quote is one of them. */
    ck_assert_str_eq(label("\"\"\"\"", 2), "l=\"\\\"\\\"\"");
}
END_TEST

/* The value between the quotes of l="...": every byte valid UTF-8, no
 * control character, every '"' and '\' escaped. */
static void assert_one_label(const char *s, int round)
{
    size_t n = strlen(s);
    if (n < 4 || strncmp(s, "l=\"", 3) != 0 || s[n - 1] != '"')
        ck_abort_msg("round %d: not one label: %s", round, s);
    for (size_t i = 3; i < n - 1;) {
        size_t k = gm_utf8_len(s + i);
        unsigned char c = (unsigned char)s[i];
        if (k == 0 || c < 0x20 || c == 0x7f || gm_utf8_is_c1(s + i, k))
            ck_abort_msg("round %d: byte 0x%02x at %zu", round, c, i);
        if (c == '\\') {
            char e = s[i + 1];
            if (e != '\\' && e != '"' && e != 'n')
                ck_abort_msg("round %d: bad escape \\%c", round, e);
            i += 2;
            continue;
        }
        if (c == '"')
            ck_abort_msg("round %d: bare quote at %zu", round, i);
        i += k;
    }
}

START_TEST(test_label_random_bytes)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 20000; round++) {
        char in[48];
        size_t n = (size_t)(round % 47);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            in[i] = (char)(x % 255 + 1);   /* no NUL inside */
        }
        in[n] = '\0';
        assert_one_label(label(in, round % 3 ? 0 : 17), round);
    }
}
END_TEST

static const char *header(const struct gm_expo_family *f,
                          enum gm_expo_fmt fmt)
{
    struct gm_expo_buf b;
    gm_expo_buf_init(&b, 0);
    gm_expo_header(&b, f, fmt);
    snprintf(out, sizeof out, "%s", b.p);
    gm_expo_buf_free(&b);
    return out;
}

START_TEST(test_headers)
{
    struct gm_expo_family c = { "x_allocations_total", GM_EXPO_COUNTER,
                                NULL, "Allocations" };
    struct gm_expo_family g = { "x_used_bytes", GM_EXPO_GAUGE, "bytes",
                                "Used" };
    struct gm_expo_family i = { "x_process_info", GM_EXPO_INFO, NULL,
                                "Who" };
    ck_assert_str_eq(header(&c, GM_EXPO_PROM),
                     "# HELP x_allocations_total Allocations\n"
                     "# TYPE x_allocations_total counter\n");
    ck_assert_str_eq(header(&c, GM_EXPO_OPENMETRICS),
                     "# HELP x_allocations Allocations\n"
                     "# TYPE x_allocations counter\n");
    ck_assert_str_eq(header(&g, GM_EXPO_PROM),
                     "# HELP x_used_bytes Used\n# TYPE x_used_bytes gauge\n");
    ck_assert_str_eq(header(&g, GM_EXPO_OPENMETRICS),
                     "# HELP x_used_bytes Used\n# TYPE x_used_bytes gauge\n"
                     "# UNIT x_used_bytes bytes\n");
    ck_assert_str_eq(header(&i, GM_EXPO_PROM),
                     "# HELP x_process_info Who\n"
                     "# TYPE x_process_info gauge\n");
    ck_assert_str_eq(header(&i, GM_EXPO_OPENMETRICS),
                     "# HELP x_process Who\n# TYPE x_process info\n");
}
END_TEST

START_TEST(test_samples)
{
    struct gm_expo_buf b;
    gm_expo_buf_init(&b, 0);
    gm_expo_sample_u64(&b, "a", NULL, "", NULL, 18446744073709551615ull);
    gm_expo_sample_u64(&b, "h", "_bucket", "pid=\"1\"", "le=\"+Inf\"", 3);
    gm_expo_sample_u64(&b, "h", "_bucket", NULL, "le=\"1e-09\"", 0);
    gm_expo_sample_f(&b, "r", NULL, "k=\"v\"", NULL, 0.25);
    ck_assert_str_eq(b.p, "a 18446744073709551615\n"
                          "h_bucket{pid=\"1\",le=\"+Inf\"} 3\n"
                          "h_bucket{le=\"1e-09\"} 0\n"
                          "r{k=\"v\"} 0.25\n");
    gm_expo_buf_free(&b);
}
END_TEST

START_TEST(test_buffer_limit)
{
    struct gm_expo_buf b;
    gm_expo_buf_init(&b, 10);
    gm_expo_puts(&b, "12345");
    ck_assert(!b.failed);
    gm_expo_puts(&b, "678901");
    ck_assert(b.failed);
    ck_assert_uint_eq(b.len, 5);
    gm_expo_puts(&b, "x");           /* nothing after a failure */
    ck_assert_uint_eq(b.len, 5);
    ck_assert_str_eq(b.p, "12345");
    gm_expo_buf_free(&b);
    /* Growth past the first 4 KiB keeps every byte. */
    gm_expo_buf_init(&b, 0);
    for (int i = 0; i < 3000; i++)
        gm_expo_printf(&b, "%04d", i);
    ck_assert_uint_eq(b.len, 12000);
    ck_assert(strncmp(b.p + 11996, "2999", 4) == 0);
    gm_expo_buf_free(&b);
}
END_TEST

START_TEST(test_negotiate)
{
    ck_assert_int_eq(gm_expo_negotiate(NULL), GM_EXPO_PROM);
    ck_assert_int_eq(gm_expo_negotiate(""), GM_EXPO_PROM);
    /* What Prometheus 2.x sends. */
    ck_assert_int_eq(gm_expo_negotiate(
        "application/openmetrics-text;version=1.0.0,application/"
        "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;"
        "q=0.5,*/*;q=0.1"), GM_EXPO_OPENMETRICS);
    ck_assert_int_eq(gm_expo_negotiate("application/openmetrics-text"),
                     GM_EXPO_OPENMETRICS);
    ck_assert_int_eq(gm_expo_negotiate("text/plain;version=0.0.4"),
                     GM_EXPO_PROM);
    ck_assert_int_eq(gm_expo_negotiate("*/*"), GM_EXPO_PROM);
    /* media types in any case (they were matched in lower case only) */
    ck_assert_int_eq(gm_expo_negotiate("Application/OpenMetrics-Text"),
                     GM_EXPO_OPENMETRICS);
    ck_assert_int_eq(gm_expo_negotiate(
        "APPLICATION/OPENMETRICS-TEXT; version=1.0.0"), GM_EXPO_OPENMETRICS);
    ck_assert_int_eq(gm_expo_negotiate(
        "application/openmetrics-text;q=0.4, TEXT/Plain;q=0.9"),
        GM_EXPO_PROM);
    ck_assert_int_eq(gm_expo_negotiate(
        "application/openmetrics-text; q=0.2, text/plain; q=0.5"),
        GM_EXPO_PROM);
    ck_assert_int_eq(gm_expo_negotiate(
        "text/plain;q=0.3, application/openmetrics-text;q=0.9"),
        GM_EXPO_OPENMETRICS);
    ck_assert_int_eq(gm_expo_negotiate("application/openmetrics-text;q=0"),
                     GM_EXPO_PROM);
    ck_assert_int_eq(gm_expo_negotiate("application/openmetrics-text;q=x"),
                     GM_EXPO_PROM);
    ck_assert_int_eq(gm_expo_negotiate("application/openmetrics-textual"),
                     GM_EXPO_PROM);
    ck_assert(strncmp(gm_expo_content_type(GM_EXPO_PROM),
                      "text/plain; version=0.0.4", 25) == 0);
    ck_assert(strncmp(gm_expo_content_type(GM_EXPO_OPENMETRICS),
                      "application/openmetrics-text; version=1.0.0", 43) == 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("expo");
    TCase *tc = tcase_create("expo");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_label_escapes);
    tcase_add_test(tc, test_label_cut);
    tcase_add_test(tc, test_label_random_bytes);
    tcase_add_test(tc, test_headers);
    tcase_add_test(tc, test_samples);
    tcase_add_test(tc, test_buffer_limit);
    tcase_add_test(tc, test_negotiate);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
