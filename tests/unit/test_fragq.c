/*
 * tests/unit/test_fragq.c — the lock-free hand-off in front of the
 * fragmentation tracker (shim/telemetry/fragq.c): operations applied in post order,
 * queued operations applied by the role holder or by their poster, the
 * figure published only when it changed, and many threads posting at once
 * leaving exactly the tracker a single thread would (TSan runs this too).
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
    EXPECT_EQ(p.count, 0); /* a single gap: 0 ppm, as before */
    gm_fragq_post(q, 300, 100, record, &p);
    gm_fragq_post(q, 1000, 100, record, &p);
    EXPECT_EQ(p.count, 1);
    EXPECT_EQ(p.last, 1000000u * 100 / 700); /* 1 - 600/700 */
    EXPECT_EQ(gm_frag_count(&q->set), 4);
    gm_fragq_post(q, 200, 0, record, &p); /* remove [200,300) */
    EXPECT_EQ(gm_frag_total_free(&q->set), 200 + 600);
    EXPECT_EQ(p.last, 1000000u * 200 / 800);
    EXPECT_EQ(p.count, 2);
    EXPECT_EQ(gm_frag_check(&q->set), 0);
    free_q(q);
}
END_TEST

/* While another thread holds the role, posts wait in the queue; they are
 * applied in post order by whoever takes the role next. */
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
    EXPECT_EQ(gm_frag_count(&q->set), 0); /* nothing applied yet */
    EXPECT_EQ(q->tail, 4);
    __atomic_store_n(&q->busy, 0, __ATOMIC_SEQ_CST);
    /* The next post drains the queue before its own operation. */
    gm_fragq_post(q, 8192, 64, record, &p);
    EXPECT_EQ(gm_frag_count(&q->set), 3);
    EXPECT_EQ(gm_frag_total_free(&q->set), (4096 - 64) + (8192 - 4160));
    EXPECT_EQ(q->head, 4); /* the direct post took no ticket */
    EXPECT_EQ(gm_frag_check(&q->set), 0);
    free_q(q);
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
        /* Add then remove at once, so every round leaves the set as it
         * was; the final set holds each thread's keepers only. */
        gm_fragq_post(w->q, a, 4096 + (x >> 50), record, w->p);
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
