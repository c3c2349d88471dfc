/*
 * tests/gpu/rt_threads.cu — 8 threads allocating at once through cudaMalloc.
 * Phase 1 (both modes): random alloc/free churn, every call succeeds and
 * nothing drifts. Phase 2 (under the shim): all threads race to the limit
 * in 32 MiB chunks; the sum they got never passes the free memory they
 * started from, the remainder is smaller than one chunk, the reported free
 * memory equals exactly what is left, and freeing everything restores it.
 */
#include <pthread.h>

#include "gc_rt.h"

enum { NTHREADS = 8, ITERS = 300, SLOTS = 4, MAX_CHUNKS = 64 };
static const size_t chunk = 32 * GC_MIB;

struct worker {
    pthread_t tid;
    unsigned seed;
    int errors, last_error, ooms;
    int nchunks;
    void *chunks[MAX_CHUNKS];
};

static struct worker workers[NTHREADS];
static pthread_barrier_t barrier;

static void *churn(void *arg)
{
    struct worker *w = (struct worker *)arg;
    void *live[SLOTS] = {NULL};
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < ITERS; i++) {
        int s = (int)(rand_r(&w->seed) % SLOTS);
        int rc;
        if (live[s]) {
            rc = (int)cudaFree(live[s]);
            live[s] = NULL;
        } else {
            size_t bytes = 4096 + (size_t)(rand_r(&w->seed) % (4 * GC_MIB));
            rc = (int)cudaMalloc(&live[s], bytes);
        }
        if (rc != 0) {
            w->errors++;
            w->last_error = rc;
        }
    }
    for (int s = 0; s < SLOTS; s++)
        if (live[s] && cudaFree(live[s]) != cudaSuccess)
            w->errors++;
    return NULL;
}

static void *race(void *arg)
{
    struct worker *w = (struct worker *)arg;
    pthread_barrier_wait(&barrier);
    while (w->nchunks < MAX_CHUNKS) {
        void *p = NULL;
        int rc = (int)cudaMalloc(&p, chunk);
        if (rc == GC_OOM) {
            w->ooms++;
            break;
        }
        if (rc != 0) {
            w->errors++;
            w->last_error = rc;
            break;
        }
        w->chunks[w->nchunks++] = p;
    }
    return NULL;
}

static void run_all(void *(*fn)(void *))
{
    pthread_barrier_init(&barrier, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++) {
        memset(&workers[i], 0, sizeof workers[i]);
        workers[i].seed = 12345u + 977u * (unsigned)i;
        pthread_create(&workers[i].tid, NULL, fn, &workers[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(workers[i].tid, NULL);
    pthread_barrier_destroy(&barrier);
}

static void phase_churn(void)
{
    size_t f0 = gc_free_now(rt_meminfo);
    run_all(churn);
    int errors = 0, last = 0;
    for (int i = 0; i < NTHREADS; i++) {
        errors += workers[i].errors;
        if (workers[i].errors)
            last = workers[i].last_error;
    }
    gc_check(errors == 0, "%d threads x %d random cudaMalloc/cudaFree: %d errors (last %d)",
             NTHREADS, ITERS, errors, last);
    gc_check_drift("after the churn", f0, gc_free_now(rt_meminfo));
}

static void phase_race(void)
{
    if (!gc_limit)
        return;
    size_t f0 = gc_free_now(rt_meminfo);
    run_all(race);
    unsigned long long got = 0;
    int errors = 0, ooms = 0, last = 0;
    for (int i = 0; i < NTHREADS; i++) {
        got += (unsigned long long)workers[i].nchunks * chunk;
        errors += workers[i].errors;
        ooms += workers[i].ooms;
        if (workers[i].errors)
            last = workers[i].last_error;
    }
    gc_check(errors == 0, "race: no error other than OOM (%d, last %d)", errors, last);
    gc_check(ooms == NTHREADS, "race: every thread stopped at OOM (%d of %d)", ooms,
             NTHREADS);
    gc_check(got <= f0, "race: threads got %llu bytes, no more than the %zu free", got, f0);
    gc_check(f0 - got < chunk, "race: what is left (%llu) is less than one chunk",
             (unsigned long long)(f0 - got));
    size_t f1 = gc_free_now(rt_meminfo);
    gc_check(f1 == f0 - got, "race: reported free %zu equals what is left %llu", f1,
             (unsigned long long)(f0 - got));
    for (int i = 0; i < NTHREADS; i++)
        for (int k = 0; k < workers[i].nchunks; k++)
            cudaFree(workers[i].chunks[k]);
    gc_check_drift("after the race", f0, gc_free_now(rt_meminfo));
}

int main(int argc, char **argv)
{
    gc_init(argc, argv);
    rt_start();
    rt_check_totals();
    phase_churn();
    phase_race();
    return gc_finish();
}
