/*
 * tools/lib/svg.c — the usage-over-time image of `gpumem report --svg` (see
 * tools/lib/svg.h).
 *
 * Invariants: the output is one well-formed SVG document whatever the
 * input (no samples, one sample, zero duration); text is XML-escaped
 * and valid UTF-8 without control characters;
 * every device line has at most five points per pixel column (the last
 * of the column before, first, max, min and last), so a ring of millions
 * of events stays a small file.
 * Each axis starts at 0 (x: the process start) and has at most 8 ticks,
 * the multiples of one step of 1, 2 or 5 times a power of ten. The memory
 * axis has one unit, the largest binary unit not above its top, and every
 * size written on the image is in that unit. The legend lists only what
 * is drawn. Labels (peak, limit) are drawn last, in a box, at the first of
 * their candidate places that no usage line, marker, note or other label
 * crosses; the place just above a peak marker is clear of that device's
 * line (no sample is above its peak) and inside the plot (the memory axis
 * has 10% headroom), so for one device the peak label is never covered.
 * Events lost are noted above the plot, and the time before the first
 * event kept is hatched.
 */
#include "tools/lib/svg.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/lib/escape.h"

#define W 960
#define H 500
#define ML 96            /* plot margins */
#define MR 210
#define MT 64
#define MB 64
#define PW (W - ML - MR)
#define PH (H - MT - MB)
#define NOTE_Y 50        /* baseline of the lost-history note */
#define LABEL_H 18       /* label box height; text 12 px */
#define CHAR_W 7.0       /* a generous width of one 12 px character */
#define X_STEPS 7        /* at most 8 ticks */
#define Y_STEPS 6        /* at most 7 ticks */
#define HEADROOM 1.10    /* memory axis top over the largest value */

static const char *const colors[] = { "#1f77b4", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#17becf", "#8c564b" };
#define NCOLORS (sizeof colors / sizeof colors[0])

/* ---- the timeline -------------------------------------------------------------- */

void gm_tl_init(struct gm_timeline *tl)
{
    memset(tl, 0, sizeof *tl);
}

void gm_tl_free(struct gm_timeline *tl)
{
    for (unsigned i = 0; i < GM_ABI_MAX_DEVICES; i++) {
        free(tl->dev[i].pts);
        free(tl->dev[i].ooms);
    }
    free(tl->marks);
    memset(tl, 0, sizeof *tl);
}

static int push(struct gm_tl_point **a, size_t *n, size_t *cap,
                uint64_t t, uint64_t v)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        struct gm_tl_point *p = realloc(*a, nc * sizeof *p);
        if (p == NULL)
            return -1;
        *a = p;
        *cap = nc;
    }
    (*a)[(*n)++] = (struct gm_tl_point){ t, v };
    return 0;
}

static void seen(struct gm_timeline *tl, uint64_t t_ns)
{
    if (tl->first_ns == 0 || t_ns < tl->first_ns)
        tl->first_ns = t_ns;
}

int gm_tl_add(struct gm_timeline *tl, unsigned dev, uint64_t t_ns,
              uint64_t used)
{
    if (dev >= GM_ABI_MAX_DEVICES)
        return -1;
    struct gm_tl_dev *d = &tl->dev[dev];
    d->present = true;
    if (d->n == 0 || used > d->peak) {
        d->peak = used;
        d->peak_ns = t_ns;
    }
    seen(tl, t_ns);
    return push(&d->pts, &d->n, &d->cap, t_ns, used);
}

int gm_tl_oom(struct gm_timeline *tl, unsigned dev, uint64_t t_ns,
              uint64_t used)
{
    if (dev >= GM_ABI_MAX_DEVICES)
        return -1;
    tl->dev[dev].present = true;
    seen(tl, t_ns);
    return push(&tl->dev[dev].ooms, &tl->dev[dev].noom, &tl->dev[dev].oomcap,
                t_ns, used);
}

int gm_tl_mark(struct gm_timeline *tl, uint64_t t_ns, bool step,
               const char *label)
{
    if (tl->nmarks == tl->markcap) {
        size_t nc = tl->markcap ? tl->markcap * 2 : 32;
        struct gm_tl_mark *m = realloc(tl->marks, nc * sizeof *m);
        if (m == NULL)
            return -1;
        tl->marks = m;
        tl->markcap = nc;
    }
    struct gm_tl_mark *m = &tl->marks[tl->nmarks++];
    m->t_ns = t_ns;
    m->step = step;
    snprintf(m->label, sizeof m->label, "%s", label ? label : "");
    return 0;
}

void gm_tl_lost(struct gm_timeline *tl, uint64_t n)
{
    uint64_t *c = tl->first_ns ? &tl->lost_after : &tl->lost_before;
    *c = *c + n < *c ? UINT64_MAX : *c + n;
}

/* ---- scales ------------------------------------------------------------------ */

/* Ticks at k * step, k = 0..n, in `unit`s; dec decimals print them. */
struct scale {
    double step;
    int n;
    int dec;
    double unit;
    const char *uname;
};

/* The smallest step of 1, 2 or 5 times a power of ten that covers
 * [0, span] in at most max_n steps. */
static void nice_scale(double span, int max_n, struct scale *s)
{
    static const int mult[] = { 1, 2, 5, 10 };
    double raw = span / max_n, p = 1;
    int e = 0;
    while (p > raw && e > -12) {
        p /= 10;
        e--;
    }
    while (p * 10 <= raw) {
        p *= 10;
        e++;
    }
    for (unsigned i = 0; i < 4; i++) {
        double step = mult[i] * p;
        int n = (int)(span / step);
        if (n * step < span * (1 - 1e-9))
            n++;
        if (n <= max_n || i == 3) {
            int de = mult[i] == 10 ? e + 1 : e;
            s->step = step;
            s->n = n < 1 ? 1 : n;
            s->dec = de < 0 ? -de : 0;
            return;
        }
    }
}

/* The memory axis: the largest binary unit not above top. */
static void y_scale(double top, struct scale *s)
{
    static const char *const names[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    unsigned u = 0;
    double unit = 1;
    while (u < 4 && top >= unit * 1024) {
        unit *= 1024;
        u++;
    }
    nice_scale(top / unit, Y_STEPS, s);
    s->unit = unit;
    s->uname = names[u];
}

static void x_scale(double span_s, struct scale *s)
{
    nice_scale(span_s, X_STEPS, s);
    s->unit = 1;
    s->uname = "s";
}

/* ---- the plot: scales, lines in pixels, places taken ------------------------- */

struct xy {
    double x, y;
};

struct curve {
    struct xy *p;
    size_t n, cap;
};

struct box {
    double x0, y0, x1, y1;
};

#define MAX_TAKEN (2 * GM_ABI_MAX_DEVICES + 1)

struct plot {
    const struct gm_timeline *tl;
    uint64_t t0;                 /* x = 0 */
    struct scale x, y;
    struct curve cv[GM_ABI_MAX_DEVICES];
    struct box taken[MAX_TAKEN]; /* note and labels placed so far */
    size_t ntaken;
};

static double secs(const struct plot *pl, uint64_t t)
{
    return t > pl->t0 ? (double)(t - pl->t0) / 1e9 : 0.0;
}

static double px_x(const struct plot *pl, double sec)
{
    return ML + sec / (pl->x.step * pl->x.n) * PW;
}

static double px_y(const struct plot *pl, double bytes)
{
    return MT + PH - bytes / (pl->y.step * pl->y.n * pl->y.unit) * PH;
}

static bool peak_drawn(const struct gm_tl_dev *d)
{
    return d->present && (d->n > 0 || d->peak);
}

static bool lost_drawn(const struct plot *pl)
{
    return pl->tl->lost_before > 0 && pl->tl->first_ns != 0;
}

static double dmax(double a, double b) { return a > b ? a : b; }
static double dmin(double a, double b) { return a < b ? a : b; }

/* The largest value and the last time to show. */
static void ranges(const struct plot *pl, double *top, double *span)
{
    *top = 0;
    *span = 0;
    for (unsigned i = 0; i < GM_ABI_MAX_DEVICES; i++) {
        const struct gm_tl_dev *d = &pl->tl->dev[i];
        if (!d->present)
            continue;
        *top = dmax(*top, (double)(d->limit > d->peak ? d->limit : d->peak));
        for (size_t k = 0; k < d->noom; k++)
            *top = dmax(*top, (double)d->ooms[k].used);
        if (d->n)
            *span = dmax(*span, secs(pl, d->pts[d->n - 1].t_ns));
        if (d->noom)
            *span = dmax(*span, secs(pl, d->ooms[d->noom - 1].t_ns));
        if (peak_drawn(d))
            *span = dmax(*span, secs(pl, d->peak_ns));
    }
    for (size_t k = 0; k < pl->tl->nmarks; k++)
        *span = dmax(*span, secs(pl, pl->tl->marks[k].t_ns));
    *top = *top > 0 ? *top * HEADROOM : 1024 * 1024;
    *span = *span >= 1e-6 ? *span : 1e-3;    /* no duration: 1 ms */
}

static int curve_put(struct curve *c, double x, double y)
{
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 256;
        struct xy *p = realloc(c->p, nc * sizeof *p);
        if (p == NULL)
            return -1;
        c->p = p;
        c->cap = nc;
    }
    c->p[c->n++] = (struct xy){ x, y };
    return 0;
}

/* One pixel column of samples: first, min and max (in pixels), last. */
struct col {
    int px;
    double first, lo, hi, last;
};

static int col_flush(struct curve *cv, const struct col *c, double *prev_y)
{
    int r = 0;
    if (c->px < 0)
        return 0;
    if (*prev_y >= 0)
        r |= curve_put(cv, c->px, *prev_y);
    r |= curve_put(cv, c->px, c->first);
    r |= curve_put(cv, c->px, c->hi);
    r |= curve_put(cv, c->px, c->lo);
    r |= curve_put(cv, c->px, c->last);
    *prev_y = c->last;
    return r;
}

/* The usage line of d as a step line: vertical within a column,
 * horizontal between columns and on to the right end of the plot. */
static int build_curve(const struct plot *pl, const struct gm_tl_dev *d,
                       struct curve *cv)
{
    struct col c = { -1, 0, 0, 0, 0 };
    double prev_y = -1;
    int r = 0;
    for (size_t k = 0; k < d->n; k++) {
        int px = (int)(px_x(pl, secs(pl, d->pts[k].t_ns)) + 0.5);
        double py = px_y(pl, (double)d->pts[k].used);
        if (px != c.px) {
            r |= col_flush(cv, &c, &prev_y);
            c = (struct col){ px, py, py, py, py };
            continue;
        }
        c.lo = dmax(py, c.lo);
        c.hi = dmin(py, c.hi);
        c.last = py;
    }
    r |= col_flush(cv, &c, &prev_y);
    if (prev_y >= 0)
        r |= curve_put(cv, ML + PW, prev_y);
    return r;
}

static void plot_free(struct plot *pl)
{
    for (unsigned i = 0; i < GM_ABI_MAX_DEVICES; i++)
        free(pl->cv[i].p);
    memset(pl, 0, sizeof *pl);
}

static int plot_init(struct plot *pl, const struct gm_timeline *tl)
{
    double top, span;
    memset(pl, 0, sizeof *pl);
    pl->tl = tl;
    pl->t0 = tl->t0_ns ? tl->t0_ns : tl->first_ns;
    ranges(pl, &top, &span);
    y_scale(top, &pl->y);
    x_scale(span, &pl->x);
    for (unsigned i = 0; i < GM_ABI_MAX_DEVICES; i++)
        if (tl->dev[i].present && build_curve(pl, &tl->dev[i], &pl->cv[i]))
            return -1;
    return 0;
}

/* ---- places for labels ------------------------------------------------------- */

static bool overlap(struct box a, struct box b)
{
    return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
}

static struct box around(double x, double y, double r)
{
    return (struct box){ x - r, y - r, x + r, y + r };
}

/* Segments are axis-aligned (build_curve), so a segment crosses b exactly
 * when its bounding box does. */
static bool curve_hits(const struct curve *c, struct box b)
{
    for (size_t k = 0; k < c->n; k++) {
        struct xy p = c->p[k], q = k + 1 < c->n ? c->p[k + 1] : p;
        struct box s = { dmin(p.x, q.x) - 1, dmin(p.y, q.y) - 1,
                         dmax(p.x, q.x) + 1, dmax(p.y, q.y) + 1 };
        if (overlap(s, b))
            return true;
    }
    return false;
}

static bool marks_hit(const struct plot *pl, const struct gm_tl_dev *d,
                      struct box b)
{
    if (peak_drawn(d) &&
        overlap(around(px_x(pl, secs(pl, d->peak_ns)),
                       px_y(pl, (double)d->peak), 6), b))
        return true;
    for (size_t k = 0; k < d->noom; k++)
        if (overlap(around(px_x(pl, secs(pl, d->ooms[k].t_ns)),
                           px_y(pl, (double)d->ooms[k].used), 6), b))
            return true;
    return false;
}

/* No line, marker, note or label under b. */
static bool box_free(const struct plot *pl, struct box b)
{
    for (unsigned i = 0; i < GM_ABI_MAX_DEVICES; i++) {
        const struct gm_tl_dev *d = &pl->tl->dev[i];
        if (d->present && (curve_hits(&pl->cv[i], b) || marks_hit(pl, d, b)))
            return false;
    }
    for (size_t k = 0; k < pl->ntaken; k++)
        if (overlap(pl->taken[k], b))
            return false;
    return true;
}

static bool in_plot(struct box b)
{
    return b.y0 >= MT + 1 && b.y1 <= MT + PH - 1;
}

static void take(struct plot *pl, struct box b)
{
    if (pl->ntaken < MAX_TAKEN)
        pl->taken[pl->ntaken++] = b;
}

static double text_w(const char *s)
{
    return (double)strlen(s) * CHAR_W + 8;
}

/* A label box of width w whose bottom is at `bottom`: its left edge at x
 * (align > 0), its right edge at x (align < 0) or centred on x, moved
 * sideways into the plot. */
static struct box label_at(double x, double bottom, double w, int align)
{
    double x0 = align > 0 ? x : align < 0 ? x - w : x - w / 2;
    x0 = dmax(ML + 2, dmin(x0, ML + PW - 2 - w));
    return (struct box){ x0, bottom - LABEL_H, x0 + w, bottom };
}

/* Above the marker (right of it, left of it, centred; then higher up),
 * else above the plot at its right end, else just above the marker. */
static struct box place_peak(struct plot *pl, double px, double py, double w)
{
    static const double dy[] = { 8, 32, 56 };
    static const struct { double dx; int align; } side[] = {
        { 8, 1 }, { -8, -1 }, { 0, 0 } };
    for (unsigned i = 0; i < 3; i++)
        for (unsigned j = 0; j < 3; j++) {
            struct box b = label_at(px + side[j].dx, py - dy[i], w,
                                    side[j].align);
            if (in_plot(b) && box_free(pl, b))
                return b;
        }
    struct box top = { ML + PW - w, MT - 4 - LABEL_H, ML + PW, MT - 4 };
    if (box_free(pl, top))
        return top;
    struct box b = label_at(px + 8, py - 8, w, 1);
    return b.y0 >= MT + 1 ? b : (struct box){ b.x0, MT + 1, b.x1,
                                              MT + 1 + LABEL_H };
}

/* Above the limit line at the left end, the right end, else below it. */
static struct box place_limit(struct plot *pl, double py, double w)
{
    for (unsigned below = 0; below < 2; below++)
        for (unsigned right = 0; right < 2; right++) {
            double bottom = below ? py + 4 + LABEL_H : py - 4;
            struct box b = right ? label_at(ML + PW - 4, bottom, w, -1)
                                 : label_at(ML + 4, bottom, w, 1);
            if (in_plot(b) && box_free(pl, b))
                return b;
        }
    struct box b = label_at(ML + 4, py - 4, w, 1);
    return in_plot(b) ? b : label_at(ML + 4, py + 4 + LABEL_H, w, 1);
}

/* ---- text -------------------------------------------------------------------- */

/* XML character data: markup escaped; controls other than tab, DEL and
 * C1 controls left out; a byte that is not valid UTF-8 as U+FFFD. */
static void xml_text(FILE *f, const char *s)
{
    while (*s) {
        size_t n = gm_utf8_len(s);
        unsigned char c = (unsigned char)*s;
        if (n == 0)
            fputs("&#xfffd;", f);
        else if (c == '<')
            fputs("&lt;", f);
        else if (c == '>')
            fputs("&gt;", f);
        else if (c == '&')
            fputs("&amp;", f);
        else if (c == '"')
            fputs("&quot;", f);
        else if ((c >= 0x20 || c == '\t') && c != 0x7f &&
                 !gm_utf8_is_c1(s, n))
            fwrite(s, 1, n, f);
        s += n ? n : 1;
    }
}

static void tick_label(char *buf, size_t cap, const struct scale *s, int k)
{
    if (k == 0)
        snprintf(buf, cap, "0");
    else
        snprintf(buf, cap, "%.*f", s->dec, k * s->step);
}

/* A size in the memory axis's unit, to three significant digits at
 * least (one decimal at least, none for bytes). */
static void size_text(const struct plot *pl, uint64_t bytes, char *buf,
                      size_t cap)
{
    double v = (double)bytes / pl->y.unit;
    int dec = v >= 10 || v == 0 ? 1 : v >= 1 ? 2 : v >= 0.1 ? 3
            : v >= 0.01 ? 4 : 5;
    if (pl->y.unit == 1)
        dec = 0;                 /* bytes are whole */
    snprintf(buf, cap, "%.*f %s", dec, v, pl->y.uname);
}

/* 13761 as "13,761". */
static void grouped(uint64_t v, char *buf, size_t cap)
{
    char d[32];
    int n = snprintf(d, sizeof d, "%" PRIu64, v);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < cap; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = d[i];
    }
    buf[o] = '\0';
}

/* ---- drawing ----------------------------------------------------------------- */

static void axes(FILE *f, const struct plot *pl)
{
    char lab[64];
    fprintf(f, "<g class=\"axes\" font-size=\"12\" fill=\"#333\">\n");
    for (int k = 0; k <= pl->y.n; k++) {
        double py = px_y(pl, k * pl->y.step * pl->y.unit);
        tick_label(lab, sizeof lab, &pl->y, k);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
                "stroke=\"#ddd\"/>\n", ML, py, ML + PW, py);
        fprintf(f, "<text class=\"tick-y\" x=\"%d\" y=\"%.1f\" "
                "text-anchor=\"end\">%s</text>\n", ML - 6, py + 4, lab);
    }
    for (int k = 0; k <= pl->x.n; k++) {
        double pxv = px_x(pl, k * pl->x.step);
        tick_label(lab, sizeof lab, &pl->x, k);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
                "stroke=\"#eee\"/>\n", pxv, MT, pxv, MT + PH);
        fprintf(f, "<text class=\"tick-x\" x=\"%.1f\" y=\"%d\" "
                "text-anchor=\"middle\">%s</text>\n", pxv, MT + PH + 18, lab);
    }
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
            "fill=\"none\" stroke=\"#333\"/>\n", ML, MT, PW, PH);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
            "font-size=\"13\">time since process start (s)</text>\n",
            ML + PW / 2, H - 18);
    fprintf(f, "<text x=\"18\" y=\"%d\" text-anchor=\"middle\" "
            "font-size=\"13\" transform=\"rotate(-90 18 %d)\">device memory "
            "used (%s)</text>\n", MT + PH / 2, MT + PH / 2, pl->y.uname);
    fprintf(f, "</g>\n");
}

static void hatch_defs(FILE *f)
{
    fprintf(f, "<defs><pattern id=\"lost-hatch\" width=\"6\" height=\"6\" "
            "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
            "<rect width=\"6\" height=\"6\" fill=\"#f3f3f3\"/><line x1=\"0\" "
            "y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#cfcfcf\" stroke-width=\"2\"/>"
            "</pattern></defs>\n");
}

/* From the process start to the first event kept. */
static void lost_span(FILE *f, const struct plot *pl)
{
    double x1 = px_x(pl, secs(pl, pl->tl->first_ns));
    fprintf(f, "<rect class=\"lost\" x=\"%d\" y=\"%d\" width=\"%.1f\" "
            "height=\"%d\" fill=\"url(#lost-hatch)\"/>\n", ML, MT, x1 - ML,
            PH);
    fprintf(f, "<line class=\"lost-edge\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" "
            "y2=\"%d\" stroke=\"#999\" stroke-dasharray=\"3 3\"/>\n", x1, MT,
            x1, MT + PH);
}

/* Decimals for a time: one more than the ticks have, and three
 * significant digits at least. */
static int time_dec(const struct plot *pl, double t)
{
    int sig = 2;                 /* three digits for 1 <= t < 10 */
    for (double v = t; v > 0 && v < 1 && sig < 9; v *= 10)
        sig++;
    for (double v = t; v >= 10 && sig > 0; v /= 10)
        sig--;
    return pl->x.dec + 1 > sig ? pl->x.dec + 1 : sig;
}

/* "history before 2.78 s lost (13,761 events)" and the like. */
static void note_text(const struct plot *pl, char *buf, size_t cap)
{
    const struct gm_timeline *tl = pl->tl;
    char nb[32], na[32];
    int dec = time_dec(pl, secs(pl, tl->first_ns));
    grouped(tl->lost_before, nb, sizeof nb);
    grouped(tl->lost_after, na, sizeof na);
    if (lost_drawn(pl)) {
        int n = snprintf(buf, cap, "history before %.*f s lost (%s events)",
                         dec, secs(pl, tl->first_ns), nb);
        if (tl->lost_after && n > 0 && (size_t)n < cap)
            snprintf(buf + n, cap - (size_t)n, "; %s more lost later", na);
    } else if (tl->lost_before) {
        snprintf(buf, cap, "history lost (%s events)", nb);
    } else {
        snprintf(buf, cap, "%s events lost (gaps in the line)", na);
    }
}

static void lost_note(FILE *f, struct plot *pl)
{
    char text[160];
    if (pl->tl->lost_before == 0 && pl->tl->lost_after == 0)
        return;
    note_text(pl, text, sizeof text);
    int tx = lost_drawn(pl) ? ML + 20 : ML;     /* the hatch's swatch */
    if (lost_drawn(pl))
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"12\" "
                "fill=\"url(#lost-hatch)\" stroke=\"#999\"/>\n", ML,
                NOTE_Y - 10);
    fprintf(f, "<text class=\"lost-note\" x=\"%d\" y=\"%d\" font-size=\"12\" "
            "fill=\"#a03c00\">%s</text>\n", tx, NOTE_Y, text);
    take(pl, (struct box){ ML, NOTE_Y - 14, tx + text_w(text), NOTE_Y + 4 });
}

static void usage_line(FILE *f, const struct curve *cv, const char *color,
                       unsigned i)
{
    fprintf(f, "<polyline class=\"used\" id=\"used-dev%u\" fill=\"none\" "
            "stroke=\"%s\" stroke-width=\"1.6\" points=\"", i, color);
    for (size_t k = 0; k < cv->n; k++)
        fprintf(f, " %.0f,%.1f", cv->p[k].x, cv->p[k].y);
    fprintf(f, "\"/>\n");
}

static void device_marks(FILE *f, const struct plot *pl,
                         const struct gm_tl_dev *d, const char *color,
                         unsigned i)
{
    if (d->limit)
        fprintf(f, "<line class=\"limit\" id=\"limit-dev%u\" x1=\"%d\" "
                "y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"1.5\" stroke-dasharray=\"8 4\"/>\n", i, ML,
                px_y(pl, (double)d->limit), ML + PW,
                px_y(pl, (double)d->limit), color);
    if (peak_drawn(d))
        fprintf(f, "<circle class=\"peak\" cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" "
                "fill=\"white\" stroke=\"%s\" stroke-width=\"2\"/>\n",
                px_x(pl, secs(pl, d->peak_ns)), px_y(pl, (double)d->peak),
                color);
    for (size_t k = 0; k < d->noom; k++)
        fprintf(f, "<path class=\"oom\" d=\"M%.1f %.1fl8 8m0 -8l-8 8\" "
                "stroke=\"#d62728\" stroke-width=\"2\"/>\n",
                px_x(pl, secs(pl, d->ooms[k].t_ns)) - 4,
                px_y(pl, (double)d->ooms[k].used) - 4);
}

/* The fitted trend: dashed, in the device's colour, over its window. */
static void trend_line(FILE *f, const struct plot *pl,
                       const struct gm_tl_dev *d, const char *color,
                       unsigned i)
{
    const struct gm_tl_trend *t = &d->trend;
    if (!t->on)
        return;
    fprintf(f, "<line class=\"trend\" id=\"trend-dev%u\" x1=\"%.1f\" "
            "y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
            "stroke-width=\"2.5\" stroke-dasharray=\"2 3\" "
            "stroke-opacity=\"0.8\"/>\n", i, px_x(pl, secs(pl, t->t0_ns)),
            px_y(pl, dmax(t->y0, 0)), px_x(pl, secs(pl, t->t1_ns)),
            px_y(pl, dmax(t->y1, 0)), color);
}

/* Labelled marks: a dotted line across the plot and the label at its
 * top. Step ticks: a short tick on the top edge, the step number above. */
static void time_marks(FILE *f, struct plot *pl)
{
    double last_tick = -1e9;
    for (size_t k = 0; k < pl->tl->nmarks; k++) {
        const struct gm_tl_mark *m = &pl->tl->marks[k];
        double x = px_x(pl, secs(pl, m->t_ns));
        if (m->step) {
            if (x - last_tick < 36)
                continue;        /* the previous tick's label is there */
            last_tick = x;
            fprintf(f, "<g class=\"step-tick\"><line x1=\"%.1f\" y1=\"%d\" "
                    "x2=\"%.1f\" y2=\"%d\" stroke=\"#555\"/><text x=\"%.1f\" "
                    "y=\"%d\" font-size=\"10\" fill=\"#555\" "
                    "text-anchor=\"middle\">", x, MT, x, MT + 6, x, MT - 3);
            xml_text(f, m->label);
            fprintf(f, "</text></g>\n");
            continue;
        }
        fprintf(f, "<g class=\"mark\"><line x1=\"%.1f\" y1=\"%d\" "
                "x2=\"%.1f\" y2=\"%d\" stroke=\"#8c564b\" "
                "stroke-dasharray=\"1 3\"/><text x=\"%.1f\" y=\"%d\" "
                "font-size=\"10\" fill=\"#8c564b\">", x, MT, x, MT + PH,
                x + 3, MT + 16);
        xml_text(f, m->label);
        fprintf(f, "</text></g>\n");
    }
}

/* "before 2.8 s: from the history (1 s buckets)". */
static void hist_note(FILE *f, struct plot *pl)
{
    char text[96];
    const struct gm_timeline *tl = pl->tl;
    if (tl->hist_until_ns == 0 || tl->lost_before > 0)
        return;
    snprintf(text, sizeof text, "before %.*f s: from the history (1 s buckets "
             "and coarser)", time_dec(pl, secs(pl, tl->hist_until_ns)),
             secs(pl, tl->hist_until_ns));
    fprintf(f, "<text class=\"hist-note\" x=\"%d\" y=\"%d\" font-size=\"12\" "
            "fill=\"#555\">%s</text>\n", ML, NOTE_Y, text);
    take(pl, (struct box){ ML, NOTE_Y - 14, ML + text_w(text), NOTE_Y + 4 });
}

static void label(FILE *f, const char *cls, struct box b, const char *color,
                  const char *text)
{
    fprintf(f, "<g class=\"%s\"><rect class=\"label-box\" x=\"%.1f\" "
            "y=\"%.1f\" width=\"%.1f\" height=\"%d\" rx=\"3\" fill=\"white\" "
            "fill-opacity=\"0.92\" stroke=\"%s\" stroke-width=\"0.8\"/>"
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"%s\">%s"
            "</text></g>\n", cls, b.x0, b.y0, b.x1 - b.x0, LABEL_H, color,
            b.x0 + 4, b.y1 - 5, color, text);
}

/* Peak labels first (the figure the image is for), then limit labels. */
static void labels(FILE *f, struct plot *pl)
{
    char sz[48], text[96];
    for (unsigned i = 0; i < GM_ABI_MAX_DEVICES; i++) {
        const struct gm_tl_dev *d = &pl->tl->dev[i];
        if (!peak_drawn(d))
            continue;
        size_text(pl, d->peak, sz, sizeof sz);
        snprintf(text, sizeof text, "peak %s", sz);
        struct box b = place_peak(pl, px_x(pl, secs(pl, d->peak_ns)),
                                  px_y(pl, (double)d->peak), text_w(text));
        take(pl, b);
        label(f, "peak-label", b, colors[i % NCOLORS], text);
    }
    for (unsigned i = 0; i < GM_ABI_MAX_DEVICES; i++) {
        const struct gm_tl_dev *d = &pl->tl->dev[i];
        if (!d->present || d->limit == 0)
            continue;
        size_text(pl, d->limit, sz, sizeof sz);
        snprintf(text, sizeof text, "device %u limit %s", i, sz);
        struct box b = place_limit(pl, px_y(pl, (double)d->limit),
                                   text_w(text));
        take(pl, b);
        label(f, "limit-label", b, colors[i % NCOLORS], text);
    }
}

/* What the legend shows: per device its line and limit, then one entry
 * for each kind of mark drawn. */
struct shown {
    bool peak, oom;
};

static struct shown marks_shown(const struct gm_timeline *tl)
{
    struct shown s = { false, false };
    for (unsigned i = 0; i < GM_ABI_MAX_DEVICES; i++) {
        s.peak |= peak_drawn(&tl->dev[i]);
        s.oom |= tl->dev[i].present && tl->dev[i].noom > 0;
    }
    return s;
}

static int legend_devices(FILE *f, const struct gm_timeline *tl, int lx,
                          int ly)
{
    for (unsigned i = 0; i < GM_ABI_MAX_DEVICES && ly <= MT + PH - 76; i++) {
        const struct gm_tl_dev *d = &tl->dev[i];
        const char *c = colors[i % NCOLORS];
        if (d->present && d->n > 0) {
            fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
                    "stroke=\"%s\" stroke-width=\"2\"/><text x=\"%d\" "
                    "y=\"%d\">device %u used</text>\n", lx, ly, lx + 24, ly,
                    c, lx + 30, ly + 4, i);
            ly += 18;
        }
        if (d->present && d->limit) {
            fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
                    "stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"8 "
                    "4\"/><text x=\"%d\" y=\"%d\">device %u limit</text>\n",
                    lx, ly, lx + 24, ly, c, lx + 30, ly + 4, i);
            ly += 18;
        }
        if (d->present && d->trend.on) {
            fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
                    "stroke=\"%s\" stroke-width=\"2.5\" stroke-dasharray=\"2 "
                    "3\"/><text x=\"%d\" y=\"%d\">device %u ", lx, ly, lx + 24,
                    ly, c, lx + 30, ly + 4, i);
            xml_text(f, d->trend.text);
            fprintf(f, "</text>\n");
            ly += 18;
        }
    }
    return ly;
}

static void legend(FILE *f, const struct plot *pl)
{
    int lx = ML + PW + 20;
    struct shown s = marks_shown(pl->tl);
    fprintf(f, "<g class=\"legend\" font-size=\"12\" fill=\"#333\">\n");
    int ly = legend_devices(f, pl->tl, lx, MT + 10);
    if (s.peak) {
        fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"4.5\" fill=\"white\" "
                "stroke=\"#333\" stroke-width=\"2\"/><text x=\"%d\" y=\"%d\">"
                "peak</text>\n", lx + 12, ly, lx + 30, ly + 4);
        ly += 18;
    }
    if (s.oom) {
        fprintf(f, "<path d=\"M%d %dl8 8m0 -8l-8 8\" stroke=\"#d62728\" "
                "stroke-width=\"2\"/><text x=\"%d\" y=\"%d\">refused request "
                "(OOM)</text>\n", lx + 8, ly - 4, lx + 30, ly + 4);
        ly += 18;
    }
    bool mk = false, st = false;
    for (size_t k = 0; k < pl->tl->nmarks; k++) {
        mk |= !pl->tl->marks[k].step;
        st |= pl->tl->marks[k].step;
    }
    if (mk) {
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
                "stroke=\"#8c564b\" stroke-dasharray=\"1 3\"/><text x=\"%d\" "
                "y=\"%d\">mark (gpumem_mark)</text>\n", lx + 12, ly - 7,
                lx + 12, ly + 7, lx + 30, ly + 4);
        ly += 18;
    }
    if (st) {
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
                "stroke=\"#555\"/><text x=\"%d\" y=\"%d\">step (top "
                "edge)</text>\n", lx + 12, ly - 6, lx + 12, ly, lx + 30, ly + 4);
        ly += 18;
    }
    if (lost_drawn(pl))
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"24\" height=\"12\" "
                "fill=\"url(#lost-hatch)\" stroke=\"#999\"/><text x=\"%d\" "
                "y=\"%d\">history lost</text>\n", lx, ly - 6, lx + 30,
                ly + 4);
    fprintf(f, "</g>\n");
}

static void draw(FILE *f, struct plot *pl)
{
    const struct gm_timeline *tl = pl->tl;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">"
            "\n", W, H, W, H);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
    if (lost_drawn(pl))
        hatch_defs(f);
    fprintf(f, "<text x=\"%d\" y=\"26\" font-size=\"15\" "
            "font-weight=\"bold\">", ML);
    xml_text(f, tl->title[0] ? tl->title : "gpumem: device memory used");
    fprintf(f, "</text>\n");
    if (lost_drawn(pl))
        lost_span(f, pl);
    axes(f, pl);
    for (unsigned i = 0; i < GM_ABI_MAX_DEVICES; i++) {
        if (!tl->dev[i].present)
            continue;
        if (tl->dev[i].n > 0)
            usage_line(f, &pl->cv[i], colors[i % NCOLORS], i);
        trend_line(f, pl, &tl->dev[i], colors[i % NCOLORS], i);
        device_marks(f, pl, &tl->dev[i], colors[i % NCOLORS], i);
    }
    time_marks(f, pl);
    lost_note(f, pl);
    hist_note(f, pl);
    labels(f, pl);
    legend(f, pl);
    fprintf(f, "</svg>\n");
}

int gm_svg_write(const struct gm_timeline *tl, FILE *f)
{
    struct plot *pl = malloc(sizeof *pl);
    if (pl == NULL)
        return -1;
    int rc = plot_init(pl, tl);
    if (rc == 0)
        draw(f, pl);
    plot_free(pl);
    free(pl);
    return rc != 0 || ferror(f) ? -1 : 0;
}
