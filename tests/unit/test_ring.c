/*
 * tests/unit/test_ring.c — the event ring and the seqlocked stats
 * (shim/telemetry/ring.c) read through the reader library (tools/lib/reader.c):
 * wrap-around, overwrite with exact loss counts, unpublished and dropped
 * slots, and two cross-process stress cases — 4 producer threads with a
 * reader in another process (no record torn, duplicated or out of order;
 * every event delivered or counted lost exactly once), and writers against
 * a snapshotting process (no torn stats tuple).
 */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shim/base/clock.h"
#include "shim/telemetry/telemetry.h"
#include "tools/lib/reader.h"

#include "tests/unit/gm_expect.h"

/* ---- helpers ------------------------------------------------------------ */

struct mem_seg {
    struct gm_tel t;
    void *mem;
    struct gm_seg seg;
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
}

static void mem_close(struct mem_seg *m)
{
    gm_seg_close(&m->seg);
    gm_tel_close(&m->t, false);
    free(m->mem);
}

static struct gm_abi_record *slot_of(struct mem_seg *m, uint64_t index)
{
    struct gm_abi_header *h = m->mem;
    struct gm_abi_record *ring =
        (struct gm_abi_record *)((char *)m->mem + h->ring_offset);
    return &ring[index & (h->ring_capacity - 1)];
}

static void push(struct gm_tel *t, uint64_t k)
{
    gm_tel_alloc(t, 0, GM_API_MEM_ALLOC, 0x1000 + k, k, k % 977, k, k);
}

/* ---- single-threaded ring behaviour ------------------------------------- */

START_TEST(test_wraparound_keeps_last_capacity)
{
    struct mem_seg m;
    mem_open(&m, 16, 1);
    for (uint64_t k = 0; k < 40; k++)
        push(&m.t, k);
    struct gm_cursor c;
    gm_cursor_init(&c, &m.seg, false);
    struct gm_abi_record r[64];
    uint64_t lost = 99;
    size_t n = gm_seg_drain(&m.seg, &c, r, 64, 0, &lost);
    EXPECT_EQ(lost, 24);
    EXPECT_EQ(n, 16);
    for (size_t i = 0; i < n; i++) {
        EXPECT_EQ(r[i].seq, 24 + i + 1);
        EXPECT_EQ(r[i].size, 24 + i);
        EXPECT_EQ(r[i].addr, 0x1000 + 24 + i);
        EXPECT_EQ(r[i].lat_ns, (24 + i) % 977);
        EXPECT_EQ(r[i].kind, GM_EV_ALLOC);
        EXPECT_EQ(r[i].api, GM_API_MEM_ALLOC);
        EXPECT_EQ(r[i].tid, gm_thread_id());
    }
    n = gm_seg_drain(&m.seg, &c, r, 64, 0, &lost);
    EXPECT_EQ(n, 0);
    EXPECT_EQ(lost, 0);
    mem_close(&m);
}
END_TEST

START_TEST(test_overwrite_exact_lost_counts)
{
    struct mem_seg m;
    mem_open(&m, 16, 1);
    struct gm_cursor c;
    gm_cursor_init(&c, &m.seg, false);
    struct gm_abi_record r[8];
    uint64_t lost, next = 0, total_lost = 0, got = 0;
    /* Bursts of varying length between partial reads: every index is
     * either read, in order, or counted lost. */
    for (uint64_t round = 0; round < 200; round++) {
        uint64_t burst = (round * 7) % 37;
        for (uint64_t i = 0; i < burst; i++)
            push(&m.t, next++);
        size_t n = gm_seg_drain(&m.seg, &c, r, 1 + round % 8, 0, &lost);
        total_lost += lost;
        for (size_t i = 0; i < n; i++) {
            EXPECT_EQ(r[i].size, r[i].seq - 1);
            EXPECT_EQ(r[i].seq - 1, got + total_lost);
            got++;
        }
        /* The ring never holds more than its capacity after a read. */
        ck_assert_uint_le(next - c.next, 16);
    }
    size_t n;
    while ((n = gm_seg_drain(&m.seg, &c, r, 8, 0, &lost)) > 0 || lost) {
        total_lost += lost;
        got += n;
    }
    EXPECT_EQ(got + total_lost, next);
    ck_assert_uint_gt(total_lost, 0);
    mem_close(&m);
}
END_TEST

START_TEST(test_cursor_only_new)
{
    struct mem_seg m;
    mem_open(&m, 16, 1);
    for (uint64_t k = 0; k < 5; k++)
        push(&m.t, k);
    struct gm_cursor c;
    gm_cursor_init(&c, &m.seg, true);
    EXPECT_EQ(c.next, 5);
    push(&m.t, 5);
    struct gm_abi_record r[4];
    uint64_t lost;
    EXPECT_EQ(gm_seg_drain(&m.seg, &c, r, 4, 0, &lost), 1);
    EXPECT_EQ(r[0].size, 5);
    EXPECT_EQ(lost, 0);
    mem_close(&m);
}
END_TEST

/* A claimed slot that is not published yet holds back the events after it
 * (order is kept) until it is published; FLUSH counts it lost instead. */
START_TEST(test_unpublished_slot_waits_then_flushes)
{
    struct mem_seg m;
    mem_open(&m, 16, 1);
    struct gm_abi_header *h = m.mem;
    __atomic_fetch_add(&h->ring_head, 1, __ATOMIC_RELAXED); /* claim #0 */
    push(&m.t, 1);                                          /* #1 */
    struct gm_cursor c;
    gm_cursor_init(&c, &m.seg, false);
    struct gm_abi_record r[4];
    uint64_t lost;
    EXPECT_EQ(gm_seg_drain(&m.seg, &c, r, 4, 0, &lost), 0);
    EXPECT_EQ(lost, 0);
    EXPECT_EQ(c.next, 0);
    /* Publish #0 by hand, as a producer would. */
    struct gm_abi_record *s0 = slot_of(&m, 0);
    s0->size = 77;
    s0->kind = GM_EV_FREE;
    __atomic_store_n(&s0->seq, 1, __ATOMIC_RELEASE);
    EXPECT_EQ(gm_seg_drain(&m.seg, &c, r, 4, 0, &lost), 2);
    EXPECT_EQ(r[0].size, 77);
    EXPECT_EQ(r[1].size, 1);
    /* Another claimed-but-never-published slot: FLUSH skips it. */
    __atomic_fetch_add(&h->ring_head, 1, __ATOMIC_RELAXED);
    push(&m.t, 3);
    EXPECT_EQ(gm_seg_drain(&m.seg, &c, r, 4, GM_DRAIN_FLUSH, &lost), 1);
    EXPECT_EQ(lost, 1);
    EXPECT_EQ(r[0].size, 3);
    mem_close(&m);
}
END_TEST

/* A producer that finds its slot still being written by a lapped producer
 * drops its record (counted) instead of waiting or tearing it. */
START_TEST(test_busy_slot_drops_record)
{
    struct mem_seg m;
    mem_open(&m, 16, 1);
    struct gm_abi_header *h = m.mem;
    struct gm_abi_record *s0 = slot_of(&m, 0);
    /* Slot 0 busy with an (impossible here) earlier writer. */
    __atomic_store_n(&s0->seq, GM_ABI_SEQ_BUSY | 1, __ATOMIC_RELAXED);
    s0->size = 4242;
    push(&m.t, 0);
    EXPECT_EQ(h->ring_dropped, 1);
    EXPECT_EQ(s0->size, 4242); /* untouched */
    push(&m.t, 1);
    struct gm_cursor c;
    gm_cursor_init(&c, &m.seg, false);
    struct gm_abi_record r[4];
    uint64_t lost;
    EXPECT_EQ(gm_seg_drain(&m.seg, &c, r, 4, GM_DRAIN_FLUSH, &lost), 1);
    EXPECT_EQ(lost, 1);
    EXPECT_EQ(r[0].size, 1);
    /* A slot already holding a later event is not overwritten either. */
    struct gm_abi_record *s2 = slot_of(&m, 2);
    __atomic_store_n(&s2->seq, 2 + 16 + 1, __ATOMIC_RELAXED);
    push(&m.t, 2);
    EXPECT_EQ(h->ring_dropped, 2);
    EXPECT_EQ(s2->seq, 19);
    mem_close(&m);
}
END_TEST

START_TEST(test_read_record_states)
{
    struct mem_seg m;
    mem_open(&m, 16, 1);
    push(&m.t, 0);
    struct gm_abi_record out;
    ck_assert_int_eq(gm_tel_read_record(slot_of(&m, 0), 0, &out), GM_REC_OK);
    ck_assert_int_eq(gm_tel_read_record(slot_of(&m, 16), 16, &out),
                     GM_REC_PENDING);
    for (uint64_t k = 1; k <= 16; k++)
        push(&m.t, k);
    ck_assert_int_eq(gm_tel_read_record(slot_of(&m, 0), 0, &out),
                     GM_REC_GONE);
    ck_assert_int_eq(gm_tel_read_record(slot_of(&m, 16), 16, &out),
                     GM_REC_OK);
    EXPECT_EQ(out.size, 16);
    mem_close(&m);
}
END_TEST

/* One slot rewritten as fast as possible (events 0, cap, 2cap, ...) while
 * another thread reads it: every record accepted must be whole. */
struct hammer {
    struct mem_seg *m;
    uint64_t rounds;
    int done;
    uint64_t ok, torn;
};

static void *hammer_writer(void *arg)
{
    struct hammer *hm = arg;
    struct gm_abi_header *h = hm->m->mem;
    uint64_t cap = h->ring_capacity;
    for (uint64_t j = 1; j <= hm->rounds; j++) {
        uint64_t idx = j * cap;
        __atomic_store_n(&h->ring_head, idx, __ATOMIC_RELAXED);
        gm_tel_alloc(&hm->m->t, 0, 1, idx * 3, idx, idx & 0xffff, idx * 5,
                     UINT64_MAX);
    }
    __atomic_store_n(&hm->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *hammer_reader(void *arg)
{
    struct hammer *hm = arg;
    const struct gm_abi_record *slot = slot_of(hm->m, 0);
    while (!__atomic_load_n(&hm->done, __ATOMIC_ACQUIRE)) {
        uint64_t s = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);
        uint64_t idx = (s & ~GM_ABI_SEQ_BUSY) - 1;
        struct gm_abi_record r;
        if (s == 0 || gm_tel_read_record(slot, idx, &r) != GM_REC_OK)
            continue;
        hm->ok++;
        if (r.size != idx || r.addr != idx * 3 || r.used_after != idx * 5 ||
            r.lat_ns != (idx & 0xffff))
            hm->torn++;
    }
    return NULL;
}

START_TEST(test_slot_hammer_never_torn)
{
    struct mem_seg m;
    mem_open(&m, 16, 1);
    struct hammer hm = { &m, 300000, 0, 0, 0 };
    pthread_t w, r;
    pthread_create(&r, NULL, hammer_reader, &hm);
    pthread_create(&w, NULL, hammer_writer, &hm);
    pthread_join(w, NULL);
    pthread_join(r, NULL);
    EXPECT_EQ(hm.torn, 0);
    ck_assert_uint_gt(hm.ok, 0);
    mem_close(&m);
}
END_TEST

/* ---- cross-process stress ------------------------------------------------ */

#define PRODUCERS 4

static uint64_t mix(uint64_t p, uint64_t k)
{
    uint64_t x = (p << 48) ^ (k * 0x9e3779b97f4a7c15ull);
    x ^= x >> 29;
    return x * 0xbf58476d1ce4e5b9ull;
}

struct prod {
    struct gm_tel *t;
    unsigned id;
    uint64_t n;
    pthread_barrier_t *go;
};

#define MAX_WRITERS 8

/* n threads run fn(prod{t, i, per}) from one barrier; returns when all
 * have finished. */
static void run_writers(struct gm_tel *t, unsigned n, uint64_t per,
                        void *(*fn)(void *))
{
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, n);
    pthread_t th[MAX_WRITERS];
    struct prod pr[MAX_WRITERS];
    ck_assert_uint_le(n, MAX_WRITERS);
    for (unsigned i = 0; i < n; i++) {
        pr[i] = (struct prod){ t, i, per, &go };
        pthread_create(&th[i], NULL, fn, &pr[i]);
    }
    for (unsigned i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
}

static void *producer(void *arg)
{
    struct prod *p = arg;
    pthread_barrier_wait(p->go);
    for (uint64_t k = 0; k < p->n; k++) {
        gm_tel_alloc(p->t, p->id % 2, p->id + 1, mix(p->id, k), k,
                     (k * 31 + p->id) & 0xffff, mix(p->id + 7, k),
                     UINT64_MAX);
        if (k % 64 == 0)
            sched_yield();
    }
    return NULL;
}

/* Checks every record; exits 0 when all events were accounted for. */
/* Tells the parent the segment is open, so producers start only then. */
static void signal_ready(int fd)
{
    char c = 'r';
    if (write(fd, &c, 1) != 1)
        _exit(20);
    close(fd);
}

static void wait_ready(int fd)
{
    char c;
    ck_assert_int_eq(read(fd, &c, 1), 1);
    close(fd);
}

static int reader_child(const char *dir, uint64_t per, bool expect_no_loss,
                        int ready)
{
    struct gm_seg s;
    char err[200];
    uint64_t deadline = gm_clock_monotonic_ns() + 30000000000ull;
    while (gm_seg_open(&s, dir, "gmring", (int)getppid(), err, sizeof err)) {
        if (gm_clock_monotonic_ns() > deadline) {
            fprintf(stderr, "open: %s\n", err);
            return 10;
        }
    }
    struct gm_cursor c;
    gm_cursor_init(&c, &s, false);
    signal_ready(ready);
    static struct gm_abi_record r[512];
    int64_t last[PRODUCERS] = { -1, -1, -1, -1 };
    uint64_t got = 0, lost_total = 0, total = per * PRODUCERS;
    while (got + lost_total < total) {
        if (gm_clock_monotonic_ns() > deadline) {
            fprintf(stderr, "timeout: got %llu lost %llu of %llu\n",
                    (unsigned long long)got, (unsigned long long)lost_total,
                    (unsigned long long)total);
            return 11;
        }
        uint64_t lost;
        size_t n = gm_seg_drain(&s, &c, r, 512, 0, &lost);
        lost_total += lost;
        for (size_t i = 0; i < n; i++) {
            unsigned p = r[i].api - 1u;
            uint64_t k = r[i].size;
            if (p >= PRODUCERS || r[i].kind != GM_EV_ALLOC ||
                r[i].dev != p % 2 || r[i].addr != mix(p, k) ||
                r[i].used_after != mix(p + 7, k) ||
                r[i].lat_ns != ((k * 31 + p) & 0xffff) || k >= per) {
                fprintf(stderr, "torn record: api %u size %llu\n", r[i].api,
                        (unsigned long long)k);
                return 12;
            }
            if ((int64_t)k <= last[p]) {
                fprintf(stderr, "duplicate or reordered: %u/%llu\n", p,
                        (unsigned long long)k);
                return 13;
            }
            last[p] = (int64_t)k;
        }
        got += n;
        if (!expect_no_loss && n == 512)
            usleep(50); /* fall behind: read slots being overwritten */
    }
    if (got + lost_total != total)
        return 14;
    fprintf(stderr, "read %llu, lost %llu\n", (unsigned long long)got,
            (unsigned long long)lost_total);
    if (got == 0)
        return 16;
    if (expect_no_loss && lost_total != 0) {
        fprintf(stderr, "lost %llu with a ring larger than the run\n",
                (unsigned long long)lost_total);
        return 15;
    }
    gm_seg_close(&s);
    return 0;
}

static void run_ring_stress(uint32_t ring, uint64_t per, bool no_loss)
{
    char dir[] = "/tmp/gmring.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    struct gm_tel t;
    struct gm_tel_params p = { .prefix = "gmring", .ring_events = ring,
                               .shm_dir = dir, .dev_slots = 2 };
    char err[200];
    ck_assert_msg(gm_tel_open(&t, &p, err, sizeof err) == 0, "%s", err);
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        close(pfd[0]);
        _exit(reader_child(dir, per, no_loss, pfd[1]));
    }
    close(pfd[1]);
    wait_ready(pfd[0]);
    run_writers(&t, PRODUCERS, per, producer);
    int st;
    ck_assert_int_eq(waitpid(child, &st, 0), child);
    struct gm_snapshot *snap = malloc(sizeof *snap);
    ck_assert_int_eq(gm_tel_snapshot(&t, snap), 0);
    EXPECT_EQ(snap->ring_head, per * PRODUCERS);
    EXPECT_EQ(snap->dev[0].allocs + snap->dev[1].allocs, per * PRODUCERS);
    free(snap);
    gm_tel_close(&t, false);
    rmdir(dir);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "reader process failed (status %d)", st);
}

START_TEST(test_mp_ring_small_overwrites)
{
    run_ring_stress(256, 20000, false);
}
END_TEST

START_TEST(test_mp_ring_large_no_loss)
{
    run_ring_stress(1u << 17, 20000, true);
}
END_TEST

/* Stats: writers keep the invariants below; a snapshot in another process
 * that was torn would break at least one. */
#define STAT_WRITERS 2
#define STAT_ITERS 50000

static void *stat_writer(void *arg)
{
    struct prod *p = arg;
    pthread_barrier_wait(p->go);
    for (uint64_t k = 0; k < p->n; k++) {
        gm_tel_alloc(p->t, 0, 1, k, 4096, 1000, 4096, 8192);
        gm_tel_free(p->t, 0, 4, k, 4096, 500, 0);
        for (int i = 0; i < 16; i++)
            __asm__ __volatile__("" ::: "memory");
    }
    return NULL;
}

static int stats_child(const char *dir, int ready)
{
    struct gm_seg s;
    char err[200];
    uint64_t deadline = gm_clock_monotonic_ns() + 30000000000ull;
    while (gm_seg_open(&s, dir, "gmstat", (int)getppid(), err, sizeof err))
        if (gm_clock_monotonic_ns() > deadline)
            return 10;
    signal_ready(ready);
    struct gm_snapshot *snap = malloc(sizeof *snap);
    uint64_t ok = 0, busy = 0, final = (uint64_t)STAT_WRITERS * STAT_ITERS;
    for (;;) {
        if (gm_clock_monotonic_ns() > deadline)
            return 11;
        if (gm_seg_snapshot(&s, snap) < 0)
            return 12;
        if (snap->dev_count < 1)
            continue;
        if (snap->dev_state[0] != GM_SNAP_OK) {
            busy++;
            if (snap->dev_state[0] == GM_SNAP_INSANE)
                return 13;
            continue;
        }
        const struct gm_abi_dev *d = &snap->dev[0];
        ok++;
        if (d->total_bytes != d->allocs * 4096 ||
            d->live_bytes != d->live_allocs * 4096 ||
            d->live_allocs != d->allocs - d->frees || d->frees > d->allocs ||
            d->size_hist[12] != d->allocs || d->lat_hist[9] != d->allocs ||
            d->lat_sum_ns != d->allocs * 1000 || d->used > d->peak ||
            d->peak != 8192) {
            fprintf(stderr, "torn stats: allocs %llu frees %llu total %llu\n",
                    (unsigned long long)d->allocs,
                    (unsigned long long)d->frees,
                    (unsigned long long)d->total_bytes);
            return 14;
        }
        if (d->frees == final)
            break;
    }
    fprintf(stderr, "%llu consistent snapshots, %llu retried out\n",
            (unsigned long long)ok, (unsigned long long)busy);
    free(snap);
    gm_seg_close(&s);
    return ok > 0 ? 0 : 15;
}

START_TEST(test_mp_stats_never_torn)
{
    char dir[] = "/tmp/gmstat.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    struct gm_tel t;
    struct gm_tel_params p = { .prefix = "gmstat", .ring_events = 1024,
                               .shm_dir = dir, .dev_slots = 1 };
    char err[200];
    ck_assert_msg(gm_tel_open(&t, &p, err, sizeof err) == 0, "%s", err);
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        close(pfd[0]);
        _exit(stats_child(dir, pfd[1]));
    }
    close(pfd[1]);
    wait_ready(pfd[0]);
    run_writers(&t, STAT_WRITERS, STAT_ITERS, stat_writer);
    int st;
    ck_assert_int_eq(waitpid(child, &st, 0), child);
    gm_tel_close(&t, false);
    rmdir(dir);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "snapshot process failed (status %d)", st);
}
END_TEST

/* The same invariants with the reader in this process, so that TSan sees
 * writers and reader together. */
struct snapper {
    struct gm_tel *t;
    volatile int stop;
    uint64_t ok, bad;
};

static void *snap_thread(void *arg)
{
    struct snapper *sp = arg;
    struct gm_abi_header *h = sp->t->hdr;
    const struct gm_abi_dev *src =
        (const struct gm_abi_dev *)((const char *)h + h->dev_offset);
    struct gm_abi_dev d;
    while (!__atomic_load_n(&sp->stop, __ATOMIC_ACQUIRE)) {
        if (gm_tel_read_dev(src, &d) != GM_SNAP_OK)
            continue;
        sp->ok++;
        if (d.total_bytes != d.allocs * 4096 ||
            d.live_allocs != d.allocs - d.frees || d.used > d.peak)
            sp->bad++;
    }
    return NULL;
}

START_TEST(test_threads_stats_and_ring)
{
    struct mem_seg m;
    mem_open(&m, 64, 1);
    struct snapper sp = { &m.t, 0, 0, 0 };
    pthread_t rd;
    pthread_create(&rd, NULL, snap_thread, &sp);
    struct gm_cursor c;
    gm_cursor_init(&c, &m.seg, false);
    struct gm_abi_record r[64];
    uint64_t got = 0, lost_total = 0, lost;
    run_writers(&m.t, STAT_WRITERS, 5000, stat_writer);
    __atomic_store_n(&sp.stop, 1, __ATOMIC_RELEASE);
    pthread_join(rd, NULL);
    size_t n;
    while ((n = gm_seg_drain(&m.seg, &c, r, 64, GM_DRAIN_FLUSH, &lost)) ||
           lost) {
        got += n;
        lost_total += lost;
    }
    EXPECT_EQ(got + lost_total, 2 * STAT_WRITERS * 5000);
    EXPECT_EQ(sp.bad, 0);
    mem_close(&m);
}
END_TEST

static Suite *ring_suite(void)
{
    Suite *s = suite_create("ring");
    TCase *tc = tcase_create("ring");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_wraparound_keeps_last_capacity);
    tcase_add_test(tc, test_overwrite_exact_lost_counts);
    tcase_add_test(tc, test_cursor_only_new);
    tcase_add_test(tc, test_unpublished_slot_waits_then_flushes);
    tcase_add_test(tc, test_busy_slot_drops_record);
    tcase_add_test(tc, test_read_record_states);
    tcase_add_test(tc, test_slot_hammer_never_torn);
    tcase_add_test(tc, test_mp_ring_small_overwrites);
    tcase_add_test(tc, test_mp_ring_large_no_loss);
    tcase_add_test(tc, test_mp_stats_never_torn);
    tcase_add_test(tc, test_threads_stats_and_ring);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ring_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
