/*
 * shim/abi.h — the shared-memory layout: the one contract between the shim
 * (writer) and the tools (readers). Documented field by field in docs/abi.md.
 *
 * Identifiers below (API ids, event kinds) are part of the ABI: values are
 * never reused or renumbered; new ones are appended.
 */
#ifndef GM_ABI_H
#define GM_ABI_H

#include <stdint.h>

/* Which driver entry point (family, not variant) an event came from. */
enum gm_api {
    GM_API_NONE = 0,
    GM_API_MEM_ALLOC,            /* cuMemAlloc, cuMemAlloc_v2 */
    GM_API_MEM_ALLOC_PITCH,      /* cuMemAllocPitch(_v2) */
    GM_API_MEM_ALLOC_MANAGED,    /* cuMemAllocManaged */
    GM_API_MEM_FREE,             /* cuMemFree(_v2) */
    GM_API_MEM_ALLOC_ASYNC,      /* cuMemAllocAsync(_ptsz) */
    GM_API_MEM_ALLOC_FROM_POOL,  /* cuMemAllocFromPoolAsync(_ptsz) */
    GM_API_MEM_FREE_ASYNC,       /* cuMemFreeAsync(_ptsz) */
    GM_API_MEM_CREATE,           /* cuMemCreate */
    GM_API_MEM_RELEASE,          /* cuMemRelease */
    GM_API_MEM_RETAIN,           /* cuMemRetainAllocationHandle */
    GM_API_ARRAY_CREATE,         /* cuArrayCreate(_v2) */
    GM_API_ARRAY3D_CREATE,       /* cuArray3DCreate(_v2) */
    GM_API_ARRAY_DESTROY,        /* cuArrayDestroy */
    GM_API_MIPMAP_CREATE,        /* cuMipmappedArrayCreate */
    GM_API_MIPMAP_DESTROY,       /* cuMipmappedArrayDestroy */
    GM_API_MEM_HOST_ALLOC,       /* cuMemHostAlloc */
    GM_API_MEM_ALLOC_HOST,       /* cuMemAllocHost(_v2) */
    GM_API_MEM_FREE_HOST,        /* cuMemFreeHost */
    GM_API_CTX_CREATE,           /* cuCtxCreate(_v2/_v3/_v4) */
    GM_API_PRIMARY_CTX_RETAIN,   /* cuDevicePrimaryCtxRetain */
    GM_API_POOL_TRIM,            /* cuMemPoolTrimTo (by gpumem) */
    GM_API_POOL_DESTROY,         /* cuMemPoolDestroy */
    GM_API_COUNT
};

/* Event kinds in the ring. */
enum gm_ev_kind {
    GM_EV_NONE = 0,
    GM_EV_ALLOC,       /* memory charged */
    GM_EV_FREE,        /* memory released */
    GM_EV_OOM,         /* request refused at the limit */
    GM_EV_LIMIT,       /* limit changed (staged freeze, ...) */
    GM_EV_CONTEXT,     /* context memory measured and charged */
    GM_EV_SPILL,       /* refused request served as managed memory */
    GM_EV_MODE,        /* mode change */
    GM_EV_OVER_LIMIT,  /* allowed past the limit (on_oom=warn) */
    GM_EV_WAIT_BEGIN,  /* on_oom=wait: a thread started waiting */
    GM_EV_WAIT_END,    /* ... and stopped (size = bytes, addr = 1 if served) */
    GM_EV_TRIM,        /* pool trimmed; size = bytes returned */
    GM_EV_RECLAIM,     /* a dead group member's charge reclaimed */
    GM_EV_HOST,        /* pinned host memory (size signed in addr field) */
    GM_EV_COUNT
};

/* The segment layout (header, per-device stats, event ring) follows. */

#endif
