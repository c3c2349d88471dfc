/*
 * tests/unit/test_fragq.c — the log in front of the fragmentation tracker
 * (shim/telemetry/fragq.c): adds only log, an apply takes them in order,
 * a free cancels its add while it is still logged and removes the start
 * from the tree after, every GM_FRAGQ_BATCH-th operation applies, a
 * figure is handed back only when it changed, the adds and removes of a
 * start the driver gave out again leave the right set in every order,
 * random streams leave exactly the tracker that applying each change at
 * once leaves, and removes kept without the lock (from threads, racing
 * the applier: TSan runs this) all reach the tree.
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shim/telemetry/fragq.h"

#include "tests/unit/gm_expect.h"

static struct gm_fragq *new_q(void)
{
    struct gm_fragq *q = aligned_alloc(64, (sizeof *q + 63) / 64 * 64);
    ck_assert_ptr_nonnull(q);
    gm_fragq_init(q);
    return q;
}

static void free_q(struct gm_fragq *q)
{
    gm_fragq_destroy(q);
    free(q);
}

START_TEST(test_adds_log_then_apply_hands_back_changes)
{
    struct gm_fragq *q = new_q();
    uint32_t ppm = GM_FRAGQ_KEEP;
    /* [0,100) [200,300) [300,400) [1000,1100): gaps 100 and 600. */
    gm_fragq_add(q, 0, 100, &ppm);
    gm_fragq_add(q, 200, 100, &ppm);
    EXPECT_EQ(gm_frag_count(&q->set), 0); /* logged, not applied */
    EXPECT_EQ(ppm, GM_FRAGQ_KEEP);
    EXPECT_EQ(gm_fragq_apply(q, false), GM_FRAGQ_KEEP); /* one gap: 0 ppm */
    EXPECT_EQ(gm_frag_count(&q->set), 2);
    EXPECT_EQ(gm_fragq_apply(q, true), 0); /* forced: unchanged 0 */
    gm_fragq_add(q, 300, 100, &ppm);
    gm_fragq_add(q, 1000, 100, &ppm);
    EXPECT_EQ(gm_fragq_apply(q, false), 142857); /* 1 - 600/700 */
    EXPECT_EQ(gm_fragq_apply(q, false), GM_FRAGQ_KEEP);
    EXPECT_EQ(q->head, q->tail);
    EXPECT_EQ(q->since, 0);
    free_q(q);
}
END_TEST

START_TEST(test_batch_boundary_applies)
{
    struct gm_fragq *q = new_q();
    uint32_t ppm = GM_FRAGQ_KEEP;
    for (unsigned i = 0; i + 1 < GM_FRAGQ_BATCH; i++)
        gm_fragq_add(q, (uint64_t)i * 4096, 1024, &ppm);
    EXPECT_EQ(gm_frag_count(&q->set), 0);
    EXPECT_EQ(ppm, GM_FRAGQ_KEEP);
    gm_fragq_add(q, (uint64_t)(GM_FRAGQ_BATCH - 1) * 4096, 1024, &ppm);
    EXPECT_EQ(gm_frag_count(&q->set), GM_FRAGQ_BATCH);
    /* BATCH - 1 equal gaps of 3 KiB: 1 - 1/(BATCH - 1). */
    uint64_t gaps = GM_FRAGQ_BATCH - 1;
    EXPECT_EQ(ppm, (uint32_t)((gaps - 1) * 1000000u / gaps));
    /* Removes of applied adds count toward the next batch too. */
    ppm = GM_FRAGQ_KEEP;
    for (unsigned i = 0; i + 1 < GM_FRAGQ_BATCH; i++) {
        uint32_t f = gm_fragq_remove_applied(q, (uint64_t)i * 4096);
        if (f != GM_FRAGQ_KEEP)
            ppm = f;
    }
    EXPECT_EQ(ppm, GM_FRAGQ_KEEP); /* 255 operations: not yet */
    gm_fragq_add(q, 1u << 30, 1024, &ppm);
    EXPECT_EQ(ppm, 0); /* two intervals, one gap */
    EXPECT_EQ(gm_frag_count(&q->set), 2);
    free_q(q);
}
END_TEST

START_TEST(test_cancel_while_logged_remove_after)
{
    struct gm_fragq *q = new_q();
    uint32_t ppm = GM_FRAGQ_KEEP;
    uint32_t m = gm_fragq_add(q, 4096, 100, &ppm);
    gm_fragq_remove(q, m, 4096, &ppm); /* still logged: cancelled */
    EXPECT_EQ(q->ops[(m - 1) & GM_FRAGQ_MASK].size, 0);
    gm_fragq_apply(q, false);
    EXPECT_EQ(gm_frag_count(&q->set), 0);
    /* Another start in the mark's slot: not cancelled, the tree is asked
     * (nothing there). */
    m = gm_fragq_add(q, 4096, 100, &ppm);
    gm_fragq_remove(q, m, 8192, &ppm);
    EXPECT_EQ(q->ops[(m - 1) & GM_FRAGQ_MASK].size, 100);
    /* A mark outside the log (an add long applied): the tree. */
    gm_fragq_remove(q, m - 1, 4096, &ppm);
    EXPECT_EQ(q->ops[(m - 1) & GM_FRAGQ_MASK].size, 100);
    gm_fragq_apply(q, false);
    EXPECT_EQ(gm_frag_count(&q->set), 1);
    /* Applied: the remove takes it out of the tree at once. */
    gm_fragq_remove(q, m, 4096, &ppm);
    EXPECT_EQ(gm_frag_count(&q->set), 0);
    free_q(q);
}
END_TEST

/* Block A at start X freed, the driver gives X to block B, and B's add is
 * logged before A's remove: every order of applying leaves B alone. */
static void reuse_case(int apply_a, int apply_b)
{
    struct gm_fragq *q = new_q();
    uint32_t ppm = GM_FRAGQ_KEEP;
    const uint64_t x = 1 << 20, probe = 1 << 24;
    gm_fragq_add(q, probe, 4096, &ppm);
    uint32_t ma = gm_fragq_add(q, x, 8192, &ppm);
    if (apply_a)
        gm_fragq_apply(q, false);
    uint32_t mb = gm_fragq_add(q, x, 65536, &ppm);
    if (apply_b)
        gm_fragq_apply(q, false);
    gm_fragq_remove(q, ma, x, &ppm);
    gm_fragq_apply(q, false);
    EXPECT_EQ(gm_frag_count(&q->set), 2);
    EXPECT_EQ(gm_frag_total_free(&q->set), probe - x - 65536); /* B's end */
    EXPECT_EQ(gm_frag_check(&q->set), 0);
    gm_fragq_remove(q, mb, x, &ppm);
    gm_fragq_apply(q, false);
    EXPECT_EQ(gm_frag_count(&q->set), 1);
    EXPECT_EQ(gm_frag_check(&q->set), 0);
    free_q(q);
}

START_TEST(test_reused_start_in_every_order)
{
    reuse_case(0, 0); /* both logged: A's add cancelled */
    reuse_case(1, 0); /* A applied, B logged: A leaves the tree first */
    reuse_case(1, 1); /* both applied: the start is counted twice */
}
END_TEST

/* Random streams over a few starts as the shim makes them (an add of a
 * free start; a free of a live one), applied at random points: the
 * tracker equals a reference tracker that applied each change at once. */
START_TEST(test_random_streams_are_exact)
{
    uint64_t x = 12345;
    for (unsigned round = 0; round < 200; round++) {
        struct gm_fragq *q = new_q();
        struct gm_frag ref;
        gm_frag_init(&ref);
        uint32_t ppm = GM_FRAGQ_KEEP, last = 0;
        uint32_t mark[12] = { 0 };
        uint8_t live[12] = { 0 };
        unsigned n = 50 + round * 5, cancelled = 0;
        for (unsigned i = 0; i < n; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            unsigned k = (unsigned)((x >> 40) % 12);
            uint64_t a = (uint64_t)k * 8192;
            uint64_t size = 1024 + ((x >> 50) & 1023);
            if (!live[k]) {
                mark[k] = gm_fragq_add(q, a, size, &ppm);
                gm_frag_insert(&ref, a, size);
                live[k] = 1;
            } else {
                uint64_t c = gm_frag_count(&q->set);
                gm_fragq_remove(q, mark[k], a, &ppm);
                if (gm_frag_count(&q->set) == c)
                    cancelled++;
                gm_frag_remove(&ref, a);
                live[k] = 0;
            }
            if (ppm != GM_FRAGQ_KEEP)
                last = ppm;
            if ((x >> 10) % 37 == 0 && (ppm = gm_fragq_apply(q, false)) !=
                                           GM_FRAGQ_KEEP)
                last = ppm;
        }
        if ((ppm = gm_fragq_apply(q, false)) != GM_FRAGQ_KEEP)
            last = ppm;
        ck_assert_uint_gt(cancelled, 0);
        EXPECT_EQ(gm_frag_count(&q->set), gm_frag_count(&ref));
        EXPECT_EQ(gm_frag_total_free(&q->set), gm_frag_total_free(&ref));
        EXPECT_EQ(gm_frag_largest_free(&q->set), gm_frag_largest_free(&ref));
        EXPECT_EQ(last, gm_frag_ppm(&ref));
        EXPECT_EQ(gm_frag_check(&q->set), 0);
        gm_frag_destroy(&ref);
        free_q(q);
    }
}
END_TEST

/* Every 2^32nd ticket would give mark 0, which means "not logged": it
 * is skipped (a cancelled slot), and the marks on both sides cancel their
 * own adds. */
START_TEST(test_mark_never_zero)
{
    struct gm_fragq *q = new_q();
    uint32_t ppm = GM_FRAGQ_KEEP;
    q->head = q->tail = 0xfffffffdull;
    uint32_t m1 = gm_fragq_add(q, 4096, 100, &ppm);
    EXPECT_EQ(m1, 0xfffffffeu);
    uint32_t m2 = gm_fragq_add(q, 8192, 100, &ppm);
    EXPECT_EQ(m2, 0xffffffffu);
    uint32_t m3 = gm_fragq_add(q, 16384, 100, &ppm);
    EXPECT_EQ(m3, 1u); /* 0 skipped */
    EXPECT_EQ(gm_frag_count(&q->set), 2); /* the skip applied m1 and m2 */
    gm_fragq_remove(q, m3, 16384, &ppm);  /* still logged: cancelled */
    gm_fragq_remove(q, m2, 8192, &ppm);   /* applied: the tree */
    gm_fragq_remove(q, m1, 4096, &ppm);
    gm_fragq_apply(q, false);
    EXPECT_EQ(gm_frag_count(&q->set), 0);
    EXPECT_EQ(gm_frag_check(&q->set), 0);
    free_q(q);
}
END_TEST

/* The owner's table, for the refill: the live starts. */
struct table {
    uint64_t addr[8], size[8];
    unsigned n, calls;
};

static void refill(void *ctx, struct gm_fragq *q)
{
    struct table *t = ctx;
    t->calls++;
    for (unsigned i = 0; i < t->n; i++)
        gm_frag_insert_over(&q->set, t->addr[i], t->size[i]);
}

/* A remove lost past the kept slots would leave its start counted for
 * good (each later block at that start adds and removes one holder): the
 * next apply rebuilds the tree from the owner's table instead. */
START_TEST(test_overflowed_remove_rebuilds)
{
    struct gm_fragq *q = new_q();
    struct table t = { .addr = { 4096, 65536 }, .size = { 1024, 1024 },
                       .n = 2 };
    gm_fragq_set_refill(q, refill, &t);
    uint32_t ppm = GM_FRAGQ_KEEP;
    for (unsigned i = 0; i < GM_FRAGQ_LOST + 1; i++)
        gm_fragq_add(q, (uint64_t)(i + 2) * 1048576, 1024, &ppm);
    gm_fragq_add(q, 4096, 1024, &ppm);
    gm_fragq_add(q, 65536, 1024, &ppm);
    gm_fragq_apply(q, false);
    EXPECT_EQ(gm_frag_count(&q->set), GM_FRAGQ_LOST + 3);
    for (unsigned i = 0; i < GM_FRAGQ_LOST + 1; i++)
        gm_fragq_lost_remove(q, (uint64_t)(i + 2) * 1048576);
    EXPECT_EQ(q->lost_over, 1);
    EXPECT_EQ(t.calls, 0);
    /* A block logged now, not yet in the table: dropped by the rebuild
     * (its free, finding its mark out of the log, asks the tree). */
    uint32_t m = gm_fragq_add(q, 1u << 30, 1024, &ppm);
    gm_fragq_apply(q, false);
    EXPECT_EQ(t.calls, 1);
    EXPECT_EQ(gm_frag_count(&q->set), 2); /* the table's two */
    EXPECT_EQ(gm_frag_check(&q->set), 0);
    gm_fragq_remove(q, m, 1u << 30, &ppm);
    EXPECT_EQ(gm_frag_count(&q->set), 2);
    gm_fragq_apply(q, false);
    EXPECT_EQ(t.calls, 1); /* once */
    free_q(q);
}
END_TEST

/* A writer that died holding the lock may have left a tree half changed:
 * after the epoch moved, the next use of the tree rebuilds it first. */
START_TEST(test_epoch_rebuilds_before_use)
{
    struct gm_fragq *q = new_q();
    struct table t = { .addr = { 4096 }, .size = { 1024 }, .n = 1 };
    gm_fragq_set_refill(q, refill, &t);
    uint32_t ppm = GM_FRAGQ_KEEP;
    uint32_t m = gm_fragq_add(q, 4096, 1024, &ppm);
    gm_fragq_add(q, 8192, 1024, &ppm);
    gm_fragq_apply(q, false);
    EXPECT_EQ(gm_frag_count(&q->set), 2);
    gm_fragq_epoch++;
    /* A remove from the tree rebuilds instead (the table no longer holds
     * the block freed: it is not in the new tree). */
    t.n = 0;
    gm_fragq_remove(q, m, 4096, &ppm);
    EXPECT_EQ(t.calls, 1);
    EXPECT_EQ(gm_frag_count(&q->set), 0);
    EXPECT_EQ(q->epoch, gm_fragq_epoch);
    free_q(q);
}
END_TEST

START_TEST(test_lost_removes_kept_then_applied)
{
    struct gm_fragq *q = new_q();
    uint32_t ppm = GM_FRAGQ_KEEP;
    for (unsigned i = 0; i < GM_FRAGQ_LOST + 2; i++)
        gm_fragq_add(q, (uint64_t)(i + 1) * 4096, 1024, &ppm);
    gm_fragq_apply(q, false);
    EXPECT_EQ(gm_fragq_lost_remove(q, 0), false); /* never a live start */
    for (unsigned i = 0; i < GM_FRAGQ_LOST; i++)
        EXPECT_EQ(gm_fragq_lost_remove(q, (uint64_t)(i + 1) * 4096), true);
    EXPECT_EQ(gm_frag_count(&q->set), GM_FRAGQ_LOST + 2);
    gm_fragq_apply(q, false);
    EXPECT_EQ(gm_frag_count(&q->set), 2);
    EXPECT_EQ(gm_frag_check(&q->set), 0);
    /* The ninth at once finds every slot taken: counted, and the next
     * apply rebuilds from the owner's table (here the last start). */
    for (unsigned i = 0; i < GM_FRAGQ_LOST; i++)
        EXPECT_EQ(gm_fragq_lost_remove(q, (uint64_t)(i + 1) * 4096), true);
    EXPECT_EQ(gm_fragq_lost_remove(q, (GM_FRAGQ_LOST + 1) * 4096ull), false);
    EXPECT_EQ(q->lost_over, 1);
    struct table t = { .addr = { (GM_FRAGQ_LOST + 2) * 4096ull },
                       .size = { 1024 }, .n = 1 };
    gm_fragq_set_refill(q, refill, &t);
    gm_fragq_apply(q, false);
    EXPECT_EQ(t.calls, 1);
    EXPECT_EQ(gm_frag_count(&q->set), 1);
    free_q(q);
}
END_TEST

/* Threads: workers add and free their own starts under one mutex (the
 * writer lock's part) and now and then keep a free without it, racing an
 * applier: the tracker ends with each worker's keepers only. */
#define THREADS 4
#define ROUNDS 20000

struct worker {
    struct gm_fragq *q;
    pthread_mutex_t *mu;
    unsigned id;
    unsigned lost_ok, lost_over;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    uint64_t base = (uint64_t)(w->id + 1) << 32;
    uint64_t x = w->id * 7919u + 1;
    uint32_t ppm;
    for (unsigned i = 0; i < ROUNDS; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t a = base + ((x >> 33) % 64) * 65536;
        pthread_mutex_lock(w->mu);
        uint32_t m = gm_fragq_add(w->q, a, 4096 + (x >> 50), &ppm);
        if ((x >> 20) % 3 == 0)
            gm_fragq_apply(w->q, false);
        pthread_mutex_unlock(w->mu);
        if ((x >> 24) % 997 == 0) {
            /* A free that could not take the lock: kept (its add was
             * logged before, so the next apply takes both). */
            if (gm_fragq_lost_remove(w->q, a))
                w->lost_ok++;
            else
                w->lost_over++;
            continue;
        }
        pthread_mutex_lock(w->mu);
        gm_fragq_remove(w->q, m, a, &ppm);
        pthread_mutex_unlock(w->mu);
    }
    pthread_mutex_lock(w->mu);
    for (unsigned k = 0; k < 8; k++)
        gm_fragq_add(w->q, base + 64 * 65536 + k * 8192, 4096, &ppm);
    pthread_mutex_unlock(w->mu);
    return NULL;
}

START_TEST(test_threads_and_lost_removes)
{
    struct gm_fragq *q = new_q();
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_t th[THREADS];
    struct worker w[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
        w[i] = (struct worker){ q, &mu, i, 0, 0 };
        ck_assert_int_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    unsigned overs = 0, oks = 0;
    for (unsigned i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        overs += w[i].lost_over;
        oks += w[i].lost_ok;
    }
    gm_fragq_apply(q, false);
    ck_assert_uint_gt(oks, 0);
    EXPECT_EQ(q->lost_over, overs);
    if (overs == 0) {
        EXPECT_EQ(gm_frag_count(&q->set), THREADS * 8);
        /* Per thread 7 gaps of 4 KiB, between threads ~4 GiB each. */
        uint64_t within = (uint64_t)THREADS * 7 * 4096, between = 0;
        for (unsigned i = 1; i < THREADS; i++)
            between += ((uint64_t)1 << 32) - 8 * 8192 + 4096;
        EXPECT_EQ(gm_frag_total_free(&q->set), within + between);
    }
    EXPECT_EQ(gm_frag_check(&q->set), 0);
    free_q(q);
}
END_TEST

static Suite *fragq_suite(void)
{
    Suite *s = suite_create("fragq");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_adds_log_then_apply_hands_back_changes);
    tcase_add_test(tc, test_batch_boundary_applies);
    tcase_add_test(tc, test_cancel_while_logged_remove_after);
    tcase_add_test(tc, test_reused_start_in_every_order);
    tcase_add_test(tc, test_random_streams_are_exact);
    tcase_add_test(tc, test_mark_never_zero);
    tcase_add_test(tc, test_overflowed_remove_rebuilds);
    tcase_add_test(tc, test_epoch_rebuilds_before_use);
    tcase_add_test(tc, test_lost_removes_kept_then_applied);
    tcase_add_test(tc, test_threads_and_lost_removes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(fragq_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
