/*
 * tests/gpu/rt_pitch.cu — cudaMallocPitch (cuMemAllocPitch): the charge is
 * pitch x height, exactly. The width is deliberately not a multiple of the
 * pitch alignment, so a shim charging width x height would be caught.
 * Then the limit edge with that allocation as the unit (cudaMalloc fills
 * the rest) and no drift.
 */
#include "gc_rt.h"

static const size_t width = 1000 * 1000 + 3, height = 24;
static size_t last_pitch;

static int pitch_alloc(void **h)
{
    size_t pitch = 0;
    int rc = (int)cudaMallocPitch(h, &pitch, width, height);
    if (rc != 0)
        (void)cudaGetLastError();
    else
        last_pitch = pitch;
    return rc;
}

static int pitch_free(void *h)
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
    int rc = pitch_alloc(&p);
    if (gc_check(rc == 0, "cudaMallocPitch(%zu x %zu) succeeds (got %d)", width, height,
                 rc)) {
        gc_check(last_pitch >= width, "pitch %zu >= width %zu", last_pitch, width);
        size_t used = f0 - gc_free_now(rt_meminfo);
        if (gc_limit)
            gc_check(used == last_pitch * height,
                     "charged pitch x height = %zu bytes (free fell by %zu)",
                     last_pitch * height, used);
        rc = (int)cudaMemset2D(p, last_pitch, 3, width, height);
        gc_check(rc == 0, "cudaMemset2D succeeds (got %d)", rc);
        gc_check(pitch_free(p) == 0, "cudaFree succeeds");
        gc_check_drift("after the pitched allocation", f0, gc_free_now(rt_meminfo));
    }
    struct gc_unit u = {"cudaMallocPitch", (unsigned long long)width * height, pitch_alloc,
                        pitch_free};
    unsigned long long c = gc_edge_unit(&u, &rt_malloc_api, rt_meminfo);
    if (gc_limit && c)
        gc_check(c == (unsigned long long)last_pitch * height,
                 "edge unit charged pitch x height (%llu)", c);
    return gc_finish();
}
