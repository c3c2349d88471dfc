/*
 * tests/gpu/drv_dlopen.cu — the driver API the way XLA, Triton and the
 * CUDA runtime reach it: dlopen("libcuda.so.1") and dlsym of each
 * versioned name on that handle (a handle lookup never searches the
 * preload, so only the shim's dlsym override can catch it). Then the same
 * checks once more through a cuMemAlloc obtained from cuGetProcAddress_v2
 * (itself found by dlsym), the path the runtime uses for everything.
 */
#include <dlfcn.h>

#include "gc_drv.h"

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);

static void *sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (!p)
        gc_note("dlsym(libcuda, %s) returned NULL", name);
    return p;
}

/* Store a looked-up address into a function-pointer field. */
#define LOAD(field, h, name)                                                                \
    do {                                                                                    \
        void *s_ = sym(h, name);                                                            \
        memcpy(&(field), &s_, sizeof s_);                                                   \
    } while (0)

int main(int argc, char **argv)
{
    gc_init(argc, argv);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        gc_skip("dlopen(libcuda.so.1) failed: no NVIDIA driver");
    struct gc_drv d;
    LOAD(d.init, h, "cuInit");
    LOAD(d.device_get, h, "cuDeviceGet");
    LOAD(d.primary_retain, h, "cuDevicePrimaryCtxRetain");
    LOAD(d.ctx_set_current, h, "cuCtxSetCurrent");
    LOAD(d.mem_alloc, h, "cuMemAlloc_v2");
    LOAD(d.mem_free, h, "cuMemFree_v2");
    LOAD(d.mem_get_info, h, "cuMemGetInfo_v2");
    LOAD(d.total_mem, h, "cuDeviceTotalMem_v2");
    LOAD(d.memset_d8, h, "cuMemsetD8_v2");
    LOAD(d.memcpy_dtoh, h, "cuMemcpyDtoH_v2");
    CUdevice dev = drv_start(&d);
    drv_run_checks(dev);

    /* Again through cuGetProcAddress_v2("cuMemAlloc", 12000, default). */
    gpa_fn gpa = NULL;
    LOAD(gpa, h, "cuGetProcAddress_v2");
    if (gc_check(gpa != NULL, "dlsym(libcuda, cuGetProcAddress_v2) resolves")) {
        struct gc_drv g = d;
        void *p = NULL;
        CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        int rc = (int)gpa("cuMemAlloc", &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st);
        gc_check(rc == 0 && p && st == CU_GET_PROC_ADDRESS_SUCCESS,
                 "cuGetProcAddress_v2(cuMemAlloc, 12000) resolves (rc %d, status %d)", rc,
                 (int)st);
        if (p) {
            memcpy(&g.mem_alloc, &p, sizeof p);
            drv = &g;
            gc_check_huge(&drv_alloc_api);
            gc_edge_bytes(&drv_alloc_api, drv_meminfo);
            drv = &d;
        }
    }
    return gc_finish();
}
