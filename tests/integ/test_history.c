/*
 * tests/integ/test_history.c — the segment's history, steps, marks and OOM
 * snapshot of real runs under the shim (tests/progs/stepleak over the
 * simulated driver, segments kept with GPUMEM_KEEP=1 and read with the
 * reader library):
 *   - with a large ring, the history equals, bucket by bucket, the curve
 *     recomputed from every event of the ring (an independent model);
 *   - with a 1,024-event ring that lost most events, the history still
 *     starts at second 0 and has the same totals, extremes and end as the
 *     large-ring run of the same workload (stepleak, and gpumem-trainsim
 *     with marked steps);
 *   - a known workload refused at its limit: the OOM snapshot holds the
 *     exact request, used, limit, step, classes and steps, and the exit
 *     report and `gpumem report` print the same refusal line;
 *   - steps and marks: the counters, one STEP record per step, the labels
 *     sanitised (NULL, 300 bytes, invalid UTF-8, a mark made before any
 *     CUDA call).
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integ/gm_spawn.h"
#include "tools/lib/reader.h"

#define MiB (1ull << 20)
#define SEC 1000000000ull

static char prefix[64];

static void set_prefix(void)
{
    snprintf(prefix, sizeof prefix, "gmhist%ld", (long)getpid());
}

/* Runs prog kept under the shim; returns its pid (from a "pid N" line
 * of its output, or, when prog prints none, -1), the whole output in
 * out. */
static int run_prog_kept(const char *prog, const char *ring, const char *ctx,
                         const char *limit, const char *const *args,
                         char *out, size_t cap)
{
    char pre[96], rin[64], cx[64], lim[64];
    snprintf(pre, sizeof pre, "GPUMEM_SHM_PREFIX=%s", prefix);
    snprintf(rin, sizeof rin, "GPUMEM_RING_EVENTS=%s", ring);
    snprintf(cx, sizeof cx, "SIMCUDA_CONTEXT=%s", ctx);
    snprintf(lim, sizeof lim, "GPUMEM_LIMIT=%s", limit);
    const char *env[] = { pre, rin, cx, lim, "GPUMEM_KEEP=1",
                          "GPUMEM_REPORT=stderr", NULL };
    const char *argv[16] = { prog };
    for (int i = 0; args[i] && i < 14; i++)
        argv[i + 1] = args[i];
    int rc = gm_run(env, 1, argv, out, cap);
    ck_assert_msg(rc == 0, "%s exited %d: %s", prog, rc, out);
    const char *p = strstr(out, "pid ");
    return p ? atoi(p + 4) : -1;
}

static int run_kept(const char *ring, const char *ctx, const char *limit,
                    const char *const *args, char *out, size_t cap)
{
    int pid = run_prog_kept(gm_bpath("tests/progs/stepleak"), ring, ctx,
                            limit, args, out, cap);
    ck_assert_int_gt(pid, 0);
    return pid;
}

/* The only kept segment under our prefix (trainsim prints no pid). */
static int only_kept(void)
{
    int pids[4];
    int n = gm_reader_list("/dev/shm", prefix, pids, 4);
    ck_assert_int_eq(n, 1);
    return pids[0];
}

static void open_kept(struct gm_seg *s, int pid)
{
    char err[256];
    ck_assert_msg(gm_seg_open(s, "/dev/shm", prefix, pid, err, sizeof err) ==
                      0, "%s", err);
}

static void remove_kept(struct gm_seg *s, int pid)
{
    gm_seg_close(s);
    char path[256];
    snprintf(path, sizeof path, "/dev/shm/%s.%d", prefix, pid);
    unlink(path);
}

/* ---- the curve ------------------------------------------------------------- */

/* Per-second buckets recomputed from the ring's events of device 0, the
 * way docs/abi.md defines them. */
struct model {
    size_t n;
    struct gm_hist_point p[64];
};

static void model_from_ring(const struct gm_seg *s, uint64_t base,
                            struct model *m)
{
    static struct gm_abi_record recs[1u << 16];
    struct gm_cursor c;
    gm_cursor_init(&c, s, false);
    uint64_t lost = 0;
    size_t n = gm_seg_drain(s, &c, recs, 1u << 16, GM_DRAIN_FLUSH, &lost);
    ck_assert_uint_eq(lost, 0);
    memset(m, 0, sizeof *m);
    uint64_t used = 0, live = 0;
    bool open = false;
    struct gm_hist_point *b = NULL;
    for (size_t i = 0; i < n; i++) {
        const struct gm_abi_record *r = &recs[i];
        if (r->dev != 0)
            continue;
        uint64_t idx = (r->ts_ns - base) / SEC;
        if (!open || idx > b->index) {
            ck_assert_uint_lt(m->n, 64);
            b = &m->p[m->n++];
            b->index = idx;
            b->used_min = b->used_max = b->used_last = used;
            open = true;
        }
        bool sets_used = r->kind == GM_EV_ALLOC || r->kind == GM_EV_FREE ||
                         r->kind == GM_EV_OOM || r->kind == GM_EV_CONTEXT ||
                         r->kind == GM_EV_CONTEXT_END;
        if (sets_used) {
            used = r->used_after;
            if (used < b->used_min)
                b->used_min = used;
            if (used > b->used_max)
                b->used_max = used;
        }
        b->allocs += r->kind == GM_EV_ALLOC;
        b->frees += r->kind == GM_EV_FREE;
        b->refusals += r->kind == GM_EV_OOM;
        live += r->kind == GM_EV_ALLOC;
        live -= r->kind == GM_EV_FREE;
        b->used_last = used;
        b->live_allocs = live;
    }
}

static size_t history(const struct gm_seg *s, struct gm_hist_point *p)
{
    char err[256] = "";
    int n = gm_seg_history(s, 0, p, GM_HIST_POINTS_MAX, err, sizeof err);
    ck_assert_msg(n > 0, "no history: %s", err);
    return (size_t)n;
}

struct totals {
    uint64_t allocs, frees, max, last, first_index;
};

static struct totals totals_of(const struct gm_hist_point *p, size_t n)
{
    struct totals t = { 0, 0, 0, 0, p[0].index };
    for (size_t i = 0; i < n; i++) {
        t.allocs += p[i].allocs;
        t.frees += p[i].frees;
        if (p[i].used_max > t.max)
            t.max = p[i].used_max;
        t.last = p[i].used_last;
    }
    return t;
}

START_TEST(test_small_ring_keeps_the_curve)
{
    set_prefix();
    /* 6 steps of 200 ms, each 1 MiB leaked, 8 MiB transient, 150 MiB of
     * churn: ~1.2 s, ~1,840 events. */
    static const char *const args[] = { "6", "67108864", "1048576",
                                        "8388608", "4", "200", "150", NULL };
    static char out[65536];
    int big = run_kept("1048576", "32M", "none", args, out, sizeof out);
    int small = run_kept("1024", "32M", "none", args, out, sizeof out);
    struct gm_seg sb, ss;
    open_kept(&sb, big);
    open_kept(&ss, small);
    struct gm_snapshot *snap = malloc(sizeof *snap);
    ck_assert_int_ge(gm_seg_snapshot(&ss, snap), 0);
    ck_assert_uint_gt(gm_snapshot_events_lost(snap), 700); /* it did lose */
    uint64_t allocs = snap->dev[0].allocs, frees = snap->dev[0].frees;
    uint64_t peak = snap->dev[0].peak;
    ck_assert_int_ge(gm_seg_snapshot(&sb, snap), 0);
    ck_assert_uint_eq(gm_snapshot_events_lost(snap), 0);
    uint64_t base = snap->hist_base_ns;

    struct gm_hist_point *pb = calloc(GM_HIST_POINTS_MAX, sizeof *pb);
    struct gm_hist_point *ps = calloc(GM_HIST_POINTS_MAX, sizeof *ps);
    size_t nb = history(&sb, pb), ns = history(&ss, ps);
    ck_assert_uint_ge(nb, 2); /* the run spans several seconds */

    /* The large ring: the history is the curve of its events. The exit
     * may add one last bucket without an event (the final figures
     * written at exit). */
    struct model m;
    model_from_ring(&sb, base, &m);
    ck_assert_uint_ge(nb, m.n);
    ck_assert_uint_le(nb, m.n + 1);
    for (size_t i = 0; i < m.n; i++) {
        ck_assert_uint_eq(pb[i].tier, 0);
        ck_assert_uint_eq(pb[i].index, m.p[i].index);
        ck_assert_uint_eq(pb[i].used_min, m.p[i].used_min);
        ck_assert_uint_eq(pb[i].used_max, m.p[i].used_max);
        ck_assert_uint_eq(pb[i].used_last, m.p[i].used_last);
        ck_assert_uint_eq(pb[i].allocs, m.p[i].allocs);
        ck_assert_uint_eq(pb[i].frees, m.p[i].frees);
        ck_assert_uint_eq(pb[i].live_allocs, m.p[i].live_allocs);
    }
    if (nb == m.n + 1) {
        ck_assert_uint_eq(pb[nb - 1].allocs + pb[nb - 1].frees, 0);
        ck_assert_uint_eq(pb[nb - 1].used_min, pb[nb - 2].used_last);
    }

    /* The small ring: from second 0, the same totals, peak and end. */
    struct totals tb = totals_of(pb, nb), ts = totals_of(ps, ns);
    ck_assert_uint_eq(ts.first_index, 0);
    ck_assert_uint_eq(tb.first_index, 0);
    ck_assert_uint_eq(ts.allocs, allocs);
    ck_assert_uint_eq(ts.frees, frees);
    ck_assert_uint_eq(ts.max, peak);
    ck_assert_uint_eq(ts.allocs, tb.allocs);
    ck_assert_uint_eq(ts.frees, tb.frees);
    ck_assert_uint_eq(ts.max, tb.max);
    ck_assert_uint_eq(ts.last, tb.last);
    /* Contiguous coverage from second 0 to the end (no bucket missing:
     * the program allocates every 250 ms). */
    for (size_t i = 1; i < ns; i++)
        ck_assert_uint_eq(ps[i].index, ps[i - 1].index + 1);
    /* The steps in the buckets end at the step count. */
    ck_assert_uint_eq(ps[ns - 1].steps, 6);
    free(pb);
    free(ps);
    free(snap);
    remove_kept(&sb, big);
    remove_kept(&ss, small);
}
END_TEST

START_TEST(test_trainsim_small_ring_same_curve)
{
    set_prefix();
    /* 40 steps of 30 ms with marked steps: ~1.2 s, ~1,950 events. */
    static const char *const args[] = { "--steps", "40", "--step-time",
                                        "30ms", "--mark-steps", "--quiet",
                                        NULL };
    static char out[65536];
    const char *prog = gm_bpath("gpumem-trainsim");
    run_prog_kept(prog, "1048576", "300M", "none", args, out, sizeof out);
    int big = only_kept();
    char path[256];
    snprintf(path, sizeof path, "/dev/shm/%s.%d", prefix, big);
    struct gm_seg sb, ss;
    open_kept(&sb, big);
    unlink(path); /* the open segment stays readable */
    run_prog_kept(prog, "1024", "300M", "none", args, out, sizeof out);
    int small = only_kept();
    open_kept(&ss, small);
    struct gm_snapshot *snap = malloc(sizeof *snap);
    ck_assert_int_ge(gm_seg_snapshot(&ss, snap), 0);
    ck_assert_uint_gt(gm_snapshot_events_lost(snap), 700);
    ck_assert_uint_eq(snap->steps, 40);
    uint64_t peak = snap->dev[0].peak;
    ck_assert_int_ge(gm_seg_snapshot(&sb, snap), 0);
    ck_assert_uint_eq(gm_snapshot_events_lost(snap), 0);
    uint64_t base = snap->hist_base_ns;
    struct gm_hist_point *pb = calloc(GM_HIST_POINTS_MAX, sizeof *pb);
    struct gm_hist_point *ps = calloc(GM_HIST_POINTS_MAX, sizeof *ps);
    size_t nb = history(&sb, pb), ns = history(&ss, ps);
    /* The large ring's run: its history is its events' curve. */
    struct model m;
    model_from_ring(&sb, base, &m);
    ck_assert_uint_ge(nb, m.n);
    for (size_t i = 0; i < m.n; i++) {
        ck_assert_uint_eq(pb[i].index, m.p[i].index);
        ck_assert_uint_eq(pb[i].used_min, m.p[i].used_min);
        ck_assert_uint_eq(pb[i].used_max, m.p[i].used_max);
        ck_assert_uint_eq(pb[i].used_last, m.p[i].used_last);
        ck_assert_uint_eq(pb[i].allocs, m.p[i].allocs);
        ck_assert_uint_eq(pb[i].frees, m.p[i].frees);
    }
    /* The 1,024-event ring's run: from second 0, the same curve as far as
     * two runs can be compared (the buckets' edges fall on different
     * events): totals, extremes, the end, the steps. */
    struct totals tb = totals_of(pb, nb), ts = totals_of(ps, ns);
    ck_assert_uint_eq(ts.first_index, 0);
    ck_assert_uint_eq(ps[0].used_min, 0);
    ck_assert_uint_eq(ts.allocs, tb.allocs);
    ck_assert_uint_eq(ts.frees, tb.frees);
    ck_assert_uint_eq(ts.max, tb.max);
    ck_assert_uint_eq(ts.max, peak);
    ck_assert_uint_eq(ts.last, tb.last);
    ck_assert_uint_eq(ps[ns - 1].steps, 40);
    ck_assert_uint_eq(pb[nb - 1].steps, 40);
    free(pb);
    free(ps);
    free(snap);
    gm_seg_close(&sb);
    remove_kept(&ss, small);
}
END_TEST

/* ---- the OOM snapshot -------------------------------------------------------- */

START_TEST(test_oom_snapshot_known_figures)
{
    set_prefix();
    /* 128 MiB of context and 128 MiB of weights under 1 GiB; each step
     * leaks 16 MiB and makes a 128 MiB transient allocation: step 40's
     * transient is refused with 128 + 128 + 41 * 16 = 912 MiB used. */
    static const char *const args[] = { "1000", "134217728", "16777216",
                                        "134217728", "10", NULL };
    static char out[65536];
    int pid = run_kept("65536", "128M", "1G", args, out, sizeof out);
    ck_assert_msg(strstr(out, "refused 134217728 at step 40") != NULL, "%s",
                  out);
    static const char line[] =
        "gpumem: device 0: refused 128 MiB at step 40: 912 MiB used, 72% in "
        "41 blocks of 16 MiB allocated over the last 40 steps";
    ck_assert_msg(strstr(out, line) != NULL, "no \"%s\" in:\n%s", line, out);

    struct gm_seg s;
    open_kept(&s, pid);
    struct gm_abi_oom o;
    char err[256];
    ck_assert_int_eq(gm_seg_oom(&s, 0, &o, err, sizeof err), 1);
    ck_assert_uint_eq(o.state, GM_ABI_OOM_DONE);
    ck_assert_uint_eq(o.size, 128 * MiB);
    ck_assert_uint_eq(o.api, GM_API_MEM_ALLOC);
    ck_assert_uint_eq(o.used, 912 * MiB);
    ck_assert_uint_eq(o.limit, 1024 * MiB);
    ck_assert_uint_eq(o.step, 40);
    ck_assert_uint_eq(o.live_allocs, 42);
    ck_assert_uint_eq(o.live_bytes, (128 + 41 * 16) * MiB);
    ck_assert_uint_eq(o.nclasses, 2);
    ck_assert_uint_eq(o.other_count, 0);
    ck_assert(o.flags & GM_ABI_OOMF_FRAG);
    const struct gm_abi_oom_class *c = o.classes;
    ck_assert_uint_eq(c[0].api, GM_API_MEM_ALLOC);
    ck_assert_uint_eq(c[0].size_log2, 24);
    ck_assert_uint_eq(c[0].size_min, 16 * MiB);
    ck_assert_uint_eq(c[0].size_max, 16 * MiB);
    ck_assert_uint_eq(c[0].count, 41);
    ck_assert_uint_eq(c[0].bytes, 41 * 16 * MiB);
    ck_assert_uint_eq(c[0].oldest_step, 0);
    ck_assert_uint_eq(c[0].newest_step, 40);
    ck_assert_uint_eq(c[1].size_min, 128 * MiB);
    ck_assert_uint_eq(c[1].count, 1);
    ck_assert_uint_eq(c[1].oldest_step, 0);
    /* Ages: births before the refusal, the oldest first, within the
     * run (well under a minute). */
    ck_assert_uint_ne(c[0].oldest_ns, 0);
    ck_assert_uint_le(c[0].oldest_ns, c[0].newest_ns);
    ck_assert_uint_le(c[0].newest_ns, o.ts_ns + 17000000); /* 16.8 ms units */
    ck_assert_uint_lt(o.ts_ns - c[0].oldest_ns, 60 * SEC);
    /* Only the first refusal: one snapshot; the segment counts 1. */
    struct gm_snapshot *snap = malloc(sizeof *snap);
    ck_assert_int_ge(gm_seg_snapshot(&s, snap), 0);
    ck_assert_uint_eq(snap->dev[0].refusals, 1);
    ck_assert_uint_eq(snap->oom[0].step, 40);
    ck_assert_uint_eq(snap->steps, 40);
    free(snap);
    gm_seg_close(&s);

    /* gpumem report prints the same line from the kept segment. */
    char spid[16], pre[96];
    snprintf(spid, sizeof spid, "%d", pid);
    snprintf(pre, sizeof pre, "GPUMEM_SHM_PREFIX=%s", prefix);
    const char *env[] = { pre, NULL };
    const char *argv[] = { gm_bpath("gpumem"), "report", spid, NULL };
    static char rep[65536];
    ck_assert_int_eq(gm_run(env, 0, argv, rep, sizeof rep), 0);
    ck_assert_msg(strstr(rep, line) != NULL, "no \"%s\" in:\n%s", line, rep);
    char path[256];
    snprintf(path, sizeof path, "/dev/shm/%s.%d", prefix, pid);
    unlink(path);
}
END_TEST

START_TEST(test_oom_snapshot_static_arena)
{
    set_prefix();
    /* Static mode: 1 GiB limit, 128 MiB of context, so a 896 MiB arena;
     * 128 MiB of weights, 16 MiB a step and a 128 MiB transient: the
     * arena has no 128 MiB block left at step 40. */
    static const char *const args[] = { "1000", "134217728", "16777216",
                                        "134217728", NULL };
    char pre[96];
    snprintf(pre, sizeof pre, "GPUMEM_SHM_PREFIX=%s", prefix);
    const char *env[] = { pre, "GPUMEM_RING_EVENTS=65536",
                          "SIMCUDA_CONTEXT=128M", "GPUMEM_LIMIT=1G",
                          "GPUMEM_MODE=static", "GPUMEM_KEEP=1",
                          "GPUMEM_REPORT=stderr", NULL };
    const char *argv[8] = { gm_bpath("tests/progs/stepleak") };
    for (int i = 0; args[i]; i++)
        argv[i + 1] = args[i];
    static char out[65536];
    ck_assert_int_eq(gm_run(env, 1, argv, out, sizeof out), 0);
    int pid = atoi(strstr(out, "pid ") + 4);
    ck_assert_msg(strstr(out, "gpumem: device 0: refused 128 MiB at step ") !=
                      NULL && strstr(out, " used, in the static arena's "
                                          "blocks; largest free gap ") != NULL,
                  "%s", out);
    struct gm_seg s;
    open_kept(&s, pid);
    struct gm_abi_oom o;
    char err[256];
    ck_assert_int_eq(gm_seg_oom(&s, 0, &o, err, sizeof err), 1);
    ck_assert(o.flags & GM_ABI_OOMF_ARENA);
    ck_assert(o.flags & GM_ABI_OOMF_FRAG);
    ck_assert_uint_eq(o.nclasses, 0);
    ck_assert_uint_lt(o.largest_free, 128 * MiB); /* why it was refused */
    ck_assert_uint_eq(o.size, 128 * MiB);
    remove_kept(&s, pid);
}
END_TEST

/* ---- steps and marks -------------------------------------------------------- */

START_TEST(test_steps_and_marks)
{
    set_prefix();
    static const char *const args[] = { "25", "1048576", "4096", "8192",
                                        "10", NULL };
    static char out[65536];
    int pid = run_kept("65536", "32M", "none", args, out, sizeof out);
    struct gm_seg s;
    open_kept(&s, pid);
    ck_assert_uint_eq(gm_seg_steps(&s), 25);
    struct gm_mark_info mk[16];
    char err[256];
    int n = gm_seg_marks(&s, mk, 16, err, sizeof err);
    /* start, NULL, the long one, the invalid one, epochs 0, 1, 2. */
    ck_assert_int_eq(n, 7);
    static const char *const want[] = {
        "start", "", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "bad ?? utf8 ??", "epoch 0", "epoch 1", "epoch 2",
    };
    static const uint64_t steps[] = { 0, 0, 0, 0, 0, 10, 20 };
    for (int i = 0; i < n; i++) {
        ck_assert_uint_eq(mk[i].number, (uint64_t)i);
        ck_assert_str_eq(mk[i].label, want[i]);
        ck_assert_uint_eq(mk[i].step, steps[i]);
    }
    /* Records: one STEP per step on device 0, counting 1..25; one MARK
     * per mark, the first before any device (no device). */
    static struct gm_abi_record recs[4096];
    struct gm_cursor c;
    gm_cursor_init(&c, &s, false);
    uint64_t lost = 0;
    size_t k = gm_seg_drain(&s, &c, recs, 4096, GM_DRAIN_FLUSH, &lost);
    uint64_t nstep = 0, nmark = 0;
    for (size_t i = 0; i < k; i++) {
        if (recs[i].kind == GM_EV_STEP) {
            nstep++;
            ck_assert_uint_eq(recs[i].size, nstep);
            ck_assert_uint_eq(recs[i].dev, 0);
        } else if (recs[i].kind == GM_EV_MARK) {
            ck_assert_uint_eq(recs[i].addr, nmark);
            ck_assert_uint_eq(recs[i].dev,
                              nmark == 0 ? GM_ABI_NO_DEVICE : 0u);
            ck_assert_uint_eq(recs[i].extra, strlen(want[nmark]));
            nmark++;
        }
    }
    ck_assert_uint_eq(nstep, 25);
    ck_assert_uint_eq(nmark, 7);
    remove_kept(&s, pid);
}
END_TEST

static Suite *history_suite(void)
{
    Suite *s = suite_create("history");
    TCase *tc = tcase_create("history");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_small_ring_keeps_the_curve);
    tcase_add_test(tc, test_trainsim_small_ring_same_curve);
    tcase_add_test(tc, test_oom_snapshot_known_figures);
    tcase_add_test(tc, test_oom_snapshot_static_arena);
    tcase_add_test(tc, test_steps_and_marks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(history_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
