/*
 * tests/unit/test_escape.c — the terminal and JSON forms of untrusted text
 * (tools/lib/escape.c): the UTF-8 decoder against an independent
 * reference over every lead and second byte; each byte class in the
 * terminal form (kept, \xHH, backslash doubled, C1 in UTF-8, GM_ESC_ASCII);
 * truncation that never splits a unit; the FILE and buffer forms agreeing;
 * the JSON form; and pseudo-random byte strings whose outputs must be
 * valid UTF-8 without a byte a terminal acts on.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/lib/escape.h"

/* Reference decoder: the code point's bits, then the RFC 3629 rules. */
static size_t ref_len(const unsigned char *p)
{
    static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
    unsigned c = p[0];
    size_t n;
    uint32_t cp;
    if (c == 0)
        return 0;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0) {
        n = 2;
        cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3;
        cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* A byte a terminal acts on, or that is not UTF-8, at offset; -1: none. */
static long unsafe_at(const char *s, int allow_newline)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; p[i];) {
        size_t n = ref_len(p + i);
        if (n == 0 || (p[i] < 0x20 && !(allow_newline && p[i] == '\n')) ||
            p[i] == 0x7f || (n == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0))
            return (long)i;
        i += n;
    }
    return -1;
}

static const char *term(const char *s, unsigned flags)
{
    static char buf[4096];
    return gm_esc_term(s, flags, buf, sizeof buf);
}

static const char *json(const char *s)
{
    static char buf[8192];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    ck_assert_ptr_nonnull(f);
    gm_json_str(f, s);
    fputc('\0', f);
    fclose(f);
    return buf;
}

static const char *term_put(const char *s, unsigned flags)
{
    static char buf[8192];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    ck_assert_ptr_nonnull(f);
    gm_esc_term_put(f, s, flags);
    fputc('\0', f);
    fclose(f);
    return buf;
}

/* ---- the decoder ------------------------------------------------------------ */

START_TEST(test_utf8_len_matches_reference)
{
    static const unsigned char tail[] = { 0x00, 0x41, 0x7f, 0x80, 0x8f,
                                          0x90, 0x9f, 0xa0, 0xbf, 0xc0,
                                          0xff };
    const size_t nt = sizeof tail;
    unsigned char p[5] = { 0 };
    for (unsigned a = 0; a < 256; a++)
        for (unsigned b = 0; b < 256; b++)
            for (size_t c = 0; c < nt; c++)
                for (size_t d = 0; d < nt; d++) {
                    p[0] = (unsigned char)a;
                    p[1] = (unsigned char)b;
                    p[2] = tail[c];
                    p[3] = tail[d];
                    size_t want = ref_len(p);
                    size_t got = gm_utf8_len((const char *)p);
                    if (got != want)
                        ck_abort_msg("%02x %02x %02x %02x: %zu, want %zu",
                                     a, b, tail[c], tail[d], got, want);
                }
    ck_assert_uint_eq(gm_utf8_len(""), 0);
    ck_assert(gm_utf8_is_c1("\xc2\x80", 2));
    ck_assert(gm_utf8_is_c1("\xc2\x9f", 2));
    ck_assert(!gm_utf8_is_c1("\xc2\xa0", 2));
    ck_assert(!gm_utf8_is_c1("\xc3\x80", 2));
}
END_TEST

/* ---- the terminal form ------------------------------------------------------- */

START_TEST(test_term_bytes)
{
    ck_assert_str_eq(term("plain ASCII ~!", 0), "plain ASCII ~!");
    ck_assert_str_eq(term("a\\b", 0), "a\\\\b");
    ck_assert_str_eq(term("\033]0;pwned\007\033[2J", 0),
                     "\\x1b]0;pwned\\x07\\x1b[2J");
    ck_assert_str_eq(term("t\tn\nr\rdel\x7f", 0),
                     "t\\x09n\\x0ar\\x0ddel\\x7f");
    for (unsigned c = 1; c < 0x20; c++) {
        char in[2] = { (char)c, 0 }, want[8];
        snprintf(want, sizeof want, "\\x%02x", c);
        ck_assert_str_eq(term(in, 0), want);
    }
    /* any byte >= 0x80 on its own is not UTF-8 */
    for (unsigned c = 0x80; c < 0x100; c++) {
        char in[2] = { (char)c, 0 }, want[8];
        snprintf(want, sizeof want, "\\x%02x", c);
        ck_assert_str_eq(term(in, 0), want);
    }
}
END_TEST

START_TEST(test_term_utf8)
{
    /* valid UTF-8 is kept: U+00E9, U+00A0, U+20AC, U+FFFD, U+1D11E,
     * U+10FFFF */
    static const char *const ok[] = { "caf\xc3\xa9", "\xc2\xa0",
        "\xe2\x82\xac", "\xef\xbf\xbd", "\xf0\x9d\x84\x9e",
        "\xf4\x8f\xbf\xbf" };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        ck_assert_str_eq(term(ok[i], 0), ok[i]);
    /* C1 controls in UTF-8 (U+0080, U+009B CSI, U+009F) */
    ck_assert_str_eq(term("\xc2\x80", 0), "\\xc2\\x80");
    ck_assert_str_eq(term("\xc2\x9b" "2J", 0), "\\xc2\\x9b2J");
    ck_assert_str_eq(term("\xc2\x9f", 0), "\\xc2\\x9f");
    /* overlong, surrogate, above U+10FFFF, cut short, stray continuation */
    ck_assert_str_eq(term("\xc0\xaf", 0), "\\xc0\\xaf");
    ck_assert_str_eq(term("\xe0\x80\xaf", 0), "\\xe0\\x80\\xaf");
    ck_assert_str_eq(term("\xf0\x80\x80\xaf", 0), "\\xf0\\x80\\x80\\xaf");
    ck_assert_str_eq(term("\xed\xa0\x80", 0), "\\xed\\xa0\\x80");
    ck_assert_str_eq(term("\xf4\x90\x80\x80", 0), "\\xf4\\x90\\x80\\x80");
    ck_assert_str_eq(term("\xe2\x82", 0), "\\xe2\\x82");
    ck_assert_str_eq(term("\xe2\x82x", 0), "\\xe2\\x82x");
    ck_assert_str_eq(term("\xe2\xe2\x82\xac", 0), "\\xe2\xe2\x82\xac");
    ck_assert_str_eq(term("\xa9\xc3\xa9", 0), "\\xa9\xc3\xa9");
    /* GM_ESC_ASCII: every byte >= 0x80 */
    ck_assert_str_eq(term("caf\xc3\xa9 \xe2\x82\xac", GM_ESC_ASCII),
                     "caf\\xc3\\xa9 \\xe2\\x82\\xac");
    ck_assert_str_eq(term("a\\\033", GM_ESC_ASCII), "a\\\\\\x1b");
}
END_TEST

START_TEST(test_term_truncation)
{
    char buf[16];
    memset(buf, 'z', sizeof buf);
    gm_esc_term("\033x", 0, buf, 0);
    ck_assert_int_eq(buf[0], 'z');                /* cap 0: untouched */
    ck_assert_str_eq(gm_esc_term("\033x", 0, buf, 1), "");
    ck_assert_str_eq(gm_esc_term("\033x", 0, buf, 4), "");
    ck_assert_str_eq(gm_esc_term("\033x", 0, buf, 5), "\\x1b");
    ck_assert_str_eq(gm_esc_term("\033x", 0, buf, 6), "\\x1bx");
    ck_assert_str_eq(gm_esc_term("a\xc3\xa9", 0, buf, 3), "a");
    ck_assert_str_eq(gm_esc_term("a\xc3\xa9", 0, buf, 4), "a\xc3\xa9");
    ck_assert_str_eq(gm_esc_term("a\\", 0, buf, 3), "a");
    ck_assert_str_eq(gm_esc_term("\xc2\x9b", 0, buf, 8), "");
    ck_assert_str_eq(gm_esc_term("\xc2\x9b", 0, buf, 9), "\\xc2\\x9b");
    /* the worst case fits GM_ESC_TERM_CAP exactly */
    char in[512];
    memset(in, 0xff, 511);
    in[511] = '\0';
    static char big[GM_ESC_TERM_CAP(511)];
    gm_esc_term(in, 0, big, sizeof big);
    ck_assert_uint_eq(strlen(big), 4 * 511);
}
END_TEST

/* ---- JSON --------------------------------------------------------------------- */

START_TEST(test_json_form)
{
    ck_assert_str_eq(json("plain"), "\"plain\"");
    ck_assert_str_eq(json("q\"b\\"), "\"q\\\"b\\\\\"");
    ck_assert_str_eq(json("\033]0;x\007\n\t\r\x7f"),
                     "\"\\u001b]0;x\\u0007\\n\\t\\u000d\\u007f\"");
    ck_assert_str_eq(json("caf\xc3\xa9 \xe2\x82\xac"),
                     "\"caf\xc3\xa9 \xe2\x82\xac\"");
    ck_assert_str_eq(json("\xc2\x9b" "1m"), "\"\\u009b1m\"");
    ck_assert_str_eq(json("\xff\xfe"), "\"\\ufffd\\ufffd\"");
    ck_assert_str_eq(json("\x9b" "1m"), "\"\\ufffd1m\"");
    ck_assert_str_eq(json("\xe2\x82"), "\"\\ufffd\\ufffd\"");
    ck_assert_str_eq(json("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
}
END_TEST

/* ---- every output, for arbitrary bytes ------------------------------------------ */

START_TEST(test_random_bytes_safe)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    char in[64];
    for (int round = 0; round < 20000; round++) {
        size_t n = 1 + round % 63;
        for (size_t i = 0; i < n; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            unsigned char c = (unsigned char)(x >> 56);
            /* bias to the interesting bytes, never NUL */
            if (round & 1)
                c = (unsigned char)(c < 0x40 ? c | 0x80 : c);
            in[i] = (char)(c ? c : 0x1b);
        }
        in[n] = '\0';
        /* plain ifs: a Check assertion costs a system call */
        const char *t = term(in, 0);
        if (unsafe_at(t, 0) >= 0 || strcmp(term_put(in, 0), t) != 0)
            ck_abort_msg("round %d: terminal form %s", round, t);
        t = term(in, GM_ESC_ASCII);
        for (const char *p = t; *p; p++)
            if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
                ck_abort_msg("round %d: not ASCII: %s", round, t);
        if (strcmp(term_put(in, GM_ESC_ASCII), t) != 0)
            ck_abort_msg("round %d: FILE and buffer forms differ", round);
        if (unsafe_at(json(in), 0) >= 0)
            ck_abort_msg("round %d: JSON form", round);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("escape");
    TCase *tc = tcase_create("escape");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_utf8_len_matches_reference);
    tcase_add_test(tc, test_term_bytes);
    tcase_add_test(tc, test_term_utf8);
    tcase_add_test(tc, test_term_truncation);
    tcase_add_test(tc, test_json_form);
    tcase_add_test(tc, test_random_bytes_safe);
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
