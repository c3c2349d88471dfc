/*
 * policy/parse.c — pure string parsers and formatters for gpumem's variable
 * forms: sizes, percentages, durations, plain numbers, unsigned integers.
 *
 * Invariants: no locale dependence (ASCII only), no malloc, no strtod/strtoul
 * (so no errno side effects), no floating-point printf. Every parser scans a
 * plain decimal (digits, optionally '.' and digits) and then a unit; results
 * are computed with 128-bit integer arithmetic so overflow of uint64_t is
 * detected exactly and fractions floor to whole bytes / nanoseconds.
 * Outputs are written only on success.
 */
#include "policy/parse.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

__extension__ typedef unsigned __int128 u128;

/* Fraction digits kept; a later digit other than 0 only sets `more` (it
 * cannot change a result floored to a byte or nanosecond of a value
 * < 2^64, but it makes the value more than zero, and more than a bound it
 * would otherwise equal). */
#define FRAC_DIGITS_MAX 18

/* A scanned decimal: ip + fnum / fden. */
struct num {
    uint64_t ip;
    uint64_t fnum;
    uint64_t fden;
    bool ovf;       /* the integer part does not fit in 64 bits */
    bool frac;      /* a '.' followed by digits was present */
    bool more;      /* a digit other than 0 past FRAC_DIGITS_MAX */
};

typedef bool (*unit_fn)(const char *u, size_t len, uint64_t *mult);

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
           c == '\f';
}

static char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

int gm_ascii_ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (lower(*a) != lower(*b))
            return 0;
    return *a == *b;
}

/* Scan a plain decimal at the start of s; *pos receives its end. */
static enum gm_perr scan_num(const char *s, size_t *pos, struct num *n)
{
    size_t i = 0;

    memset(n, 0, sizeof *n);
    n->fden = 1;
    if (s == NULL || s[0] == '\0')
        return GM_PERR_EMPTY;
    if (s[0] == '-')
        return GM_PERR_NEGATIVE;
    if (!is_digit(s[0]))
        return GM_PERR_SYNTAX;
    for (; is_digit(s[i]); i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (n->ip > (UINT64_MAX - d) / 10)
            n->ovf = true;
        else
            n->ip = n->ip * 10 + d;
    }
    if (s[i] == '.') {
        unsigned k = 0;
        if (!is_digit(s[i + 1]))
            return GM_PERR_SYNTAX;
        for (i++; is_digit(s[i]); i++) {
            if (k < FRAC_DIGITS_MAX) {
                n->fnum = n->fnum * 10 + (uint64_t)(s[i] - '0');
                n->fden *= 10;
                k++;
            } else if (s[i] != '0') {
                n->more = true;
            }
        }
        n->frac = true;
    }
    *pos = i;
    return GM_PERR_OK;
}

static bool num_nonzero(const struct num *n)
{
    return n->ip != 0 || n->fnum != 0 || n->more || n->ovf;
}

/* ip * mult + floor(frac * mult); false on 64-bit overflow. */
static bool num_scale(const struct num *n, uint64_t mult, uint64_t *out)
{
    u128 v = (u128)n->ip * mult + ((u128)n->fnum * mult) / n->fden;

    if (n->ovf || v > (u128)UINT64_MAX)
        return false;
    *out = (uint64_t)v;
    return true;
}

/*
 * Scan the unit after a number: the longest prefix of the following run of
 * letters that `fn` accepts. No letters at the end of the string: OK with
 * *had = false. Text left after the unit (or a non-letter right after the
 * number): TRAILING with *pos at it; a space right after the number, or
 * letters that start no unit: SYNTAX.
 */
static enum gm_perr scan_unit(const char *s, size_t *pos, unit_fn fn,
                              uint64_t *mult, bool *had)
{
    size_t i = *pos, len = 0, k;

    *had = false;
    while (is_alpha(s[i + len]))
        len++;
    if (len == 0) {
        if (s[i] == '\0')
            return GM_PERR_OK;
        return is_space(s[i]) ? GM_PERR_SYNTAX : GM_PERR_TRAILING;
    }
    for (k = len < 3 ? len : 3; k > 0; k--) {
        if (fn(s + i, k, mult)) {
            *had = true;
            *pos = i + k;
            return s[i + k] == '\0' ? GM_PERR_OK : GM_PERR_TRAILING;
        }
    }
    return GM_PERR_SYNTAX;
}

/* b, K, KB, KiB, M, ... T, TiB: binary multiples. */
static bool size_unit(const char *u, size_t len, uint64_t *mult)
{
    static const char pfx[] = "kmgt";
    const char *p;

    if (len == 1 && lower(u[0]) == 'b') {
        *mult = 1;
        return true;
    }
    p = memchr(pfx, lower(u[0]), 4);
    if (p == NULL)
        return false;
    if (len == 2 && lower(u[1]) != 'b')
        return false;
    if (len == 3 && (lower(u[1]) != 'i' || lower(u[2]) != 'b'))
        return false;
    *mult = 1ull << (10 * (unsigned)(p - pfx + 1));
    return true;
}

/* ns, us, ms, s, m, h. */
static bool dur_unit(const char *u, size_t len, uint64_t *mult)
{
    char a = lower(u[0]);

    if (len == 2 && lower(u[1]) == 's') {
        if (a == 'n') *mult = 1;
        else if (a == 'u') *mult = 1000;
        else if (a == 'm') *mult = 1000000;
        else return false;
        return true;
    }
    if (len != 1)
        return false;
    if (a == 's') *mult = 1000000000ull;
    else if (a == 'm') *mult = 60ull * 1000000000ull;
    else if (a == 'h') *mult = 3600ull * 1000000000ull;
    else return false;
    return true;
}

static void set_junk(size_t *junk, size_t pos)
{
    if (junk != NULL)
        *junk = pos;
}

enum gm_perr gm_parse_size_ex(const char *s, uint64_t *out, size_t *junk)
{
    struct num n;
    size_t pos = 0;
    uint64_t mult = 1, v;
    bool had;
    enum gm_perr e = scan_num(s, &pos, &n);

    if (e != GM_PERR_OK)
        return e;
    e = scan_unit(s, &pos, size_unit, &mult, &had);
    if (e == GM_PERR_TRAILING)
        set_junk(junk, pos);
    if (e != GM_PERR_OK)
        return e;
    if (!num_scale(&n, mult, &v))
        return GM_PERR_OVERFLOW;
    if ((mult == 1 && (n.fnum != 0 || n.more)) || (v == 0 && num_nonzero(&n)))
        return GM_PERR_FRACTION;
    *out = v;
    return GM_PERR_OK;
}

enum gm_perr gm_parse_duration_ex(const char *s, uint64_t *out, size_t *junk)
{
    struct num n;
    size_t pos = 0;
    uint64_t mult = 1, v;
    bool had;
    enum gm_perr e = scan_num(s, &pos, &n);

    if (e != GM_PERR_OK)
        return e;
    e = scan_unit(s, &pos, dur_unit, &mult, &had);
    if (e == GM_PERR_TRAILING)
        set_junk(junk, pos);
    if (e != GM_PERR_OK)
        return e;
    if (!had)
        return GM_PERR_NO_UNIT;
    if (!num_scale(&n, mult, &v))
        return GM_PERR_OVERFLOW;
    if (v == 0)
        return GM_PERR_ZERO;
    *out = v;
    return GM_PERR_OK;
}

/* Shared tail for number-like forms: nothing may follow at pos. */
static enum gm_perr end_here(const char *s, size_t pos, size_t *junk)
{
    if (s[pos] == '\0')
        return GM_PERR_OK;
    if (is_space(s[pos]))
        return GM_PERR_SYNTAX;
    set_junk(junk, pos);
    return GM_PERR_TRAILING;
}

/* The next double above v (v >= 0 and finite). */
static double next_up(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    b++;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* The number as a double. A fraction that the sum lost (digits past a
 * double's precision after a whole part, or past FRAC_DIGITS_MAX) makes
 * it the next double up, so a value written just above a bound (100.0…01%)
 * is above it, not equal. */
static double num_value(const struct num *n)
{
    double whole = (double)n->ip;
    double v = whole + (double)n->fnum / (double)n->fden;
    if (n->more || (n->fnum != 0 && v == whole))
        v = next_up(v);
    return v;
}

/* A bare number filling the whole text. */
static enum gm_perr scan_whole(const char *s, struct num *n, size_t *junk)
{
    size_t pos = 0;
    enum gm_perr e = scan_num(s, &pos, n);

    return e == GM_PERR_OK ? end_here(s, pos, junk) : e;
}

/* A bare number and its double (n: the number as written). */
static enum gm_perr scan_number(const char *s, struct num *n, double *out,
                                size_t *junk)
{
    enum gm_perr e = scan_whole(s, n, junk);

    if (e != GM_PERR_OK)
        return e;
    if (n->ovf)
        return GM_PERR_OVERFLOW;
    *out = num_value(n);
    return GM_PERR_OK;
}

enum gm_perr gm_parse_number_ex(const char *s, double *out, size_t *junk)
{
    struct num n;

    return scan_number(s, &n, out, junk);
}

/* -1, 0, 1 as n's exact value is below, equal to or above num/den. */
static int num_cmp(const struct num *n, uint64_t num, uint64_t den)
{
    if (n->ovf)
        return 1;
    uint64_t bip = num / den, brem = num % den;
    if (n->ip != bip)
        return n->ip < bip ? -1 : 1;
    /* The same whole part: fnum/fden (plus a bit more when `more`)
     * against brem/den, exactly (fden <= 10^18, den < 2^64). */
    unsigned __int128 a = (unsigned __int128)n->fnum * den;
    unsigned __int128 b = (unsigned __int128)brem * n->fden;
    if (a != b)
        return a < b ? -1 : 1;
    return n->more ? 1 : 0;
}

enum gm_perr gm_parse_number_in(const char *s, uint64_t lo_num,
                                uint64_t hi_num, uint64_t den, double *out,
                                bool *inside, size_t *junk)
{
    struct num n;
    enum gm_perr e = scan_number(s, &n, out, junk);

    if (e == GM_PERR_OK)
        *inside = num_cmp(&n, lo_num, den) >= 0 &&
                  num_cmp(&n, hi_num, den) <= 0;
    return e;
}

enum gm_perr gm_parse_uint_ex(const char *s, uint64_t *out, size_t *junk)
{
    struct num n;
    enum gm_perr e = scan_whole(s, &n, junk);

    if (e != GM_PERR_OK)
        return e;
    if (n.frac)
        return GM_PERR_FRACTION;
    if (n.ovf)
        return GM_PERR_OVERFLOW;
    *out = n.ip;
    return GM_PERR_OK;
}

enum gm_perr gm_parse_pct_ex(const char *s, double *pct, size_t *junk)
{
    struct num n;
    size_t pos = 0;
    enum gm_perr e = scan_num(s, &pos, &n);

    if (e != GM_PERR_OK)
        return e;
    if (s[pos] != '%')
        return s[pos] == '\0' ? GM_PERR_NO_UNIT : end_here(s, pos, junk);
    e = end_here(s, pos + 1, junk);
    if (e != GM_PERR_OK)
        return e;
    if (n.ovf)
        return GM_PERR_OVERFLOW;
    *pct = num_value(&n);
    return GM_PERR_OK;
}

const char *gm_perr_phrase(enum gm_perr e)
{
    switch (e) {
    case GM_PERR_OK: return "is valid";
    case GM_PERR_EMPTY: return "is empty";
    case GM_PERR_NEGATIVE: return "is negative";
    case GM_PERR_SYNTAX: return "is not a valid value";
    case GM_PERR_TRAILING: return "has unexpected trailing text";
    case GM_PERR_OVERFLOW: return "is too large";
    case GM_PERR_NO_UNIT: return "has no unit";
    case GM_PERR_ZERO: return "must be greater than zero";
    case GM_PERR_FRACTION: return "is not a whole number";
    }
    return "is not valid";
}

int gm_parse_size(const char *s, uint64_t *out)
{
    return gm_parse_size_ex(s, out, NULL) == GM_PERR_OK ? 0 : -1;
}

int gm_parse_percent(const char *s, double *out)
{
    double pct;

    if (gm_parse_pct_ex(s, &pct, NULL) != GM_PERR_OK || pct <= 0.0 ||
        pct > 100.0)
        return -1;
    *out = pct / 100.0;
    return 0;
}

int gm_parse_duration(const char *s, uint64_t *out)
{
    return gm_parse_duration_ex(s, out, NULL) == GM_PERR_OK ? 0 : -1;
}

int gm_parse_number(const char *s, double *out)
{
    return gm_parse_number_ex(s, out, NULL) == GM_PERR_OK ? 0 : -1;
}

int gm_parse_uint(const char *s, uint64_t *out)
{
    return gm_parse_uint_ex(s, out, NULL) == GM_PERR_OK ? 0 : -1;
}

static size_t fmt_ret(int n)
{
    return n < 0 ? 0 : (size_t)n;
}

size_t gm_format_size(uint64_t bytes, char *buf, size_t cap)
{
    static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB",
                                         "EiB" };
    unsigned u = 0;
    u128 unit = 1024, tenths;

    if (bytes < 1024)
        return fmt_ret(snprintf(buf, cap, "%llu B", (unsigned long long)bytes));
    while (u < 5 && (u128)bytes >= unit * 1024) {
        unit *= 1024;
        u++;
    }
    tenths = ((u128)bytes * 10 + unit / 2) / unit;
    if (tenths >= 10240 && u < 5) {     /* 1023.96 KiB -> 1.0 MiB */
        unit *= 1024;
        u++;
        tenths = ((u128)bytes * 10 + unit / 2) / unit;
    }
    return fmt_ret(snprintf(buf, cap, "%llu.%u %s",
                            (unsigned long long)(tenths / 10),
                            (unsigned)(tenths % 10), units[u]));
}

size_t gm_format_duration(uint64_t ns, char *buf, size_t cap)
{
    static const struct { uint64_t ns; const char *name; } units[] = {
        { 3600000000000ull, "h" }, { 60000000000ull, "m" },
        { 1000000000ull, "s" }, { 1000000ull, "ms" }, { 1000ull, "us" },
    };
    size_t i;

    if (ns == 0)
        return fmt_ret(snprintf(buf, cap, "0s"));
    /* Minutes and hours only from 2 on: 60s reads better than 1m. */
    for (i = 0; i < sizeof units / sizeof units[0]; i++)
        if (ns % units[i].ns == 0 && (i >= 2 || ns / units[i].ns >= 2))
            return fmt_ret(snprintf(buf, cap, "%llu%s",
                                    (unsigned long long)(ns / units[i].ns),
                                    units[i].name));
    return fmt_ret(snprintf(buf, cap, "%lluns", (unsigned long long)ns));
}

size_t gm_format_decimal(double v, int decimals, char *buf, size_t cap)
{
    uint64_t scale = 1, ip, f;
    int d, i;

    if (!(v >= 0.0))
        return fmt_ret(snprintf(buf, cap, "0"));
    if (v >= 1e18)
        return fmt_ret(snprintf(buf, cap, "1e18+"));
    d = decimals < 0 ? 0 : decimals > 9 ? 9 : decimals;
    for (i = 0; i < d; i++)
        scale *= 10;
    ip = (uint64_t)v;
    f = (uint64_t)((v - (double)ip) * (double)scale + 0.5);
    if (f >= scale) {
        ip++;
        f -= scale;
    }
    while (d > 0 && f % 10 == 0) {
        f /= 10;
        d--;
    }
    if (d == 0)
        return fmt_ret(snprintf(buf, cap, "%llu", (unsigned long long)ip));
    return fmt_ret(snprintf(buf, cap, "%llu.%0*llu", (unsigned long long)ip, d,
                            (unsigned long long)f));
}

/* HAMi-core's size form: decimal digits, then at most one of k, m, g (any
 * case; binary: 1g = 1024m = 1048576k); a bare number is bytes. "0" is 0.
 * A leading 0 before more digits is refused (HAMi-core reads 010 as octal
 * and 0x10 as hex; gpumem does not guess which was meant). */
enum gm_perr gm_parse_hami_size_ex(const char *s, uint64_t *out, size_t *junk)
{
    uint64_t v = 0, mul = 1;
    size_t i = 0;

    if (s == NULL || *s == '\0')
        return GM_PERR_EMPTY;
    if (*s == '-')
        return GM_PERR_NEGATIVE;
    if (*s < '0' || *s > '9')
        return GM_PERR_SYNTAX;
    if (s[0] == '0' && s[1] != '\0') {
        if (junk != NULL)
            *junk = 1;
        return GM_PERR_TRAILING;
    }
    for (; s[i] >= '0' && s[i] <= '9'; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return GM_PERR_OVERFLOW;
        v = v * 10 + d;
    }
    switch (s[i]) {
    case 'k': case 'K': mul = 1ull << 10; i++; break;
    case 'm': case 'M': mul = 1ull << 20; i++; break;
    case 'g': case 'G': mul = 1ull << 30; i++; break;
    default: break;
    }
    if (s[i] != '\0') {
        if (junk != NULL)
            *junk = i;
        return GM_PERR_TRAILING;
    }
    if (v > UINT64_MAX / mul)
        return GM_PERR_OVERFLOW;
    *out = v * mul;
    return GM_PERR_OK;
}

int gm_parse_shm_dir(const char *val, char *out, size_t cap, const char **why)
{
    size_t n = 0;
    *why = NULL;
    if (val == NULL || val[0] != '/') {
        *why = val && val[0] ? "is not an absolute path" : "is empty";
        return -1;
    }
    for (const char *p = val; *p != '\0';) {
        while (*p == '/')
            p++;
        const char *b = p;
        while (*p != '\0' && *p != '/') {
            unsigned char ch = (unsigned char)*p;
            if (ch < 0x21 || ch == 0x7f) {
                *why = "contains a space or a control character";
                return -1;
            }
            p++;
        }
        size_t k = (size_t)(p - b);
        if (k == 0)
            break;
        if ((k == 1 && b[0] == '.') || (k == 2 && b[0] == '.' && b[1] == '.')) {
            *why = "has a . or .. component";
            return -1;
        }
        if (n + 1 + k + 1 > cap) {
            *why = "is too long";
            return -1;
        }
        out[n++] = '/';
        memcpy(out + n, b, k);
        n += k;
    }
    if (n == 0) {
        if (cap < 2) {
            *why = "is too long";
            return -1;
        }
        out[n++] = '/';
    }
    out[n] = '\0';
    return 0;
}
