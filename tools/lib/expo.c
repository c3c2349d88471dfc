/*
 * tools/lib/expo.c — the Prometheus and OpenMetrics text formats (see
 * tools/lib/expo.h): growing buffers, escaped label values, family
 * headers, sample lines, content negotiation.
 *
 * Invariants: a label value never carries a raw '"', '\', newline, other
 * control character or invalid UTF-8 (gm_expo_label); a buffer never
 * grows past its limit (it is marked failed instead).
 */
#include "tools/lib/expo.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tools/lib/escape.h"

void gm_expo_buf_init(struct gm_expo_buf *b, size_t limit)
{
    memset(b, 0, sizeof *b);
    b->limit = limit;
}

void gm_expo_buf_free(struct gm_expo_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

static bool reserve(struct gm_expo_buf *b, size_t n)
{
    if (b->failed)
        return false;
    if (n > SIZE_MAX / 2 - b->len ||
        (b->limit && b->len + n > b->limit)) {
        b->failed = true;
        return false;
    }
    if (b->len + n + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL) {
        b->failed = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void gm_expo_put(struct gm_expo_buf *b, const char *s, size_t n)
{
    if (n == 0 || !reserve(b, n))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void gm_expo_puts(struct gm_expo_buf *b, const char *s)
{
    gm_expo_put(b, s, strlen(s));
}

void gm_expo_printf(struct gm_expo_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        gm_expo_put(b, small, (size_t)n);
        return;
    }
    if (!reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

void gm_expo_label(struct gm_expo_buf *b, bool comma, const char *name,
                   const char *value, size_t max_bytes)
{
    if (comma && b->len > 0)
        gm_expo_put(b, ",", 1);
    gm_expo_puts(b, name);
    gm_expo_put(b, "=\"", 2);
    size_t used = 0;
    const char *s = value ? value : "";
    while (*s) {
        size_t n = gm_utf8_len(s);
        size_t step = n ? n : 1;
        if (max_bytes && used + step > max_bytes)
            break;
        used += step;
        unsigned char c = (unsigned char)*s;
        if (n == 0 || (n == 1 && (c < 0x20 || c == 0x7f) && c != '\n') ||
            gm_utf8_is_c1(s, n))
            gm_expo_put(b, replacement, 3);
        else if (c == '\\')
            gm_expo_put(b, "\\\\", 2);
        else if (c == '"')
            gm_expo_put(b, "\\\"", 2);
        else if (c == '\n')
            gm_expo_put(b, "\\n", 2);
        else
            gm_expo_put(b, s, n);
        s += step;
    }
    gm_expo_put(b, "\"", 1);
}

static const char *type_word(enum gm_expo_type t, enum gm_expo_fmt fmt)
{
    switch (t) {
    case GM_EXPO_COUNTER: return "counter";
    case GM_EXPO_HISTOGRAM: return "histogram";
    case GM_EXPO_INFO: return fmt == GM_EXPO_OPENMETRICS ? "info" : "gauge";
    case GM_EXPO_GAUGE: break;
    }
    return "gauge";
}

/* The family name of the "# TYPE" line: in OpenMetrics a counter's
 * without "_total", an info family's without "_info". */
static size_t family_len(const struct gm_expo_family *f,
                         enum gm_expo_fmt fmt)
{
    size_t n = strlen(f->name);
    if (fmt != GM_EXPO_OPENMETRICS)
        return n;
    if (f->type == GM_EXPO_COUNTER && n > 6 &&
        strcmp(f->name + n - 6, "_total") == 0)
        return n - 6;
    if (f->type == GM_EXPO_INFO && n > 5 &&
        strcmp(f->name + n - 5, "_info") == 0)
        return n - 5;
    return n;
}

void gm_expo_header(struct gm_expo_buf *b, const struct gm_expo_family *f,
                    enum gm_expo_fmt fmt)
{
    int n = (int)family_len(f, fmt);
    gm_expo_printf(b, "# HELP %.*s %s\n", n, f->name, f->help);
    gm_expo_printf(b, "# TYPE %.*s %s\n", n, f->name, type_word(f->type, fmt));
    if (fmt == GM_EXPO_OPENMETRICS && f->unit != NULL)
        gm_expo_printf(b, "# UNIT %.*s %s\n", n, f->name, f->unit);
}

static void sample_head(struct gm_expo_buf *b, const char *name,
                        const char *suffix, const char *labels,
                        const char *extra)
{
    gm_expo_puts(b, name);
    if (suffix)
        gm_expo_puts(b, suffix);
    bool l = labels && *labels, e = extra && *extra;
    if (l || e) {
        gm_expo_put(b, "{", 1);
        if (l)
            gm_expo_puts(b, labels);
        if (l && e)
            gm_expo_put(b, ",", 1);
        if (e)
            gm_expo_puts(b, extra);
        gm_expo_put(b, "}", 1);
    }
    gm_expo_put(b, " ", 1);
}

void gm_expo_sample_u64(struct gm_expo_buf *b, const char *name,
                        const char *suffix, const char *labels,
                        const char *extra, uint64_t v)
{
    sample_head(b, name, suffix, labels, extra);
    char d[24];
    size_t k = sizeof d;
    d[--k] = '\n';
    do {
        d[--k] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    gm_expo_put(b, d + k, sizeof d - k);
}

void gm_expo_sample_f(struct gm_expo_buf *b, const char *name,
                      const char *suffix, const char *labels,
                      const char *extra, double v)
{
    sample_head(b, name, suffix, labels, extra);
    gm_expo_printf(b, "%.15g\n", v);
}

/* ---- content negotiation ------------------------------------------------- */

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* The quality of one media range's parameters "; q=0.5; version=..." up
 * to its end (',' or NUL); 1 without q, -1 when q is malformed. */
static double range_q(const char *p, const char *end)
{
    double q = 1.0;
    while (p < end) {
        const char *semi = memchr(p, ';', (size_t)(end - p));
        if (semi == NULL)
            break;
        p = skip_ws(semi + 1);
        if ((p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
            char *e;
            q = strtod(p + 2, &e);
            if (e == p + 2 || q < 0 || q > 1)
                return -1;
        }
    }
    return q;
}

enum gm_expo_fmt gm_expo_negotiate(const char *accept)
{
    if (accept == NULL)
        return GM_EXPO_PROM;
    double q_om = 0, q_text = 0;
    const char *p = accept;
    while (*p) {
        p = skip_ws(p);
        const char *end = strchr(p, ',');
        if (end == NULL)
            end = p + strlen(p);
        size_t tlen = 0;
        while (p + tlen < end && p[tlen] != ';' && p[tlen] != ' ' &&
               p[tlen] != '\t')
            tlen++;
        double q = range_q(p, end);
        if (q < 0)
            return GM_EXPO_PROM;
        /* media types are case-insensitive (RFC 9110, 8.3.1) */
        if (tlen == 28 && strncasecmp(p, "application/openmetrics-text", 28) == 0) {
            if (q > q_om)
                q_om = q;
        } else if ((tlen == 10 && strncasecmp(p, "text/plain", 10) == 0) ||
                   (tlen == 6 && strncasecmp(p, "text/*", 6) == 0) ||
                   (tlen == 3 && strncmp(p, "*/*", 3) == 0)) {
            if (q > q_text)
                q_text = q;
        }
        p = *end ? end + 1 : end;
    }
    return q_om > 0 && q_om > q_text ? GM_EXPO_OPENMETRICS : GM_EXPO_PROM;
}

const char *gm_expo_content_type(enum gm_expo_fmt fmt)
{
    return fmt == GM_EXPO_OPENMETRICS
               ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
               : "text/plain; version=0.0.4; charset=utf-8";
}
