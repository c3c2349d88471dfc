/*
 * tests/gpu/rt_3d.cu — cudaMalloc3D (a pitched allocation of height x
 * depth rows): the charge covers at least pitch x height x depth. Then the
 * limit edge with that allocation as the unit (cudaMalloc fills the rest)
 * and no drift.
 */
#include "gc_rt.h"

static const cudaExtent ext = {4000, 64, 48}; /* width bytes, height, depth */
static size_t last_pitch;

static int alloc3d(void **h)
{
    cudaPitchedPtr pp;
    memset(&pp, 0, sizeof pp);
    int rc = (int)cudaMalloc3D(&pp, ext);
    if (rc != 0) {
        (void)cudaGetLastError();
    } else {
        last_pitch = pp.pitch;
        *h = pp.ptr;
    }
    return rc;
}

static int free3d(void *h)
{
    return (int)cudaFree(h);
}

int main(int argc, char **argv)
{
    gc_init(argc, argv);
    rt_start();
    rt_check_totals();
    size_t f0 = gc_free_now(rt_meminfo);
    void *p = NULL;
    int rc = alloc3d(&p);
    if (gc_check(rc == 0, "cudaMalloc3D(%zu x %zu x %zu) succeeds (got %d)", ext.width,
                 ext.height, ext.depth, rc)) {
        size_t need = last_pitch * ext.height * ext.depth;
        gc_check(last_pitch >= ext.width, "pitch %zu >= width %zu", last_pitch, ext.width);
        size_t used = f0 - gc_free_now(rt_meminfo);
        if (gc_limit)
            gc_check(used >= need, "charged %zu >= pitch x height x depth = %zu", used, need);
        cudaPitchedPtr pp = make_cudaPitchedPtr(p, last_pitch, ext.width, ext.height);
        rc = (int)cudaMemset3D(pp, 9, ext);
        gc_check(rc == 0, "cudaMemset3D succeeds (got %d)", rc);
        gc_check(free3d(p) == 0, "cudaFree succeeds");
        gc_check_drift("after the 3D allocation", f0, gc_free_now(rt_meminfo));
    }
    struct gc_unit u = {"cudaMalloc3D",
                        (unsigned long long)ext.width * ext.height * ext.depth, alloc3d,
                        free3d};
    gc_edge_unit(&u, &rt_malloc_api, rt_meminfo);
    return gc_finish();
}
