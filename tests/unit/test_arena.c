/*
 * tests/unit/test_arena.c — the static-mode arena (shim/admit/arena.c): argument
 * checks, exhaustion, double free, best-fit choice and exact fragmentation
 * on constructed patterns, random sequences against a reference model that
 * predicts every address, and a 4-thread stress with an ownership shadow.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shim/admit/arena.h"

#define KiB 1024ull
#define MiB (1024ull * 1024ull)
#define BASE 0x7f0000000000ull   /* a plausible device address; never touched */

#include "tests/unit/gm_expect.h"

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static uint64_t alloc_ok(struct gm_arena *a, uint64_t size)
{
    uint64_t addr = 0, charged = 0;
    ck_assert_int_eq(gm_arena_alloc(a, size, &addr, &charged), 0);
    ck_assert_uint_eq(charged, (size + 511) / 512 * 512);
    return addr;
}

/* ---- arguments, basics ------------------------------------------------- */

START_TEST(test_init_arguments)
{
    struct gm_arena a;
    ck_assert_int_eq(gm_arena_init(&a, BASE + 256, MiB), -EINVAL);
    ck_assert_int_eq(gm_arena_init(&a, BASE, 511), -EINVAL);
    ck_assert_int_eq(gm_arena_init(&a, BASE, 0), -EINVAL);
    ck_assert_int_eq(gm_arena_init(&a, (UINT64_MAX - 511) - 1024, 4096), -EINVAL);
    /* The size is rounded down to the granule. */
    ck_assert_int_eq(gm_arena_init(&a, BASE, 10 * 512 + 100), 0);
    ck_assert_uint_eq(gm_arena_free_bytes(&a), 10 * 512);
    ck_assert_uint_eq(gm_arena_largest_free(&a), 10 * 512);
    ck_assert_uint_eq(gm_arena_used(&a), 0);
    ck_assert_uint_eq(gm_arena_frag_ppm(&a), 0);
    ck_assert(gm_arena_owns(&a, BASE));
    ck_assert(gm_arena_owns(&a, BASE + 10 * 512 - 1));
    ck_assert(!gm_arena_owns(&a, BASE + 10 * 512));
    ck_assert(!gm_arena_owns(&a, BASE - 1));
    ck_assert(!gm_arena_owns(&a, 0));
    ck_assert_int_eq(gm_arena_check(&a), 0);
    gm_arena_destroy(&a);
    gm_arena_destroy(&a);   /* harmless twice */
}
END_TEST

START_TEST(test_basic_rounding)
{
    struct gm_arena a;
    ck_assert_int_eq(gm_arena_init(&a, BASE, MiB), 0);
    uint64_t p1 = alloc_ok(&a, 1);
    uint64_t p2 = alloc_ok(&a, 513);
    uint64_t p3 = alloc_ok(&a, 512);
    ck_assert_uint_eq(p1, BASE);
    ck_assert_uint_eq(p2, BASE + 512);
    ck_assert_uint_eq(p3, BASE + 1536);
    ck_assert_uint_eq(gm_arena_used(&a), 2048);
    ck_assert_uint_eq(gm_arena_free_bytes(&a), MiB - 2048);
    ck_assert_uint_eq(gm_arena_live(&a), 3);
    uint64_t sz = 0;
    ck_assert_int_eq(gm_arena_free(&a, p2, &sz), 0);
    ck_assert_uint_eq(sz, 1024);
    ck_assert_uint_eq(gm_arena_used(&a), 1024);
    /* The 1 KiB hole is the best fit for 1000 bytes. */
    ck_assert_uint_eq(alloc_ok(&a, 1000), p2);
    ck_assert_int_eq(gm_arena_check(&a), 0);
    gm_arena_destroy(&a);
}
END_TEST

START_TEST(test_bad_calls_change_nothing)
{
    struct gm_arena a;
    uint64_t addr = 77, sz = 77;
    ck_assert_int_eq(gm_arena_init(&a, BASE, MiB), 0);
    uint64_t p = alloc_ok(&a, 4096);
    alloc_ok(&a, 4096);
    uint64_t used = gm_arena_used(&a), largest = gm_arena_largest_free(&a);

    ck_assert_int_eq(gm_arena_alloc(&a, 0, &addr, NULL), -EINVAL);
    ck_assert_int_eq(gm_arena_alloc(&a, 512, NULL, NULL), -EINVAL);
    ck_assert_uint_eq(addr, 77);
    ck_assert_int_eq(gm_arena_free(&a, p + 512, &sz), -ENOENT);   /* inside */
    ck_assert_int_eq(gm_arena_free(&a, p + 1, &sz), -ENOENT);     /* unaligned */
    ck_assert_int_eq(gm_arena_free(&a, BASE - 512, &sz), -ENOENT);
    ck_assert_int_eq(gm_arena_free(&a, BASE + MiB, &sz), -ENOENT);
    ck_assert_int_eq(gm_arena_free(&a, BASE + 512 * KiB, &sz), -ENOENT); /* free space */
    ck_assert_uint_eq(sz, 77);
    ck_assert_uint_eq(gm_arena_used(&a), used);
    ck_assert_uint_eq(gm_arena_largest_free(&a), largest);
    ck_assert_uint_eq(gm_arena_live(&a), 2);

    /* Double free: the second is refused and the neighbour survives. */
    ck_assert_int_eq(gm_arena_free(&a, p, NULL), 0);
    ck_assert_int_eq(gm_arena_free(&a, p, &sz), -ENOENT);
    ck_assert_uint_eq(sz, 77);
    ck_assert_uint_eq(gm_arena_used(&a), 4096);
    ck_assert_uint_eq(gm_arena_live(&a), 1);
    ck_assert_int_eq(gm_arena_check(&a), 0);
    gm_arena_destroy(&a);
}
END_TEST

START_TEST(test_exhaustion)
{
    struct gm_arena a;
    uint64_t addr = 0, q[4];
    ck_assert_int_eq(gm_arena_init(&a, BASE, MiB), 0);
    ck_assert_int_eq(gm_arena_alloc(&a, MiB + 1, &addr, NULL), -ENOMEM);
    ck_assert_int_eq(gm_arena_alloc(&a, UINT64_MAX, &addr, NULL), -ENOMEM);
    ck_assert_uint_eq(alloc_ok(&a, MiB), BASE);
    ck_assert_int_eq(gm_arena_alloc(&a, 1, &addr, NULL), -ENOMEM);
    ck_assert_uint_eq(gm_arena_free_bytes(&a), 0);
    ck_assert_uint_eq(gm_arena_frag_ppm(&a), 0);
    ck_assert_int_eq(gm_arena_free(&a, BASE, NULL), 0);

    /* Enough free bytes in total, but no single block large enough. */
    for (int i = 0; i < 4; i++)
        q[i] = alloc_ok(&a, 256 * KiB);
    ck_assert_int_eq(gm_arena_free(&a, q[0], NULL), 0);
    ck_assert_int_eq(gm_arena_free(&a, q[2], NULL), 0);
    ck_assert_uint_eq(gm_arena_free_bytes(&a), 512 * KiB);
    ck_assert_int_eq(gm_arena_alloc(&a, 300 * KiB, &addr, NULL), -ENOMEM);
    ck_assert_uint_eq(gm_arena_used(&a), 512 * KiB);
    ck_assert_uint_eq(gm_arena_live(&a), 2);
    ck_assert_uint_eq(alloc_ok(&a, 256 * KiB), q[0]);
    ck_assert_int_eq(gm_arena_check(&a), 0);
    gm_arena_destroy(&a);
}
END_TEST

/* ---- constructed patterns --------------------------------------------- */

START_TEST(test_exact_fragmentation)
{
    struct gm_arena a;
    uint64_t b[10];
    ck_assert_int_eq(gm_arena_init(&a, BASE, 10 * 64 * KiB), 0);
    for (int i = 0; i < 10; i++)
        b[i] = alloc_ok(&a, 64 * KiB);
    ck_assert_uint_eq(gm_arena_free_bytes(&a), 0);
    ck_assert_uint_eq(gm_arena_frag_ppm(&a), 0);
    /* Holes: 1 (64K), 3 (64K), 5+6 (coalesced, 128K). */
    ck_assert_int_eq(gm_arena_free(&a, b[1], NULL), 0);
    ck_assert_int_eq(gm_arena_free(&a, b[3], NULL), 0);
    ck_assert_int_eq(gm_arena_free(&a, b[5], NULL), 0);
    ck_assert_int_eq(gm_arena_free(&a, b[6], NULL), 0);
    ck_assert_uint_eq(gm_arena_free_bytes(&a), 256 * KiB);
    ck_assert_uint_eq(gm_arena_largest_free(&a), 128 * KiB);
    ck_assert_uint_eq(gm_arena_frag_ppm(&a), 500000);      /* 1 - 128/256 */
    /* Freeing 2 joins 1, 2 and 3 into 192K: 1 - 192/320. */
    ck_assert_int_eq(gm_arena_free(&a, b[2], NULL), 0);
    ck_assert_uint_eq(gm_arena_largest_free(&a), 192 * KiB);
    ck_assert_uint_eq(gm_arena_frag_ppm(&a), 400000);
    /* Freeing 4 joins everything from 1 to 6: one hole, no fragmentation. */
    ck_assert_int_eq(gm_arena_free(&a, b[4], NULL), 0);
    ck_assert_uint_eq(gm_arena_largest_free(&a), 384 * KiB);
    ck_assert_uint_eq(gm_arena_frag_ppm(&a), 0);
    /* Freeing 9 adds a 64K hole at the end: 1 - 384/448. */
    ck_assert_int_eq(gm_arena_free(&a, b[9], NULL), 0);
    ck_assert_uint_eq(gm_arena_frag_ppm(&a), 142857);
    ck_assert_int_eq(gm_arena_check(&a), 0);
    gm_arena_destroy(&a);
}
END_TEST

START_TEST(test_best_fit_choice)
{
    /* Holes (in address order): 8K, 3K, 5K, 4K, 12K, 4K, 16K, then the
     * tail; each separated by a 512-byte used block. */
    static const uint64_t holes[] = { 8 * KiB, 3 * KiB, 5 * KiB, 4 * KiB,
                                      12 * KiB, 4 * KiB, 16 * KiB };
    enum { NH = sizeof holes / sizeof holes[0] };
    uint64_t at[NH];
    struct gm_arena a;
    ck_assert_int_eq(gm_arena_init(&a, BASE, MiB), 0);
    for (int i = 0; i < NH; i++) {
        at[i] = alloc_ok(&a, holes[i]);
        alloc_ok(&a, 512);
    }
    for (int i = 0; i < NH; i++)
        ck_assert_int_eq(gm_arena_free(&a, at[i], NULL), 0);
    ck_assert_int_eq(gm_arena_check(&a), 0);

    /* 4000 -> 4K: exactly the first 4K hole, not 5K, 8K or the tail. */
    ck_assert_uint_eq(alloc_ok(&a, 4000), at[3]);
    /* Next 4K request: the other 4K hole. */
    ck_assert_uint_eq(alloc_ok(&a, 4096), at[5]);
    /* 4097 -> 4.5K: the 5K hole is the smallest that fits. */
    ck_assert_uint_eq(alloc_ok(&a, 4097), at[2]);
    /* 3000 -> 3K: the 3K hole. */
    ck_assert_uint_eq(alloc_ok(&a, 3000), at[1]);
    /* 9000 -> 9K: 12K (same size class as 8K, which is too small). */
    ck_assert_uint_eq(alloc_ok(&a, 9000), at[4]);
    /* 13000 -> 13K: nothing in its class; the next class's smallest, 16K. */
    ck_assert_uint_eq(alloc_ok(&a, 13000), at[6]);
    /* 512: the leftover of the 5K hole (after 4.5K) beats everything. */
    ck_assert_uint_eq(alloc_ok(&a, 512), at[2] + 4608);
    /* 20K: only the tail holds it. */
    uint64_t tail = at[NH - 1] + 16 * KiB + 512;
    ck_assert_uint_eq(alloc_ok(&a, 20 * KiB), tail);
    ck_assert_int_eq(gm_arena_check(&a), 0);
    gm_arena_destroy(&a);
}
END_TEST

/* ---- random sequences against a reference model ------------------------ */

/* The model keeps the live blocks sorted by offset. The arena coalesces
 * completely, so its free blocks are exactly the gaps between live blocks;
 * the model predicts every allocation's address (the smallest gap that
 * fits, lowest address first), every figure, and every refusal. */
struct model {
    uint64_t size;
    uint64_t off[4096], len[4096];
    size_t n;
};

static void model_gaps(const struct model *m, uint64_t need, uint64_t *fit,
                       uint64_t *largest, uint64_t *total)
{
    uint64_t best = UINT64_MAX, at = 0;
    *fit = UINT64_MAX;
    *largest = *total = 0;
    for (size_t i = 0; i <= m->n; i++) {
        uint64_t end = i < m->n ? m->off[i] : m->size;
        uint64_t g = end - at;
        if (g) {
            *total += g;
            if (g > *largest)
                *largest = g;
            if (g >= need && g < best) {
                best = g;
                *fit = at;
            }
        }
        if (i < m->n)
            at = m->off[i] + m->len[i];
    }
}

static void model_add(struct model *m, uint64_t off, uint64_t len)
{
    size_t i = 0;
    while (i < m->n && m->off[i] < off)
        i++;
    /* No overlap with either neighbour. */
    if (i > 0 && m->off[i - 1] + m->len[i - 1] > off)
        ck_abort_msg("block at %llu overlaps its predecessor", (unsigned long long)off);
    if (i < m->n && off + len > m->off[i])
        ck_abort_msg("block at %llu overlaps its successor", (unsigned long long)off);
    memmove(&m->off[i + 1], &m->off[i], (m->n - i) * sizeof m->off[0]);
    memmove(&m->len[i + 1], &m->len[i], (m->n - i) * sizeof m->len[0]);
    m->off[i] = off;
    m->len[i] = len;
    m->n++;
}

static void model_del(struct model *m, size_t i)
{
    memmove(&m->off[i], &m->off[i + 1], (m->n - i - 1) * sizeof m->off[0]);
    memmove(&m->len[i], &m->len[i + 1], (m->n - i - 1) * sizeof m->len[0]);
    m->n--;
}

static void compare(struct gm_arena *a, const struct model *m)
{
    uint64_t fit, largest, total, used = 0;
    model_gaps(m, 1, &fit, &largest, &total);
    for (size_t i = 0; i < m->n; i++)
        used += m->len[i];
    EXPECT_EQ(gm_arena_used(a), used);
    EXPECT_EQ(gm_arena_free_bytes(a), total);
    EXPECT_EQ(used + total, m->size);
    EXPECT_EQ(gm_arena_largest_free(a), largest);
    EXPECT_EQ(gm_arena_live(a), m->n);
    uint32_t ppm = total ? (uint32_t)((double)(total - largest) * 1e6 / (double)total) : 0;
    uint32_t got = gm_arena_frag_ppm(a);
    if (got > ppm + 1 || ppm > got + 1)
        ck_abort_msg("frag %u ppm, model %u", got, ppm);
}

static uint64_t random_size(uint64_t *s)
{
    /* log-uniform 1 B .. 4 MiB, sometimes exactly a multiple of 512 */
    uint64_t bits = 1 + rng_next(s) % 22;
    uint64_t v = 1 + rng_next(s) % (1ull << bits);
    return rng_next(s) % 4 == 0 ? (v + 511) / 512 * 512 : v;
}

START_TEST(test_random_against_model)
{
    static const uint64_t seeds[] = { 11, 0xabcdef12345ull, 5150, 31337 };
    static struct model m;
    uint64_t s = seeds[_i];
    struct gm_arena a;
    memset(&m, 0, sizeof m);
    m.size = 64 * MiB;
    ck_assert_int_eq(gm_arena_init(&a, BASE, m.size), 0);
    for (int op = 0; op < 6000; op++) {
        int want_alloc = m.n == 0 || (m.n < 4000 && rng_next(&s) % 100 < 55);
        if (want_alloc) {
            uint64_t size = random_size(&s), addr = 0, charged = 0;
            uint64_t need = (size + 511) / 512 * 512, fit, largest, total;
            model_gaps(&m, need, &fit, &largest, &total);
            int rc = gm_arena_alloc(&a, size, &addr, &charged);
            if (fit == UINT64_MAX) {
                EXPECT_EQ(rc, -ENOMEM);
            } else {
                EXPECT_EQ(rc, 0);
                EXPECT_EQ(charged, need);
                EXPECT_EQ(addr % 512, 0);
                EXPECT_EQ(addr, BASE + fit);
                EXPECT_EQ(gm_arena_owns(&a, addr + charged - 1), 1);
                model_add(&m, addr - BASE, charged);
            }
        } else {
            size_t i = rng_next(&s) % m.n;
            uint64_t sz = 0;
            EXPECT_EQ(gm_arena_free(&a, BASE + m.off[i], &sz), 0);
            EXPECT_EQ(sz, m.len[i]);
            if (rng_next(&s) % 16 == 0)   /* a double free */
                EXPECT_EQ(gm_arena_free(&a, BASE + m.off[i], &sz), -ENOENT);
            model_del(&m, i);
        }
        compare(&a, &m);
        if (op % 53 == 0)
            EXPECT_EQ(gm_arena_check(&a), 0);
    }
    while (m.n) {
        size_t i = rng_next(&s) % m.n;
        EXPECT_EQ(gm_arena_free(&a, BASE + m.off[i], NULL), 0);
        model_del(&m, i);
        compare(&a, &m);
    }
    /* Everything coalesced back into one block of the full size. */
    ck_assert_int_eq(gm_arena_check(&a), 0);
    ck_assert_uint_eq(gm_arena_largest_free(&a), m.size);
    ck_assert_uint_eq(gm_arena_free_bytes(&a), m.size);
    ck_assert_uint_eq(gm_arena_frag_ppm(&a), 0);
    ck_assert_uint_eq(alloc_ok(&a, m.size), BASE);
    gm_arena_destroy(&a);
}
END_TEST

START_TEST(test_many_small_blocks)
{
    /* 200k live blocks: record slabs and the hash grow many times. */
    enum { N = 200000 };
    struct gm_arena a;
    ck_assert_int_eq(gm_arena_init(&a, BASE, (uint64_t)N * 1024), 0);
    for (uint64_t i = 0; i < N; i++) {
        uint64_t addr = 0;
        EXPECT_EQ(gm_arena_alloc(&a, 1024, &addr, NULL), 0);
        EXPECT_EQ(addr, BASE + i * 1024);
    }
    ck_assert_uint_eq(gm_arena_free_bytes(&a), 0);
    for (uint64_t i = 0; i < N; i += 2)
        EXPECT_EQ(gm_arena_free(&a, BASE + i * 1024, NULL), 0);
    ck_assert_uint_eq(gm_arena_live(&a), N / 2);
    ck_assert_uint_eq(gm_arena_largest_free(&a), 1024);
    ck_assert_uint_eq(gm_arena_frag_ppm(&a), 1000000 - 1000000 / (N / 2));
    ck_assert_int_eq(gm_arena_check(&a), 0);
    for (uint64_t i = 1; i < N; i += 2)
        EXPECT_EQ(gm_arena_free(&a, BASE + i * 1024, NULL), 0);
    ck_assert_uint_eq(gm_arena_largest_free(&a), (uint64_t)N * 1024);
    ck_assert_int_eq(gm_arena_check(&a), 0);
    gm_arena_destroy(&a);
}
END_TEST

/* ---- concurrency ------------------------------------------------------- */

#define STRESS_SIZE (8 * MiB)
#define STRESS_THREADS 4
#define STRESS_OPS 20000
#define STRESS_LIVE 48

static struct gm_arena stress_arena;
static _Atomic uint8_t shadow[STRESS_SIZE / 512];   /* owner per granule */
static _Atomic int stress_errors;

struct stress_arg {
    uint8_t id;
    uint64_t seed;
};

static void mark(uint64_t addr, uint64_t len, uint8_t from, uint8_t to)
{
    for (uint64_t g = (addr - BASE) / 512; g < (addr - BASE + len) / 512; g++) {
        uint8_t expect = from;
        if (!atomic_compare_exchange_strong(&shadow[g], &expect, to))
            atomic_fetch_add(&stress_errors, 1);
    }
}

static void *stress_thread(void *p)
{
    const struct stress_arg *arg = p;
    uint64_t s = arg->seed, addr[STRESS_LIVE], len[STRESS_LIVE];
    int n = 0;
    for (int op = 0; op < STRESS_OPS; op++) {
        if (n < STRESS_LIVE && (n == 0 || rng_next(&s) % 2)) {
            uint64_t size = 1 + rng_next(&s) % (64 * KiB), charged = 0;
            int rc = gm_arena_alloc(&stress_arena, size, &addr[n], &charged);
            if (rc == 0) {
                if (addr[n] % 512 || charged < size)
                    atomic_fetch_add(&stress_errors, 1);
                len[n] = charged;
                mark(addr[n], charged, 0, arg->id);
                n++;
            } else if (rc != -ENOMEM) {
                atomic_fetch_add(&stress_errors, 1);
            }
        } else {
            int i = (int)(rng_next(&s) % (uint64_t)n);
            mark(addr[i], len[i], arg->id, 0);
            uint64_t sz = 0;
            if (gm_arena_free(&stress_arena, addr[i], &sz) != 0 || sz != len[i])
                atomic_fetch_add(&stress_errors, 1);
            addr[i] = addr[n - 1];
            len[i] = len[n - 1];
            n--;
        }
    }
    while (n > 0) {
        n--;
        mark(addr[n], len[n], arg->id, 0);
        if (gm_arena_free(&stress_arena, addr[n], NULL) != 0)
            atomic_fetch_add(&stress_errors, 1);
    }
    return NULL;
}

START_TEST(test_threads)
{
    pthread_t th[STRESS_THREADS];
    struct stress_arg args[STRESS_THREADS];
    ck_assert_int_eq(gm_arena_init(&stress_arena, BASE, STRESS_SIZE), 0);
    for (int i = 0; i < STRESS_THREADS; i++) {
        args[i].id = (uint8_t)(i + 1);
        args[i].seed = 0x1234567ull * (uint64_t)(i + 1);
        ck_assert_int_eq(pthread_create(&th[i], NULL, stress_thread, &args[i]), 0);
    }
    for (int i = 0; i < STRESS_THREADS; i++)
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
    ck_assert_int_eq(atomic_load(&stress_errors), 0);
    ck_assert_uint_eq(gm_arena_used(&stress_arena), 0);
    ck_assert_uint_eq(gm_arena_live(&stress_arena), 0);
    ck_assert_uint_eq(gm_arena_largest_free(&stress_arena), STRESS_SIZE);
    ck_assert_int_eq(gm_arena_check(&stress_arena), 0);
    gm_arena_destroy(&stress_arena);
}
END_TEST

static Suite *arena_suite(void)
{
    Suite *s = suite_create("arena");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_init_arguments);
    tcase_add_test(tc, test_basic_rounding);
    tcase_add_test(tc, test_bad_calls_change_nothing);
    tcase_add_test(tc, test_exhaustion);
    tcase_add_test(tc, test_exact_fragmentation);
    tcase_add_test(tc, test_best_fit_choice);
    tcase_add_loop_test(tc, test_random_against_model, 0, 4);
    tcase_add_test(tc, test_many_small_blocks);
    tcase_add_test(tc, test_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(arena_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
