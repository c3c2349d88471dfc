/*
 * tools/sim/simcuda_dev.c — device queries of the simulated driver:
 * cuDeviceGet/GetCount/GetName/GetUuid(_v2)/TotalMem(_v2)/GetAttribute/
 * GetPCIBusId/GetByPCIBusId.
 *
 * Every device is a "gpumem simulated GPU" with compute capability 9.0 and
 * the memory configured by SIMCUDA_MEMORY. Invariants: answers depend only
 * on the ordinal and the configuration (UUIDs are a fixed function of the
 * physical index and SIMCUDA_UUID_SEED, tools/sim/simmachine.c; with
 * CUDA_VISIBLE_DEVICES ordinal i is physical device phys[i]); no device
 * state is modified here.
 */
#include "tools/sim/simcuda.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define SIM_DEVICE_NAME "gpumem simulated GPU"
#define SIM_PCI_BUS0 0x18

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!gm_sim_valid_dev(ordinal))
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (count == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *count = gm_sim.cfg.ndev;
    return CUDA_SUCCESS;
}

CUresult gm_sim_dev_entry(CUdevice dev, bool args_ok)
{
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!args_ok)
        return CUDA_ERROR_INVALID_VALUE;
    if (!gm_sim_valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult rc = gm_sim_dev_entry(dev, name != NULL);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", SIM_DEVICE_NAME);
    return CUDA_SUCCESS;
}

static CUresult dev_uuid(CUuuid *uuid, CUdevice dev)
{
    CUresult rc = gm_sim_dev_entry(dev, uuid != NULL);
    if (rc != CUDA_SUCCESS)
        return rc;
    unsigned char b[16];
    gm_sim_uuid(&gm_sim.cfg.machine, gm_sim.cfg.phys[dev], b);
    memcpy(uuid->bytes, b, sizeof b);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    return dev_uuid(uuid, dev);
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    return dev_uuid(uuid, dev);
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CUresult rc = gm_sim_dev_entry(dev, bytes != NULL);
    if (rc != CUDA_SUCCESS)
        return rc;
    *bytes = gm_sim.dev[dev].capacity;
    return CUDA_SUCCESS;
}

/* v1: 32-bit result, clamped. */
CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    CUresult rc = gm_sim_dev_entry(dev, bytes != NULL);
    if (rc != CUDA_SUCCESS)
        return rc;
    uint64_t cap = gm_sim.dev[dev].capacity;
    *bytes = cap > 0xffffffffULL ? 0xffffffffU : (unsigned int)cap;
    return CUDA_SUCCESS;
}

/* The attributes a memory-management layer looks at; everything else in
 * the valid range answers 0. */
static int attr_value(CUdevice_attribute a, CUdevice dev)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: return 1;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 132;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: return 1;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return SIM_PCI_BUS0 + gm_sim.cfg.phys[dev];
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 6144;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 52428800;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 3;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: return 32;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 233472;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 232448;
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: return 0;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: return 0;
    default: return 0;
    }
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    CUresult rc = gm_sim_dev_entry(dev, pi != NULL);
    if (rc != CUDA_SUCCESS)
        return rc;
    if ((int)attrib < 1 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    *pi = attr_value(attrib, dev);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    CUresult rc = gm_sim_dev_entry(dev, pciBusId != NULL);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(pciBusId, (size_t)len, "00000000:%02X:00.0", (unsigned)(SIM_PCI_BUS0 + gm_sim.cfg.phys[dev]));
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    CUresult rc = gm_sim_ready();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dev == NULL || pciBusId == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < gm_sim.cfg.ndev; i++) {
        char a[32], b[32];
        unsigned bus = (unsigned)(SIM_PCI_BUS0 + gm_sim.cfg.phys[i]);
        snprintf(a, sizeof a, "00000000:%02X:00.0", bus);
        snprintf(b, sizeof b, "0000:%02X:00.0", bus);
        if (strcasecmp(pciBusId, a) == 0 || strcasecmp(pciBusId, b) == 0) {
            *dev = i;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_DEVICE;
}
