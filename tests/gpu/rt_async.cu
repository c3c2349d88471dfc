/*
 * tests/gpu/rt_async.cu — stream-ordered allocation: cudaMallocAsync on the
 * device's default pool and cudaMallocFromPoolAsync on a created pool.
 * Checks that both work under the shim, that a request one byte over the
 * reported free memory is refused with the OOM code on each pool (the card
 * itself has far more), that allocation works again after the refusal,
 * and, once the pools are trimmed/destroyed, that there is no drift.
 * (What a pool keeps after a free is accounted by a later feature; these
 * checks hold either way.)
 */
#include "gc_rt.h"

static cudaStream_t stream;

static int pool_roundtrip(cudaMemPool_t pool, size_t bytes, const char *what)
{
    void *p = NULL;
    int rc = pool ? (int)cudaMallocFromPoolAsync(&p, bytes, pool, stream)
                  : (int)cudaMallocAsync(&p, bytes, stream);
    if (!gc_check(rc == 0, "%s(%zu) succeeds (got %d)", what, bytes, rc))
        return rc;
    rc = (int)cudaMemsetAsync(p, 1, bytes, stream);
    if (rc == 0)
        rc = (int)cudaFreeAsync(p, stream);
    if (rc == 0)
        rc = (int)cudaStreamSynchronize(stream);
    gc_check(rc == 0, "%s: memset, free and synchronize succeed (got %d)", what, rc);
    return rc;
}

static void pool_over_limit(cudaMemPool_t pool, const char *what)
{
    if (!gc_limit)
        return;
    size_t f0 = gc_free_now(rt_meminfo);
    void *p = NULL;
    int rc = pool ? (int)cudaMallocFromPoolAsync(&p, f0 + 1, pool, stream)
                  : (int)cudaMallocAsync(&p, f0 + 1, stream);
    gc_check(rc == GC_OOM, "%s(free + 1 = %zu) refused with OOM (got %d)", what, f0 + 1,
             rc);
    if (rc == 0)
        cudaFreeAsync(p, stream);
    (void)cudaGetLastError();
    cudaStreamSynchronize(stream);
    p = NULL;
    rc = pool ? (int)cudaMallocFromPoolAsync(&p, (size_t)gc_limit + 1, pool, stream)
              : (int)cudaMallocAsync(&p, (size_t)gc_limit + 1, stream);
    gc_check(rc == GC_OOM, "%s(limit + 1) refused with OOM (got %d)", what, rc);
    if (rc == 0)
        cudaFreeAsync(p, stream);
    (void)cudaGetLastError();
    cudaStreamSynchronize(stream);
}

int main(int argc, char **argv)
{
    gc_init(argc, argv);
    rt_start();
    rt_check_totals();
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
        gc_abort("cudaStreamCreate", 0);
    size_t f0 = gc_free_now(rt_meminfo);

    cudaMemPool_t def = NULL;
    int rc = (int)cudaDeviceGetDefaultMemPool(&def, 0);
    gc_check(rc == 0, "cudaDeviceGetDefaultMemPool succeeds (got %d)", rc);
    pool_roundtrip(NULL, 64 * GC_MIB, "cudaMallocAsync");
    pool_over_limit(NULL, "cudaMallocAsync");
    pool_roundtrip(NULL, 64 * GC_MIB + 5, "cudaMallocAsync after a refusal");

    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool = NULL;
    rc = (int)cudaMemPoolCreate(&pool, &props);
    if (gc_check(rc == 0, "cudaMemPoolCreate succeeds (got %d)", rc)) {
        pool_roundtrip(pool, 32 * GC_MIB, "cudaMallocFromPoolAsync");
        pool_over_limit(pool, "cudaMallocFromPoolAsync");
        pool_roundtrip(pool, 32 * GC_MIB + 5, "cudaMallocFromPoolAsync after a refusal");
        rc = (int)cudaMemPoolDestroy(pool);
        gc_check(rc == 0, "cudaMemPoolDestroy succeeds (got %d)", rc);
    }
    if (def)
        cudaMemPoolTrimTo(def, 0);
    cudaDeviceSynchronize();
    gc_check_drift("after trimming the pools", f0, gc_free_now(rt_meminfo));
    return gc_finish();
}
