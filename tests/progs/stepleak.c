/*
 * tests/progs/stepleak.c — a training loop with known figures for the
 * history, step and OOM-snapshot tests. Setup: one WEIGHTS-byte
 * allocation. Each step s = 0, 1, ...: the previous step's transient
 * allocation freed, a LEAK-byte allocation that is never freed, a
 * TRANSIENT-byte allocation held until the next step begins, then
 * gpumem_step() (found with dlsym(RTLD_DEFAULT); absent without the
 * preloaded library). Marks: "start" before the setup, then every
 * MARK_EVERY steps a label "epoch N", and three hostile labels once (NULL,
 * 300 bytes, invalid UTF-8). Stops after STEPS steps or at the first
 * refused allocation, printing what happened. CHURN: that many 1 MiB
 * allocations each freed at once, per step (events for the ring).
 *
 *   stepleak STEPS WEIGHTS LEAK TRANSIENT [MARK_EVERY [SLEEP_MS [CHURN]]]
 *   -> "pid N", then "refused TRANSIENT at step S" or "done S steps"
 *      (exit 0 either way)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/progs/drv.h"

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: stepleak STEPS WEIGHTS LEAK TRANSIENT "
                "[MARK_EVERY [SLEEP_MS [CHURN]]]\n");
        return 2;
    }
    unsigned long steps = strtoul(argv[1], NULL, 10);
    unsigned long long weights = strtoull(argv[2], NULL, 10);
    unsigned long long leak = strtoull(argv[3], NULL, 10);
    unsigned long long transient = strtoull(argv[4], NULL, 10);
    unsigned long mark_every = argc > 5 ? strtoul(argv[5], NULL, 10) : 0;
    unsigned long sleep_ms = argc > 6 ? strtoul(argv[6], NULL, 10) : 0;
    unsigned long churn = argc > 7 ? strtoul(argv[7], NULL, 10) : 0;
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
    void (*step)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gpumem_step");
    void (*mark)(const char *) =
        (void (*)(const char *))dlsym(RTLD_DEFAULT, "gpumem_mark");
    if (mark)
        mark("start"); /* before any CUDA call */
    struct gm_prog_drv drv;
    if (gm_prog_drv_open("stepleak", &drv) != 0)
        return 1;
    __typeof__(cuMemAlloc_v2) *alloc = drv.alloc;
    __typeof__(cuMemFree_v2) *mfree = drv.free;
    CUdeviceptr w, p, held = 0;
    if (weights > 0 && alloc(&w, weights) != CUDA_SUCCESS) {
        printf("refused %llu at setup\n", weights);
        fflush(stdout);
        return 0;
    }
    if (mark) {
        char longer[301];
        memset(longer, 'x', 300);
        longer[300] = '\0';
        mark(NULL);
        mark(longer);
        mark("bad \xff\xfe utf8 \xe2\x82");
    }
    for (unsigned long s = 0; s < steps; s++) {
        if (mark && mark_every && s % mark_every == 0) {
            char label[32];
            snprintf(label, sizeof label, "epoch %lu", s / mark_every);
            mark(label);
        }
        if (held) {
            mfree(held);
            held = 0;
        }
        if (leak > 0 && alloc(&p, leak) != CUDA_SUCCESS) {
            printf("refused %llu at step %lu\n", leak, s);
            return 0;
        }
        if (transient > 0) {
            if (alloc(&held, transient) != CUDA_SUCCESS) {
                printf("refused %llu at step %lu\n", transient, s);
                return 0;
            }
        }
        for (unsigned long k = 0; k < churn; k++)
            if (alloc(&p, 1u << 20) == CUDA_SUCCESS)
                mfree(p);
        if (step)
            step();
        if (sleep_ms)
            nanosleep(&(struct timespec){ 0, (long)sleep_ms * 1000000L },
                      NULL);
    }
    printf("done %lu steps\n", steps);
    return 0;
}
