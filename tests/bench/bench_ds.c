/*
 * tests/bench/bench_ds.c — cost of the shim's two data structures, in ns
 * per operation pair: fragmentation tracker insert + remove (shim/telemetry/frag.c)
 * and static arena alloc + free (shim/admit/arena.c), at block sizes 256 B,
 * 64 KiB, 2 MiB, 64 MiB with 1, 1k and 100k live blocks; then the arena
 * pair with 2 and 4 threads sharing one arena. No assertions: it prints a
 * plain-text table.
 *
 * Layouts: frag holds `live` blocks of `size` bytes spaced 2 x size apart,
 * and each pair inserts (then removes) a block in a pseudo-randomly chosen
 * gap. The arena holds `live` blocks interleaved with `live` free holes of
 * the same size (so the free trees hold `live` entries); each pair
 * allocates one block (best fit: a hole) and frees it.
 *
 * `bench_ds loop frag|arena SIZE LIVE PAIRS` runs only that loop (for
 * instruction counts: run it under valgrind --tool=callgrind with two
 * values of PAIRS and divide the difference).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shim/admit/arena.h"
#include "shim/base/clock.h"
#include "shim/telemetry/frag.h"

#define NPOS 4096   /* pre-drawn gap indices, cycled */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static uint64_t slot_of(uint64_t size)
{
    return (size + GM_ARENA_ALIGN - 1) / GM_ARENA_ALIGN * GM_ARENA_ALIGN;
}

/* ---- fragmentation tracker --------------------------------------------- */

static void frag_setup(struct gm_frag *f, uint64_t size, uint64_t live,
                       uint64_t *pos)
{
    uint64_t s = 88172645463325252ull;
    gm_frag_init(f);
    for (uint64_t i = 0; i < live; i++)
        gm_frag_insert(f, i * 2 * size, size);
    for (int i = 0; i < NPOS; i++)
        pos[i] = (rng_next(&s) % live) * 2 * size + size;
}

static void frag_loop(struct gm_frag *f, uint64_t size, const uint64_t *pos,
                      uint64_t pairs)
{
    uint64_t half = size / 2 ? size / 2 : 1;
    for (uint64_t k = 0; k < pairs; k++) {
        uint64_t addr = pos[k % NPOS];
        gm_frag_insert(f, addr, half);
        gm_frag_remove(f, addr);
    }
}

static double frag_ns(uint64_t size, uint64_t live, uint64_t pairs)
{
    static uint64_t pos[NPOS];
    struct gm_frag f;
    frag_setup(&f, size, live, pos);
    frag_loop(&f, size, pos, pairs / 10);   /* warm up */
    uint64_t t0 = gm_clock_monotonic_ns();
    frag_loop(&f, size, pos, pairs);
    uint64_t t1 = gm_clock_monotonic_ns();
    gm_frag_destroy(&f);
    return (double)(t1 - t0) / (double)pairs;
}

/* ---- arena ------------------------------------------------------------- */

static int arena_setup(struct gm_arena *a, uint64_t size, uint64_t live)
{
    uint64_t slot = slot_of(size), addr;
    if (gm_arena_init(a, 1ull << 44, (2 * live + 1) * slot) != 0)
        return -1;
    for (uint64_t i = 0; i < 2 * live; i++)
        if (gm_arena_alloc(a, size, &addr, NULL) != 0)
            return -1;
    for (uint64_t i = 0; i < live; i++)
        gm_arena_free(a, a->base + 2 * i * slot, NULL);
    return 0;
}

static void arena_loop(struct gm_arena *a, uint64_t size, uint64_t pairs)
{
    uint64_t addr;
    for (uint64_t k = 0; k < pairs; k++) {
        if (gm_arena_alloc(a, size, &addr, NULL) == 0)
            gm_arena_free(a, addr, NULL);
    }
}

static double arena_ns(uint64_t size, uint64_t live, uint64_t pairs)
{
    struct gm_arena a;
    if (arena_setup(&a, size, live) != 0)
        return -1;
    arena_loop(&a, size, pairs / 10);
    uint64_t t0 = gm_clock_monotonic_ns();
    arena_loop(&a, size, pairs);
    uint64_t t1 = gm_clock_monotonic_ns();
    gm_arena_destroy(&a);
    return (double)(t1 - t0) / (double)pairs;
}

struct mt_arg {
    struct gm_arena *a;
    uint64_t size, pairs, ns;
};

static void *mt_thread(void *p)
{
    struct mt_arg *m = p;
    uint64_t t0 = gm_clock_monotonic_ns();
    arena_loop(m->a, m->size, m->pairs);
    m->ns = gm_clock_monotonic_ns() - t0;
    return NULL;
}

/* Mean ns per pair seen by each of n threads sharing one arena. */
static double arena_mt_ns(int n, uint64_t size, uint64_t live, uint64_t pairs)
{
    struct gm_arena a;
    pthread_t th[8];
    struct mt_arg m[8];
    if (arena_setup(&a, size, live) != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        m[i] = (struct mt_arg){ &a, size, pairs, 0 };
        pthread_create(&th[i], NULL, mt_thread, &m[i]);
    }
    double sum = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        sum += (double)m[i].ns / (double)pairs;
    }
    gm_arena_destroy(&a);
    return sum / n;
}

/* ---- main -------------------------------------------------------------- */

static const char *size_name(uint64_t size, char *buf, size_t cap)
{
    if (size >= (1u << 20))
        snprintf(buf, cap, "%llu MiB", (unsigned long long)(size >> 20));
    else if (size >= 1024)
        snprintf(buf, cap, "%llu KiB", (unsigned long long)(size >> 10));
    else
        snprintf(buf, cap, "%llu B", (unsigned long long)size);
    return buf;
}

static int loop_only(char **argv)
{
    uint64_t size = strtoull(argv[3], NULL, 0), live = strtoull(argv[4], NULL, 0);
    uint64_t pairs = strtoull(argv[5], NULL, 0);
    if (size == 0 || live == 0)
        return 2;
    if (strcmp(argv[2], "frag") == 0) {
        static uint64_t pos[NPOS];
        struct gm_frag f;
        frag_setup(&f, size, live, pos);
        frag_loop(&f, size, pos, pairs);
        gm_frag_destroy(&f);
        return 0;
    }
    if (strcmp(argv[2], "arena") == 0) {
        struct gm_arena a;
        if (arena_setup(&a, size, live) != 0)
            return 1;
        arena_loop(&a, size, pairs);
        gm_arena_destroy(&a);
        return 0;
    }
    return 2;
}

int main(int argc, char **argv)
{
    static const uint64_t sizes[] = { 256, 64u << 10, 2u << 20, 64u << 20 };
    static const uint64_t lives[] = { 1, 1000, 100000 };
    const uint64_t pairs = 400000;
    char buf[32];

    if (argc == 6 && strcmp(argv[1], "loop") == 0)
        return loop_only(argv);
    if (argc != 1) {
        fprintf(stderr, "usage: %s [loop frag|arena SIZE LIVE PAIRS]\n", argv[0]);
        return 2;
    }
    printf("gpumem data structures: ns per pair, one thread\n");
    printf("%-8s %8s %16s %18s\n", "size", "live", "frag ins+rm", "arena alloc+free");
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (size_t j = 0; j < sizeof lives / sizeof lives[0]; j++)
            printf("%-8s %8llu %16.1f %18.1f\n",
                   size_name(sizes[i], buf, sizeof buf),
                   (unsigned long long)lives[j],
                   frag_ns(sizes[i], lives[j], pairs),
                   arena_ns(sizes[i], lives[j], pairs));
    printf("\narena alloc+free, threads sharing one arena (64 KiB, 1000 live):"
           " ns per pair per thread\n");
    printf("%-8s %16s\n", "threads", "ns/pair");
    for (int n = 1; n <= 4; n *= 2)
        printf("%-8d %16.1f\n", n, arena_mt_ns(n, 64u << 10, 1000, pairs / 2));
    return 0;
}
