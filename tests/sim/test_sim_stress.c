/*
 * tests/sim/test_sim_stress.c — Check suite: the simulated driver under
 * threads. Eight threads on two devices allocate and free at random through
 * every allocation kind (plain, pitch, managed, pool, VMM, arrays, pinned
 * host); at a quiescent point every figure of the driver must equal the sum
 * of what the threads hold, no two live ranges may overlap, and after all
 * is freed every device must be back to exactly its starting state. A
 * second case creates and destroys contexts concurrently.
 *
 * Deterministic per thread (fixed seeds); outcomes other than success or
 * CUDA_ERROR_OUT_OF_MEMORY fail the test. Run under TSan by `make sanitize`.
 */
#include "tools/sim/simcuda.h"

#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1ULL << 20)
#define THREADS 8
#define SLOTS 48
#define OPS 6000

enum kind { K_NONE, K_PLAIN, K_PITCH, K_MANAGED, K_ASYNC, K_VMM, K_ARRAY, K_HOST, K_KINDS };

struct slot {
    enum kind kind;
    uint64_t addr;          /* device address, host pointer or handle */
    uint64_t size;          /* what the driver counts for it */
};

struct worker {
    int id, dev;
    uint64_t rng;
    struct slot s[SLOTS];
    unsigned long ooms;
    CUresult bad;           /* first unexpected result */
};

static struct worker workers[THREADS];

static uint64_t next(struct worker *w)
{
    w->rng = w->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return w->rng >> 17;
}

static void note(struct worker *w, CUresult rc)
{
    if (rc == CUDA_ERROR_OUT_OF_MEMORY)
        w->ooms++;
    else if (rc != CUDA_SUCCESS && w->bad == CUDA_SUCCESS)
        w->bad = rc;
}

static void set_ctx(struct worker *w)
{
    CUcontext c;
    note(w, cuDevicePrimaryCtxRetain(&c, w->dev));
    note(w, cuCtxSetCurrent(c));
}

static void do_alloc(struct worker *w, struct slot *s)
{
    enum kind k = (enum kind)(1 + next(w) % (K_KINDS - 1));
    uint64_t n = 1 + next(w) % (3 * MiB);
    CUresult rc = CUDA_SUCCESS;
    CUdeviceptr d = 0;
    s->kind = K_NONE;
    switch (k) {
    case K_PLAIN:
        rc = cuMemAlloc_v2(&d, n);
        s->size = n;
        break;
    case K_PITCH: {
        size_t pitch = 0;
        rc = cuMemAllocPitch_v2(&d, &pitch, 1 + n % 4000, 1 + n % 300, 4);
        s->size = (uint64_t)pitch * (1 + n % 300);
        break;
    }
    case K_MANAGED:
        rc = cuMemAllocManaged(&d, n, CU_MEM_ATTACH_GLOBAL);
        s->size = n;
        break;
    case K_ASYNC:
        rc = cuMemAllocAsync(&d, n, (w->id & 1) ? CU_STREAM_PER_THREAD : NULL);
        s->size = n;
        break;
    case K_VMM: {
        CUmemAllocationProp p;
        CUmemGenericAllocationHandle h = 0;
        memset(&p, 0, sizeof p);
        p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        p.location.id = w->dev;
        s->size = (1 + n % 3) * 2 * MiB;
        rc = cuMemCreate(&h, s->size, &p, 0);
        d = h;
        break;
    }
    case K_ARRAY: {
        CUDA_ARRAY_DESCRIPTOR ad = { 1 + n % 1000, 1 + n % 100, CU_AD_FORMAT_FLOAT, 1 };
        CUarray a = NULL;
        uint64_t row = (ad.Width * 4 + 511) / 512 * 512;
        s->size = (row * ad.Height + 65535) / 65536 * 65536;
        rc = cuArrayCreate_v2(&a, &ad);
        d = (uintptr_t)a;
        break;
    }
    case K_HOST: {
        void *h = NULL;
        s->size = 1 + n % 8192;
        rc = cuMemHostAlloc(&h, s->size, 0);
        if (rc == CUDA_SUCCESS)
            memset(h, 0x5a, s->size);
        d = (uintptr_t)h;
        break;
    }
    default:
        break;
    }
    note(w, rc);
    if (rc == CUDA_SUCCESS) {
        s->kind = k;
        s->addr = d;
    }
}

static void do_free(struct worker *w, struct slot *s)
{
    CUresult rc = CUDA_SUCCESS;
    switch (s->kind) {
    case K_PLAIN:
    case K_PITCH:
    case K_MANAGED:
        rc = cuMemFree_v2(s->addr);
        break;
    case K_ASYNC:
        rc = (w->id & 2) ? cuMemFreeAsync_ptsz(s->addr, NULL) : cuMemFreeAsync(s->addr, NULL);
        break;
    case K_VMM:
        rc = cuMemRelease(s->addr);
        break;
    case K_ARRAY:
        rc = cuArrayDestroy((CUarray)(uintptr_t)s->addr);
        break;
    case K_HOST:
        rc = cuMemFreeHost((void *)(uintptr_t)s->addr);
        break;
    default:
        break;
    }
    note(w, rc);
    s->kind = K_NONE;
}

static void *churn(void *arg)
{
    struct worker *w = arg;
    set_ctx(w);
    for (int i = 0; i < OPS; i++) {
        struct slot *s = &w->s[next(w) % SLOTS];
        if (s->kind == K_NONE)
            do_alloc(w, s);
        else
            do_free(w, s);
        if (i % 500 == 0)
            note(w, cuStreamSynchronize(NULL));
    }
    return NULL;
}

static void *drain(void *arg)
{
    struct worker *w = arg;
    set_ctx(w);
    for (int i = 0; i < SLOTS; i++)
        if (w->s[i].kind != K_NONE)
            do_free(w, &w->s[i]);
    return NULL;
}

static void run_all(void *(*fn)(void *))
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, fn, &workers[i]), 0);
    for (int i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
    for (int i = 0; i < THREADS; i++)
        ck_assert_msg(workers[i].bad == CUDA_SUCCESS, "thread %d got %d", i, workers[i].bad);
}

struct range {
    uint64_t lo, hi;
};

static int by_lo(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* At a quiescent point: the driver's figures are the threads' sums. */
static void check_books(void)
{
    uint64_t alloc[2] = { 0 }, managed[2] = { 0 }, pool[2] = { 0 }, vmm[2] = { 0 };
    uint64_t arrays[2] = { 0 }, host = 0;
    struct range r[THREADS * SLOTS];
    size_t nr = 0;
    for (int i = 0; i < THREADS; i++) {
        for (int j = 0; j < SLOTS; j++) {
            const struct slot *s = &workers[i].s[j];
            int d = workers[i].dev;
            switch (s->kind) {
            case K_PLAIN: case K_PITCH: alloc[d] += s->size; break;
            case K_MANAGED: managed[d] += s->size; break;
            case K_ASYNC: pool[d] += s->size; break;
            case K_VMM: vmm[d] += s->size; break;
            case K_ARRAY: arrays[d] += s->size; break;
            case K_HOST: host += s->size; break;
            default: break;
            }
            if (s->kind == K_PLAIN || s->kind == K_PITCH || s->kind == K_MANAGED ||
                s->kind == K_ASYNC || s->kind == K_HOST) {
                r[nr].lo = s->addr;
                r[nr].hi = s->addr + s->size;
                nr++;
            }
        }
    }
    for (int d = 0; d < 2; d++) {
        struct gm_simcuda_stats st;
        ck_assert_int_eq(gm_simcuda_stats(d, &st), 0);
        ck_assert_uint_eq(st.alloc, alloc[d]);
        ck_assert_uint_eq(st.managed, managed[d]);
        ck_assert_uint_eq(st.pool_used, pool[d]);
        ck_assert_uint_eq(st.vmm, vmm[d]);
        ck_assert_uint_eq(st.arrays, arrays[d]);
        ck_assert_uint_eq(st.host, host);
        ck_assert_uint_eq(st.used, st.alloc + st.pool_reserved + st.vmm + st.arrays);
        ck_assert_uint_le(st.used, st.capacity);
        ck_assert_uint_ge(st.pool_reserved, st.pool_used);
    }
    qsort(r, nr, sizeof r[0], by_lo);
    for (size_t i = 1; i < nr; i++)
        ck_assert_msg(r[i].lo >= r[i - 1].hi, "ranges overlap at %#llx",
                      (unsigned long long)r[i].lo);
}

START_TEST(threads_no_drift)
{
    unsigned long ooms = 0;
    setenv("SIMCUDA_MEMORY", "128M,128M", 1);
    setenv("SIMCUDA_CONTEXT", "0", 1);
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    for (int i = 0; i < THREADS; i++) {
        memset(&workers[i], 0, sizeof workers[i]);
        workers[i].id = i;
        workers[i].dev = i % 2;
        workers[i].rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
    }
    run_all(churn);
    check_books();
    run_all(drain);
    for (int i = 0; i < THREADS; i++)
        ooms += workers[i].ooms;
    ck_assert_uint_gt(ooms, 0);         /* the devices were really contended */
    for (int d = 0; d < 2; d++) {
        CUcontext c;
        CUmemoryPool p;
        struct gm_simcuda_stats st;
        ck_assert_int_eq(cuDevicePrimaryCtxRetain(&c, d), CUDA_SUCCESS);
        ck_assert_int_eq(cuCtxSetCurrent(c), CUDA_SUCCESS);
        ck_assert_int_eq(cuCtxSynchronize(), CUDA_SUCCESS);
        ck_assert_int_eq(cuDeviceGetDefaultMemPool(&p, d), CUDA_SUCCESS);
        ck_assert_int_eq(gm_simcuda_stats(d, &st), 0);
        ck_assert_uint_eq(st.used, 0);  /* exactly back to the start */
        ck_assert_uint_eq(st.live, 0);
        ck_assert_uint_eq(st.managed, 0);
        ck_assert_uint_eq(st.host, 0);
        ck_assert_uint_eq(st.pool_used, 0);
    }
}
END_TEST

static void *ctx_churn(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < 300; i++) {
        CUcontext c;
        CUdeviceptr a;
        CUstream s;
        CUresult rc = cuCtxCreate_v2(&c, 0, w->dev);
        note(w, rc);
        if (rc != CUDA_SUCCESS)
            continue;
        note(w, cuMemAlloc_v2(&a, 1 + next(w) % MiB));   /* freed with the context */
        note(w, cuStreamCreate(&s, 0));
        note(w, cuCtxDestroy_v2(c));
    }
    return NULL;
}

START_TEST(threads_contexts)
{
    setenv("SIMCUDA_MEMORY", "1G,1G", 1);
    setenv("SIMCUDA_CONTEXT", "64M", 1);
    ck_assert_int_eq(cuInit(0), CUDA_SUCCESS);
    for (int i = 0; i < THREADS; i++) {
        memset(&workers[i], 0, sizeof workers[i]);
        workers[i].dev = i % 2;
        workers[i].rng = (uint64_t)i * 7919 + 1;
    }
    run_all(ctx_churn);
    for (int d = 0; d < 2; d++) {
        struct gm_simcuda_stats st;
        ck_assert_int_eq(gm_simcuda_stats(d, &st), 0);
        ck_assert_uint_eq(st.used, 0);
        ck_assert_int_eq(st.contexts, 0);
        ck_assert_uint_eq(st.live, 0);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("simcuda-stress");
    TCase *t = tcase_create("threads");
    tcase_add_test(t, threads_no_drift);
    tcase_add_test(t, threads_contexts);
    tcase_set_timeout(t, 120);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    unsetenv("SIMCUDA_DEVICES");
    unsetenv("SIMCUDA_FAIL");
    unsetenv("SIMCUDA_LATENCY");
    unsetenv("SIMCUDA_POOL_RELEASE");
    SRunner *r = srunner_create(suite());
    srunner_set_fork_status(r, CK_FORK);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
