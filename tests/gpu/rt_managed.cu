/*
 * tests/gpu/rt_managed.cu — cudaMallocManaged (cuMemAllocManaged): managed
 * memory is charged against the device limit by its size. Checks: totals,
 * the memory is usable from the device, a round trip charged exactly, the
 * exact limit edge and no drift. Never asks for more managed memory than
 * the limit (and so than the card has free).
 */
#include "gc_rt.h"

static int managed_alloc(size_t bytes, void **h)
{
    int rc = (int)cudaMallocManaged(h, bytes, cudaMemAttachGlobal);
    if (rc != 0)
        (void)cudaGetLastError();
    return rc;
}

static int managed_free(void *h)
{
    return (int)cudaFree(h);
}

static const struct gc_api managed_api = {"cudaMallocManaged", managed_alloc, managed_free};

int main(int argc, char **argv)
{
    gc_init(argc, argv);
    rt_start();
    int ok = 0;
    cudaDeviceGetAttribute(&ok, cudaDevAttrManagedMemory, 0);
    if (!ok)
        gc_skip("device does not support managed memory");
    rt_check_totals();
    void *p = NULL;
    int rc = managed_alloc(16 * GC_MIB, &p);
    if (gc_check(rc == 0, "cudaMallocManaged(16 MiB) succeeds (got %d)", rc)) {
        rc = (int)cudaMemset(p, 7, 16 * GC_MIB);
        if (rc == 0)
            rc = (int)cudaDeviceSynchronize();
        gc_check(rc == 0 && ((unsigned char *)p)[16 * GC_MIB - 1] == 7,
                 "managed memory set on the device reads back on the host (rc %d)", rc);
        gc_check(managed_free(p) == 0, "cudaFree of managed memory succeeds");
    }
    gc_roundtrip(&managed_api, rt_meminfo, 4 * GC_MIB + 1);
    gc_edge_bytes(&managed_api, rt_meminfo);
    return gc_finish();
}
