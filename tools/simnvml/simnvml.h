/*
 * tools/simnvml/simnvml.h — the entry points of the simulated NVML
 * (build/sim/libnvidia-ml.so.1), with NVML's names and signatures (types
 * from shim/driver/nvml_api.h). It describes the same machine as the
 * simulated driver (tools/sim/simmachine.h): the same physical devices and
 * UUIDs in physical order (NVML ignores CUDA_VISIBLE_DEVICES), memory used
 * summed over every simulated process's board, and those processes as the
 * running compute processes.
 */
#ifndef GM_SIMNVML_H
#define GM_SIMNVML_H

#include "shim/driver/nvml_api.h"

#define SN_API __attribute__((visibility("default")))

SN_API int nvmlInit(void);
SN_API int nvmlInit_v2(void);
SN_API int nvmlInitWithFlags(unsigned int flags);
SN_API int nvmlShutdown(void);
SN_API const char *nvmlErrorString(int result);
SN_API int nvmlSystemGetDriverVersion(char *version, unsigned int length);
SN_API int nvmlSystemGetNVMLVersion(char *version, unsigned int length);
SN_API int nvmlDeviceGetCount(unsigned int *count);
SN_API int nvmlDeviceGetCount_v2(unsigned int *count);
SN_API int nvmlDeviceGetHandleByIndex(unsigned int index, gm_nvml_dev *dev);
SN_API int nvmlDeviceGetHandleByIndex_v2(unsigned int index, gm_nvml_dev *dev);
SN_API int nvmlDeviceGetHandleByUUID(const char *uuid, gm_nvml_dev *dev);
SN_API int nvmlDeviceGetIndex(gm_nvml_dev dev, unsigned int *index);
SN_API int nvmlDeviceGetUUID(gm_nvml_dev dev, char *uuid, unsigned int length);
SN_API int nvmlDeviceGetName(gm_nvml_dev dev, char *name, unsigned int length);
SN_API int nvmlDeviceGetMemoryInfo(gm_nvml_dev dev, struct gm_nvml_memory *mem);
SN_API int nvmlDeviceGetMemoryInfo_v2(gm_nvml_dev dev, struct gm_nvml_memory_v2 *mem);
SN_API int nvmlDeviceGetComputeRunningProcesses(gm_nvml_dev dev, unsigned int *count,
                                                struct gm_nvml_proc_v1 *infos);
SN_API int nvmlDeviceGetComputeRunningProcesses_v2(gm_nvml_dev dev, unsigned int *count,
                                                   struct gm_nvml_proc_v2 *infos);
SN_API int nvmlDeviceGetComputeRunningProcesses_v3(gm_nvml_dev dev, unsigned int *count,
                                                   struct gm_nvml_proc_v2 *infos);
SN_API int nvmlDeviceGetGraphicsRunningProcesses(gm_nvml_dev dev, unsigned int *count,
                                                 struct gm_nvml_proc_v1 *infos);
SN_API int nvmlDeviceGetGraphicsRunningProcesses_v2(gm_nvml_dev dev, unsigned int *count,
                                                    struct gm_nvml_proc_v2 *infos);
SN_API int nvmlDeviceGetGraphicsRunningProcesses_v3(gm_nvml_dev dev, unsigned int *count,
                                                    struct gm_nvml_proc_v2 *infos);
SN_API int nvmlDeviceGetMPSComputeRunningProcesses(gm_nvml_dev dev, unsigned int *count,
                                                   struct gm_nvml_proc_v1 *infos);
SN_API int nvmlDeviceGetMPSComputeRunningProcesses_v2(gm_nvml_dev dev, unsigned int *count,
                                                      struct gm_nvml_proc_v2 *infos);
SN_API int nvmlDeviceGetMPSComputeRunningProcesses_v3(gm_nvml_dev dev, unsigned int *count,
                                                      struct gm_nvml_proc_v2 *infos);

#endif
