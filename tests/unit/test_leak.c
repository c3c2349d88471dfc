/*
 * tests/unit/test_leak.c — steps and the leak analysis of the tools
 * (tools/lib/leak.c) on synthetic rings and histories with known figures:
 * the period of a used curve (exact, with multiples, with stray events,
 * none in noise), per-step floors from marks and from the period, the
 * history when the ring lost the run, other devices' records ignored,
 * the program's phases between the ends of its contexts,
 * the evidence (counted in the ring's order, not by its time stamps), the JSON object, and hostile records.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/lib/leak.h"

#define MiB (1ull << 20)

static uint64_t lcg = 99;
static uint64_t rnd(void)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return lcg >> 17;
}

/* ---- the period ------------------------------------------------------------- */

/* A step of P = 2 + 2*L events: a leak, L allocations, L frees, then a
 * free of a temporary; used after each. */
static size_t step_curve(uint64_t *u, size_t steps, unsigned layers,
                         uint64_t leak)
{
    uint64_t used = 100 * MiB;
    size_t m = 0;
    for (size_t s = 0; s < steps; s++) {
        used += leak;
        u[m++] = used;
        used += 5 * MiB; /* a temporary */
        u[m++] = used;
        for (unsigned l = 0; l < layers; l++)
            u[m++] = used += 8 * MiB;
        for (unsigned l = 0; l < layers; l++)
            u[m++] = used -= 8 * MiB;
        used -= 5 * MiB;
        u[m - 1] = used; /* the last free also drops the temporary */
    }
    return m;
}

START_TEST(period_exact)
{
    static uint64_t u[20000];
    size_t m = step_curve(u, 300, 6, 3 * MiB);
    double score;
    ck_assert_uint_eq(gm_steps_period(u, m, &score), 2 + 2 * 6);
    ck_assert_double_ge(score, 0.99);
    /* No leak: the same period. */
    m = step_curve(u, 300, 6, 0);
    ck_assert_uint_eq(gm_steps_period(u, m, NULL), 14);
    /* More layers, beyond the events looked at: only the last 8192. */
    m = step_curve(u, 600, 12, MiB);
    ck_assert_uint_eq(gm_steps_period(u, m, NULL), 26);
}
END_TEST

START_TEST(period_with_strays_and_noise)
{
    static uint64_t u[20000], v[20000];
    size_t m = step_curve(u, 400, 6, 3 * MiB);
    /* A stray pair of events (an evaluation buffer) every 20 steps. */
    size_t n = 0;
    for (size_t i = 0; i < m; i++) {
        v[n++] = u[i];
        if (i % (14 * 20) == 13) {
            v[n++] = u[i] + 512 * MiB;
            v[n++] = u[i];
        }
    }
    ck_assert_uint_eq(gm_steps_period(v, n, NULL), 14);
    /* Noise: no period. */
    for (size_t i = 0; i < 8192; i++)
        v[i] = rnd() % (1u << 30);
    double score;
    ck_assert_uint_eq(gm_steps_period(v, 8192, &score), 0);
    ck_assert_double_eq(score, 0);
    /* Too short, NULL. */
    ck_assert_uint_eq(gm_steps_period(u, 7, NULL), 0);
    ck_assert_uint_eq(gm_steps_period(NULL, 100, NULL), 0);
}
END_TEST

/* ---- rings ---------------------------------------------------------------------- */

static struct gm_abi_record ring[200000];
static size_t nring;
static uint64_t now_ns, used_now;

static void rec(unsigned kind, unsigned dev, uint64_t size)
{
    struct gm_abi_record *r = &ring[nring++];
    memset(r, 0, sizeof *r);
    now_ns += 100000; /* 0.1 ms per event */
    r->ts_ns = now_ns;
    r->kind = (uint16_t)kind;
    r->dev = dev;
    r->size = size;
    if (kind == GM_EV_ALLOC && dev == 0)
        used_now += size;
    else if (kind == GM_EV_FREE && dev == 0)
        used_now -= size;
    r->used_after = used_now;
}

/* Setup (4 weights of 4 MiB), then `steps` steps: a leak, 3 activations
 * of 8 MiB, their frees, a STEP mark when marked; a record of device 1
 * and a STEP of device 1 in between, which must change nothing. */
static void trainlike(size_t steps, uint64_t leak, bool marked)
{
    nring = 0;
    now_ns = 1000000000ull;
    used_now = 0;
    for (int i = 0; i < 4; i++)
        rec(GM_EV_ALLOC, 0, 4 * MiB);
    for (size_t s = 1; s <= steps; s++) {
        if (leak)
            rec(GM_EV_ALLOC, 0, leak);
        for (int i = 0; i < 3; i++)
            rec(GM_EV_ALLOC, 0, 8 * MiB);
        rec(GM_EV_ALLOC, 1, 64 * MiB);
        for (int i = 0; i < 3; i++)
            rec(GM_EV_FREE, 0, 8 * MiB);
        if (marked) {
            rec(GM_EV_STEP, 0, s);
            rec(GM_EV_STEP, 1, s);
        }
    }
}

static struct gm_leak_input input(bool marked)
{
    struct gm_leak_input in = {
        .ev = ring, .n = nring, .dev = 0, .t0_ns = 1000000000ull,
        .limit = 4096 * MiB, .marked = marked,
    };
    uint64_t allocs = 0, frees = 0;
    for (size_t i = 0; i < nring; i++) {
        allocs += ring[i].dev == 0 && ring[i].kind == GM_EV_ALLOC;
        frees += ring[i].dev == 0 && ring[i].kind == GM_EV_FREE;
    }
    in.dev_events = allocs + frees;
    in.live_end = allocs - frees;
    return in;
}

START_TEST(marked_steps)
{
    trainlike(200, 3 * MiB, true);
    struct gm_leak_input in = input(true);
    struct gm_leak l;
    ck_assert_int_eq(gm_leak_analyse(&in, &l), 0);
    ck_assert_int_eq(l.steps_from, GM_STEP_MARKED);
    ck_assert(!l.from_history);
    ck_assert_uint_eq(l.npts, 199); /* intervals between 200 marks */
    ck_assert_int_eq(l.trend.verdict, GM_TREND_GROWS);
    ck_assert_double_eq_tol(l.trend.bytes_per_step, 3.0 * MiB, 1e-3);
    ck_assert_double_eq(l.trend.step_now, 200);
    /* Floors and peaks of a step: after the previous step, then 3 acts. */
    const struct gm_trend_point *p = &l.pts[l.npts - 1];
    ck_assert_uint_eq(p->floor, 16 * MiB + 199 * 3 * MiB);
    ck_assert_uint_eq(p->peak, 16 * MiB + 200 * 3 * MiB + 24 * MiB);
    ck_assert_uint_eq(p->live, 4 + 200);
    /* Forecast: limit - floor now - excursion (3 + 24 MiB), per 3 MiB. */
    double head = 4096.0 - (16 + 199 * 3) - 27;
    ck_assert_double_eq_tol(l.trend.steps_to_limit, head / 3, 1e-6);
    /* Evidence: the leak's size, counts at the window's ends. */
    ck_assert_uint_eq(l.ev.size, 3 * MiB);
    ck_assert_uint_eq(l.ev.to - l.ev.from, 127);
    ck_assert_uint_eq(l.ev.to, 200);
    gm_leak_free(&l);
    ck_assert_ptr_null(l.pts);
    /* A ring that lost events: the count before the window is unknown,
     * the rise is known. */
    in.lost = 5;
    gm_leak_analyse(&in, &l);
    ck_assert_uint_eq(l.ev.size, 3 * MiB);
    ck_assert_uint_eq(l.ev.from, UINT64_MAX);
    ck_assert_uint_eq(l.ev.to, 127);
    gm_leak_free(&l);
}
END_TEST

/* The evidence counts in the ring's order, whatever its time stamps say:
 * a step mark is stamped by another clock than an allocation (the
 * system's, not the thread's tick reading), so under load a mark may
 * carry a time after the allocation that follows it, or before the one
 * that precedes it. The counts at the window's ends stay those of the
 * ring: the leaks up to the mark that closes its first point (73 of
 * them: the window is the last 128 of 199 points), and all 200. */
START_TEST(evidence_in_ring_order)
{
    static const int64_t skew[] = { 0, 850000, -850000 }; /* 8.5 events */
    for (size_t k = 0; k < sizeof skew / sizeof skew[0]; k++) {
        trainlike(200, 3 * MiB, true);
        for (size_t i = 0; i < nring; i++)
            if (ring[i].kind == GM_EV_STEP)
                ring[i].ts_ns = (uint64_t)((int64_t)ring[i].ts_ns + skew[k]);
        struct gm_leak_input in = input(true);
        struct gm_leak l;
        ck_assert_int_eq(gm_leak_analyse(&in, &l), 0);
        ck_assert_int_eq(l.trend.verdict, GM_TREND_GROWS);
        ck_assert_uint_eq(l.ev.size, 3 * MiB);
        ck_assert_msg(l.ev.from == 73 && l.ev.to == 200,
                      "skew %lld ns: rose from %llu to %llu, not 73 to 200",
                      (long long)skew[k], (unsigned long long)l.ev.from,
                      (unsigned long long)l.ev.to);
        gm_leak_free(&l);
    }
}
END_TEST

/* n one-second history buckets from t = 1 s, used growing 30 MiB a
 * bucket (floor 500 MiB up, peaks 100 MiB above), 10 steps and 100
 * events each. */
static void growing_history(struct gm_hist_point *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        memset(&h[i], 0, sizeof h[i]);
        h[i].start_ns = 1000000000ull * (i + 1);
        h[i].end_ns = h[i].start_ns + 1000000000ull;
        h[i].used_min = 500 * MiB + i * 30 * MiB;
        h[i].used_max = h[i].used_min + 100 * MiB;
        h[i].used_last = h[i].used_min + 10 * MiB;
        h[i].steps = 10 * (i + 1);
        h[i].allocs = h[i].frees = 50;
    }
}

/* The ring lost the run: the analysis has n history buckets h, a 64 GiB
 * limit. */
static void lost_ring_with_history(struct gm_leak_input *in,
                                   const struct gm_hist_point *h, size_t n)
{
    in->lost = 100000;
    in->hist = h;
    in->nhist = n;
    in->limit = 64ull << 30;
}

/* A context's end on device 0 after the records so far: one CTX_FREED
 * for everything of device 0 still live (count, bytes), the time its
 * releases began in extra. */
static void ctx_end(void)
{
    uint64_t live = 0;
    for (size_t i = 0; i < nring; i++) {
        if (ring[i].dev != 0)
            continue;
        if (ring[i].kind == GM_EV_ALLOC)
            live++;
        else if (ring[i].kind == GM_EV_FREE)
            live--;
        else if (ring[i].kind == GM_EV_CTX_FREED)
            live -= ring[i].addr;
    }
    uint64_t began = now_ns + 1;
    rec(GM_EV_CTX_FREED, 0, used_now);
    struct gm_abi_record *r = &ring[nring - 1];
    r->api = GM_API_CTX_END;
    r->addr = live;
    r->extra = began;
    used_now = 0;
    r->used_after = 0;
}

/* Steps from..to of the trainlike loop, marked: each leaks `leak` and
 * makes three 8 MiB transients. */
static void steps(size_t from, size_t to, uint64_t leak)
{
    for (size_t s = from; s <= to; s++) {
        rec(GM_EV_ALLOC, 0, leak);
        for (int i = 0; i < 3; i++)
            rec(GM_EV_ALLOC, 0, 8 * MiB);
        for (int i = 0; i < 3; i++)
            rec(GM_EV_FREE, 0, 8 * MiB);
        rec(GM_EV_STEP, 0, s);
    }
}

/* A phase: the weights (four 4 MiB blocks, kept), then steps from..to. */
static void phase(size_t from, size_t to, uint64_t leak)
{
    for (int i = 0; i < 4; i++)
        rec(GM_EV_ALLOC, 0, 4 * MiB);
    steps(from, to, leak);
}

/* Contexts that end (docs/metrics.md, "context freed"): the driver's
 * frees at an end are not the program's, so a run that ends its context
 * at its exit reads as one that did not, and after a reset between two
 * phases the analysis is the latest phase's: its rate, its live count. */
START_TEST(context_end_phases)
{
    nring = 0;
    now_ns = 1000000000ull;
    used_now = 0;
    phase(1, 200, 3 * MiB);
    ctx_end();
    struct gm_leak_input in = input(true);
    in.live_end = 0; /* all of it freed with the context */
    struct gm_leak l;
    ck_assert_int_eq(gm_leak_analyse(&in, &l), 0);
    ck_assert_int_eq(l.trend.verdict, GM_TREND_GROWS);
    ck_assert_double_eq_tol(l.trend.bytes_per_step, 3.0 * MiB, 1e-3);
    ck_assert_uint_eq(l.npts, 199);
    ck_assert_uint_eq(l.pts[l.npts - 1].live, 4 + 200);
    ck_assert_uint_eq(l.pts[l.npts - 1].floor, 16 * MiB + 199 * 3 * MiB);
    ck_assert_int_ge(l.pts[l.npts - 1].frag_ppm, 0); /* the whole run: known */
    ck_assert_uint_eq(l.ev.to, 200);
    gm_leak_free(&l);
    /* A second phase after the reset, leaking 1 MiB a step, then its end. */
    phase(201, 300, MiB);
    ctx_end();
    in = input(true);
    in.live_end = 0;
    ck_assert_int_eq(gm_leak_analyse(&in, &l), 0);
    ck_assert_int_eq(l.trend.verdict, GM_TREND_GROWS);
    ck_assert_double_eq_tol(l.trend.bytes_per_step, 1.0 * MiB, 1e-3);
    ck_assert_uint_eq(l.npts, 99);
    ck_assert_uint_eq(l.pts[l.npts - 1].live, 4 + 100);
    ck_assert_uint_eq(l.pts[l.npts - 1].floor, 16 * MiB + 99 * MiB);
    ck_assert_uint_eq(l.ev.size, MiB);
    ck_assert_uint_eq(l.ev.to, 100);
    gm_leak_free(&l);
}
END_TEST

/* An end that left other allocations live (a helper context's one block)
 * is inside the phase: the series goes on through it, its live count
 * drops by the block, and a size's count before the window is no longer
 * known from the records. */
START_TEST(context_end_partial)
{
    nring = 0;
    now_ns = 1000000000ull;
    used_now = 0;
    rec(GM_EV_ALLOC, 0, 8 * MiB); /* the helper context's block */
    phase(1, 50, 3 * MiB);
    rec(GM_EV_CTX_FREED, 0, 8 * MiB);
    ring[nring - 1].api = GM_API_CTX_END;
    ring[nring - 1].addr = 1;
    used_now -= 8 * MiB;
    ring[nring - 1].used_after = used_now;
    steps(51, 100, 3 * MiB);
    struct gm_leak_input in = input(true);
    in.live_end = 4 + 100; /* the helper's block went with its context */
    struct gm_leak l;
    ck_assert_int_eq(gm_leak_analyse(&in, &l), 0);
    ck_assert_uint_eq(l.npts, 99);
    ck_assert_uint_eq(l.pts[l.npts - 1].live, 4 + 100);
    ck_assert_uint_eq(l.pts[10].live, 1 + 4 + 12); /* step 12: before the end */
    /* the floor drops by the block at the end: the fit bends a little */
    ck_assert_int_eq(l.trend.verdict, GM_TREND_GROWS);
    ck_assert_double_eq_tol(l.trend.bytes_per_step, 3.0 * MiB, 0.05 * 3 * MiB);
    ck_assert_int_lt(l.pts[l.npts - 1].frag_ppm, 0); /* blocks unknown */
    ck_assert_uint_eq(l.ev.size, 3 * MiB);
    ck_assert_uint_eq(l.ev.from, UINT64_MAX);
    gm_leak_free(&l);
}
END_TEST

/* A ring that holds none of the device's changes, only its context's end
 * at the exit (another device's records pushed them out): the history is
 * the whole run, not cut before it. */
START_TEST(context_end_history_only)
{
    static struct gm_hist_point h[300];
    growing_history(h, 300);
    nring = 0;
    now_ns = 302000000000ull;
    for (int i = 0; i < 100; i++)
        rec(GM_EV_ALLOC, 1, MiB);
    rec(GM_EV_CTX_FREED, 0, 9000 * MiB);
    ring[nring - 1].api = GM_API_CTX_END;
    ring[nring - 1].addr = 3000;
    ring[nring - 1].extra = now_ns - 1000;
    struct gm_leak_input in = input(true);
    in.live_end = 0;
    lost_ring_with_history(&in, h, 300);
    struct gm_leak l;
    gm_leak_analyse(&in, &l);
    ck_assert(l.from_history);
    ck_assert_uint_eq(l.npts, 300);
    ck_assert_int_eq(l.trend.verdict, GM_TREND_GROWS);
    gm_leak_free(&l);
}
END_TEST

/* More steps than the series keeps: the most recent, in order. */
START_TEST(long_series)
{
    trainlike(17000, MiB, true);
    struct gm_leak_input in = input(true);
    in.limit = 0;
    struct gm_leak l;
    gm_leak_analyse(&in, &l);
    ck_assert_uint_eq(l.npts, GM_LEAK_SERIES_MAX);
    ck_assert_double_eq(l.pts[0].step, 17000 - GM_LEAK_SERIES_MAX + 1);
    for (size_t i = 1; i < l.npts; i++)
        if (l.pts[i].step != l.pts[i - 1].step + 1)
            ck_abort_msg("point %zu: step %g after %g", i, l.pts[i].step,
                         l.pts[i - 1].step);
    ck_assert_double_eq(l.trend.step_now, 17000);
    ck_assert_double_eq_tol(l.trend.bytes_per_step, (double)MiB, 1e-3);
    gm_leak_free(&l);
}
END_TEST

START_TEST(detected_steps)
{
    trainlike(200, 3 * MiB, false);
    struct gm_leak_input in = input(false);
    struct gm_leak l;
    ck_assert_int_eq(gm_leak_analyse(&in, &l), 0);
    ck_assert_int_eq(l.steps_from, GM_STEP_DETECTED);
    ck_assert_uint_eq(l.period, 7);
    ck_assert_int_eq(l.trend.verdict, GM_TREND_GROWS);
    ck_assert_double_eq_tol(l.trend.bytes_per_step, 3.0 * MiB, 1e-3);
    /* The setup (rare sizes) is no step; the first window starts at the
     * end of step 1; the last whole window is left out. */
    ck_assert_double_eq(l.pts[0].step, 2);
    ck_assert_uint_eq(l.pts[0].floor, 16 * MiB + 3 * MiB);
    ck_assert_double_eq(l.trend.step_now, 199);
    ck_assert_uint_eq(l.pts[l.npts - 1].floor, 16 * MiB + 198 * 3 * MiB);
    ck_assert_uint_eq(l.ev.size, 3 * MiB);
    gm_leak_free(&l);
    /* An evaluation buffer every 10 steps, kept over 3 boundaries: the
     * step is still one training step, not ten. */
    nring = 0;
    now_ns = 1000000000ull;
    used_now = 0;
    for (size_t s = 1; s <= 300; s++) {
        rec(GM_EV_ALLOC, 0, 3 * MiB);
        for (int i = 0; i < 3; i++)
            rec(GM_EV_ALLOC, 0, 8 * MiB);
        for (int i = 0; i < 3; i++)
            rec(GM_EV_FREE, 0, 8 * MiB);
        if (s % 10 == 0)
            rec(GM_EV_ALLOC, 0, 256 * MiB);
        if (s % 10 == 3 && s > 3)
            rec(GM_EV_FREE, 0, 256 * MiB);
    }
    in = input(false);
    gm_leak_analyse(&in, &l);
    ck_assert_uint_eq(l.period, 7);
    ck_assert_int_eq(l.trend.verdict, GM_TREND_GROWS);
    ck_assert_double_eq_tol(l.trend.bytes_per_step, 3.0 * MiB, 1e-3);
    ck_assert_uint_eq(l.trend.excursion, 256 * MiB + 27 * MiB);
    gm_leak_free(&l);
    /* Steady: no leak, no verdict. */
    trainlike(200, 0, false);
    in = input(false);
    gm_leak_analyse(&in, &l);
    ck_assert_uint_eq(l.period, 6);
    ck_assert_int_eq(l.trend.verdict, GM_TREND_STEADY);
    ck_assert_uint_eq(l.ev.size, 0);
    gm_leak_free(&l);
}
END_TEST

/* The ring lost the run and holds 20 steps: the history's 300 buckets
 * (10 steps each, 30 MiB more each) are judged instead. */
START_TEST(history_when_ring_lost)
{
    static struct gm_hist_point h[300];
    growing_history(h, 300);
    trainlike(20, 3 * MiB, true);
    struct gm_leak_input in = input(true);
    lost_ring_with_history(&in, h, 300);
    struct gm_leak l;
    gm_leak_analyse(&in, &l);
    ck_assert(l.from_history);
    ck_assert_uint_eq(l.npts, 300);
    ck_assert_uint_le(l.trend.points, GM_TREND_MAX_POINTS);
    ck_assert_int_eq(l.trend.verdict, GM_TREND_GROWS);
    ck_assert_double_eq_tol(l.trend.bytes_per_step, 3.0 * MiB, 0.05 * 3 * MiB);
    ck_assert_double_eq_tol(l.trend.bytes_per_second, 30.0 * MiB, 0.05 * 30 * MiB);
    gm_leak_free(&l);
    /* Without marks the history's steps are its events over the period. */
    trainlike(20, 3 * MiB, false);
    in = input(false);
    in.lost = 100000;
    in.hist = h;
    in.nhist = 300;
    gm_leak_analyse(&in, &l);
    ck_assert(l.from_history);
    ck_assert_int_eq(l.steps_from, GM_STEP_DETECTED);
    ck_assert_uint_eq(l.period, 7);
    /* 100 events per bucket, 7 per step: 30 MiB per 100/7 steps. */
    ck_assert_double_eq_tol(l.trend.bytes_per_step, 30.0 * MiB * 7 / 100,
                            0.05 * 30 * MiB * 7 / 100);
    gm_leak_free(&l);
}
END_TEST

START_TEST(json_object)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gm_leak_json(f, NULL);
    fclose(f);
    ck_assert_str_eq(buf, "\"leak\":{\"verdict\":\"unknown\",\"bytes_per_step\":null,"
                          "\"bytes_per_second\":null,\"steps\":null,"
                          "\"seconds_to_limit\":null,\"steps_from\":\"none\","
                          "\"source\":null,\"points\":0,\"window_steps\":null,"
                          "\"window_seconds\":null,\"step_now\":null}");
    free(buf);
    trainlike(200, 3 * MiB, true);
    struct gm_leak_input in = input(true);
    struct gm_leak l;
    gm_leak_analyse(&in, &l);
    f = open_memstream(&buf, &len);
    gm_leak_json(f, &l);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "\"verdict\":\"grows\",\"bytes_per_step\":3145728,"));
    ck_assert_ptr_nonnull(strstr(buf, "\"steps\":1152,"));
    ck_assert_ptr_nonnull(strstr(buf, "\"steps_from\":\"marked\",\"source\":\"ring\","
                                      "\"points\":128,\"window_steps\":127,"));
    ck_assert_ptr_nonnull(strstr(buf, "\"step_now\":200}"));
    free(buf);
    gm_leak_free(&l);
    /* Steady: the figures are null. */
    trainlike(200, 0, true);
    in = input(true);
    gm_leak_analyse(&in, &l);
    f = open_memstream(&buf, &len);
    gm_leak_json(f, &l);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "\"verdict\":\"steady\",\"bytes_per_step\":null,"
                                      "\"bytes_per_second\":null,\"steps\":null,"
                                      "\"seconds_to_limit\":null,"));
    free(buf);
    gm_leak_free(&l);
}
END_TEST

/* Records a hostile or broken writer could leave: any kind, device, size,
 * used and time. The analysis ends, with figures or without. */
START_TEST(hostile_records)
{
    for (int rep = 0; rep < 20; rep++) {
        nring = 20000;
        for (size_t i = 0; i < nring; i++) {
            struct gm_abi_record *r = &ring[i];
            r->ts_ns = rnd() << (rep % 3 ? 20 : 0);
            r->kind = (uint16_t)(rnd() % 20);
            r->dev = (uint32_t)(rnd() % 3);
            r->size = rep % 2 ? rnd() : rnd() % 4;
            r->used_after = rep % 4 ? rnd() : (uint64_t)-1 - rnd() % 8;
            /* context ends (kind 18) freeing any count, at any time */
            r->addr = rep % 2 ? (uint64_t)-1 - rnd() % 8 : rnd() % 64;
            r->extra = rnd();
            r->api = (uint16_t)(rnd() % 30);
        }
        struct gm_leak_input in = input(rep % 2);
        in.lost = rep;
        struct gm_leak l;
        ck_assert_int_eq(gm_leak_analyse(&in, &l), 0);
        ck_assert_int_le(l.trend.verdict, GM_TREND_GROWS);
        gm_leak_free(&l);
    }
    struct gm_leak l;
    ck_assert_int_eq(gm_leak_analyse(NULL, &l), -1);
    struct gm_leak_input none = {0};
    ck_assert_int_eq(gm_leak_analyse(&none, NULL), -1);
    ck_assert_int_eq(gm_leak_analyse(&none, &l), 0);
    ck_assert_int_eq(l.trend.verdict, GM_TREND_UNKNOWN);
    gm_leak_free(&l);
    none.n = 5; /* records promised, none given */
    ck_assert_int_eq(gm_leak_analyse(&none, &l), -1);
}
END_TEST

static Suite *leak_suite(void)
{
    Suite *s = suite_create("leak");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, period_exact);
    tcase_add_test(tc, period_with_strays_and_noise);
    tcase_add_test(tc, marked_steps);
    tcase_add_test(tc, evidence_in_ring_order);
    tcase_add_test(tc, context_end_phases);
    tcase_add_test(tc, context_end_partial);
    tcase_add_test(tc, context_end_history_only);
    tcase_add_test(tc, detected_steps);
    tcase_add_test(tc, long_series);
    tcase_add_test(tc, history_when_ring_lost);
    tcase_add_test(tc, json_object);
    tcase_add_test(tc, hostile_records);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(leak_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
