/*
 * tools/lib/svg.c — the usage-over-time image of `gpumem report --svg` (see
 * tools/lib/svg.h).
 *
 * Invariants: the output is one well-formed SVG document whatever the
 * input (no samples, one sample, zero duration); text is XML-escaped;
 * every device line has at most four points per pixel column (min, max,
 * first and last), so a ring of millions of events stays a small file.
 */
#include "tools/lib/svg.h"

#include <stdlib.h>
#include <string.h>

#include "policy/parse.h"

#define W 960
#define H 500
#define ML 96            /* plot margins */
#define MR 210
#define MT 56
#define MB 64
#define PW (W - ML - MR)
#define PH (H - MT - MB)

static const char *const colors[] = { "#1f77b4", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#17becf", "#8c564b" };
#define NCOLORS (sizeof colors / sizeof colors[0])

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
    return push(&d->pts, &d->n, &d->cap, t_ns, used);
}

int gm_tl_oom(struct gm_timeline *tl, unsigned dev, uint64_t t_ns,
              uint64_t used)
{
    if (dev >= GM_ABI_MAX_DEVICES)
        return -1;
    tl->dev[dev].present = true;
    return push(&tl->dev[dev].ooms, &tl->dev[dev].noom, &tl->dev[dev].oomcap,
                t_ns, used);
}

/* ---- scales ------------------------------------------------------------------ */

struct scale {
    double lo, hi;               /* data range */
    double step;                 /* tick step, data units */
    double unit;                 /* divisor for labels */
    const char *uname;
};

/* 1, 2 or 5 times a power of ten, giving about `want` ticks over span. */
static double nice_step(double span, int want)
{
    double raw = span / want, p = 1;
    while (p * 10 <= raw)
        p *= 10;
    while (p > raw)
        p /= 10;
    if (raw / p >= 5)
        return 5 * p;
    if (raw / p >= 2)
        return 2 * p;
    return p;
}

static void y_scale(double top, struct scale *s)
{
    static const char *const names[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    unsigned u = 0;
    double unit = 1;
    while (u < 4 && top / unit >= 1024 * 2) {
        unit *= 1024;
        u++;
    }
    s->unit = unit;
    s->uname = names[u];
    s->lo = 0;
    s->step = nice_step(top / unit, 5) * unit;
    s->hi = s->step;
    while (s->hi < top)
        s->hi += s->step;
}

static void x_scale(double span_s, struct scale *s)
{
    s->unit = 1;
    s->uname = "s";
    s->lo = 0;
    s->step = nice_step(span_s, 8);
    s->hi = s->step;
    while (s->hi < span_s)
        s->hi += s->step;
}

static double px_x(const struct scale *x, double sec)
{
    return ML + (sec - x->lo) / (x->hi - x->lo) * PW;
}

static double px_y(const struct scale *y, double v)
{
    return MT + PH - (v - y->lo) / (y->hi - y->lo) * PH;
}

/* ---- drawing ----------------------------------------------------------------- */

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t')
                fputc(*s, f);
        }
    }
}

static double secs(const struct gm_timeline *tl, uint64_t t)
{
    return t > tl->t0_ns ? (double)(t - tl->t0_ns) / 1e9 : 0.0;
}

static void num_label(char *buf, size_t cap, double v, double step)
{
    if (step >= 1 || v == 0)
        snprintf(buf, cap, "%.0f", v);
    else if (step >= 0.1)
        snprintf(buf, cap, "%.1f", v);
    else if (step >= 0.01)
        snprintf(buf, cap, "%.2f", v);
    else
        snprintf(buf, cap, "%.3f", v);
}

static void axes(FILE *f, const struct scale *x, const struct scale *y)
{
    char lab[64];
    fprintf(f, "<g class=\"axes\" font-size=\"12\" fill=\"#333\">\n");
    for (double v = y->lo; v <= y->hi + y->step / 2; v += y->step) {
        double py = px_y(y, v);
        num_label(lab, sizeof lab, v / y->unit, y->step / y->unit);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
                "stroke=\"#ddd\"/>\n", ML, py, ML + PW, py);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                ML - 6, py + 4, lab);
    }
    for (double v = x->lo; v <= x->hi + x->step / 2; v += x->step) {
        double pxv = px_x(x, v);
        num_label(lab, sizeof lab, v, x->step);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
                "stroke=\"#eee\"/>\n", pxv, MT, pxv, MT + PH);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s"
                "</text>\n", pxv, MT + PH + 18, lab);
    }
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
            "fill=\"none\" stroke=\"#333\"/>\n", ML, MT, PW, PH);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
            "font-size=\"13\">time since process start (s)</text>\n",
            ML + PW / 2, H - 18);
    fprintf(f, "<text x=\"18\" y=\"%d\" text-anchor=\"middle\" "
            "font-size=\"13\" transform=\"rotate(-90 18 %d)\">device memory "
            "used (%s)</text>\n", MT + PH / 2, MT + PH / 2, y->uname);
    fprintf(f, "</g>\n");
}

struct col {
    int px;
    double first, lo, hi, last;
};

static void col_flush(FILE *f, const struct col *c, double *prev_y)
{
    if (c->px < 0)
        return;
    if (*prev_y >= 0)
        fprintf(f, " %d,%.1f", c->px, *prev_y);
    fprintf(f, " %d,%.1f %d,%.1f %d,%.1f %d,%.1f", c->px, c->first, c->px,
            c->hi, c->px, c->lo, c->px, c->last);
    *prev_y = c->last;
}

static void usage_line(FILE *f, const struct gm_timeline *tl,
                       const struct gm_tl_dev *d, const struct scale *x,
                       const struct scale *y, const char *color, unsigned i)
{
    struct col c = { -1, 0, 0, 0, 0 };
    double prev_y = -1;
    fprintf(f, "<polyline class=\"used\" id=\"used-dev%u\" fill=\"none\" "
            "stroke=\"%s\" stroke-width=\"1.6\" points=\"", i, color);
    for (size_t k = 0; k < d->n; k++) {
        int px = (int)(px_x(x, secs(tl, d->pts[k].t_ns)) + 0.5);
        double py = px_y(y, (double)d->pts[k].used);
        if (px != c.px) {
            col_flush(f, &c, &prev_y);
            c = (struct col){ px, py, py, py, py };
            continue;
        }
        c.lo = py > c.lo ? py : c.lo;
        c.hi = py < c.hi ? py : c.hi;
        c.last = py;
    }
    col_flush(f, &c, &prev_y);
    if (prev_y >= 0)
        fprintf(f, " %d,%.1f", ML + PW, prev_y);
    fprintf(f, "\"/>\n");
}

static void device_marks(FILE *f, const struct gm_timeline *tl,
                         const struct gm_tl_dev *d, const struct scale *x,
                         const struct scale *y, const char *color, unsigned i)
{
    char sz[32];
    if (d->limit) {
        double py = px_y(y, (double)d->limit);
        gm_format_size(d->limit, sz, sizeof sz);
        fprintf(f, "<line class=\"limit\" id=\"limit-dev%u\" x1=\"%d\" "
                "y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"1.5\" stroke-dasharray=\"8 4\"/>\n", i, ML,
                py, ML + PW, py, color);
        /* At the left end, where the usage curve usually starts low. */
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"12\" "
                "fill=\"%s\">device %u limit %s</text>\n",
                ML + 4, py - 5, color, i, sz);
    }
    if (d->n > 0 || d->peak) {
        double pxv = px_x(x, secs(tl, d->peak_ns));
        double py = px_y(y, (double)d->peak);
        gm_format_size(d->peak, sz, sizeof sz);
        fprintf(f, "<circle class=\"peak\" cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" "
                "fill=\"white\" stroke=\"%s\" stroke-width=\"2\"/>\n", pxv, py,
                color);
        /* Label inside the plot: to the left of a mark in the right half,
         * below it when it sits on the limit line. */
        bool right = pxv > ML + PW / 2.0;
        bool on_limit = d->limit && py - px_y(y, (double)d->limit) < 14.0;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" "
                "text-anchor=\"%s\" fill=\"%s\">peak %s</text>\n",
                right ? pxv - 7 : pxv + 7, on_limit ? py + 18 : py - 7,
                right ? "end" : "start", color, sz);
    }
    for (size_t k = 0; k < d->noom; k++) {
        double pxv = px_x(x, secs(tl, d->ooms[k].t_ns));
        double py = px_y(y, (double)d->ooms[k].used);
        fprintf(f, "<path class=\"oom\" d=\"M%.1f %.1fl8 8m0 -8l-8 8\" "
                "stroke=\"#d62728\" stroke-width=\"2\"/>\n", pxv - 4, py - 4);
    }
}

static void legend(FILE *f, const struct gm_timeline *tl)
{
    int lx = ML + PW + 20, ly = MT + 10;
    fprintf(f, "<g class=\"legend\" font-size=\"12\" fill=\"#333\">\n");
    for (unsigned i = 0; i < GM_ABI_MAX_DEVICES; i++) {
        const struct gm_tl_dev *d = &tl->dev[i];
        if (!d->present)
            continue;
        const char *c = colors[i % NCOLORS];
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                "stroke-width=\"2\"/><text x=\"%d\" y=\"%d\">device %u used"
                "</text>\n", lx, ly, lx + 24, ly, c, lx + 30, ly + 4, i);
        ly += 18;
        if (d->limit) {
            fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
                    "stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"8 "
                    "4\"/><text x=\"%d\" y=\"%d\">device %u limit</text>\n",
                    lx, ly, lx + 24, ly, c, lx + 30, ly + 4, i);
            ly += 18;
        }
        if (ly > MT + PH - 40)
            break;
    }
    fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"4.5\" fill=\"white\" "
            "stroke=\"#333\" stroke-width=\"2\"/><text x=\"%d\" y=\"%d\">peak"
            "</text>\n", lx + 12, ly, lx + 30, ly + 4);
    ly += 18;
    fprintf(f, "<path d=\"M%d %dl8 8m0 -8l-8 8\" stroke=\"#d62728\" "
            "stroke-width=\"2\"/><text x=\"%d\" y=\"%d\">refused request "
            "(OOM)</text>\n", lx + 8, ly - 4, lx + 30, ly + 4);
    fprintf(f, "</g>\n");
}

static void ranges(const struct gm_timeline *tl, double *top, double *span)
{
    *top = 0;
    *span = 0;
    for (unsigned i = 0; i < GM_ABI_MAX_DEVICES; i++) {
        const struct gm_tl_dev *d = &tl->dev[i];
        if (!d->present)
            continue;
        double v = (double)(d->limit > d->peak ? d->limit : d->peak);
        *top = v > *top ? v : *top;
        for (size_t k = 0; k < d->noom; k++)
            *top = (double)d->ooms[k].used > *top ? (double)d->ooms[k].used
                                                   : *top;
        if (d->n)
            *span = secs(tl, d->pts[d->n - 1].t_ns) > *span
                        ? secs(tl, d->pts[d->n - 1].t_ns) : *span;
        if (d->noom)
            *span = secs(tl, d->ooms[d->noom - 1].t_ns) > *span
                        ? secs(tl, d->ooms[d->noom - 1].t_ns) : *span;
    }
    *top = *top > 0 ? *top * 1.08 : 1024 * 1024;
    *span = *span > 0.001 ? *span : 0.001;
}

int gm_svg_write(const struct gm_timeline *tl, FILE *f)
{
    struct scale x, y;
    double top, span;
    ranges(tl, &top, &span);
    y_scale(top, &y);
    x_scale(span, &x);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">"
            "\n", W, H, W, H);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%d\" y=\"28\" font-size=\"15\" "
            "font-weight=\"bold\">", ML);
    xml_text(f, tl->title[0] ? tl->title : "gpumem: device memory used");
    fprintf(f, "</text>\n");
    axes(f, &x, &y);
    for (unsigned i = 0; i < GM_ABI_MAX_DEVICES; i++) {
        const struct gm_tl_dev *d = &tl->dev[i];
        if (!d->present)
            continue;
        usage_line(f, tl, d, &x, &y, colors[i % NCOLORS], i);
        device_marks(f, tl, d, &x, &y, colors[i % NCOLORS], i);
    }
    legend(f, tl);
    fprintf(f, "</svg>\n");
    return ferror(f) ? -1 : 0;
}
