/*
 * tests/unit/test_tel_frag.c — the fragmentation log as the telemetry
 * events keep it (shim/telemetry/telwrite.h, ring.c, fragq.c): an
 * allocation event logs its interval and returns the mark its free
 * cancels with, a rise of the peak syncs the log so that frag at peak is
 * the heap of the peak itself, the figure reaches the device block at a
 * batch boundary, gm_tel_frag_sync and gm_tel_frag_peek apply the rest,
 * and a free whose event cannot take the writer lock (a signal handler
 * that interrupted the holder) keeps its remove for the next apply
 * instead of leaving its interval in the tracker for good.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shim/telemetry/telemetry.h"
#include "shim/telemetry/telwrite.h"

#include "tests/unit/tel_mem.h"

struct seg {
    struct gm_tel t;
    void *mem;
    struct gm_fragq *q;
};

static void open_seg(struct seg *s)
{
    s->mem = gm_test_tel_mem(&s->t, 1024, 2);
    s->q = aligned_alloc(64, (sizeof *s->q + 63) / 64 * 64);
    ck_assert_ptr_nonnull(s->q);
    gm_fragq_init(s->q);
}

static void close_seg(struct seg *s)
{
    gm_tel_close(&s->t, false);
    gm_fragq_destroy(s->q);
    free(s->q);
    free(s->mem);
}

static struct gm_abi_dev *dev0(struct seg *s)
{
    return (struct gm_abi_dev *)((char *)s->mem + sizeof(struct gm_abi_header));
}

static uint64_t frag0(struct seg *s)
{
    return __atomic_load_n(&dev0(s)->frag_ppm, __ATOMIC_ACQUIRE);
}

static uint64_t frag_peak0(struct seg *s)
{
    return __atomic_load_n(&dev0(s)->frag_peak_ppm, __ATOMIC_ACQUIRE);
}

/* The shim's heap as the events see it: used and peak kept here. */
struct heap {
    uint64_t used, peak;
};

static uint32_t alloc_ev(struct seg *s, struct heap *m, uint64_t addr,
                         uint64_t size)
{
    m->used += size;
    if (m->used > m->peak)
        m->peak = m->used;
    struct gm_tel_ev e = { .ts_ns = 1, .lat_ns = 10, .addr = addr,
                           .size = size, .used = m->used, .peak = m->peak,
                           .dev = 0, .api = GM_API_MEM_ALLOC,
                           .frag_ppm = GM_TEL_FRAG_KEEP, .fq = s->q };
    return gm_tel_alloc_ev(&s->t, &e);
}

static void free_ev(struct seg *s, struct heap *m, uint64_t addr,
                    uint64_t size, uint32_t mark)
{
    m->used -= size;
    struct gm_tel_ev e = { .ts_ns = 2, .lat_ns = 10, .addr = addr,
                           .size = size, .used = m->used, .dev = 0,
                           .api = GM_API_MEM_FREE,
                           .frag_ppm = GM_TEL_FRAG_KEEP, .mark = mark,
                           .fq = s->q };
    gm_tel_free_ev(&s->t, &e);
}

START_TEST(test_peak_rise_syncs_the_log)
{
    struct seg s;
    open_seg(&s);
    struct heap m = { 0, 0 };
    /* Four blocks of 1 KiB at 0, 4 Ki, 8 Ki, 64 Ki: gaps 3, 3, 55 KiB;
     * every allocation is a new peak, so each one's figure is exact. */
    alloc_ev(&s, &m, 0, 1024);
    alloc_ev(&s, &m, 4096, 1024);
    alloc_ev(&s, &m, 8192, 1024);
    alloc_ev(&s, &m, 65536, 1024);
    uint64_t want = (uint64_t)(6 * 1024) * 1000000u / (61 * 1024);
    ck_assert_uint_eq(frag0(&s), want);
    ck_assert_uint_eq(frag_peak0(&s), want);
    ck_assert_uint_eq(gm_frag_count(&s.q->set), 4);
    close_seg(&s);
}
END_TEST

START_TEST(test_free_cancels_and_batches_publish)
{
    struct seg s;
    open_seg(&s);
    struct heap m = { 0, 0 };
    /* A big block first, so that the pairs below raise no peak. */
    uint32_t big = alloc_ev(&s, &m, 1u << 30, 1u << 20);
    free_ev(&s, &m, 1u << 30, 1u << 20, big);
    /* Applied at its peak, so its free left the tree at once. */
    ck_assert_uint_eq(gm_frag_count(&s.q->set), 0);
    ck_assert_uint_eq(s.q->head, s.q->tail);
    /* Pairs freed at once (below the peak) never reach the tree. */
    for (unsigned i = 0; i < 100; i++) {
        uint32_t mk = alloc_ev(&s, &m, 4096, 1024);
        free_ev(&s, &m, 4096, 1024, mk);
    }
    ck_assert_uint_eq(gm_frag_count(&s.q->set), 0);
    ck_assert_uint_eq(s.q->tail - s.q->head, 100); /* cancelled, logged */
    /* Live blocks below the peak: logged, the figure at a batch. */
    uint64_t f = frag0(&s);
    for (unsigned i = 0; i < 20; i++)
        alloc_ev(&s, &m, (uint64_t)(i + 1) * 8192, 1024);
    ck_assert_uint_eq(frag0(&s), f); /* not yet applied */
    gm_tel_frag_sync(&s.t, 0, s.q);
    ck_assert_uint_ne(frag0(&s), f);
    ck_assert_uint_eq(frag0(&s), gm_frag_ppm(&s.q->set));
    uint64_t largest = 0;
    uint32_t ppm = 0;
    ck_assert(gm_tel_frag_peek(&s.t, 0, s.q, &largest, &ppm));
    ck_assert_uint_eq(largest, gm_frag_largest_free(&s.q->set));
    ck_assert_uint_eq(ppm, frag0(&s));
    close_seg(&s);
}
END_TEST

START_TEST(test_free_without_the_lock_is_kept)
{
    struct seg s;
    open_seg(&s);
    struct heap m = { 0, 0 };
    alloc_ev(&s, &m, 0, 1024);
    uint32_t mid = alloc_ev(&s, &m, 8192, 1024);
    alloc_ev(&s, &m, 65536, 1024);
    ck_assert_uint_eq(gm_frag_count(&s.q->set), 3);
    /* This thread holds the lock, as a signal handler would find it, and
     * frees the middle block: the event is skipped, its remove kept. */
    ck_assert_ptr_nonnull(tw_lock(&s.t));
    free_ev(&s, &m, 8192, 1024, mid);
    tw_unlock(&s.t);
    ck_assert_uint_eq(gm_frag_count(&s.q->set), 3);
    gm_tel_frag_sync(&s.t, 0, s.q);
    ck_assert_uint_eq(gm_frag_count(&s.q->set), 2);
    ck_assert_uint_eq(frag0(&s), 0); /* one gap left */
    /* An allocation that cannot take the lock logs nothing: mark 0, and
     * its free touches nothing, not even a block the driver gave the same
     * start later. */
    ck_assert_ptr_nonnull(tw_lock(&s.t));
    ck_assert_uint_eq(alloc_ev(&s, &m, 1u << 20, 1024), 0);
    tw_unlock(&s.t);
    alloc_ev(&s, &m, 1u << 21, 1024); /* a new peak: applied */
    ck_assert_uint_eq(gm_frag_count(&s.q->set), 3);
    free_ev(&s, &m, 1u << 21, 1024, 0); /* an unlogged block's free */
    gm_tel_frag_sync(&s.t, 0, s.q);
    ck_assert_uint_eq(gm_frag_count(&s.q->set), 3);
    close_seg(&s);
}
END_TEST

static Suite *tel_frag_suite(void)
{
    Suite *s = suite_create("tel_frag");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_peak_rise_syncs_the_log);
    tcase_add_test(tc, test_free_cancels_and_batches_publish);
    tcase_add_test(tc, test_free_without_the_lock_is_kept);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(tel_frag_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
