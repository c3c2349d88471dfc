/*
 * tools/lib/leak.c — step detection, the used-floor series and the leak
 * verdict of a device (see tools/lib/leak.h; docs/metrics.md "Steps").
 *
 * Invariants: every loop is bounded by the caller's counts or the fixed
 * caps of leak.h; nothing reads the segment except gm_leak_of_seg and
 * gm_leak_drain_all; the series points are in the records' order; the
 * evidence of a series from the ring counts records by their order, never
 * by their time stamps (which two clocks write); a figure that cannot be
 * known is NaN in the trend and null in the JSON.
 */
#include "tools/lib/leak.h"

#include "shim/telemetry/frag.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/parse.h"
#include "policy/policy.h"
#include "tools/lib/reader.h"

const char *gm_step_src_name(enum gm_step_src s)
{
    switch (s) {
    case GM_STEP_MARKED: return "marked";
    case GM_STEP_DETECTED: return "detected";
    default: return "none";
    }
}

/* ---- the period ------------------------------------------------------------ */

/* The median of 15 differences u[i+k] - u[i] at evenly spaced i, read as
 * signed (a curve that falls has negative ones); returned wrapped, as the
 * callers compare it with wrapped differences. */
static uint64_t typical_diff(const uint64_t *u, size_t m, size_t k)
{
    enum { S = 15 };
    int64_t d[S];
    size_t span = m - k - 1;
    for (size_t s = 0; s < S; s++) {
        size_t i = span * s / (S - 1);
        int64_t v = (int64_t)(u[i + k] - u[i]);
        size_t j = s;
        for (; j > 0 && d[j - 1] > v; j--)
            d[j] = d[j - 1];
        d[j] = v;
    }
    return (uint64_t)d[S / 2];
}

uint64_t gm_steps_period(const uint64_t *u, size_t m, double *score)
{
    static double sc[GM_PERIOD_LAG_MAX + 1];
    if (score)
        *score = 0;
    if (u == NULL)
        return 0;
    if (m > GM_PERIOD_EVENTS) {
        u += m - GM_PERIOD_EVENTS;
        m = GM_PERIOD_EVENTS;
    }
    size_t maxk = m / 4 < GM_PERIOD_LAG_MAX ? m / 4 : GM_PERIOD_LAG_MAX;
    double best = 0;
    for (size_t k = 2; k <= maxk; k++) {
        uint64_t d = typical_diff(u, m, k);
        /* The fraction over at most GM_PERIOD_SAMPLES evenly spaced i
         * (every i when there are fewer). */
        size_t pairs = m - k, stride = pairs / GM_PERIOD_SAMPLES + 1;
        size_t hit = 0, seen = 0;
        for (size_t i = 0; i < pairs; i += stride, seen++)
            hit += u[i + k] - u[i] == d;
        sc[k] = (double)hit / (double)seen;
        if (sc[k] > best)
            best = sc[k];
    }
    if (best < GM_PERIOD_MIN_SCORE)
        return 0;
    /* The smallest lag close to the best: multiples of the period score
     * as well as the period itself. */
    for (size_t k = 2; k <= maxk; k++)
        if (sc[k] >= 0.9 * best) {
            if (score)
                *score = sc[k];
            return k;
        }
    return 0;
}

/* ---- series from the ring ------------------------------------------------ */

static bool is_dev_change(const struct gm_abi_record *r, unsigned dev)
{
    return r->dev == dev && (r->kind == GM_EV_ALLOC || r->kind == GM_EV_FREE);
}

static double secs(uint64_t ts, uint64_t t0)
{
    return ts >= t0 ? (double)(ts - t0) / 1e9 : -(double)(t0 - ts) / 1e9;
}

/* Keeps the last GM_LEAK_SERIES_MAX points: a ring buffer while filling,
 * rotated into order by series_done. A series of the ring also keeps,
 * per point, the index of the record that closes it (at: NULL for the
 * history's). */
struct series {
    struct gm_trend_point *p;
    size_t *at;
    size_t n, head; /* head: next slot once full */
};

static void series_put(struct series *s, const struct gm_trend_point *pt,
                       size_t at)
{
    if (s->p == NULL)
        return;
    size_t k;
    if (s->n < GM_LEAK_SERIES_MAX) {
        k = s->n++;
    } else {
        k = s->head;
        s->head = (s->head + 1) % GM_LEAK_SERIES_MAX;
    }
    s->p[k] = *pt;
    if (s->at != NULL)
        s->at[k] = at;
}

static void series_done(struct series *s)
{
    if (s->p == NULL || s->head == 0)
        return;
    /* Rotate left by head (three reversals). */
    struct gm_trend_point t;
    size_t n = s->n, h = s->head;
    for (int pass = 0; pass < 3; pass++) {
        size_t lo = pass == 0 ? 0 : pass == 1 ? h : 0;
        size_t hi = pass == 0 ? h : n;
        for (size_t i = lo, j = hi - 1; i < j; i++, j--) {
            t = s->p[i];
            s->p[i] = s->p[j];
            s->p[j] = t;
            if (s->at != NULL) {
                size_t a = s->at[i];
                s->at[i] = s->at[j];
                s->at[j] = a;
            }
        }
    }
    s->head = 0;
}

/* A context's end on the device within the records: it freed r->addr
 * allocations the program had left, while others lived on (an end that
 * emptied the device bounds the phase instead: phase_of). */
static bool is_dev_end(const struct gm_abi_record *r, unsigned dev)
{
    return r->dev == dev && r->kind == GM_EV_CTX_FREED;
}

/* live after record r, from live before it (saturating, never below 0). */
static uint64_t live_after(uint64_t live, const struct gm_abi_record *r,
                           unsigned dev)
{
    if (is_dev_end(r, dev))
        return live > r->addr ? live - r->addr : 0;
    if (!is_dev_change(r, dev))
        return live;
    if (r->kind == GM_EV_ALLOC)
        return live == UINT64_MAX ? live : live + 1;
    return live ? live - 1 : 0;
}

/* live before record r, from live after it (saturating, never below 0). */
static uint64_t live_before(uint64_t live, const struct gm_abi_record *r,
                            unsigned dev)
{
    if (is_dev_end(r, dev))
        return r->addr > UINT64_MAX - live ? UINT64_MAX : live + r->addr;
    if (!is_dev_change(r, dev))
        return live;
    if (r->kind == GM_EV_ALLOC)
        return live ? live - 1 : 0;
    return live == UINT64_MAX ? live : live + 1;
}

/* Live allocations before the records: counted back from live_end. */
static uint64_t live_before_ring(const struct gm_leak_input *in)
{
    uint64_t live = in->live_end;
    for (size_t i = in->n; i-- > 0;)
        live = live_before(live, &in->ev[i], in->dev);
    return live;
}

/* The fragmentation after each device change, by the shim's definition
 * (shim/telemetry/frag.h), from the ring's own intervals: known only when
 * the ring holds the device's whole run (no event lost, no allocation
 * live before its oldest event) and outside static mode (whose figure is
 * the arena's). f->known false otherwise. */
struct fragrun {
    struct gm_frag set;
    bool known;
};

static void fragrun_init(struct fragrun *f, const struct gm_leak_input *in)
{
    f->known = in->lost == 0 && !in->arena && live_before_ring(in) == 0 &&
               gm_frag_init(&f->set) == 0;
}

/* Applies change r; its figure, or -1 when unknown (also from a context's
 * end on: which blocks it freed is not in the ring). */
static int64_t fragrun_step(struct fragrun *f, const struct gm_abi_record *r)
{
    if (f->known && r->kind == GM_EV_CTX_FREED) {
        gm_frag_destroy(&f->set);
        f->known = false;
    }
    if (!f->known)
        return -1;
    if (r->kind == GM_EV_ALLOC)
        (void)gm_frag_insert(&f->set, r->addr, r->size);
    else
        (void)gm_frag_remove(&f->set, r->addr);
    return gm_frag_ppm(&f->set);
}

static void fragrun_free(struct fragrun *f)
{
    if (f->known)
        gm_frag_destroy(&f->set);
}

/* One point per interval between consecutive GM_EV_STEP marks: the least
 * and greatest used in it, the boundaries included. */
static void ring_marked(const struct gm_leak_input *in, struct series *out)
{
    uint64_t live = live_before_ring(in), cur = 0, lo = 0, hi = 0;
    bool known = false, open = false;
    struct fragrun fr;
    int64_t frag = -1;
    fragrun_init(&fr, in);
    for (size_t i = 0; i < in->n; i++) {
        const struct gm_abi_record *r = &in->ev[i];
        if (is_dev_change(r, in->dev) || is_dev_end(r, in->dev)) {
            frag = fragrun_step(&fr, r);
            cur = r->used_after;
            known = true;
            live = live_after(live, r, in->dev);
            lo = cur < lo ? cur : lo;
            hi = cur > hi ? cur : hi;
        } else if (r->kind == GM_EV_STEP &&
                   (r->dev == in->dev || r->dev == GM_ABI_NO_DEVICE)) {
            if (open && known) {
                struct gm_trend_point p = {secs(r->ts_ns, in->t0_ns),
                                           (double)r->size, lo, hi, live,
                                           frag};
                series_put(out, &p, i);
            }
            open = known;
            lo = hi = cur;
        }
    }
    fragrun_free(&fr);
}

/* The device's used after each change, with times and live counts, and
 * the regular curve the period is searched on: v, the running sum of the
 * signed sizes of the changes that are not rare (at: their positions in
 * u). A (kind, size) is rare when it occurs less than a sixteenth as often
 * as the most frequent one, such as an evaluation buffer every few steps,
 * which would otherwise make the period a multiple of the step; rare
 * changes are left out only when they are at most a tenth of all. */
struct changes {
    uint64_t *u, *ts, *live;
    size_t *rec;                    /* the change's index in the records */
    int64_t *frag;                  /* after each change; -1 unknown */
    size_t m;
    uint64_t *v;
    size_t *at, k;
};

#define RARE_SLOTS 1024u

struct kind_size {
    uint64_t key; /* size * 2 + (kind == FREE); 0: empty (sizes > 0) */
    size_t count;
};

static size_t ks_slot(struct kind_size *tab, uint64_t key)
{
    size_t h = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 54) % RARE_SLOTS;
    for (size_t probes = 0; probes < RARE_SLOTS; probes++) {
        if (tab[h].key == key || tab[h].key == 0)
            return h;
        h = (h + 1) % RARE_SLOTS;
    }
    return RARE_SLOTS; /* full */
}

static uint64_t ks_key(const struct gm_abi_record *r)
{
    return r->size * 2 + (r->kind == GM_EV_FREE);
}

/* Marks rare[i] for the rare changes (see struct changes). */
static void find_rare(const struct gm_leak_input *in, bool *rare, size_t m)
{
    static struct kind_size tab[RARE_SLOTS];
    memset(tab, 0, sizeof tab);
    memset(rare, 0, m * sizeof *rare);
    size_t most = 0, j = 0;
    for (size_t i = 0; i < in->n; i++) {
        const struct gm_abi_record *r = &in->ev[i];
        if (!is_dev_change(r, in->dev) || r->size == 0)
            continue;
        size_t h = ks_slot(tab, ks_key(r));
        if (h == RARE_SLOTS)
            return; /* too many kinds of change: keep all */
        tab[h].key = ks_key(r);
        if (++tab[h].count > most)
            most = tab[h].count;
    }
    size_t dropped = 0;
    for (size_t i = 0; i < in->n; i++) {
        const struct gm_abi_record *r = &in->ev[i];
        if (!is_dev_change(r, in->dev))
            continue;
        if (r->size != 0) {
            size_t h = ks_slot(tab, ks_key(r));
            if (tab[h].count * 16 < most) {
                rare[j] = true;
                dropped++;
            }
        }
        j++;
    }
    if (dropped * 10 > m)
        memset(rare, 0, m * sizeof *rare);
}

static int changes_of(const struct gm_leak_input *in, struct changes *c)
{
    size_t m = 0;
    for (size_t i = 0; i < in->n; i++)
        m += is_dev_change(&in->ev[i], in->dev);
    memset(c, 0, sizeof *c);
    c->u = calloc(m + 1, sizeof *c->u);
    c->ts = malloc((m + 1) * sizeof *c->ts);
    c->live = malloc((m + 1) * sizeof *c->live);
    c->v = calloc(m + 1, sizeof *c->v);
    c->at = malloc((m + 1) * sizeof *c->at);
    c->frag = malloc((m + 1) * sizeof *c->frag);
    c->rec = malloc((m + 1) * sizeof *c->rec);
    bool *rare = malloc((m + 1) * sizeof *rare);
    if (!c->u || !c->ts || !c->live || !c->v || !c->at || !c->frag ||
        !c->rec || !rare) {
        free(rare);
        return -1;
    }
    struct fragrun fr;
    fragrun_init(&fr, in);
    find_rare(in, rare, m);
    uint64_t live = live_before_ring(in), sum = 0;
    for (size_t i = 0; i < in->n; i++) {
        const struct gm_abi_record *r = &in->ev[i];
        if (is_dev_end(r, in->dev)) { /* not a step's: only its effects */
            live = live_after(live, r, in->dev);
            (void)fragrun_step(&fr, r);
            continue;
        }
        if (!is_dev_change(r, in->dev))
            continue;
        live = live_after(live, r, in->dev);
        c->u[c->m] = r->used_after;
        c->ts[c->m] = r->ts_ns;
        c->rec[c->m] = i;
        c->live[c->m] = live;
        c->frag[c->m] = fragrun_step(&fr, r);
        if (!rare[c->m]) {
            sum += r->kind == GM_EV_ALLOC ? r->size : (uint64_t)0 - r->size;
            c->v[c->k] = sum;
            c->at[c->k++] = c->m;
        }
        c->m++;
    }
    fragrun_free(&fr);
    free(rare);
    return 0;
}

static void changes_free(struct changes *c)
{
    free(c->u);
    free(c->ts);
    free(c->live);
    free(c->v);
    free(c->at);
    free(c->frag);
    free(c->rec);
}

/* Windows of P regular changes (c->v), aligned on the lowest of the second
 * period (the last of equal ones; the first period may hold the
 * program's setup), starting with the
 * first window whose end differs from its start by the typical lag-P
 * difference (the setup is not a step); the least and greatest used over
 * every change of each window (rare ones included), its last change
 * shared with the next (so each holds one step boundary). The last whole
 * window is left out: it is a step in progress or, once the program
 * ended, its teardown (whose frees would pass for a step's excursion).
 * Window j is step round((regular changes before the first window) / P)
 * + j + 1, those before the ring estimated in the ring's proportion. */
static void ring_detected(const struct gm_leak_input *in,
                          const struct changes *c, uint64_t P,
                          struct series *out)
{
    const uint64_t *v = c->v;
    size_t k = c->k;
    size_t from = k >= 3 * P ? P : 0, a = from;
    for (size_t i = from + 1; i < from + P && i < k; i++)
        if (v[i] <= v[a]) /* the last of equal lows: after a step's frees */
            a = i;
    a %= P;
    uint64_t d = typical_diff(v, k, P);
    while (a + P < k && v[a + P] - v[a] != d)
        a += P;
    double before = in->dev_events > c->m
                        ? (double)(in->dev_events - c->m) * (double)k / (double)c->m
                        : 0;
    uint64_t step = (uint64_t)((before + (double)a) / (double)P + 0.5);
    for (size_t s = a; s + 2 * P < k; s += P) {
        size_t i0 = c->at[s], i1 = c->at[s + P];
        uint64_t lo = c->u[i0], hi = c->u[i0];
        for (size_t i = i0 + 1; i <= i1; i++) {
            lo = c->u[i] < lo ? c->u[i] : lo;
            hi = c->u[i] > hi ? c->u[i] : hi;
        }
        struct gm_trend_point p = {secs(c->ts[i1], in->t0_ns), (double)++step,
                                   lo, hi, c->live[i1], c->frag[i1]};
        series_put(out, &p, c->rec[i1]);
    }
}

/* ---- series from the history ---------------------------------------------- */


static void hist_series(const struct gm_leak_input *in, double per_step,
                        uint64_t t_lo, uint64_t t_hi, struct series *out)
{
    uint64_t cum = 0;
    for (size_t i = 0; i < in->nhist; i++) {
        const struct gm_hist_point *h = &in->hist[i];
        if (h->start_ns < t_lo || h->end_ns > t_hi)
            continue; /* another phase's, or it holds a context's end */
        double step = -1;
        if (in->marked)
            step = (double)(i > 0 ? in->hist[i - 1].steps : h->steps);
        else if (per_step > 0)
            step = (double)cum / per_step;
        cum += h->allocs + h->frees;
        struct gm_trend_point p = {secs(h->start_ns, in->t0_ns), step,
                                   h->used_min, h->used_max, h->live_allocs,
                                   -1};
        series_put(out, &p, 0);
    }
}

/* At most GM_TREND_MAX_POINTS bins of equal width over the series: the
 * least floor and greatest peak of each, with its first point's time,
 * step and live count. */
static size_t bin(const struct gm_trend_point *in, size_t n,
                  struct gm_trend_point *out)
{
    const size_t max = GM_TREND_MAX_POINTS;
    if (n <= max) {
        memcpy(out, in, n * sizeof *in);
        return n;
    }
    double t0 = in[0].t, w = (in[n - 1].t - t0) / (double)max;
    size_t k = 0;
    long cur = -1;
    for (size_t i = 0; i < n; i++) {
        long b = w > 0 ? (long)((in[i].t - t0) / w) : 0;
        if (b >= (long)max)
            b = (long)max - 1;
        if (b != cur && k < max) {
            out[k++] = in[i];
            cur = b;
            continue;
        }
        struct gm_trend_point *o = &out[k - 1];
        o->floor = in[i].floor < o->floor ? in[i].floor : o->floor;
        o->peak = in[i].peak > o->peak ? in[i].peak : o->peak;
    }
    return k;
}

/* ---- evidence ------------------------------------------------------------- */

#define EV_SLOTS 1024u

struct size_count {
    uint64_t size;   /* 0: empty slot */
    int64_t before;  /* live count of the size before the window */
    int64_t net;     /* change within the window */
};

/* The window the evidence counts over. From the ring's series: by the
 * records' order, up to the record that closes its first point (lo:
 * before the window) and its last (hi); the time stamps do not order the
 * records (a step mark is stamped by the system clock, an allocation by
 * its thread's tick reading, and threads interleave). From the history's:
 * by time, from its first point to its last. */
struct ev_window {
    bool by_record;
    size_t lo, hi;
    double from, to;
};

enum ev_side { EV_BEFORE, EV_IN, EV_AFTER };

static enum ev_side ev_side(const struct ev_window *w,
                            const struct gm_leak_input *in, size_t i)
{
    if (w->by_record)
        return i <= w->lo ? EV_BEFORE : i <= w->hi ? EV_IN : EV_AFTER;
    double t = secs(in->ev[i].ts_ns, in->t0_ns);
    return t > w->to ? EV_AFTER : t < w->from ? EV_BEFORE : EV_IN;
}

/* The size whose live count grew the most over the window (ring events);
 * its count before is known only when no event was lost. */
static void evidence(const struct gm_leak_input *in,
                     const struct ev_window *w, struct gm_trend_evidence *ev)
{
    static struct size_count tab[EV_SLOTS];
    memset(tab, 0, sizeof tab);
    memset(ev, 0, sizeof *ev);
    for (size_t i = 0; i < in->n; i++) {
        const struct gm_abi_record *r = &in->ev[i];
        if (!is_dev_change(r, in->dev) || r->size == 0)
            continue;
        size_t h = (size_t)((r->size * 0x9e3779b97f4a7c15ull) >> 54) % EV_SLOTS;
        size_t probes = 0;
        while (tab[h].size != 0 && tab[h].size != r->size && probes++ < EV_SLOTS)
            h = (h + 1) % EV_SLOTS;
        if (probes >= EV_SLOTS)
            continue; /* table full: sizes past 1024 distinct are ignored */
        enum ev_side side = ev_side(w, in, i);
        if (side == EV_AFTER)
            continue;
        tab[h].size = r->size;
        int d = r->kind == GM_EV_ALLOC ? 1 : -1;
        if (side == EV_BEFORE)
            tab[h].before += d;
        else
            tab[h].net += d;
    }
    const struct size_count *best = NULL;
    for (size_t i = 0; i < EV_SLOTS; i++)
        if (tab[i].size && tab[i].net > 0 && (best == NULL || tab[i].net > best->net))
            best = &tab[i];
    if (best == NULL)
        return;
    ev->size = best->size;
    if (in->lost == 0 && best->before >= 0) {
        ev->from = (uint64_t)best->before;
        ev->to = (uint64_t)(best->before + best->net);
    } else {
        ev->from = UINT64_MAX;
        ev->to = (uint64_t)best->net;
    }
}

/* ---- the analysis --------------------------------------------------------- */

/* ---- the program's phase ---------------------------------------------------- */

/* The span the analysis covers: the program's latest phase on the device.
 * An end of a context that left the device with nothing live (a
 * CTX_FREED after which the live count is 0: the device's only context
 * ended, or a reset) starts the program's heap over; so the phase runs
 * from the last such end before the program's last change of the device
 * (ring records lo.., history from t_lo) to the first after it (..hi,
 * history to t_hi, when its releases began). An end that left other
 * allocations live is inside the phase (its live counts drop there). With
 * no change of the device in the ring, the last history bucket with
 * allocations or frees stands for the last change. A program that ends
 * its context once, at its exit, has one phase: all of its run. */
struct phase {
    size_t lo, hi;
    uint64_t t_lo, t_hi;
    uint64_t freed_after;   /* allocations the ends after it freed */
};

static uint64_t end_began(const struct gm_abi_record *r)
{
    return r->extra != 0 && r->extra < r->ts_ns ? r->extra : r->ts_ns;
}

static void phase_of(const struct gm_leak_input *in, struct phase *p)
{
    size_t last = in->n; /* the program's last change (n: none) */
    for (size_t i = 0; i < in->n; i++)
        if (is_dev_change(&in->ev[i], in->dev))
            last = i;
    uint64_t t_last = 0;
    if (last == in->n)
        for (size_t i = 0; i < in->nhist; i++)
            if (in->hist[i].allocs + in->hist[i].frees != 0)
                t_last = in->hist[i].start_ns;
    *p = (struct phase){ 0, in->n, 0, UINT64_MAX, 0 };
    uint64_t live = in->live_end; /* after record i, walking back */
    size_t first_after = in->n;
    for (size_t i = in->n; i-- > 0;) {
        const struct gm_abi_record *r = &in->ev[i];
        bool reset = is_dev_end(r, in->dev) && live == 0;
        bool after = last < in->n ? i > last : end_began(r) >= t_last;
        if (reset && after)
            first_after = i;
        else if (reset && p->lo == 0) {
            p->lo = i + 1;
            p->t_lo = r->ts_ns; /* all of its releases done */
        }
        live = live_before(live, r, in->dev);
    }
    if (first_after < in->n) {
        p->hi = first_after;
        p->t_hi = end_began(&in->ev[first_after]);
    }
    /* What the ends from hi on freed was live at the phase's end (the
     * program changed nothing after it). */
    for (size_t i = p->hi; i < in->n; i++)
        if (is_dev_end(&in->ev[i], in->dev))
            p->freed_after = in->ev[i].addr > UINT64_MAX - p->freed_after
                                 ? UINT64_MAX
                                 : p->freed_after + in->ev[i].addr;
}

int gm_leak_analyse(const struct gm_leak_input *all, struct gm_leak *out)
{
    if (all == NULL || out == NULL || (all->ev == NULL && all->n > 0) ||
        (all->hist == NULL && all->nhist > 0))
        return -1;
    /* The phase as an input of its own: its records; the live count at
     * its end; nothing of it lost when it began within the ring. */
    struct phase ph;
    phase_of(all, &ph);
    struct gm_leak_input phase_in = *all;
    phase_in.ev = all->ev != NULL ? all->ev + ph.lo : NULL;
    phase_in.n = ph.hi - ph.lo;
    phase_in.live_end = ph.freed_after > UINT64_MAX - all->live_end
                            ? UINT64_MAX : all->live_end + ph.freed_after;
    const struct gm_leak_input *in = &phase_in;
    memset(out, 0, sizeof *out);
    struct changes c = {0};
    struct series ring = {malloc(GM_LEAK_SERIES_MAX * sizeof *ring.p),
                          malloc(GM_LEAK_SERIES_MAX * sizeof *ring.at), 0, 0};
    struct series hist = {malloc(GM_LEAK_SERIES_MAX * sizeof *hist.p), NULL,
                          0, 0};
    if (ring.at == NULL) {
        free(ring.p);
        ring.p = NULL;
    }
    bool have_marks = false;
    for (size_t i = 0; i < in->n && !have_marks; i++)
        have_marks = in->ev[i].kind == GM_EV_STEP &&
                     (in->ev[i].dev == in->dev || in->ev[i].dev == GM_ABI_NO_DEVICE);
    uint64_t P = 0;
    if (changes_of(in, &c) == 0 && !in->marked)
        P = gm_steps_period(c.v, c.k, &out->period_score);
    if (have_marks)
        ring_marked(in, &ring);
    else if (P > 0)
        ring_detected(in, &c, P, &ring);
    series_done(&ring);
    /* The history counts every change: P regular ones and the rare. */
    hist_series(in, P > 0 ? (double)P * (double)c.m / (double)c.k : 0, ph.t_lo,
                ph.t_hi, &hist);
    series_done(&hist);
    changes_free(&c);
    out->steps_from = in->marked ? GM_STEP_MARKED : P ? GM_STEP_DETECTED : GM_STEP_NONE;
    out->period = in->marked ? 0 : P;

    /* The ring's per-step series when it holds the run (or enough steps),
     * else the history's. */
    struct gm_trend_params tp;
    gm_trend_defaults(&tp);
    bool use_ring = ring.n >= tp.min_points &&
                    (in->lost == 0 || ring.n >= GM_LEAK_RING_STEPS);
    if (!use_ring && hist.n < tp.min_points && ring.n > hist.n)
        use_ring = true;
    struct series *pick = use_ring ? &ring : &hist;
    struct series *other = use_ring ? &hist : &ring;
    out->from_history = !use_ring;
    out->pts = pick->p;
    out->npts = pick->n;
    free(other->p);

    struct gm_trend_point win[GM_TREND_MAX_POINTS];
    struct ev_window ew = {use_ring, 0, 0, 0, 0};
    size_t nw;
    if (use_ring) {
        size_t skip = out->npts > GM_TREND_MAX_POINTS ? out->npts - GM_TREND_MAX_POINTS : 0;
        nw = out->npts - skip;
        if (nw) {
            memcpy(win, out->pts + skip, nw * sizeof *win);
            ew.lo = ring.at[skip];
            ew.hi = ring.at[out->npts - 1];
        }
    } else {
        nw = out->pts ? bin(out->pts, out->npts, win) : 0;
    }
    free(ring.at);
    gm_trend_fit(win, nw, in->limit, &tp, &out->trend);
    if (nw > 0) {
        ew.from = win[0].t;
        ew.to = win[nw - 1].t;
        evidence(in, &ew, &out->ev);
    }
    /* Blocks live when the phase began, or freed by an end within it, are
     * not in its records: a size's count is then known only as growth. */
    bool partial = false;
    for (size_t i = 0; i < in->n && !partial; i++)
        partial = is_dev_end(&in->ev[i], in->dev);
    if (out->ev.size != 0 && out->ev.from != UINT64_MAX &&
        (partial || (ph.lo > 0 && live_before_ring(in) > 0))) {
        out->ev.to -= out->ev.from;
        out->ev.from = UINT64_MAX;
    }
    return 0;
}

void gm_leak_free(struct gm_leak *l)
{
    if (l == NULL)
        return;
    free(l->pts);
    l->pts = NULL;
    l->npts = 0;
}

/* ---- output --------------------------------------------------------------- */

static void json_num(FILE *f, double v, int decimals)
{
    char b[40];
    if (isnan(v) || v < 0) {
        fputs("null", f);
        return;
    }
    gm_format_decimal(v, decimals, b, sizeof b);
    fputs(b, f);
}

void gm_leak_json(FILE *f, const struct gm_leak *l)
{
    if (l == NULL) {
        fputs("\"leak\":{\"verdict\":\"unknown\",\"bytes_per_step\":null,"
              "\"bytes_per_second\":null,\"steps\":null,\"seconds_to_limit\":null,"
              "\"steps_from\":\"none\",\"source\":null,\"points\":0,"
              "\"window_steps\":null,\"window_seconds\":null,\"step_now\":null}", f);
        return;
    }
    const struct gm_trend *t = &l->trend;
    static const char *const verdict[] = {"unknown", "steady", "grows"};
    bool grows = t->verdict == GM_TREND_GROWS;
    fprintf(f, "\"leak\":{\"verdict\":\"%s\",\"bytes_per_step\":",
            verdict[t->verdict <= GM_TREND_GROWS ? t->verdict : 0]);
    json_num(f, grows ? t->bytes_per_step : NAN, 0);
    fputs(",\"bytes_per_second\":", f);
    json_num(f, grows ? t->bytes_per_second : NAN, 0);
    fputs(",\"steps\":", f);
    json_num(f, grows ? floor(t->steps_to_limit) : NAN, 0);
    fputs(",\"seconds_to_limit\":", f);
    json_num(f, grows ? t->seconds_to_limit : NAN, 1);
    fprintf(f, ",\"steps_from\":\"%s\",\"source\":\"%s\",\"points\":%u,"
               "\"window_steps\":", gm_step_src_name(l->steps_from),
            l->from_history ? "history" : "ring", (unsigned)t->points);
    json_num(f, t->steps, 0);
    fputs(",\"window_seconds\":", f);
    json_num(f, t->seconds, 1);
    fputs(",\"step_now\":", f);
    json_num(f, t->step_now, 0);
    fputc('}', f);
}

/* ---- a segment -------------------------------------------------------------- */

int gm_leak_drain_all(const struct gm_seg *s, struct gm_abi_record **out,
                      size_t *n, uint64_t *lost)
{
    return gm_leak_drain_last(s, GM_LEAK_DRAIN_MAX, out, n, lost);
}

int gm_leak_drain_last(const struct gm_seg *s, size_t max,
                       struct gm_abi_record **out, size_t *n, uint64_t *lost)
{
    size_t cap = s->ring_capacity ? s->ring_capacity : 1;
    if (cap > max)
        cap = max ? max : 1;
    struct gm_abi_record *buf = malloc(cap * sizeof *buf);
    *out = NULL;
    *n = 0;
    *lost = 0;
    if (buf == NULL)
        return -1;
    /* From the oldest event, or the last `max` of a larger ring (those
     * before count as lost). */
    struct gm_cursor c;
    gm_cursor_init(&c, s, true);
    uint64_t head = c.next;
    gm_cursor_init(&c, s, false);
    if (head > cap) {
        c.next = head - cap;
        *lost = c.next;
    }
    size_t got = 0;
    /* One pass over the ring (the reader moves at least one slot per
     * round); events published after the drain began may be cut off. */
    for (unsigned rounds = 0; rounds < 64 && got < cap; rounds++) {
        uint64_t l = 0;
        size_t k = gm_seg_drain(s, &c, buf + got, cap - got, GM_DRAIN_FLUSH, &l);
        if (got == 0)
            *lost += l;
        else if (l > 0) {
            /* A loss inside what we hold: keep only the newer part. */
            *lost += got + l;
            memmove(buf, buf + got, k * sizeof *buf);
            got = 0;
        }
        got += k;
        if (k == 0 && l == 0)
            break;
    }
    *out = buf;
    *n = got;
    return 0;
}

int gm_leak_of_seg(const struct gm_seg *s, const struct gm_snapshot *snap,
                   unsigned dev, const struct gm_abi_record *ev, size_t n,
                   uint64_t lost, struct gm_leak *out, char *err,
                   size_t errcap)
{
    static struct gm_hist_point hp[GM_HIST_POINTS_MAX];
    int nh = gm_seg_history(s, dev, hp, GM_HIST_POINTS_MAX, err, errcap);
    const struct gm_abi_dev *d = &snap->dev[dev < GM_ABI_MAX_DEVICES ? dev : 0];
    struct gm_leak_input in = {
        .ev = ev, .n = n, .lost = lost,
        .hist = nh > 0 ? hp : NULL, .nhist = nh > 0 ? (size_t)nh : 0,
        .dev = dev, .t0_ns = snap->start_realtime_ns, .limit = d->limit,
        .dev_events = d->allocs + d->frees, .live_end = d->live_allocs,
        .marked = gm_seg_steps(s) > 0,
        .arena = snap->mode == GM_MODE_STATIC,
    };
    gm_leak_analyse(&in, out);
    return nh < 0 ? -1 : 0;
}
