/*
 * tests/unit/test_forecast.c — the shim's forecast warning (shim/telemetry/
 * forecast.c) driven by a simulated clock: a device leaking a known
 * amount per second and per step under a limit gets one stderr line and
 * one GM_EV_FORECAST record, with the time and steps left within 10% of
 * the truth, once; a steady workload, a leak too slow to reach the limit
 * within the threshold, a device without a limit and a threshold of 0 get
 * none; a stderr that blocks the warning's line holds no other writer.
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim/telemetry/forecast.h"
#include "shim/telemetry/marks.h"
#include "shim/telemetry/telemetry.h"
#include "shim/telemetry/telwrite.h"
#include "shim/telemetry/trend.h"
#include "tools/lib/reader.h"

#define SEC 1000000000ull
#define MiB (1ull << 20)
#define GiB (1ull << 30)

struct run {
    struct gm_tel t;
    void *mem;
    struct gm_seg seg;
    uint64_t base;
    FILE *err;          /* what went to stderr */
    int saved_err;
};

static void start_q(struct run *r, uint64_t warn_ns, uint64_t limit,
                    bool silent)
{
    struct gm_tel_params p = { .ring_events = 1u << 16, .dev_slots = 1,
                               .policy_summary = "test",
                               .warn_before_ns = warn_ns,
                               .forecast_silent = silent };
    size_t len = gm_tel_layout_size(p.ring_events, 1);
    r->mem = aligned_alloc(64, (len + 63) / 64 * 64);
    ck_assert_ptr_nonnull(r->mem);
    ck_assert_int_eq(gm_tel_open_mem(&r->t, r->mem, len, &p), 0);
    char err[160];
    ck_assert_msg(gm_seg_open_mem(&r->seg, r->mem, len, err, sizeof err) == 0,
                  "%s", err);
    r->base = ((struct gm_abi_header *)r->mem)->hist_base_ns;
    gm_tel_device(&r->t, 0, 80 * GiB, limit, NULL);
    r->err = tmpfile();
    ck_assert_ptr_nonnull(r->err);
    fflush(stderr);
    r->saved_err = dup(2);
    dup2(fileno(r->err), 2);
}

static void start(struct run *r, uint64_t warn_ns, uint64_t limit)
{
    start_q(r, warn_ns, limit, false);
}

static void ev(struct run *r, bool alloc, uint64_t ts, uint64_t size,
               uint64_t used)
{
    struct gm_tel_ev e = { .ts_ns = ts, .size = size, .used = used,
                           .dev = 0, .api = GM_API_MEM_ALLOC,
                           .frag_ppm = GM_TEL_FRAG_KEEP, .addr = 0x1000 };
    if (alloc)
        gm_tel_alloc_ev(&r->t, &e);
    else
        gm_tel_free_ev(&r->t, &e);
}

/* From second `from` on, `seconds` seconds of training, `per_sec` steps
 * a second (counted on from *steps): each step leaks `leak` bytes and
 * makes a 64 MiB transient allocation. */
static void train_at(struct run *r, uint64_t from, uint64_t seconds,
                     unsigned per_sec, uint64_t floor0, uint64_t leak,
                     uint64_t *steps)
{
    uint64_t used = floor0, t0 = r->base + from * SEC;
    ev(r, true, t0 + SEC / 100, floor0, used);
    for (uint64_t s = 0; s < seconds; s++)
        for (unsigned k = 0; k < per_sec; k++) {
            uint64_t ts = t0 + s * SEC + (k + 1) * (SEC / (per_sec + 1));
            used += leak;
            ev(r, true, ts, leak, used);
            ev(r, true, ts + 1000, 64 * MiB, used + 64 * MiB);
            ev(r, false, ts + 2000, 64 * MiB, used);
            gm_tel_step(&r->t, ++*steps);
        }
}

static void train(struct run *r, uint64_t seconds, unsigned per_sec,
                  uint64_t floor0, uint64_t leak)
{
    uint64_t steps = 0;
    train_at(r, 0, seconds, per_sec, floor0, leak, &steps);
}

/* Restores stderr; returns what was written (static buffer). */
static const char *stop_err(struct run *r)
{
    static char text[4096];
    fflush(stderr);
    dup2(r->saved_err, 2);
    close(r->saved_err);
    size_t n = (size_t)ftell(r->err);
    rewind(r->err);
    n = fread(text, 1, n < sizeof text - 1 ? n : sizeof text - 1, r->err);
    text[n] = '\0';
    fclose(r->err);
    return text;
}

/* The forecast records in the ring. */
static unsigned forecasts(struct run *r, struct gm_abi_record *first)
{
    static struct gm_abi_record recs[1u << 16];
    struct gm_cursor c;
    gm_cursor_init(&c, &r->seg, false);
    uint64_t lost = 0;
    size_t n = gm_seg_drain(&r->seg, &c, recs, 1u << 16, GM_DRAIN_FLUSH,
                            &lost);
    unsigned k = 0;
    for (size_t i = 0; i < n; i++)
        if (recs[i].kind == GM_EV_FORECAST && k++ == 0 && first)
            *first = recs[i];
    return k;
}

static void finish(struct run *r)
{
    gm_seg_close(&r->seg);
    gm_tel_close(&r->t, false);
    free(r->mem);
}

START_TEST(test_leak_warns_once_within_10_percent)
{
    struct run r;
    start(&r, 60 * SEC, 8 * GiB);
    /* 16 MiB a step, 2 steps a second: 32 MiB/s from 512 MiB. The
     * warning comes once the forecast drops under 60 s (about 180 s in,
     * when the fitted window no longer holds the first second's jump
     * from 0 to 512 MiB, which would count as an excursion). */
    train(&r, 240, 2, 512 * MiB, 16 * MiB);
    const char *err = stop_err(&r);
    struct gm_abi_record f;
    ck_assert_uint_eq(forecasts(&r, &f), 1);
    ck_assert(gm_forecast_warned(0));
    ck_assert_msg(strstr(err, "gpumem: device 0: the limit (8 GiB) is "
                              "forecast in about ") == err, "%s", err);
    ck_assert_msg(strstr(err, "per step (32 MiB/s)") != NULL, "%s", err);
    ck_assert_ptr_null(strchr(strchr(err, '\n') + 1, '\n')); /* one line */
    /* The truth at the warning: used floor U at its time; the limit less
     * the 64 MiB excursion is reached after (4 GiB - 64 MiB - U) / 32
     * MiB/s seconds, twice that many steps. */
    uint64_t t = (f.ts_ns - r.base) / SEC;
    double floor_true = 512.0 * MiB + 32.0 * MiB * (double)t;
    double secs_true = (8.0 * GiB - 64.0 * MiB - floor_true) / (32.0 * MiB);
    ck_assert_msg(f.size <= 60, "forecast %llu s", (unsigned long long)f.size);
    ck_assert_msg(f.size >= secs_true * 0.9 && f.size <= secs_true * 1.1,
                  "forecast %llu s, true %.1f s", (unsigned long long)f.size,
                  secs_true);
    ck_assert_msg(f.addr >= 2 * secs_true * 0.9 && f.addr <= 2 * secs_true * 1.1,
                  "forecast %llu steps, true %.1f", (unsigned long long)f.addr,
                  2 * secs_true);
    ck_assert_msg(f.extra >= 31 * MiB && f.extra <= 33 * MiB, "%llu B/s",
                  (unsigned long long)f.extra);
    finish(&r);
}
END_TEST

START_TEST(test_silent_writes_the_record_only)
{
    struct run r;
    start_q(&r, 60 * SEC, 8 * GiB, true);
    train(&r, 240, 2, 512 * MiB, 16 * MiB);
    const char *err = stop_err(&r);
    ck_assert_msg(err[0] == '\0', "%s", err);
    ck_assert_uint_eq(forecasts(&r, NULL), 1);
    finish(&r);
}
END_TEST

/* The warning's line is written after the writer lock is released: with
 * stderr a full pipe, the thread that gave the warning blocks in write,
 * and another thread's event still goes through. */
struct blocked_run {
    struct run *r;
    _Atomic int done;
};

static void *train_thread(void *arg)
{
    struct blocked_run *b = arg;
    train(b->r, 240, 2, 512 * MiB, 16 * MiB);
    atomic_store(&b->done, 1);
    return NULL;
}

static void *one_event(void *arg)
{
    struct blocked_run *b = arg;
    ev(b->r, true, b->r->base + 300 * SEC, 4096, 5 * GiB);
    atomic_store(&b->done, 1);
    return NULL;
}

static bool wait_flag(_Atomic int *f, unsigned ms)
{
    for (unsigned i = 0; i < ms && !atomic_load(f); i++)
        nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
    return atomic_load(f);
}

START_TEST(test_blocked_stderr_holds_no_writer)
{
    struct run r;
    start(&r, 60 * SEC, 8 * GiB);
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    /* Fill the pipe, so the next write to it blocks. */
    fcntl(fds[1], F_SETFL, O_NONBLOCK);
    static char junk[65536];
    while (write(fds[1], junk, sizeof junk) > 0)
        ;
    fcntl(fds[1], F_SETFL, 0);
    dup2(fds[1], 2);
    struct blocked_run tr = { .r = &r }, one = { .r = &r };
    pthread_t a, b;
    ck_assert_int_eq(pthread_create(&a, NULL, train_thread, &tr), 0);
    for (unsigned i = 0; i < 20000 && !gm_forecast_warned(0); i++)
        nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
    ck_assert(gm_forecast_warned(0));
    ck_assert(!wait_flag(&tr.done, 200)); /* blocked in the line's write */
    ck_assert_int_eq(pthread_create(&b, NULL, one_event, &one), 0);
    bool through = wait_flag(&one.done, 5000);
    /* Unblock the warning's writer whatever happened, then check. */
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    while (!atomic_load(&tr.done) || !atomic_load(&one.done))
        if (read(fds[0], junk, sizeof junk) <= 0)
            nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    ck_assert_msg(through, "an event waited on a blocked stderr write");
    dup2(r.saved_err, 2);
    close(r.saved_err);
    fclose(r.err);
    close(fds[0]);
    close(fds[1]);
    ck_assert_uint_eq(forecasts(&r, NULL), 1);
    finish(&r);
}
END_TEST

/* A reset (a context's end that leaves nothing live) starts a new phase:
 * the fit takes only the buckets after it. A steady minute at 7 GiB, a
 * reset, then 64 MiB/s from 4 GiB (the limit about 63 s away): the
 * warning comes within 30 s of the reset. A fit that kept the steady
 * minute in its window would see the drop and stay silent. */
START_TEST(test_reset_starts_a_new_phase)
{
    struct run r;
    start(&r, 60 * SEC, 8 * GiB);
    uint64_t steps = 0;
    train_at(&r, 0, 70, 2, 7 * GiB, 0, &steps);
    const struct gm_abi_dev *d =
        (const struct gm_abi_dev *)((char *)r.mem +
                                    sizeof(struct gm_abi_header));
    /* The reset and the new floor in the same second (bucket 70). */
    gm_tel_ctx_freed(&r.t, 0, 7 * GiB, d->live_allocs, 0,
                     r.base + 70 * SEC);
    ck_assert_uint_eq(d->live_allocs, 0);
    train_at(&r, 70, 30, 2, 4 * GiB, 32 * MiB, &steps);
    const char *err = stop_err(&r);
    struct gm_abi_record f;
    ck_assert_msg(forecasts(&r, &f) == 1, "%s", err);
    ck_assert_uint_ge(f.ts_ns, r.base + 70 * SEC);
    ck_assert_uint_le(f.ts_ns, r.base + 100 * SEC);
    ck_assert_msg(f.extra >= 60 * MiB && f.extra <= 68 * MiB, "%llu B/s",
                  (unsigned long long)f.extra);
    /* The program's own teardown (two context ends with nothing between,
     * nothing allocated after) ends the phase without starting one: the
     * fit, as the exit report's verdict takes it, is still of the
     * leaking phase. */
    uint64_t n = d->live_allocs;
    gm_tel_ctx_freed(&r.t, 0, 5 * GiB, n, 0, r.base + 100 * SEC);
    gm_tel_ctx_freed(&r.t, 0, 0, 0, 0, r.base + 100 * SEC);
    struct gm_trend tr;
    ck_assert(gm_forecast_trend(&r.t.w, 0, &tr));
    ck_assert_msg(tr.bytes_per_second >= 60.0 * MiB &&
                      tr.bytes_per_second <= 68.0 * MiB,
                  "%.0f B/s", tr.bytes_per_second);
    finish(&r);
}
END_TEST

START_TEST(test_no_warning_cases)
{
    struct { uint64_t warn, limit, leak; } c[] = {
        { 300 * SEC, 4 * GiB, 0 },          /* steady */
        { 300 * SEC, 64 * GiB, 16 * MiB },  /* the limit 30 min away */
        { 300 * SEC, 0, 16 * MiB },         /* no limit */
        { 0, 4 * GiB, 16 * MiB },           /* turned off */
    };
    for (unsigned i = 0; i < sizeof c / sizeof *c; i++) {
        struct run r;
        start(&r, c[i].warn, c[i].limit);
        train(&r, 120, 2, 512 * MiB, c[i].leak);
        const char *err = stop_err(&r);
        ck_assert_msg(err[0] == '\0', "case %u: %s", i, err);
        ck_assert_uint_eq(forecasts(&r, NULL), 0);
        ck_assert(!gm_forecast_warned(0));
        finish(&r);
    }
}
END_TEST

static Suite *forecast_suite(void)
{
    Suite *s = suite_create("forecast");
    TCase *tc = tcase_create("forecast");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_leak_warns_once_within_10_percent);
    tcase_add_test(tc, test_no_warning_cases);
    tcase_add_test(tc, test_reset_starts_a_new_phase);
    tcase_add_test(tc, test_silent_writes_the_record_only);
    tcase_add_test(tc, test_blocked_stderr_holds_no_writer);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(forecast_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
