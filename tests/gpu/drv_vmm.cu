/*
 * tests/gpu/drv_vmm.cu — virtual memory management (what NCCL, PyTorch's
 * expandable segments and JAX use): cuMemCreate, cuMemAddressReserve,
 * cuMemMap, cuMemSetAccess, cuMemRetainAllocationHandle, cuMemRelease,
 * linked directly against libcuda. Checks: a physical allocation is
 * charged by its size exactly; mapped memory is usable; a retained handle
 * is reference-counted (releasing the retained reference frees nothing,
 * the last release frees it all); a handle released while mapped stays
 * held (and charged) until its unmap; the limit edge with cuMemCreate as
 * the unit (cuMemAlloc fills the rest); no drift.
 */
#include "gc_drv.h"

static CUmemAllocationProp prop;
static size_t unit_bytes;

static int vmm_create(void **h)
{
    CUmemGenericAllocationHandle m = 0;
    int rc = (int)cuMemCreate(&m, unit_bytes, &prop, 0);
    *h = (void *)(uintptr_t)m;
    return rc;
}

static int vmm_release(void *h)
{
    return (int)cuMemRelease((CUmemGenericAllocationHandle)(uintptr_t)h);
}

/* One handle of unit_bytes, its creation checked. */
static bool create_checked(CUmemGenericAllocationHandle *h)
{
    void *hv = NULL;
    int rc = vmm_create(&hv);
    *h = (CUmemGenericAllocationHandle)(uintptr_t)hv;
    return gc_check(rc == 0, "cuMemCreate(%zu) succeeds (got %d)", unit_bytes, rc);
}

/* Create, map, use, retain and release; free memory must follow. */
static void check_map_and_refcount(CUdevice dev)
{
    size_t f0 = gc_free_now(drv_meminfo);
    CUmemGenericAllocationHandle h;
    if (!create_checked(&h))
        return;
    int rc;
    size_t f1 = gc_free_now(drv_meminfo);
    if (gc_limit)
        gc_check(f0 - f1 == unit_bytes, "cuMemCreate charged exactly %zu (free fell by %zu)",
                 unit_bytes, f0 - f1);
    CUdeviceptr va = 0;
    rc = (int)cuMemAddressReserve(&va, unit_bytes, 0, 0, 0);
    if (rc == 0)
        rc = (int)cuMemMap(va, unit_bytes, 0, h, 0);
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = dev;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (rc == 0)
        rc = (int)cuMemSetAccess(va, unit_bytes, &acc, 1);
    gc_check(rc == 0, "reserve, map and set access succeed (got %d)", rc);
    if (rc == 0 && drv->memset_d8 && drv->memcpy_dtoh) {
        unsigned char host[4096];
        rc = (int)drv->memset_d8(va, 0x3c, unit_bytes);
        if (rc == 0)
            rc = (int)drv->memcpy_dtoh(host, va + unit_bytes - sizeof host, sizeof host);
        int same = 1;
        for (size_t i = 0; i < sizeof host; i++)
            same &= host[i] == 0x3c;
        gc_check(rc == 0 && same, "mapped memory set on the device reads back (rc %d)", rc);
    }

    CUmemGenericAllocationHandle h2 = 0;
    rc = (int)cuMemRetainAllocationHandle(&h2, (void *)(uintptr_t)va);
    if (gc_check(rc == 0, "cuMemRetainAllocationHandle succeeds (got %d)", rc)) {
        rc = (int)cuMemRelease(h2);
        gc_check(rc == 0, "releasing the retained reference succeeds (got %d)", rc);
        size_t f2 = gc_free_now(drv_meminfo);
        if (gc_limit)
            gc_check(f2 == f1, "still charged after releasing the retained reference "
                               "(free %zu, expected %zu)", f2, f1);
    }
    rc = (int)cuMemUnmap(va, unit_bytes);
    if (rc == 0)
        rc = (int)cuMemAddressFree(va, unit_bytes);
    gc_check(rc == 0, "unmap and address free succeed (got %d)", rc);
    rc = (int)cuMemRelease(h);
    gc_check(rc == 0, "the last cuMemRelease succeeds (got %d)", rc);
    gc_check_drift("after the last release", f0, gc_free_now(drv_meminfo));
}

/* Released while mapped: the driver keeps the memory until the unmap,
 * and the shim its charge (without the shim: the driver's own free memory
 * shows the same). */
static void check_release_while_mapped(void)
{
    size_t f0 = gc_free_now(drv_meminfo);
    CUmemGenericAllocationHandle h;
    if (!create_checked(&h))
        return;
    int rc;
    CUdeviceptr va = 0;
    rc = (int)cuMemAddressReserve(&va, unit_bytes, 0, 0, 0);
    if (rc == 0)
        rc = (int)cuMemMap(va, unit_bytes, 0, h, 0);
    if (rc == 0)
        rc = (int)cuMemRelease(h);
    if (!gc_check(rc == 0, "reserve, map and release succeed (got %d)", rc))
        return;
    size_t f1 = gc_free_now(drv_meminfo);
    gc_check(f0 - f1 >= unit_bytes, "released while mapped: still held "
             "(free fell by %zu, at least %zu)", f0 - f1, unit_bytes);
    rc = (int)cuMemUnmap(va, unit_bytes);
    if (rc == 0)
        rc = (int)cuMemAddressFree(va, unit_bytes);
    gc_check(rc == 0, "unmap and address free succeed (got %d)", rc);
    gc_check_drift("after the unmap of a released handle", f0,
                   gc_free_now(drv_meminfo));
}

int main(int argc, char **argv)
{
    gc_init(argc, argv);
    struct gc_drv d;
    d.init = cuInit;
    d.device_get = cuDeviceGet;
    d.primary_retain = cuDevicePrimaryCtxRetain;
    d.ctx_set_current = cuCtxSetCurrent;
    d.mem_alloc = cuMemAlloc;
    d.mem_free = cuMemFree;
    d.mem_get_info = cuMemGetInfo;
    d.total_mem = cuDeviceTotalMem;
    /* Optional (the simulated driver has neither): looked up by name. */
    void *ms = drv_optional("cuMemsetD8_v2"), *mc = drv_optional("cuMemcpyDtoH_v2");
    memcpy(&d.memset_d8, &ms, sizeof ms);
    memcpy(&d.memcpy_dtoh, &mc, sizeof mc);
    CUdevice dev = drv_start(&d);
    int vmm = 0;
    cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);
    if (!vmm)
        gc_skip("device does not support virtual memory management");
    drv_check_totals(dev);
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t gran = 0;
    int rc = (int)cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (rc != 0 || gran == 0)
        gc_abort("cuMemGetAllocationGranularity", rc);
    unit_bytes = 8 * gran;
    check_map_and_refcount(dev);
    check_release_while_mapped();
    struct gc_unit u = {"cuMemCreate", (unsigned long long)unit_bytes, vmm_create,
                        vmm_release};
    unsigned long long c = gc_edge_unit(&u, &drv_alloc_api, drv_meminfo);
    if (gc_limit && c)
        gc_check(c == unit_bytes, "cuMemCreate charged its size exactly (%llu)", c);
    return gc_finish();
}
