/*
 * tests/bench/bench_clock.c — what the telemetry's clock costs an
 * allocation pair, in ns per operation: one tick reading (the TSC when
 * the kernel keeps time with it, else CLOCK_MONOTONIC: shim/base/clock.h),
 * CLOCK_MONOTONIC through the vDSO, and the two conversions an event makes
 * (a tick difference to ns, a reading to CLOCK_REALTIME). A hooked pair
 * reads the clock four times (before and after each driver call). Median
 * of 9 rounds of 2,000,000 operations, one thread. No assertions: it
 * prints a plain-text table.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "shim/base/clock.h"

#define OPS 2000000u
#define ROUNDS 9

static volatile uint64_t sink;

static double wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A timed loop named loop_NAME: OPS iterations of s += (EXPR), with the
 * loop index i and the values d and base at hand; returns its ns. The
 * empty asm keeps the compiler from folding the loop away. */
#define CLOCK_LOOP(name, expr)                                            \
    static double loop_##name(void)                                       \
    {                                                                     \
        uint64_t s = 0, d = sink | 12345, base = gm_ticks();              \
        (void)gm_ticks_realtime(base); /* this thread's reference point */ \
        (void)d;                                                          \
        double t = wall_ns();                                             \
        for (unsigned i = 0; i < OPS; i++) {                              \
            s += (expr);                                                  \
            __asm__ volatile("" : "+r"(s));                               \
        }                                                                 \
        t = wall_ns() - t;                                                \
        sink = s;                                                         \
        return t;                                                         \
    }

CLOCK_LOOP(empty, (uint64_t)i)
CLOCK_LOOP(ticks, gm_ticks())
CLOCK_LOOP(mono, gm_clock_monotonic_ns())
CLOCK_LOOP(ns, gm_ticks_ns(d + i))
CLOCK_LOOP(realtime, gm_ticks_realtime(base + (i & 1023)))

static double median(double (*f)(void))
{
    double v[ROUNDS];
    for (unsigned r = 0; r < ROUNDS; r++)
        v[r] = f() / OPS;
    qsort(v, ROUNDS, sizeof v[0], cmp_d);
    return v[ROUNDS / 2];
}

int main(void)
{
    gm_ticks_init();
    printf("Clock, ns per loop iteration (median of %u rounds of %u; the "
           "empty loop's own time first)\n", ROUNDS, OPS);
    printf("%-44s %8.2f\n", "empty loop", median(loop_empty));
    printf("%-44s %8.2f\n", gm_tick_tsc ? "tick reading (TSC)"
                                         : "tick reading (CLOCK_MONOTONIC)",
           median(loop_ticks));
    printf("%-44s %8.2f\n", "CLOCK_MONOTONIC (vDSO)", median(loop_mono));
    printf("%-44s %8.2f\n", "tick difference to ns", median(loop_ns));
    printf("%-44s %8.2f\n", "tick reading to CLOCK_REALTIME",
           median(loop_realtime));
    return 0;
}
