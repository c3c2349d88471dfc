/*
 * shim/driver/cuformat.h — bytes per channel of a CUDA array format: a fact of
 * the API, used by the shim's array charge and by the simulated driver's
 * array layout alike.
 */
#ifndef GM_CUFORMAT_H
#define GM_CUFORMAT_H

#include <cuda.h>

/* 1, 2 or 4; 0 for a format this table does not know. */
static inline unsigned gm_cu_format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0;
    }
}

#endif
