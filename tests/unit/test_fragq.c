/*
 * tests/unit/test_fragq.c — the batch applier in front of the fragmentation
 * tracker (shim/telemetry/fragq.c): posts only log, a sync applies them in
 * post order, a free cancels its add while it is still logged, every
 * GM_FRAGQ_BATCH-th post syncs, the figure is published only when it
 * changed, random streams leave exactly the tracker that applying each
 * change at once leaves, and threads posting and cancelling while others
 * sync leave exactly the tracker a single thread would (TSan runs this).
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shim/telemetry/fragq.h"

#include "tests/unit/gm_expect.h"

/* Publications seen: the last figure and how many. */
struct pubs {
    uint32_t last;
    uint64_t count;
};

static void record(void *ctx, uint32_t ppm)
{
    struct pubs *p = ctx;
    __atomic_store_n(&p->last, ppm, __ATOMIC_RELAXED);
    __atomic_fetch_add(&p->count, 1, __ATOMIC_RELAXED);
}

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

START_TEST(test_direct_posts_and_publish_on_change)
{
    struct gm_fragq *q = new_q();
    struct pubs p = { 0, 0 };
    /* [0,100) [200,300) [300,400) [1000,1100): gaps 100 and 600. */
    gm_fragq_post(q, 0, 100, record, &p);
    gm_fragq_post(q, 200, 100, record, &p);
    EXPECT_EQ(gm_frag_count(&q->set), 0); /* logged, not applied */
    gm_fragq_sync(q, record, &p);
    EXPECT_EQ(gm_frag_count(&q->set), 2);
    EXPECT_EQ(p.count, 0); /* a single gap: 0 ppm, as before */
    gm_fragq_post(q, 300, 100, record, &p);
    gm_fragq_post(q, 1000, 100, record, &p);
    gm_fragq_sync(q, record, &p);
    EXPECT_EQ(p.count, 1);
    EXPECT_EQ(p.last, 1000000u * 100 / 700); /* 1 - 600/700 */
    EXPECT_EQ(gm_frag_count(&q->set), 4);
    gm_fragq_post(q, 200, 0, record, &p); /* remove [200,300) */
    gm_fragq_sync(q, record, &p);
    EXPECT_EQ(gm_frag_total_free(&q->set), 200 + 600);
    EXPECT_EQ(p.last, 1000000u * 200 / 800);
    EXPECT_EQ(p.count, 2);
    gm_fragq_sync(q, record, &p); /* nothing new: nothing published */
    EXPECT_EQ(p.count, 2);
    EXPECT_EQ(gm_frag_check(&q->set), 0);
    free_q(q);
}
END_TEST

/* While another thread holds the role, a sync applies nothing; the next
 * sync applies the log in post order. */
START_TEST(test_queued_in_order)
{
    struct gm_fragq *q = new_q();
    struct pubs p = { 0, 0 };
    __atomic_store_n(&q->busy, 1, __ATOMIC_SEQ_CST); /* "another holder" */
    /* Add, remove and add again at one address, then a neighbour: only
     * post order gives the final set {[0,64), [4096,4160)}. */
    gm_fragq_post(q, 0, 32, record, &p);
    gm_fragq_post(q, 0, 0, record, &p);
    gm_fragq_post(q, 0, 64, record, &p);
    gm_fragq_post(q, 4096, 64, record, &p);
    gm_fragq_sync(q, record, &p);
    EXPECT_EQ(gm_frag_count(&q->set), 0); /* nothing applied yet */
    EXPECT_EQ(q->tail, 4);
    __atomic_store_n(&q->busy, 0, __ATOMIC_SEQ_CST);
    gm_fragq_post(q, 8192, 64, record, &p);
    gm_fragq_sync(q, record, &p);
    EXPECT_EQ(gm_frag_count(&q->set), 3);
    EXPECT_EQ(gm_frag_total_free(&q->set), (4096 - 64) + (8192 - 4160));
    EXPECT_EQ(q->head, 5);
    EXPECT_EQ(gm_frag_check(&q->set), 0);
    free_q(q);
}
END_TEST

/* Every GM_FRAGQ_BATCH-th post syncs by itself: at most a batch is ever
 * pending. */
START_TEST(test_batch_boundary_syncs)
{
    struct gm_fragq *q = new_q();
    struct pubs p = { 0, 0 };
    for (unsigned i = 0; i < GM_FRAGQ_BATCH - 1; i++)
        gm_fragq_post(q, (uint64_t)i * 4096, 1024, record, &p);
    EXPECT_EQ(gm_frag_count(&q->set), 0);
    gm_fragq_post(q, (uint64_t)(GM_FRAGQ_BATCH - 1) * 4096, 1024, record, &p);
    EXPECT_EQ(gm_frag_count(&q->set), GM_FRAGQ_BATCH);
    EXPECT_EQ(q->head, q->tail);
    EXPECT_EQ(p.count, 1);
    free_q(q);
}
END_TEST

/* The free of a block whose add is still logged cancels it (the tracker
 * never sees either); once applied, the cancel fails and the free logs a
 * remove; a stale or foreign mark cancels nothing. */
START_TEST(test_cancel_before_and_after_sync)
{
    struct gm_fragq *q = new_q();
    struct pubs p = { 0, 0 };
    uint32_t m = gm_fragq_mark(gm_fragq_post(q, 4096, 100, record, &p));
    EXPECT_EQ(gm_fragq_cancel(q, m, 8192), false); /* another start */
    EXPECT_EQ(gm_fragq_cancel(q, 0, 4096), false);  /* no mark */
    EXPECT_EQ(gm_fragq_cancel(q, m, 4096), true);
    EXPECT_EQ(gm_fragq_cancel(q, m, 4096), false);  /* only once */
    gm_fragq_sync(q, record, &p);
    EXPECT_EQ(gm_frag_count(&q->set), 0);
    EXPECT_EQ(q->head, 1);
    m = gm_fragq_mark(gm_fragq_post(q, 4096, 100, record, &p));
    gm_fragq_sync(q, record, &p);
    EXPECT_EQ(gm_frag_count(&q->set), 1);
    EXPECT_EQ(gm_fragq_cancel(q, m, 4096), false);  /* applied */
    free_q(q);
}
END_TEST

/* Random streams over a few starts as the shim makes them (an add of a
 * free start; a free of a live one, cancelling its add when it can, else
 * logging a remove), synced at random points: the tracker equals a
 * reference tracker that applied each change at once. */
START_TEST(test_cancelling_is_exact)
{
    uint64_t x = 12345;
    for (unsigned round = 0; round < 200; round++) {
        struct gm_fragq *q = new_q();
        struct gm_frag ref;
        gm_frag_init(&ref);
        struct pubs p = { 0, 0 };
        uint32_t mark[12] = { 0 };
        uint8_t live[12] = { 0 };
        unsigned n = 50 + round * 5, cancelled = 0;
        for (unsigned i = 0; i < n; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            unsigned k = (unsigned)((x >> 40) % 12);
            uint64_t a = (uint64_t)k * 8192;
            uint64_t size = 1024 + ((x >> 50) & 1023);
            if (!live[k]) {
                mark[k] = gm_fragq_mark(gm_fragq_post(q, a, size, record, &p));
                gm_frag_insert(&ref, a, size);
                live[k] = 1;
            } else {
                if (gm_fragq_cancel(q, mark[k], a))
                    cancelled++;
                else
                    gm_fragq_post(q, a, 0, record, &p);
                gm_frag_remove(&ref, a);
                live[k] = 0;
            }
            if ((x >> 10) % 37 == 0)
                gm_fragq_sync(q, record, &p);
        }
        gm_fragq_sync(q, record, &p);
        ck_assert_uint_gt(cancelled, 0);
        EXPECT_EQ(gm_frag_count(&q->set), gm_frag_count(&ref));
        EXPECT_EQ(gm_frag_total_free(&q->set), gm_frag_total_free(&ref));
        EXPECT_EQ(gm_frag_largest_free(&q->set), gm_frag_largest_free(&ref));
        EXPECT_EQ(p.last, gm_frag_ppm(&ref));
        EXPECT_EQ(gm_frag_check(&q->set), 0);
        gm_frag_destroy(&ref);
        free_q(q);
    }
}
END_TEST

/* A full queue: the poster waits until a holder frees a slot, and applies
 * pending work itself once the role is free. */
struct filler {
    struct gm_fragq *q;
    struct pubs *p;
    unsigned n;
};

static void *fill(void *arg)
{
    struct filler *f = arg;
    for (unsigned i = 0; i < f->n; i++)
        gm_fragq_post(f->q, (uint64_t)i * 4096, 1024, record, f->p);
    return NULL;
}

START_TEST(test_full_queue_waits_then_drains)
{
    struct gm_fragq *q = new_q();
    struct pubs p = { 0, 0 };
    __atomic_store_n(&q->busy, 1, __ATOMIC_SEQ_CST);
    struct filler f = { q, &p, GM_FRAGQ_CAP + 40 };
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, fill, &f), 0);
    /* Wait until the queue is full and the poster is stuck on a slot. */
    while (__atomic_load_n(&q->tail, __ATOMIC_SEQ_CST) < GM_FRAGQ_CAP + 1)
        sched_yield();
    EXPECT_EQ(gm_frag_count(&q->set), 0);
    __atomic_store_n(&q->busy, 0, __ATOMIC_SEQ_CST);
    pthread_join(th, NULL);
    gm_fragq_sync(q, record, &p);
    EXPECT_EQ(gm_frag_count(&q->set), GM_FRAGQ_CAP + 40);
    EXPECT_EQ(q->head, q->tail); /* every queued operation applied */
    EXPECT_EQ(gm_frag_check(&q->set), 0);
    /* n - 1 equal gaps of 3 KiB: 1 - 1/(n - 1). */
    uint64_t gaps = GM_FRAGQ_CAP + 39;
    EXPECT_EQ(p.last, (uint32_t)((gaps - 1) * 1000000u / gaps));
    free_q(q);
}
END_TEST

/* Threads posting adds and removes of their own addresses at once: the
 * tracker ends as the one-thread sequence would leave it, and the last
 * figure published is the tracker's. */
#define THREADS 4
#define ROUNDS 20000

struct worker {
    struct gm_fragq *q;
    struct pubs *p;
    unsigned id;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    uint64_t base = (uint64_t)(w->id + 1) << 32;
    uint64_t x = w->id * 7919u + 1;
    for (unsigned i = 0; i < ROUNDS; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t slot = (x >> 33) % 64;
        uint64_t a = base + slot * 65536;
        /* Add then free at once (cancelling the add when it is still
         * logged, racing the syncs of other threads), so every round
         * leaves the set as it was; the final set holds each thread's
         * keepers only. */
        uint32_t m = gm_fragq_mark(
            gm_fragq_post(w->q, a, 4096 + (x >> 50), record, w->p));
        if ((x >> 20) % 3 == 0)
            gm_fragq_sync(w->q, record, w->p);
        if (!gm_fragq_cancel(w->q, m, a))
            gm_fragq_post(w->q, a, 0, record, w->p);
    }
    for (unsigned k = 0; k < 8; k++)
        gm_fragq_post(w->q, base + 64 * 65536 + k * 8192, 4096, record, w->p);
    return NULL;
}

START_TEST(test_threads_leave_the_same_set)
{
    struct gm_fragq *q = new_q();
    struct pubs p = { 0, 0 };
    pthread_t th[THREADS];
    struct worker w[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
        w[i] = (struct worker){ q, &p, i };
        ck_assert_int_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (unsigned i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    gm_fragq_sync(q, record, &p);
    EXPECT_EQ(q->tail, (uint64_t)0 + q->head);
    EXPECT_EQ(gm_frag_count(&q->set), THREADS * 8);
    EXPECT_EQ(gm_frag_check(&q->set), 0);
    /* Per thread 7 gaps of 4 KiB, between threads gaps of ~4 GiB. */
    uint64_t within = (uint64_t)THREADS * 7 * 4096;
    uint64_t between = 0;
    for (unsigned i = 1; i < THREADS; i++)
        between += ((uint64_t)1 << 32) - 8 * 8192 + 4096;
    EXPECT_EQ(gm_frag_total_free(&q->set), within + between);
    EXPECT_EQ(p.last, gm_frag_ppm(&q->set));
    free_q(q);
}
END_TEST

static Suite *fragq_suite(void)
{
    Suite *s = suite_create("fragq");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_direct_posts_and_publish_on_change);
    tcase_add_test(tc, test_queued_in_order);
    tcase_add_test(tc, test_batch_boundary_syncs);
    tcase_add_test(tc, test_cancel_before_and_after_sync);
    tcase_add_test(tc, test_cancelling_is_exact);
    tcase_add_test(tc, test_full_queue_waits_then_drains);
    tcase_add_test(tc, test_threads_leave_the_same_set);
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
