/*
 * tests/unit/test_wlock.c — the telemetry writer lock (shim/telemetry/
 * telwrite.h, ring.c) in hostile cases: a writer re-entered on its own
 * thread (a signal handler that interrupted it) skips instead of waiting
 * for itself, and the exit paths still close the segment; a holder that
 * died inside its update is replaced and what it left open repaired; a
 * holder alive but stuck is given up on after GM_TEL_LOCK_WAIT_NS with
 * one warning, and the lock is used again once it is let go; a writer
 * that waited while the segment was closed writes nothing into it, nor
 * does one after the holder's release (the lock stays closed); a stuck
 * holder that died is taken over; a lock that moves from holder to holder
 * is not given up on as stuck; two closers close once.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shim/base/clock.h"
#include "shim/telemetry/telemetry.h"
#include "shim/telemetry/telwrite.h"

#include "tests/unit/tel_mem.h"

struct seg {
    struct gm_tel t;
    void *mem;
};

static void open_seg(struct seg *s)
{
    s->mem = gm_test_tel_mem(&s->t, 1024, 2);
}

static struct gm_abi_dev *dev0(struct seg *s)
{
    return (struct gm_abi_dev *)((char *)s->mem + sizeof(struct gm_abi_header));
}

static uint64_t allocs0(struct seg *s)
{
    return __atomic_load_n(&dev0(s)->allocs, __ATOMIC_ACQUIRE);
}

static void one_alloc(struct seg *s)
{
    gm_tel_alloc(&s->t, 0, GM_API_MEM_ALLOC, 0x1000, 4096, 100, 4096, 4096);
}

START_TEST(test_reentry_skips_and_close_still_closes)
{
    struct seg s;
    open_seg(&s);
    one_alloc(&s);
    ck_assert_uint_eq(allocs0(&s), 1);
    /* This thread is inside a writer, as a signal handler would find it. */
    ck_assert_ptr_nonnull(tw_lock(&s.t));
    one_alloc(&s);                       /* would wait for itself */
    gm_tel_sync(&s.t, 0, 8192, 8192);
    ck_assert_uint_eq(allocs0(&s), 1);   /* skipped, not recorded */
    ck_assert(!gm_tel_hold_writers(&s.t));
    /* Told apart from a stuck holder at once, not after the wait. */
    ck_assert_int_eq(atomic_load(&s.t.wlock.v) & TW_W_STUCK, 0);
    gm_tel_close(&s.t, true);            /* exit() from the handler */
    struct gm_abi_header *h = s.mem;
    ck_assert(__atomic_load_n(&h->flags, __ATOMIC_ACQUIRE) & GM_ABI_F_CLOSED);
    ck_assert_ptr_null(s.t.hdr);
    free(s.mem);
}
END_TEST

/* Takes the lock, enters device 0's block, marks its ring slot busy, and
 * exits with the lock held: a thread that died inside its update. */
static void *die_inside(void *arg)
{
    struct seg *s = arg;
    const struct gm_tw *w = tw_lock(&s->t);
    struct gm_abi_header *h = w->h;
    tw_stats_enter(w, 0, gm_clock_realtime_ns(), true);
    struct gm_abi_record *ring =
        (struct gm_abi_record *)((char *)h + h->ring_offset);
    uint64_t i = h->ring_head++;
    ring[i & (h->ring_capacity - 1)].seq = (i + 1) | GM_ABI_SEQ_BUSY;
    return NULL;
}

START_TEST(test_dead_holder_replaced_and_repaired)
{
    struct seg s;
    open_seg(&s);
    one_alloc(&s);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, die_inside, &s), 0);
    pthread_join(th, NULL);
    ck_assert_int_ne(atomic_load(&s.t.wlock.v), TW_W_OPEN); /* "held" */
    uint64_t epoch = gm_fragq_epoch;
    one_alloc(&s);                                    /* does not hang */
    ck_assert_uint_eq(allocs0(&s), 2);
    /* The fragmentation logs are told to rebuild their trees. */
    ck_assert_uint_eq(gm_fragq_epoch, epoch + 1);
    struct gm_snapshot *snap = malloc(sizeof *snap);
    ck_assert_ptr_nonnull(snap);
    ck_assert_int_eq(gm_tel_snapshot(&s.t, snap), 0); /* no block busy */
    ck_assert_uint_eq(snap->dev[0].allocs, 2);
    /* The dead writer's slot (event 1) is no longer marked busy. */
    struct gm_abi_header *h = s.mem;
    struct gm_abi_record *ring =
        (struct gm_abi_record *)((char *)h + h->ring_offset);
    ck_assert_uint_eq(ring[1].seq & GM_ABI_SEQ_BUSY, 0);
    ck_assert_uint_eq(ring[2].seq, 3); /* the next event, published */
    free(snap);
    gm_tel_close(&s.t, false);
    free(s.mem);
}
END_TEST

struct stuck {
    struct seg *s;
    int go[2];
    bool close_first; /* close the segment (an exit path) before letting go */
};

/* Holds the lock until told to let it go. */
static void *hold_until_told(void *arg)
{
    struct stuck *k = arg;
    ck_assert_ptr_nonnull(tw_lock(&k->s->t));
    char c;
    ck_assert_int_eq(read(k->go[0], &c, 1), 1);
    if (k->close_first)
        gm_tel_close(&k->s->t, true);
    tw_unlock(&k->s->t);
    return NULL;
}

/* Lets the holder go after 100 ms. */
static void *tell_later(void *arg)
{
    struct stuck *k = arg;
    nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
    ck_assert_int_eq(write(k->go[1], "x", 1), 1);
    return NULL;
}

START_TEST(test_stuck_holder_given_up_then_lock_reused)
{
    struct seg s;
    open_seg(&s);
    struct stuck k = { .s = &s };
    ck_assert_int_eq(pipe(k.go), 0);
    FILE *err = tmpfile();
    ck_assert_ptr_nonnull(err);
    fflush(stderr);
    int saved = dup(2);
    dup2(fileno(err), 2);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, hold_until_told, &k), 0);
    while (atomic_load(&s.t.wlock.v) == TW_W_OPEN)
        sched_yield();
    uint64_t t0 = gm_clock_monotonic_ns();
    one_alloc(&s);                        /* gives up after the wait */
    uint64_t waited = gm_clock_monotonic_ns() - t0;
    uint64_t t1 = gm_clock_monotonic_ns();
    one_alloc(&s);                        /* at once: known stuck */
    uint64_t second = gm_clock_monotonic_ns() - t1;
    ck_assert_uint_eq(allocs0(&s), 0);
    ck_assert_uint_ge(waited, GM_TEL_LOCK_WAIT_NS);
    ck_assert_uint_lt(second, GM_TEL_LOCK_WAIT_NS / 2);
    ck_assert_int_eq(write(k.go[1], "x", 1), 1);
    pthread_join(th, NULL);
    one_alloc(&s);                        /* free again: recorded */
    ck_assert_uint_eq(allocs0(&s), 1);
    /* Another holder, briefly: a waiter waits for it again. */
    ck_assert_int_eq(pthread_create(&th, NULL, hold_until_told, &k), 0);
    while (atomic_load(&s.t.wlock.v) == TW_W_OPEN)
        sched_yield();
    pthread_t rel;
    ck_assert_int_eq(pthread_create(&rel, NULL, tell_later, &k), 0);
    one_alloc(&s);
    ck_assert_uint_eq(allocs0(&s), 2);
    pthread_join(th, NULL);
    pthread_join(rel, NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char text[512] = { 0 };
    rewind(err);
    size_t n = fread(text, 1, sizeof text - 1, err);
    text[n] = '\0';
    fclose(err);
    ck_assert_msg(strstr(text, "gpumem: telemetry: thread ") == text &&
                      strstr(text, "held the segment's writer lock for "
                                   "over 2 s") != NULL,
                  "%s", text);
    unsigned lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += text[i] == '\n';
    ck_assert_uint_eq(lines, 1); /* once, though two events gave up */
    close(k.go[0]);
    close(k.go[1]);
    gm_tel_close(&s.t, false);
    free(s.mem);
}
END_TEST

static void *alloc_once(void *arg)
{
    one_alloc(arg);
    return NULL;
}

/* A holder closes the segment (an exit path) while another writer waits
 * for the lock: that writer, once it has the lock, writes nothing. */
START_TEST(test_waiter_writes_nothing_after_close)
{
    struct seg s;
    open_seg(&s);
    struct stuck k = { .s = &s, .close_first = true };
    ck_assert_int_eq(pipe(k.go), 0);
    pthread_t holder, waiter;
    ck_assert_int_eq(pthread_create(&holder, NULL, hold_until_told, &k), 0);
    while (atomic_load(&s.t.wlock.v) == TW_W_OPEN)
        sched_yield();
    ck_assert_int_eq(pthread_create(&waiter, NULL, alloc_once, &s), 0);
    nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
    ck_assert_int_eq(write(k.go[1], "x", 1), 1);
    pthread_join(holder, NULL);
    pthread_join(waiter, NULL);
    ck_assert_uint_eq(allocs0(&s), 0);
    struct gm_abi_header *h = s.mem;
    ck_assert_uint_eq(__atomic_load_n(&h->ring_head, __ATOMIC_ACQUIRE), 0);
    /* The holder's release left the lock closed, not free: a writer
     * after it takes nothing either. */
    ck_assert_int_eq(atomic_load(&s.t.wlock.v), 0);
    one_alloc(&s);
    ck_assert_uint_eq(__atomic_load_n(&h->ring_head, __ATOMIC_ACQUIRE), 0);
    ck_assert_uint_eq(allocs0(&s), 0);
    close(k.go[0]);
    close(k.go[1]);
    free(s.mem);
}
END_TEST

/* Takes the lock and ends its thread without letting go. */
static void *hold_and_end(void *arg)
{
    struct seg *s = arg;
    ck_assert_ptr_nonnull(tw_lock(&s->t));
    return NULL;
}

/* A holder marked stuck that then died is taken over by a later writer
 * (skipping writers ask now and then), not skipped past for good. */
START_TEST(test_stuck_holder_that_died_is_taken_over)
{
    struct seg s;
    open_seg(&s);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, hold_and_end, &s), 0);
    pthread_join(th, NULL);
    atomic_fetch_or(&s.t.wlock.v, TW_W_STUCK); /* as a waiter gave up */
    for (int i = 0; i < 257 && allocs0(&s) == 0; i++)
        one_alloc(&s);
    ck_assert_uint_eq(allocs0(&s), 1);
    ck_assert_int_eq(atomic_load(&s.t.wlock.v), TW_W_OPEN);
    one_alloc(&s);
    ck_assert_uint_eq(allocs0(&s), 2);
    gm_tel_close(&s.t, false);
    free(s.mem);
}
END_TEST

/* A live thread that only sleeps (its id stands for a holder). */
struct idle {
    _Atomic int tid;
    int go[2];
};

static void *idle_thread(void *arg)
{
    struct idle *d = arg;
    atomic_store(&d->tid, (int)gm_thread_id());
    char c;
    ck_assert_int_eq(read(d->go[0], &c, 1), 1);
    return NULL;
}

/* A lock that passes from holder to holder for longer than
 * GM_TEL_LOCK_WAIT_NS (but under twice it) while a writer waits is not
 * given up on as stuck: the writer gets it once it is free. */
START_TEST(test_moving_lock_is_not_given_up_as_stuck)
{
    struct seg s;
    open_seg(&s);
    struct idle a, b;
    pthread_t ta, tb, waiter;
    ck_assert_int_eq(pipe(a.go), 0);
    ck_assert_int_eq(pipe(b.go), 0);
    atomic_store(&a.tid, 0);
    atomic_store(&b.tid, 0);
    ck_assert_int_eq(pthread_create(&ta, NULL, idle_thread, &a), 0);
    ck_assert_int_eq(pthread_create(&tb, NULL, idle_thread, &b), 0);
    while (atomic_load(&a.tid) == 0 || atomic_load(&b.tid) == 0)
        sched_yield();
    atomic_store(&s.t.wlock.v, TW_W_OPEN | atomic_load(&a.tid));
    ck_assert_int_eq(pthread_create(&waiter, NULL, alloc_once, &s), 0);
    const uint64_t step = 100000000ull;
    for (uint64_t t = 0; t < GM_TEL_LOCK_WAIT_NS + 5 * step; t += step) {
        nanosleep(&(struct timespec){ .tv_nsec = (long)step }, NULL);
        int next = (t / step) % 2 ? atomic_load(&a.tid) : atomic_load(&b.tid);
        int cur = atomic_load(&s.t.wlock.v);
        ck_assert_int_eq(cur & TW_W_STUCK, 0);
        atomic_store(&s.t.wlock.v, TW_W_OPEN | next);
    }
    ck_assert_uint_eq(allocs0(&s), 0);
    atomic_store(&s.t.wlock.v, TW_W_OPEN); /* let go */
    pthread_join(waiter, NULL);
    ck_assert_uint_eq(allocs0(&s), 1);
    ck_assert_int_eq(write(a.go[1], "x", 1), 1);
    ck_assert_int_eq(write(b.go[1], "x", 1), 1);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    for (int i = 0; i < 2; i++) {
        close(i ? a.go[0] : b.go[0]);
        close(i ? a.go[1] : b.go[1]);
    }
    gm_tel_close(&s.t, false);
    free(s.mem);
}
END_TEST

struct closers {
    struct seg *s;
    pthread_barrier_t bar;
};

static void *close_at_once(void *arg)
{
    struct closers *c = arg;
    pthread_barrier_wait(&c->bar);
    gm_tel_close(&c->s->t, false);
    return NULL;
}

/* Two threads closing the segment past a holder marked stuck: one of
 * them closes it (its history flushed once), the other finds it closing.
 * The race is timing's: many rounds, each a fresh segment. */
START_TEST(test_two_closers_past_a_stuck_holder_close_once)
{
    int twice = 0;
    uint64_t t0 = gm_clock_monotonic_ns();
    for (int r = 0; r < 3000 && gm_clock_monotonic_ns() - t0 < 3000000000ull;
         r++) {
        struct seg s;
        open_seg(&s);
        one_alloc(&s);
        struct stuck k = { .s = &s };
        ck_assert_int_eq(pipe(k.go), 0);
        pthread_t h, c1, c2;
        ck_assert_int_eq(pthread_create(&h, NULL, hold_until_told, &k), 0);
        while (atomic_load(&s.t.wlock.v) == TW_W_OPEN)
            sched_yield();
        atomic_fetch_or(&s.t.wlock.v, TW_W_STUCK); /* as a waiter gave up */
        uint64_t wb = __atomic_load_n(&dev0(&s)->wbegin, __ATOMIC_ACQUIRE);
        struct closers c = { .s = &s };
        pthread_barrier_init(&c.bar, NULL, 2);
        ck_assert_int_eq(pthread_create(&c1, NULL, close_at_once, &c), 0);
        ck_assert_int_eq(pthread_create(&c2, NULL, close_at_once, &c), 0);
        pthread_join(c1, NULL);
        pthread_join(c2, NULL);
        /* A close flushes the history: one write of the device block. */
        twice += __atomic_load_n(&dev0(&s)->wbegin, __ATOMIC_ACQUIRE) - wb > 1;
        ck_assert_int_eq(write(k.go[1], "x", 1), 1);
        pthread_join(h, NULL);
        ck_assert_int_eq(atomic_load(&s.t.wlock.v), 0);
        pthread_barrier_destroy(&c.bar);
        close(k.go[0]);
        close(k.go[1]);
        free(s.mem);
    }
    ck_assert_int_eq(twice, 0);
}
END_TEST

static Suite *wlock_suite(void)
{
    Suite *s = suite_create("wlock");
    TCase *tc = tcase_create("wlock");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_reentry_skips_and_close_still_closes);
    tcase_add_test(tc, test_dead_holder_replaced_and_repaired);
    tcase_add_test(tc, test_stuck_holder_given_up_then_lock_reused);
    tcase_add_test(tc, test_waiter_writes_nothing_after_close);
    tcase_add_test(tc, test_stuck_holder_that_died_is_taken_over);
    tcase_add_test(tc, test_moving_lock_is_not_given_up_as_stuck);
    tcase_add_test(tc, test_two_closers_past_a_stuck_holder_close_once);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(wlock_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
