/*
 * shim/telemetry/trend.c — repeated-median fit, leak verdict, forecast and the
 * verdict line (see shim/telemetry/trend.h; definitions in docs/metrics.md).
 *
 * Invariants: no malloc, no I/O, no libm call (NAN/isnan are macros);
 * every loop is bounded by GM_TREND_MAX_POINTS; scratch lives on the stack;
 * x and y are taken relative to the window's first point so that large
 * byte counts keep their precision in the differences.
 */
#include "shim/telemetry/trend.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "policy/parse.h"

#define MAXP GM_TREND_MAX_POINTS
#define MAD_SIGMA 1.4826 /* median |residual| to a normal sigma */

void gm_trend_defaults(struct gm_trend_params *p)
{
    p->min_points = 12;
    p->min_steps = 10;
    p->min_seconds = 10.0;
    p->noise_factor = 4.0;
    p->sub_ratio = 0.5;
    p->min_growth = 1u << 20;
    p->min_growth_ppm = 1000;
}

/* ---- medians -------------------------------------------------------------- */

static void swap(double *a, double *b)
{
    double t = *a;
    *a = *b;
    *b = t;
}

/* Rearranges a[0..n) so that a[k] is the k-th smallest, everything before
 * it <= and everything after it >= (selection with a three-way partition
 * around a median-of-three pivot, so runs of equal values cost O(n));
 * n > k, no NaN in a. */
static double select_kth(double *a, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        double p0 = a[lo], p1 = a[mid], p2 = a[hi], pv;
        if (p0 < p1)
            pv = p1 < p2 ? p1 : (p0 < p2 ? p2 : p0);
        else
            pv = p0 < p2 ? p0 : (p1 < p2 ? p2 : p1);
        size_t lt = lo, i = lo, gt = hi;
        while (i <= gt) {
            if (a[i] < pv) {
                swap(&a[lt++], &a[i++]);
            } else if (pv < a[i]) {
                swap(&a[i], &a[gt]);
                if (gt == 0)
                    break;
                gt--;
            } else {
                i++;
            }
        }
        /* [lo, lt) < pv, [lt, gt] == pv, (gt, hi] > pv; lt <= gt since
         * pv is one of the values. */
        if (k < lt)
            hi = lt - 1;
        else if (k > gt)
            lo = gt + 1;
        else
            return pv;
    }
    return a[k];
}

/* Median of a[0..n) (reorders a); NaN when n == 0. */
static double median(double *a, size_t n)
{
    if (n == 0)
        return NAN;
    if (n % 2)
        return select_kth(a, n, n / 2);
    double lo = select_kth(a, n, n / 2 - 1);
    double hi = a[n / 2];
    for (size_t i = n / 2 + 1; i < n; i++)
        if (a[i] < hi)
            hi = a[i];
    return lo + (hi - lo) / 2;
}

static double absd(double v)
{
    return v < 0 ? -v : v;
}

double gm_trend_slope(const double *x, const double *y, size_t n)
{
    double inner[MAXP], outer[MAXP];
    size_t no = 0;
    if (x == NULL || y == NULL || n > MAXP)
        return NAN;
    for (size_t i = 0; i < n; i++) {
        size_t ni = 0;
        for (size_t j = 0; j < n; j++) {
            double dx = x[j] - x[i];
            if (j == i || dx == 0)
                continue;
            inner[ni++] = (y[j] - y[i]) / dx;
        }
        if (ni > 0)
            outer[no++] = median(inner, ni);
    }
    return median(outer, no);
}

/* Intercept (median of y - b x) and the noise (MAD_SIGMA * median of the
 * absolute residuals) of the line with slope b. */
static void line_fit(const double *x, const double *y, size_t n, double b,
                     double *a, double *noise)
{
    double r[MAXP];
    for (size_t i = 0; i < n; i++)
        r[i] = y[i] - b * x[i];
    *a = median(r, n);
    for (size_t i = 0; i < n; i++)
        r[i] = absd(y[i] - (*a + b * x[i]));
    *noise = MAD_SIGMA * median(r, n);
}

/* ---- verdict -------------------------------------------------------------- */

static void clear(struct gm_trend *r)
{
    memset(r, 0, sizeof *r);
    r->verdict = GM_TREND_UNKNOWN;
    r->steps = NAN;
    r->seconds = NAN;
    r->bytes_per_step = NAN;
    r->bytes_per_second = NAN;
    r->noise = NAN;
    r->floor_now = NAN;
    r->step_now = NAN;
    r->steps_to_limit = NAN;
    r->seconds_to_limit = NAN;
}

/* Every third of x/y (by index) grows at least `need` per unit of x. */
static int persists(const double *x, const double *y, size_t n, double need)
{
    size_t cut[4] = {0, n / 3, 2 * n / 3, n};
    for (int k = 0; k < 3; k++) {
        size_t m = cut[k + 1] - cut[k];
        double b = gm_trend_slope(x + cut[k], y + cut[k], m);
        if (isnan(b) || b < need)
            return 0;
    }
    return 1;
}

int gm_trend_fit(const struct gm_trend_point *pt, size_t n, uint64_t limit,
                 const struct gm_trend_params *p, struct gm_trend *out)
{
    struct gm_trend_params def;
    if (out == NULL || (pt == NULL && n > 0))
        return -1;
    if (p == NULL) {
        gm_trend_defaults(&def);
        p = &def;
    }
    clear(out);
    if (n > MAXP) {
        pt += n - MAXP;
        n = MAXP;
    }
    out->points = (uint32_t)n;
    if (n == 0)
        return 0;

    const struct gm_trend_point *first = &pt[0], *last = &pt[n - 1];
    int have_steps = 1;
    double t[MAXP], s[MAXP], y[MAXP];
    for (size_t i = 0; i < n; i++) {
        if (!(pt[i].step >= 0)) /* also NaN */
            have_steps = 0;
        t[i] = pt[i].t - first->t;
        s[i] = have_steps ? pt[i].step - first->step : 0;
        y[i] = (double)pt[i].floor - (double)first->floor;
        if (pt[i].peak >= pt[i].floor &&
            pt[i].peak - pt[i].floor > out->excursion)
            out->excursion = pt[i].peak - pt[i].floor;
    }
    out->seconds = t[n - 1];
    out->live_first = first->live;
    out->live_last = last->live;
    if (have_steps) {
        out->steps = s[n - 1];
        out->step_now = last->step;
    }
    out->by_step = have_steps;
    if (n < p->min_points || n < 3)
        return 0;
    if (have_steps ? !(out->steps >= p->min_steps)
                   : !(out->seconds >= p->min_seconds))
        return 0;

    const double *x = have_steps ? s : t;
    double b = gm_trend_slope(x, y, n);
    if (isnan(b))
        return 0;
    double a, noise;
    line_fit(x, y, n, b, &a, &noise);
    out->noise = noise;
    out->floor_now = (double)first->floor + a + b * x[n - 1];
    if (out->floor_now < 0)
        out->floor_now = 0;
    if (have_steps)
        out->bytes_per_step = b;
    double bt = have_steps ? gm_trend_slope(t, y, n) : b;
    out->bytes_per_second = bt;

    double span = x[n - 1];
    double growth = b * span;
    double need = (double)p->min_growth;
    if (p->noise_factor * noise > need)
        need = p->noise_factor * noise;
    if (limit > 0 && (double)limit * p->min_growth_ppm / 1e6 > need)
        need = (double)limit * p->min_growth_ppm / 1e6;
    out->verdict = GM_TREND_STEADY;
    if (!(growth >= need) || b <= 0)
        return 0;
    if (!persists(x, y, n, p->sub_ratio * b))
        return 0;
    out->verdict = GM_TREND_GROWS;

    if (limit == 0)
        return 0;
    double head = (double)limit - out->floor_now - (double)out->excursion;
    if (head < 0)
        head = 0;
    if (have_steps)
        out->steps_to_limit = head / b;
    if (bt > 0)
        out->seconds_to_limit = head / bt;
    return 0;
}

/* ---- the verdict line ------------------------------------------------------ */

struct out {
    char *buf;
    size_t cap, len;
};

static void emit(struct out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void emit(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k;
    if (o->len < o->cap)
        k = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
    else
        k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k > 0)
        o->len += (size_t)k;
}

static uint64_t round_u64(double v)
{
    if (!(v > 0))
        return 0;
    if (v >= 1.8e19)
        return UINT64_MAX;
    return (uint64_t)(v + 0.5);
}

/* A size class: whole units when exact ("16 MiB", "4 KiB"), else the usual
 * one-decimal form. */
static void format_class(uint64_t size, char *buf, size_t cap)
{
    static const char *const unit[] = {"GiB", "MiB", "KiB"};
    for (int u = 0; u < 3; u++) {
        uint64_t scale = 1ull << (10 * (3 - u));
        if (size >= scale && size % scale == 0) {
            snprintf(buf, cap, "%llu %s", (unsigned long long)(size / scale),
                     unit[u]);
            return;
        }
    }
    gm_format_size(size, buf, cap);
}

size_t gm_trend_format_seconds(double s, char *buf, size_t cap)
{
    char num[32];
    const char *unit;
    int dec;
    if (isnan(s) || s < 0) {
        if (cap > 0)
            snprintf(buf, cap, "?");
        return 1;
    }
    if (s < 10) {
        dec = 1;
        unit = "s";
    } else if (s < 120) {
        dec = 0;
        unit = "s";
    } else if (s < 7200) {
        s /= 60;
        dec = 1;
        unit = "min";
    } else if (s < 172800) {
        s /= 3600;
        dec = 1;
        unit = "h";
    } else {
        s /= 86400;
        dec = 1;
        unit = "d";
    }
    gm_format_decimal(s, dec, num, sizeof num);
    int k = snprintf(cap ? buf : NULL, cap, "%s %s", num, unit);
    return k > 0 ? (size_t)k : 0;
}

size_t gm_trend_format(char *buf, size_t cap, unsigned dev,
                       const struct gm_trend *r,
                       const struct gm_trend_evidence *ev)
{
    struct out o = {buf, cap, 0};
    char a[32], b[32], c[32];
    if (cap > 0)
        buf[0] = '\0';
    if (r == NULL) {
        emit(&o, "device %u: no trend", dev);
        return o.len;
    }
    if (r->by_step && !isnan(r->steps))
        gm_format_decimal(r->steps, 0, c, sizeof c);
    else
        gm_trend_format_seconds(r->seconds, c, sizeof c);
    const char *span_unit = r->by_step ? " steps" : "";

    switch (r->verdict) {
    case GM_TREND_UNKNOWN:
        if (r->points < 12)
            emit(&o, "device %u: not enough history for a verdict "
                     "(%u points)", dev, (unsigned)r->points);
        else
            emit(&o, "device %u: not enough history for a verdict "
                     "(%s%s)", dev, c, span_unit);
        return o.len;
    case GM_TREND_STEADY:
        emit(&o, "device %u: no growth over the last %s%s", dev, c,
             span_unit);
        return o.len;
    case GM_TREND_GROWS:
        break;
    }

    gm_format_size(round_u64(r->bytes_per_second), b, sizeof b);
    if (r->by_step) {
        gm_format_size(round_u64(r->bytes_per_step), a, sizeof a);
        emit(&o, "device %u: grows %s per step (%s/s) over the last %s steps",
             dev, a, b, c);
    } else {
        emit(&o, "device %u: grows %s/s over the last %s", dev, b, c);
    }
    if (ev != NULL && ev->size > 0 && ev->from == UINT64_MAX && ev->to > 0) {
        format_class(ev->size, a, sizeof a);
        emit(&o, "; %llu more live allocations of %s",
             (unsigned long long)ev->to, a);
    } else if (ev != NULL && ev->size > 0 && ev->to > ev->from) {
        format_class(ev->size, a, sizeof a);
        emit(&o, "; live allocations of %s rose from %llu to %llu", a,
             (unsigned long long)ev->from, (unsigned long long)ev->to);
    }
    if (!isnan(r->steps_to_limit)) {
        /* Whole steps, rounded down, as the JSON's "steps" (the shim
         * links no libm: a cast truncates, and steps_to_limit >= 0). */
        double whole = r->steps_to_limit < 1.8e19
                           ? (double)(uint64_t)r->steps_to_limit
                           : r->steps_to_limit;
        gm_format_decimal(whole, 0, a, sizeof a);
        gm_trend_format_seconds(r->seconds_to_limit, b, sizeof b);
        emit(&o, "; limit in about %s steps (%s)", a, b);
    } else if (!isnan(r->seconds_to_limit)) {
        gm_trend_format_seconds(r->seconds_to_limit, b, sizeof b);
        emit(&o, "; limit in about %s", b);
    }
    return o.len;
}
