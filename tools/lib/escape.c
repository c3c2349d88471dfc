/*
 * tools/lib/escape.c — the terminal and JSON forms of untrusted text (see
 * tools/lib/escape.h): one UTF-8 decoder, one rule for what is kept.
 *
 * Invariants: the input is walked one unit at a time (a whole valid UTF-8
 * sequence, or one byte); a unit is either copied whole or replaced whole
 * by its escape, so the output is valid UTF-8 whatever the input; the
 * decoder looks at a byte only after every byte before it in the sequence
 * was a continuation byte, so it stops at the NUL.
 */
#include "tools/lib/escape.h"

#include <stdbool.h>
#include <string.h>

size_t gm_utf8_len(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned c = p[0];
    unsigned lo = 0x80, hi = 0xbf;
    size_t n;
    if (c == 0)
        return 0;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4;
    else
        return 0;               /* continuation, overlong lead, > U+10FFFF */
    /* The second byte's range excludes overlong forms, surrogates and
     * code points above U+10FFFF (RFC 3629, section 4). */
    if (c == 0xe0)
        lo = 0xa0;
    else if (c == 0xed)
        hi = 0x9f;
    else if (c == 0xf0)
        lo = 0x90;
    else if (c == 0xf4)
        hi = 0x8f;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return n;
}

int gm_utf8_is_c1(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    return len == 2 && p[0] == 0xc2 && p[1] < 0xa0;
}

/* ---- terminal ------------------------------------------------------------ */

/* The next unit of the terminal form at s (s[0] != NUL): its text in u
 * (at most 8 bytes: two escaped bytes), its length returned, the input
 * bytes it stands for in *used. */
static size_t term_unit(const char *s, unsigned flags, char u[9],
                        size_t *used)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t n = gm_utf8_len(s);
    bool keep;
    if (n == 1)
        keep = p[0] >= 0x20 && p[0] != 0x7f;
    else
        keep = n > 1 && !(flags & GM_ESC_ASCII) && !gm_utf8_is_c1(s, n);
    if (p[0] == '\\') {
        *used = 1;
        memcpy(u, "\\\\", 2);
        return 2;
    }
    if (keep) {
        *used = n;
        memcpy(u, s, n);
        return n;
    }
    /* A C1 control in UTF-8 is escaped byte by byte; otherwise one byte
     * (the rest of a broken sequence is looked at again on its own). */
    size_t k = n == 2 ? 2 : 1;
    for (size_t i = 0; i < k; i++) {
        u[4 * i] = '\\';
        u[4 * i + 1] = 'x';
        u[4 * i + 2] = hex[p[i] >> 4];
        u[4 * i + 3] = hex[p[i] & 15];
    }
    *used = k;
    return 4 * k;
}

char *gm_esc_term(const char *s, unsigned flags, char *buf, size_t cap)
{
    size_t k = 0;
    if (cap == 0)
        return buf;
    while (*s) {
        char u[9];
        size_t used, n = term_unit(s, flags, u, &used);
        if (k + n >= cap)
            break;
        memcpy(buf + k, u, n);
        k += n;
        s += used;
    }
    buf[k] = '\0';
    return buf;
}

void gm_esc_term_put(FILE *f, const char *s, unsigned flags)
{
    while (*s) {
        char u[9];
        size_t used, n = term_unit(s, flags, u, &used);
        fwrite(u, 1, n, f);
        s += used;
    }
}

/* ---- JSON ---------------------------------------------------------------- */

void gm_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    while (*s) {
        const unsigned char *p = (const unsigned char *)s;
        size_t n = gm_utf8_len(s);
        if (n == 0) {
            fputs("\\ufffd", f);
            s++;
        } else if (*p == '"' || *p == '\\') {
            fprintf(f, "\\%c", *p);
            s++;
        } else if (*p == '\n') {
            fputs("\\n", f);
            s++;
        } else if (*p == '\t') {
            fputs("\\t", f);
            s++;
        } else if (*p < 0x20 || *p == 0x7f) {
            fprintf(f, "\\u%04x", *p);
            s++;
        } else if (gm_utf8_is_c1(s, n)) {
            fprintf(f, "\\u%04x", p[1]);
            s += n;
        } else {
            fwrite(s, 1, n, f);
            s += n;
        }
    }
    fputc('"', f);
}
