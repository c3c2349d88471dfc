/*
 * tools/trainsim/driver.c — gpumem-trainsim: loading the driver and binding its functions by --via (direct, dlsym, cuGetProcAddress).
 * Types and invariants: tools/trainsim/trainsim.h.
 */
#include "tools/trainsim/trainsim.h"

/* ---- loading the driver ------------------------------------------------- */

const char *gm_ts_via_name(enum via v)
{
    return v == VIA_DIRECT ? "direct" : v == VIA_DLSYM ? "dlsym" : "gpa";
}

const char *gm_ts_api_name(enum api a)
{
    static const char *const names[] = { "alloc", "async", "vmm", "mixed" };
    return names[a];
}

/* One function by the chosen path: base name for cuGetProcAddress, the
 * exported symbol otherwise (alt: an equivalent older export, or NULL).
 * gpa asks every name at 13000, so no function whose 13000 variant changed
 * its signature (cuCtxSynchronize, cuCtxGetDevice) is used here. */
static void *find_fn(const struct drv *d, const char *base, const char *sym, const char *alt)
{
    void *p = NULL;
    if (d->via == VIA_GPA) {
        CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        if (d->cuGetProcAddress_v2(base, &p, GPA_VERSION, 0, &st) != CUDA_SUCCESS ||
            st != CU_GET_PROC_ADDRESS_SUCCESS)
            return NULL;
        return p;
    }
    void *h = d->via == VIA_DLSYM ? d->lib : RTLD_DEFAULT;
    p = dlsym(h, sym);
    if (!p && alt)
        p = dlsym(h, alt);
    return p;
}

static void *need_fn(const struct drv *d, const char *base, const char *sym,
                     const char *alt, int required, int *missing)
{
    void *p = find_fn(d, base, sym, alt);
    if (!p && required) {
        fprintf(stderr, "trainsim: %s lacks %s (looked up via %s)\n", DRIVER_NAME,
                d->via == VIA_GPA ? base : sym, gm_ts_via_name(d->via));
        (*missing)++;
    }
    return p;
}

#define BIND(d, field, base, alt, req, missing) \
    ((d)->field = (__typeof__((d)->field))need_fn((d), (base), #field, (alt), (req), (missing)))

static int bind_all(struct drv *d, enum api api)
{
    int m = 0;
    int async = api == API_ASYNC || api == API_MIXED;
    int vmm = api == API_VMM || api == API_MIXED;
    BIND(d, cuGetErrorName, "cuGetErrorName", NULL, 1, &m);
    BIND(d, cuInit, "cuInit", NULL, 1, &m);
    BIND(d, cuDeviceGet, "cuDeviceGet", NULL, 1, &m);
    BIND(d, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL, 1, &m);
    BIND(d, cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease",
         "cuDevicePrimaryCtxRelease", 1, &m);
    BIND(d, cuCtxSetCurrent, "cuCtxSetCurrent", NULL, 1, &m);
    BIND(d, cuMemAlloc_v2, "cuMemAlloc", NULL, 1, &m);
    BIND(d, cuMemFree_v2, "cuMemFree", NULL, 1, &m);
    BIND(d, cuStreamCreate, "cuStreamCreate", NULL, async, &m);
    BIND(d, cuStreamSynchronize, "cuStreamSynchronize", NULL, async, &m);
    BIND(d, cuStreamDestroy_v2, "cuStreamDestroy", "cuStreamDestroy", async, &m);
    BIND(d, cuMemAllocAsync, "cuMemAllocAsync", NULL, async, &m);
    BIND(d, cuMemFreeAsync, "cuMemFreeAsync", NULL, async, &m);
    BIND(d, cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity", NULL, vmm, &m);
    BIND(d, cuMemCreate, "cuMemCreate", NULL, vmm, &m);
    BIND(d, cuMemRelease, "cuMemRelease", NULL, vmm, &m);
    BIND(d, cuMemAddressReserve, "cuMemAddressReserve", NULL, vmm, &m);
    BIND(d, cuMemAddressFree, "cuMemAddressFree", NULL, vmm, &m);
    BIND(d, cuMemMap, "cuMemMap", NULL, vmm, &m);
    BIND(d, cuMemUnmap, "cuMemUnmap", NULL, vmm, &m);
    BIND(d, cuMemSetAccess, "cuMemSetAccess", NULL, vmm, &m);
    return m ? -1 : 0;
}

/* cudart's sequence: dlsym cuGetProcAddress_v2 only, then fetch
 * "cuGetProcAddress" at 12000 through it and use that from then on. */
static int bind_gpa(struct drv *d)
{
    void *p = dlsym(d->lib, "cuGetProcAddress_v2");
    if (!p) {
        fprintf(stderr, "trainsim: %s lacks cuGetProcAddress_v2 (needed by --via gpa)\n",
                DRIVER_NAME);
        return -1;
    }
    d->cuGetProcAddress_v2 = (__typeof__(d->cuGetProcAddress_v2))p;
    void *again = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = d->cuGetProcAddress_v2("cuGetProcAddress", &again, 12000, 0, &st);
    if (r != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS || !again) {
        fprintf(stderr, "trainsim: cuGetProcAddress_v2(\"cuGetProcAddress\", 12000) "
                        "failed (result %d, status %d)\n", (int)r, (int)st);
        return -1;
    }
    d->cuGetProcAddress_v2 = (__typeof__(d->cuGetProcAddress_v2))again;
    return 0;
}

int gm_ts_drv_open(struct drv *d, const struct opts *o)
{
    memset(d, 0, sizeof *d);
    d->via = o->via;
    int mode = RTLD_NOW | (o->via == VIA_DIRECT ? RTLD_GLOBAL : RTLD_LOCAL);
    d->lib = dlopen(DRIVER_NAME, mode);
    if (!d->lib) {
        const char *why = dlerror();
        fprintf(stderr, "trainsim: cannot load %s: %s\n"
                        "trainsim: install the NVIDIA driver, or use the simulated one: "
                        "LD_LIBRARY_PATH=build/sim\n", DRIVER_NAME, why ? why : "?");
        return -1;
    }
    if (o->via == VIA_GPA && bind_gpa(d) != 0)
        return -1;
    return bind_all(d, o->api);
}

const char *gm_ts_err_name(const struct drv *d, CUresult r)
{
    const char *s = NULL;
    if (d->cuGetErrorName && d->cuGetErrorName(r, &s) == CUDA_SUCCESS && s)
        return s;
    return "CUDA_ERROR_UNKNOWN_CODE";
}
