/*
 * tests/gpu/rt_array.cu — CUDA arrays: cudaMallocArray (cuArray3DCreate or
 * cuArrayCreate underneath) and cudaMallocMipmappedArray
 * (cuMipmappedArrayCreate). Their charge is what the driver says they take,
 * at least the texels asked for (a mipmapped array of 0 levels is made,
 * and charged, with one); the limit edge runs with each as the unit
 * (cudaMalloc fills the rest), and there is no drift.
 */
#include "gc_rt.h"

static const size_t aw = 4096, ah = 4096; /* float texels: 64 MiB */
static const size_t mw = 2048, mh = 2048; /* float, full mip chain */
static unsigned mlevels = 12;   /* 0 is clamped to 1 by the driver */

static int array_alloc(void **h)
{
    cudaChannelFormatDesc d = cudaCreateChannelDesc<float>();
    cudaArray_t a = NULL;
    int rc = (int)cudaMallocArray(&a, &d, aw, ah, 0);
    if (rc != 0)
        (void)cudaGetLastError();
    *h = (void *)a;
    return rc;
}

static int array_free(void *h)
{
    return (int)cudaFreeArray((cudaArray_t)h);
}

static int mip_alloc(void **h)
{
    cudaChannelFormatDesc d = cudaCreateChannelDesc<float>();
    cudaMipmappedArray_t m = NULL;
    int rc = (int)cudaMallocMipmappedArray(&m, &d, make_cudaExtent(mw, mh, 0), mlevels, 0);
    if (rc != 0)
        (void)cudaGetLastError();
    *h = (void *)m;
    return rc;
}

static int mip_free(void *h)
{
    return (int)cudaFreeMipmappedArray((cudaMipmappedArray_t)h);
}

int main(int argc, char **argv)
{
    gc_init(argc, argv);
    rt_start();
    rt_check_totals();
    struct gc_unit a = {"cudaMallocArray", (unsigned long long)aw * ah * sizeof(float),
                        array_alloc, array_free};
    unsigned long long c = gc_edge_unit(&a, &rt_malloc_api, rt_meminfo);
    if (gc_limit && c)
        gc_check(c < 2 * a.nominal, "array charge %llu is below twice its texels", c);
    /* Level 0 is the floor (the chain is about 4/3 of it, plus padding). */
    struct gc_unit m = {"cudaMallocMipmappedArray",
                        (unsigned long long)mw * mh * sizeof(float), mip_alloc, mip_free};
    gc_edge_unit(&m, &rt_malloc_api, rt_meminfo);
    /* 0 levels: the driver makes one, and the charge follows it. */
    mlevels = 0;
    struct gc_unit m0 = {"cudaMallocMipmappedArray, 0 levels",
                         (unsigned long long)mw * mh * sizeof(float), mip_alloc, mip_free};
    gc_edge_unit(&m0, &rt_malloc_api, rt_meminfo);
    return gc_finish();
}
