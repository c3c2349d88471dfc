/*
 * tests/unit/test_hist.c — the segment's history (shim/telemetry/hist.c)
 * read back through the reader library: a bucket's figures at its
 * boundaries, the fold into the 16 s and 256 s tiers at their boundaries,
 * a 36-hour and a 40-hour simulated clock (events carry their own time
 * stamps, so the test drives time), the stitched series compared with an
 * independent reference model, a clock that steps back, a torn bucket, a
 * device without a history, and the exit flush.
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/telemetry/hist.h"
#include "shim/telemetry/marks.h"
#include "shim/telemetry/telemetry.h"
#include "shim/telemetry/telwrite.h"
#include "tools/lib/reader.h"

#include "tests/unit/gm_expect.h"

#define SEC 1000000000ull

struct mem_seg {
    struct gm_tel t;
    void *mem;
    struct gm_seg seg;
    uint64_t base;
};

static void mem_open(struct mem_seg *m, uint32_t ring, uint32_t slots)
{
    struct gm_tel_params p = { .ring_events = ring, .dev_slots = slots,
                               .policy_summary = "test" };
    size_t len = gm_tel_layout_size(ring, slots);
    m->mem = aligned_alloc(64, (len + 63) / 64 * 64);
    ck_assert_ptr_nonnull(m->mem);
    ck_assert_int_eq(gm_tel_open_mem(&m->t, m->mem, len, &p), 0);
    char err[160];
    ck_assert_msg(gm_seg_open_mem(&m->seg, m->mem, len, err, sizeof err) == 0,
                  "%s", err);
    m->base = ((struct gm_abi_header *)m->mem)->hist_base_ns;
}

static void mem_close(struct mem_seg *m)
{
    gm_seg_close(&m->seg);
    gm_tel_close(&m->t, false);
    free(m->mem);
}

static void ev(struct mem_seg *m, bool alloc, unsigned dev, uint64_t ts,
               uint64_t size, uint64_t used)
{
    struct gm_tel_ev e = { .ts_ns = ts, .size = size, .used = used,
                           .dev = dev, .api = GM_API_MEM_ALLOC,
                           .frag_ppm = GM_TEL_FRAG_KEEP, .addr = 0x1000 };
    if (alloc)
        gm_tel_alloc_ev(&m->t, &e);
    else
        gm_tel_free_ev(&m->t, &e);
}

static size_t series(struct mem_seg *m, unsigned dev, struct gm_hist_point *p)
{
    char err[160] = "";
    int n = gm_seg_history(&m->seg, dev, p, GM_HIST_POINTS_MAX, err,
                           sizeof err);
    ck_assert_msg(n >= 0, "%s", err);
    return (size_t)n;
}

/* ---- one bucket ---------------------------------------------------------- */

START_TEST(test_bucket_boundaries)
{
    struct mem_seg m;
    mem_open(&m, 16, 2);
    /* Bucket 0 a thousand seconds ago, so that events stamped with the
     * real clock (the refusal below) fall after the injected ones. */
    ((struct gm_abi_header *)m.mem)->hist_base_ns -= 1000 * SEC;
    m.base -= 1000 * SEC;
    struct gm_hist_point *p = calloc(GM_HIST_POINTS_MAX, sizeof *p);
    ck_assert_uint_eq(series(&m, 0, p), 0); /* nothing yet */
    ev(&m, true, 0, m.base, 100, 100);             /* second 0, first ns */
    ev(&m, true, 0, m.base + SEC - 1, 50, 150);    /* second 0, last ns */
    size_t n = series(&m, 0, p);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(p[0].open, 1);
    ck_assert_uint_eq(p[0].index, 0);
    ck_assert_uint_eq(p[0].allocs, 2);
    ck_assert_uint_eq(p[0].used_max, 150);
    ev(&m, false, 0, m.base + SEC, 100, 50);       /* second 1, first ns */
    n = series(&m, 0, p);
    ck_assert_uint_eq(n, 2);
    /* Bucket 0: from the 0 before the first event to 150. */
    ck_assert_uint_eq(p[0].open, 0);
    ck_assert_uint_eq(p[0].tier, 0);
    ck_assert_uint_eq(p[0].index, 0);
    ck_assert_uint_eq(p[0].start_ns, m.base);
    ck_assert_uint_eq(p[0].end_ns, m.base + SEC);
    ck_assert_uint_eq(p[0].used_min, 0);
    ck_assert_uint_eq(p[0].used_max, 150);
    ck_assert_uint_eq(p[0].used_last, 150);
    ck_assert_uint_eq(p[0].live_allocs, 2);
    ck_assert_uint_eq(p[0].allocs, 2);
    ck_assert_uint_eq(p[0].frees, 0);
    /* Bucket 1, open: starts at 150, the free takes it to 50. */
    ck_assert_uint_eq(p[1].open, 1);
    ck_assert_uint_eq(p[1].index, 1);
    ck_assert_uint_eq(p[1].used_min, 50);
    ck_assert_uint_eq(p[1].used_max, 150);
    ck_assert_uint_eq(p[1].used_last, 50);
    ck_assert_uint_eq(p[1].allocs, 0);
    ck_assert_uint_eq(p[1].frees, 1);
    ck_assert_uint_eq(p[1].live_allocs, 1);
    /* A refusal counts in its bucket; a gap of idle seconds has none. */
    gm_tel_refuse(&m.t, 0, GM_API_MEM_ALLOC, 1 << 20, 50, 1000, 0);
    /* gm_tel_refuse stamps the real clock: the bucket of "now" (second
     * 1000 or so) opens and bucket 1 closes without the refusal. */
    n = series(&m, 0, p);
    ck_assert_uint_ge(n, 3);
    ck_assert_uint_eq(p[1].open, 0);
    ck_assert_uint_eq(p[1].refusals, 0);
    ck_assert_uint_eq(p[n - 1].open, 1);
    ck_assert_uint_eq(p[n - 1].refusals, 1);
    free(p);
    mem_close(&m);
}
END_TEST

START_TEST(test_tier_fold_boundaries)
{
    struct mem_seg m;
    mem_open(&m, 16, 1);
    struct gm_abi_header *h = m.mem;
    /* One alloc per second 0..16 (used = 10 * (s + 1)), then one event
     * at 256 s (the first second of tier-2 bucket 1). */
    for (uint64_t s = 0; s <= 16; s++)
        ev(&m, true, 0, m.base + s * SEC + SEC / 2, 10, 10 * (s + 1));
    ev(&m, false, 0, m.base + 256 * SEC, 10, 160);
    struct gm_abi_hist *hs = &m.t.w.hists[0];
    /* Tier 1 bucket 0 = seconds 0..15; bucket 1 = second 16. */
    struct gm_abi_bucket *t1 = hs->tier[1];
    ck_assert_uint_eq(t1[0].seq, 1);
    ck_assert_uint_eq(t1[0].used_min, 0);
    ck_assert_uint_eq(t1[0].used_max, 160);
    ck_assert_uint_eq(t1[0].used_last, 160);
    ck_assert_uint_eq(t1[0].allocs, 16);
    ck_assert_uint_eq(t1[1].seq, 2);
    ck_assert_uint_eq(t1[1].used_min, 160);
    ck_assert_uint_eq(t1[1].used_max, 170);
    ck_assert_uint_eq(t1[1].allocs, 1);
    ck_assert_uint_eq(t1[2].seq, 0);
    /* Tier 2 bucket 0 = seconds 0..255: all 17 allocations. */
    struct gm_abi_bucket *t2 = hs->tier[2];
    ck_assert_uint_eq(t2[0].seq, 1);
    ck_assert_uint_eq(t2[0].allocs, 17);
    ck_assert_uint_eq(t2[0].used_max, 170);
    ck_assert_uint_eq(t2[0].used_last, 170);
    ck_assert_uint_eq(t2[1].seq, 0); /* second 256 is still open */
    /* Tier 0 kept every second that had an event. */
    for (unsigned s = 0; s <= 16; s++)
        EXPECT_EQ(hs->tier[0][s].seq, s + 1);
    ck_assert_uint_eq(hs->tier[0][17].seq, 0);
    /* The open bucket is second 256; the block says so. */
    struct gm_abi_dev *d = (struct gm_abi_dev *)((char *)h + sizeof *h);
    ck_assert_uint_eq(d->hist_open, 256);
    ck_assert_uint_eq(d->hist_next_ns, m.base + 257 * SEC);
    ck_assert_uint_eq(gm_hist_index(m.base, m.base + 256 * SEC), 256);
    ck_assert_uint_eq(gm_hist_index(m.base, m.base + 256 * SEC - 1), 255);
    ck_assert_uint_eq(gm_hist_index(m.base, m.base - 5), 0);
    ck_assert_uint_eq(gm_hist_width_ns(2), 256 * SEC);
    mem_close(&m);
}
END_TEST

/* ---- a long simulated clock against a reference model --------------------- */

/* The workload: every second s, an allocation at s + 0.1 s taking used
 * to hi(s), a release at s + 0.6 s taking it to hi(s) / 2. */
static uint64_t hi(uint64_t s)
{
    return ((s * 7919u) % 1000u + 1u) * 4096u;
}

/* Reference figures of the interval [a, b) seconds (b <= seconds run). */
struct ref {
    uint64_t min, max, last, allocs, frees;
};

static struct ref ref_of(uint64_t a, uint64_t b)
{
    struct ref r = { UINT64_MAX, 0, 0, 0, 0 };
    for (uint64_t s = a; s < b; s++) {
        uint64_t before = s == 0 ? 0 : hi(s - 1) / 2;
        uint64_t vals[3] = { before, hi(s), hi(s) / 2 };
        for (unsigned i = 0; i < 3; i++) {
            if (vals[i] < r.min)
                r.min = vals[i];
            if (vals[i] > r.max)
                r.max = vals[i];
        }
        r.last = hi(s) / 2;
        r.allocs++;
        r.frees++;
    }
    return r;
}

static void run_clock(struct mem_seg *m, uint64_t seconds)
{
    for (uint64_t s = 0; s < seconds; s++) {
        ev(m, true, 0, m->base + s * SEC + SEC / 10, 4096, hi(s));
        ev(m, false, 0, m->base + s * SEC + 6 * SEC / 10, 4096, hi(s) / 2);
    }
}

/* The stitched series: contiguous, in tier order 2, 1, 0, then the open
 * bucket; each point equal to the reference of its interval. Returns the
 * first second covered. */
static uint64_t check_series(struct mem_seg *m, uint64_t seconds)
{
    struct gm_hist_point *p = calloc(GM_HIST_POINTS_MAX, sizeof *p);
    size_t n = series(m, 0, p);
    ck_assert_uint_gt(n, 0);
    ck_assert_uint_le(n, GM_HIST_POINTS_MAX);
    uint64_t first = (p[0].start_ns - m->base) / SEC;
    uint64_t at = first;
    unsigned last_tier = 3;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = (p[i].start_ns - m->base) / SEC;
        uint64_t b = (p[i].end_ns - m->base) / SEC;
        EXPECT_EQ(a, at);           /* no gap, no overlap */
        EXPECT_EQ(b - a, 1ull << (4 * p[i].tier));
        if (!p[i].open)
            ck_assert_uint_le(p[i].tier, last_tier);
        last_tier = p[i].tier;
        struct ref r = ref_of(a, b < seconds ? b : seconds);
        EXPECT_EQ(p[i].used_min, r.min);
        EXPECT_EQ(p[i].used_max, r.max);
        EXPECT_EQ(p[i].used_last, r.last);
        EXPECT_EQ(p[i].allocs, r.allocs);
        EXPECT_EQ(p[i].frees, r.frees);
        at = b;
    }
    ck_assert_uint_eq(at, seconds);         /* up to the last second */
    ck_assert_uint_eq(p[n - 1].open, 1);
    ck_assert_uint_eq(p[n - 1].index, seconds - 1);
    /* Tier 0 holds the last 512 s at most, tier 1 the last 8192 s. */
    size_t t0 = 0, t1 = 0, t2 = 0;
    for (size_t i = 0; i < n; i++) {
        t0 += p[i].tier == 0;
        t1 += p[i].tier == 1;
        t2 += p[i].tier == 2;
    }
    ck_assert_uint_le(t0, GM_ABI_HIST_BUCKETS + 1);
    ck_assert_uint_le(t1, GM_ABI_HIST_BUCKETS);
    ck_assert_uint_le(t2, GM_ABI_HIST_BUCKETS);
    if (seconds > 8192 + 512)
        ck_assert_uint_gt(t2, 0);
    free(p);
    return first;
}

START_TEST(test_clock_36_hours)
{
    struct mem_seg m;
    mem_open(&m, 16, 1); /* a 16-event ring: the history does not care */
    const uint64_t secs = 36ull * 3600;
    run_clock(&m, secs);
    ck_assert_uint_eq(check_series(&m, secs), 0); /* from second 0 */
    mem_close(&m);
}
END_TEST

START_TEST(test_clock_40_hours_forgets_oldest)
{
    struct mem_seg m;
    mem_open(&m, 16, 1);
    const uint64_t secs = 40ull * 3600;
    run_clock(&m, secs);
    uint64_t first = check_series(&m, secs);
    /* Tier 2 keeps 512 buckets of 256 s ending with the newest. */
    uint64_t newest2 = (secs - 1) / 256;
    ck_assert_uint_eq(first, (newest2 - 511) * 256);
    mem_close(&m);
}
END_TEST

START_TEST(test_short_runs_every_length)
{
    /* Every length across the first tier boundaries stitches exactly. */
    static const uint64_t lens[] = { 1, 2, 15, 16, 17, 255, 256, 257, 511,
                                     512, 513, 527, 528, 529, 1000, 8192,
                                     8704, 8705, 9000 };
    for (unsigned i = 0; i < sizeof lens / sizeof *lens; i++) {
        struct mem_seg m;
        mem_open(&m, 16, 1);
        run_clock(&m, lens[i]);
        ck_assert_uint_eq(check_series(&m, lens[i]), 0);
        mem_close(&m);
    }
}
END_TEST

/* ---- odd cases ------------------------------------------------------------ */

START_TEST(test_clock_backwards_stays_in_bucket)
{
    struct mem_seg m;
    mem_open(&m, 16, 1);
    ev(&m, true, 0, m.base + 5 * SEC, 10, 10);
    ev(&m, true, 0, m.base + 2 * SEC, 10, 20); /* the clock stepped back */
    ev(&m, true, 0, m.base + 6 * SEC, 10, 30);
    struct gm_hist_point p[8];
    char err[128];
    int n = gm_seg_history(&m.seg, 0, p, 8, err, sizeof err);
    ck_assert_int_eq(n, 2);
    ck_assert_uint_eq(p[0].index, 5);
    ck_assert_uint_eq(p[0].allocs, 2);
    ck_assert_uint_eq(p[0].used_max, 20);
    ck_assert_uint_eq(p[1].index, 6);
    mem_close(&m);
}
END_TEST

START_TEST(test_torn_bucket_left_out)
{
    struct mem_seg m;
    mem_open(&m, 16, 1);
    for (uint64_t s = 0; s < 4; s++)
        ev(&m, true, 0, m.base + s * SEC, 10, 10 * (s + 1));
    struct gm_abi_hist *hs = &m.t.w.hists[0];
    struct gm_abi_bucket copy;
    ck_assert(gm_hist_read_bucket(&hs->tier[0][1], &copy));
    ck_assert_uint_eq(copy.seq, 2);
    hs->tier[0][1].seq |= GM_ABI_SEQ_BUSY; /* a writer inside (or dead) */
    ck_assert(!gm_hist_read_bucket(&hs->tier[0][1], &copy));
    hs->tier[0][2].seq = 2 + 512; /* a slot claiming another index */
    struct gm_hist_point p[8];
    char err[128];
    int n = gm_seg_history(&m.seg, 0, p, 8, err, sizeof err);
    ck_assert_int_eq(n, 2); /* bucket 0, the open bucket 3 */
    ck_assert_uint_eq(p[0].index, 0);
    ck_assert_uint_eq(p[1].index, 3);
    mem_close(&m);
}
END_TEST

START_TEST(test_device_without_history)
{
    struct mem_seg m;
    mem_open(&m, 16, 20); /* 20 device blocks, 16 histories */
    struct gm_abi_header *h = m.mem;
    ck_assert_uint_eq(h->hist_slots, 16);
    ev(&m, true, 17, m.base, 10, 10);
    ev(&m, true, 17, m.base + 3 * SEC, 10, 20);
    struct gm_abi_dev *d = (struct gm_abi_dev *)((char *)h + sizeof *h) + 17;
    ck_assert_uint_eq(d->hist_next_ns, UINT64_MAX); /* never rolls again */
    ck_assert_uint_eq(d->used, 20);
    struct gm_hist_point p[4];
    char err[128];
    ck_assert_int_eq(gm_seg_history(&m.seg, 17, p, 4, err, sizeof err), 0);
    mem_close(&m);
}
END_TEST

START_TEST(test_exit_flush_publishes_open_bucket)
{
    struct mem_seg m;
    mem_open(&m, 16, 1);
    ev(&m, true, 0, m.base + 3 * SEC, 10, 10);
    struct gm_abi_hist *hs = &m.t.w.hists[0];
    ck_assert_uint_eq(hs->tier[0][3].seq, 0);
    gm_hist_flush(&m.t.w);
    ck_assert_uint_eq(hs->tier[0][3].seq, 4);
    ck_assert_uint_eq(hs->tier[0][3].used_last, 10);
    ck_assert_uint_eq(hs->tier[1][0].allocs, 1);
    /* Closed: later events do not roll, the series ends at bucket 3. */
    ev(&m, true, 0, m.base + 9 * SEC, 10, 20);
    struct gm_hist_point p[4];
    char err[128];
    int n = gm_seg_history(&m.seg, 0, p, 4, err, sizeof err);
    ck_assert_int_eq(n, 1);
    ck_assert_uint_eq(p[0].index, 3);
    ck_assert_uint_eq(p[0].open, 0);
    mem_close(&m);
}
END_TEST

START_TEST(test_fold_saturates)
{
    struct gm_abi_bucket a = { .seq = 1, .used_min = 5, .used_max = 9,
                               .allocs = UINT64_MAX - 1, .refusals =
                               UINT32_MAX - 1, .steps = 3 };
    struct gm_abi_bucket b = { .seq = 7, .used_min = 2, .used_max = 7,
                               .used_last = 4, .allocs = 5, .refusals = 5,
                               .steps = 8 };
    gm_hist_fold(&a, &b, false);
    ck_assert_uint_eq(a.seq, 1);
    ck_assert_uint_eq(a.used_min, 2);
    ck_assert_uint_eq(a.used_max, 9);
    ck_assert_uint_eq(a.used_last, 4);
    ck_assert_uint_eq(a.allocs, UINT64_MAX);
    ck_assert_uint_eq(a.refusals, UINT32_MAX);
    ck_assert_uint_eq(a.steps, 8);
    gm_hist_fold(&a, &b, true);
    ck_assert_uint_eq(a.seq, 1); /* the index is the caller's */
    ck_assert_uint_eq(a.allocs, 5);
}
END_TEST

START_TEST(test_mark_labels_sanitised)
{
    static const struct { const char *in, *out; } c[] = {
        { NULL, "" },
        { "", "" },
        { "epoch 3", "epoch 3" },
        { "h\xc3\xa9llo \xf0\x9f\x98\x80", "h\xc3\xa9llo \xf0\x9f\x98\x80" },
        { "\x01tab\there\x7f", "?tab?here?" },
        { "\xff\xfe", "??" },
        { "\xc0\xaf", "??" },               /* overlong '/' */
        { "\xed\xa0\x80", "???" },          /* a surrogate */
        { "\xf4\x90\x80\x80", "????" },     /* past U+10FFFF */
        { "ab\xe2\x82", "ab??" },            /* cut sequence */
    };
    char out[GM_ABI_MARK_LABEL];
    for (unsigned i = 0; i < sizeof c / sizeof *c; i++) {
        size_t n = gm_mark_label(c[i].in, out, sizeof out);
        ck_assert_str_eq(out, c[i].out);
        ck_assert_uint_eq(n, strlen(c[i].out));
    }
    /* 20 two-byte characters: 19 kept (38 bytes), never half of one. */
    char e[64] = "";
    for (int i = 0; i < 20; i++)
        strcat(e, "\xc3\xa9");
    ck_assert_uint_eq(gm_mark_label(e, out, sizeof out), 38);
    /* 300 bytes: the first 39. */
    char longer[301];
    memset(longer, 'y', 300);
    longer[300] = '\0';
    ck_assert_uint_eq(gm_mark_label(longer, out, sizeof out), 39);
    ck_assert_uint_eq(gm_mark_label("abc", out, 0), 0);
}
END_TEST

START_TEST(test_marks_table_wraps)
{
    struct mem_seg m;
    mem_open(&m, 16, 1);
    char label[16];
    for (int i = 0; i < 130; i++) {
        snprintf(label, sizeof label, "m%d", i);
        gm_tel_mark(&m.t, label);
    }
    struct gm_mark_info mk[200];
    char err[128];
    int n = gm_seg_marks(&m.seg, mk, 200, err, sizeof err);
    ck_assert_int_eq(n, 128); /* the last 128 */
    ck_assert_uint_eq(mk[0].number, 2);
    ck_assert_str_eq(mk[0].label, "m2");
    ck_assert_str_eq(mk[127].label, "m129");
    gm_tel_step(&m.t, 7);
    gm_tel_step(&m.t, 5); /* raised, never lowered */
    ck_assert_uint_eq(gm_seg_steps(&m.seg), 7);
    mem_close(&m);
}
END_TEST

/* The open bucket is read before the tiers; rolls in between may close
 * it and fold buckets past it into a coarser tier. Appending it drops
 * every point the later copy holds from its time on, of any tier. */
START_TEST(test_open_bucket_appended_after_a_later_copy)
{
    const uint64_t s = 1000000000ull; /* tier 0: 1 s buckets here */
    struct gm_hist_point pts[8] = {
        { .index = 0, .start_ns = 0, .end_ns = 60 * s, .tier = 1 },
        { .index = 60, .start_ns = 60 * s, .end_ns = 61 * s, .tier = 0 },
        /* What the copy found newer than the open bucket [61 s, 62 s):
         * its own slot closed, and a minute folded past it. */
        { .index = 61, .start_ns = 61 * s, .end_ns = 62 * s, .tier = 0 },
        { .index = 1, .start_ns = 60 * s, .end_ns = 120 * s, .tier = 1 },
        { .index = 120, .start_ns = 120 * s, .end_ns = 121 * s, .tier = 0 },
    };
    struct gm_hist_point open = { .index = 61, .start_ns = 61 * s,
                                  .end_ns = 62 * s, .tier = 0, .open = 1 };
    size_t n = gm_hist_append_open(pts, 5, 8, &open);
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(pts[2].open, 1);
    for (size_t i = 1; i < n; i++)
        ck_assert_uint_ge(pts[i].start_ns, pts[i - 1].end_ns);
    /* A consistent copy keeps everything before the open bucket. */
    struct gm_hist_point ok[4] = {
        { .index = 0, .start_ns = 0, .end_ns = 60 * s, .tier = 1 },
        { .index = 60, .start_ns = 60 * s, .end_ns = 61 * s, .tier = 0 },
    };
    ck_assert_uint_eq(gm_hist_append_open(ok, 2, 4, &open), 3);
    ck_assert_uint_eq(gm_hist_append_open(ok, 3, 3, &open), 3); /* full */
}
END_TEST

/* ---- concurrent writers ----------------------------------------------- */

#define WRITERS 3
#define PAIRS 60000ull

struct race {
    struct mem_seg *m;
    uint64_t clock;       /* atomic: the simulated time, ns after base */
    uint64_t used;        /* atomic: the simulated device figure */
    int done;             /* atomic: writers finished */
    uint64_t bad;         /* reader: inconsistent points seen */
    uint64_t reads;
};

static void *writer(void *arg)
{
    struct race *r = arg;
    for (uint64_t i = 0; i < PAIRS; i++) {
        /* 10 ms a step: a bucket rolls every 100 events, 3,600 rolls. */
        uint64_t ts = __atomic_fetch_add(&r->clock, 10000000, __ATOMIC_RELAXED);
        uint64_t u = __atomic_add_fetch(&r->used, 4096, __ATOMIC_RELAXED);
        ev(r->m, true, 0, r->m->base + ts, 4096, u);
        ts = __atomic_fetch_add(&r->clock, 10000000, __ATOMIC_RELAXED);
        u = __atomic_sub_fetch(&r->used, 4096, __ATOMIC_RELAXED);
        ev(r->m, false, 0, r->m->base + ts, 4096, u);
    }
    __atomic_fetch_add(&r->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *reader(void *arg)
{
    struct race *r = arg;
    struct gm_hist_point *p = calloc(GM_HIST_POINTS_MAX, sizeof *p);
    char err[128];
    while (__atomic_load_n(&r->done, __ATOMIC_ACQUIRE) < WRITERS) {
        int n = gm_seg_history(&r->m->seg, 0, p, GM_HIST_POINTS_MAX, err,
                               sizeof err);
        for (int i = 0; i < n; i++) {
            bool ok = p[i].used_min <= p[i].used_last &&
                      p[i].used_last <= p[i].used_max &&
                      p[i].used_max <= 4096 * WRITERS &&
                      (i == 0 || p[i].start_ns >= p[i - 1].end_ns);
            r->bad += !ok;
        }
        r->reads++;
    }
    free(p);
    return NULL;
}

START_TEST(test_concurrent_writers_count_everything_once)
{
    struct mem_seg m;
    mem_open(&m, 1024, 1);
    struct race r = { .m = &m };
    pthread_t w[WRITERS], rd;
    ck_assert_int_eq(pthread_create(&rd, NULL, reader, &r), 0);
    for (int i = 0; i < WRITERS; i++)
        ck_assert_int_eq(pthread_create(&w[i], NULL, writer, &r), 0);
    for (int i = 0; i < WRITERS; i++)
        pthread_join(w[i], NULL);
    pthread_join(rd, NULL);
    ck_assert_uint_gt(r.reads, 0);
    ck_assert_uint_eq(r.bad, 0);
    /* Every allocation and release is in exactly one bucket. */
    gm_hist_flush(&m.t.w);
    struct gm_hist_point *p = calloc(GM_HIST_POINTS_MAX, sizeof *p);
    size_t n = series(&m, 0, p);
    uint64_t allocs = 0, frees = 0;
    for (size_t i = 0; i < n; i++) {
        allocs += p[i].allocs;
        frees += p[i].frees;
    }
    ck_assert_uint_eq(allocs, WRITERS * PAIRS);
    ck_assert_uint_eq(frees, WRITERS * PAIRS);
    free(p);
    mem_close(&m);
}
END_TEST

static Suite *hist_suite(void)
{
    Suite *s = suite_create("hist");
    TCase *tc = tcase_create("hist");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_bucket_boundaries);
    tcase_add_test(tc, test_open_bucket_appended_after_a_later_copy);
    tcase_add_test(tc, test_tier_fold_boundaries);
    tcase_add_test(tc, test_clock_36_hours);
    tcase_add_test(tc, test_clock_40_hours_forgets_oldest);
    tcase_add_test(tc, test_short_runs_every_length);
    tcase_add_test(tc, test_clock_backwards_stays_in_bucket);
    tcase_add_test(tc, test_torn_bucket_left_out);
    tcase_add_test(tc, test_device_without_history);
    tcase_add_test(tc, test_exit_flush_publishes_open_bucket);
    tcase_add_test(tc, test_fold_saturates);
    tcase_add_test(tc, test_mark_labels_sanitised);
    tcase_add_test(tc, test_marks_table_wraps);
    tcase_add_test(tc, test_concurrent_writers_count_everything_once);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(hist_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
