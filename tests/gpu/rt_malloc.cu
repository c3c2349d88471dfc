/*
 * tests/gpu/rt_malloc.cu — cudaMalloc/cudaFree through the runtime. Built
 * twice by run.sh: rt_malloc_shared (-cudart shared: libcudart.so) and
 * rt_malloc_static (nvcc's default, libcudart_static.a). Both reach the
 * driver through dlopen + cuGetProcAddress, which the shim must catch.
 * Checks: reported totals, an absurd request fails with the OOM code, the
 * memory is real (set and read back), the exact limit edge, no drift.
 */
#include "gc_rt.h"

static void check_memory_is_usable(void)
{
    const size_t bytes = 64 * GC_MIB;
    unsigned char host[4096];
    void *p = NULL;
    int rc = (int)cudaMalloc(&p, bytes);
    if (!gc_check(rc == 0, "cudaMalloc(64 MiB) succeeds (got %d)", rc))
        return;
    rc = (int)cudaMemset(p, 0x5a, bytes);
    if (rc == 0)
        rc = (int)cudaMemcpy(host, (unsigned char *)p + bytes - sizeof host, sizeof host,
                             cudaMemcpyDeviceToHost);
    int same = 1;
    for (size_t i = 0; i < sizeof host; i++)
        same &= host[i] == 0x5a;
    gc_check(rc == 0 && same, "memory set on the device reads back (rc %d)", rc);
    gc_check(cudaFree(p) == cudaSuccess, "cudaFree succeeds");
}

int main(int argc, char **argv)
{
    gc_init(argc, argv);
    rt_start();
    rt_check_totals();
    gc_check_huge(&rt_malloc_api);
    check_memory_is_usable();
    gc_roundtrip(&rt_malloc_api, rt_meminfo, 3 * GC_MIB + 17);
    gc_edge_bytes(&rt_malloc_api, rt_meminfo);
    return gc_finish();
}
