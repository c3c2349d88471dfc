/*
 * tests/bench/bench_hist.c — what the history adds to the telemetry
 * writer's hot path. Writes alloc+free event pairs (gm_tel_alloc_ev,
 * gm_tel_free_ev: stats, ring records, history) into an in-memory
 * segment, time stamps 1 µs apart (so a bucket rolls every 500,000
 * pairs, as a busy program's would). tests/bench/bench_histoff.c is the
 * same loop compiled without the history's hot-path code; `make bench`
 * runs both under callgrind (`--pairs N`, silent) and prints the
 * difference per pair. Without arguments: ns per pair, native.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shim/telemetry/telemetry.h"
#include "shim/telemetry/telwrite.h"

#ifndef BENCH_NAME
#define BENCH_NAME "bench_hist"
#endif

static __attribute__((noinline)) void pairs(struct gm_tel *t, uint64_t n,
                                            uint64_t base)
{
    struct gm_tel_ev e = { .size = 1 << 20, .dev = 0,
                           .api = GM_API_MEM_ALLOC,
                           .frag_ppm = GM_TEL_FRAG_KEEP, .known = true };
    for (uint64_t i = 0; i < n; i++) {
        e.ts_ns = base + 2000 * i;
        e.addr = 0x10000 + (i & 1023) * (1 << 20);
        e.used = 1 << 20;
        e.peak = 1 << 20;
        gm_tel_alloc_ev(t, &e);
        e.ts_ns += 1000;
        e.used = 0;
        gm_tel_free_ev(t, &e);
    }
}

int main(int argc, char **argv)
{
    uint64_t n = 5000000;
    bool quiet = false;
    if (argc == 3 && strcmp(argv[1], "--pairs") == 0) {
        n = strtoull(argv[2], NULL, 10);
        quiet = true;
    }
    struct gm_tel_params p = { .ring_events = 1u << 16, .dev_slots = 1,
                               .policy_summary = "bench" };
    size_t len = gm_tel_layout_size(p.ring_events, 1);
    void *mem = aligned_alloc(64, (len + 63) / 64 * 64);
    struct gm_tel t;
    if (mem == NULL || gm_tel_open_mem(&t, mem, len, &p) != 0) {
        fprintf(stderr, BENCH_NAME ": cannot lay out a segment\n");
        return 1;
    }
    uint64_t base = t.hdr->hist_base_ns;
    gm_tel_device(&t, 0, 80ull << 30, 0, NULL);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pairs(&t, n, base);
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (!quiet) {
        double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 +
                    (double)(b.tv_nsec - a.tv_nsec);
        printf("%s: %.1f ns per alloc+free event pair (%llu pairs, "
               "history %s)\n", BENCH_NAME, ns / (double)n,
               (unsigned long long)n, GM_TW_HISTORY ? "on" : "compiled out");
    }
    gm_tel_close(&t, false);
    free(mem);
    return 0;
}
