/*
 * shim/driver/cuda_api.h — include cuda.h the way every shim file needs it: with
 * every versioned variant declared (cuMemAlloc v1 with its 32-bit size,
 * cuMemAlloc_v2, ..._ptsz, the 4- and 5-argument cuGetProcAddress) and
 * none of the header's renaming macros. Types only: the shim never links
 * libcuda.
 */
#ifndef GM_CUDA_API_H
#define GM_CUDA_API_H

#ifndef __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_VERSION_INTERNAL 1
#endif
#include <cuda.h>

#include "shim/base/compiler.h"

/* Symbols the shim exports (listed in shim/intercept/exports.map). */
#define GM_EXPORT __attribute__((visibility("default")))


#endif
