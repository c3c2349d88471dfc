/*
 * tests/progs/allocloop.c — the benchmark loop: N alloc+free pairs of SIZE
 * bytes through one lookup path, after one warm-up pair; prints the wall
 * time per pair. Used by tests/bench/run.sh under callgrind (instructions)
 * and natively (nanoseconds), with and without the shim.
 *
 *   allocloop --via link|dlsym|gpa [--api alloc|async] [--live K]
 *             [--threads T] N SIZE
 *
 * --live K keeps K other allocations of 4 KiB live during the loop (made
 * before it, freed after it); --threads T runs the loop in T threads at
 * once, N pairs each, and prints the wall time per pair of one thread.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);

static struct {
    __typeof__(cuInit) *init;
    __typeof__(cuDeviceGet) *dev;
    __typeof__(cuDevicePrimaryCtxRetain) *retain;
    __typeof__(cuCtxSetCurrent) *set;
    __typeof__(cuMemAlloc_v2) *alloc;
    __typeof__(cuMemFree_v2) *free;
    __typeof__(cuMemAllocAsync) *aalloc;
    __typeof__(cuMemFreeAsync) *afree;
} F;

static void *get(void *h, const char *via, gpa_fn gpa, const char *name,
                 const char *base)
{
#ifdef ALLOCLOOP_LINK
    if (strcmp(via, "link") == 0)
        return dlsym(RTLD_DEFAULT, name);
#endif
    if (strcmp(via, "dlsym") == 0)
        return dlsym(h, name);
    void *p = NULL;
    gpa(base, &p, 13000, 0, NULL);
    return p;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

struct loop {
    CUcontext ctx;
    long n;
    size_t size;
    int async;
    int rc;
};

/* n pairs after one warm-up pair; 0, or 3 when the driver refused. */
static void *run_loop(void *arg)
{
    struct loop *l = arg;
    CUdeviceptr p;
    l->rc = 0;
    if (F.set(l->ctx) != CUDA_SUCCESS) {
        l->rc = 1;
        return NULL;
    }
    for (long k = -1; k < l->n; k++) {
        CUresult rc = l->async ? F.aalloc(&p, l->size, NULL)
                               : F.alloc(&p, l->size);
        if (rc != CUDA_SUCCESS) {
            fprintf(stderr, "allocloop: allocation failed: %d\n", (int)rc);
            l->rc = 3;
            return NULL;
        }
        rc = l->async ? F.afree(p, NULL) : F.free(p);
        if (rc != CUDA_SUCCESS) {
            fprintf(stderr, "allocloop: free failed: %d\n", (int)rc);
            l->rc = 3;
            return NULL;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *via = "gpa", *api = "alloc";
    long live = 0, threads = 1;
    int i = 1;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (strcmp(argv[i], "--via") == 0)
            via = argv[i + 1];
        else if (strcmp(argv[i], "--api") == 0)
            api = argv[i + 1];
        else if (strcmp(argv[i], "--live") == 0)
            live = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--threads") == 0)
            threads = atol(argv[i + 1]);
    }
    if (live < 0 || threads < 1 || threads > 64) {
        fprintf(stderr, "allocloop: --live K >= 0, --threads 1..64\n");
        return 2;
    }
    if (i + 2 > argc) {
        fprintf(stderr, "usage: allocloop [--via P] [--api A] N SIZE\n");
        return 2;
    }
    long n = atol(argv[i]);
    size_t size = strtoull(argv[i + 1], NULL, 0);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL) {
        fprintf(stderr, "allocloop: %s\n", dlerror());
        return 1;
    }
    gpa_fn gpa = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
    F.init = get(h, via, gpa, "cuInit", "cuInit");
    F.dev = get(h, via, gpa, "cuDeviceGet", "cuDeviceGet");
    F.retain = get(h, via, gpa, "cuDevicePrimaryCtxRetain",
                   "cuDevicePrimaryCtxRetain");
    F.set = get(h, via, gpa, "cuCtxSetCurrent", "cuCtxSetCurrent");
    F.alloc = get(h, via, gpa, "cuMemAlloc_v2", "cuMemAlloc");
    F.free = get(h, via, gpa, "cuMemFree_v2", "cuMemFree");
    F.aalloc = get(h, via, gpa, "cuMemAllocAsync", "cuMemAllocAsync");
    F.afree = get(h, via, gpa, "cuMemFreeAsync", "cuMemFreeAsync");
    CUdevice d;
    CUcontext c;
    if (F.init(0) || F.dev(&d, 0) || F.retain(&c, d) || F.set(c)) {
        fprintf(stderr, "allocloop: no device\n");
        return 1;
    }
    int async = strcmp(api, "async") == 0;
    CUdeviceptr *keep = live ? calloc((size_t)live, sizeof *keep) : NULL;
    if (live && keep == NULL)
        return 1;
    for (long k = 0; k < live; k++) {
        if (F.alloc(&keep[k], 4096) != CUDA_SUCCESS) {
            fprintf(stderr, "allocloop: live allocation %ld failed\n", k);
            return 3;
        }
    }
    struct loop l[64];
    pthread_t th[64];
    double t0 = now();
    for (long k = 0; k < threads; k++) {
        l[k] = (struct loop){ .ctx = c, .n = n, .size = size, .async = async };
        if (threads == 1)
            run_loop(&l[k]);
        else if (pthread_create(&th[k], NULL, run_loop, &l[k]) != 0)
            return 1;
    }
    for (long k = 0; threads > 1 && k < threads; k++)
        pthread_join(th[k], NULL);
    double t = now() - t0;
    for (long k = 0; k < threads; k++)
        if (l[k].rc != 0)
            return l[k].rc;
    /* Newest first: the simulated driver keeps its records sorted by
     * address, and freeing the lowest first would move all the others. */
    for (long k = live - 1; k >= 0; k--)
        F.free(keep[k]);
    free(keep);
    printf("%.1f ns/pair\n", n > 0 ? t / (double)n : 0.0);
    return 0;
}
