/*
 * tests/gpu/drv_direct.cu — the driver API linked directly (-lcuda): calls
 * bind to exported symbols, which the preloaded shim interposes.
 */
#include "gc_drv.h"

int main(int argc, char **argv)
{
    gc_init(argc, argv);
    struct gc_drv d;
    d.init = cuInit;
    d.device_get = cuDeviceGet;
    d.primary_retain = cuDevicePrimaryCtxRetain;
    d.ctx_set_current = cuCtxSetCurrent;
    d.mem_alloc = cuMemAlloc;       /* cuMemAlloc_v2 through cuda.h's macro */
    d.mem_free = cuMemFree;         /* cuMemFree_v2 */
    d.mem_get_info = cuMemGetInfo;  /* cuMemGetInfo_v2 */
    d.total_mem = cuDeviceTotalMem; /* cuDeviceTotalMem_v2 */
    /* Optional (the simulated driver has neither): looked up by name. */
    void *ms = drv_optional("cuMemsetD8_v2"), *mc = drv_optional("cuMemcpyDtoH_v2");
    memcpy(&d.memset_d8, &ms, sizeof ms);
    memcpy(&d.memcpy_dtoh, &mc, sizeof mc);
    CUdevice dev = drv_start(&d);
    drv_run_checks(dev);
    return gc_finish();
}
