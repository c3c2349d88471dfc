/*
 * shim/telemetry/abinames.c — the names of the ABI's identifiers (API ids and event
 * kinds), for the shim's messages and the tools' output. Total functions:
 * an unknown value gives "?" (gm_*_name), or its number ("kind19",
 * "api40": gm_*_text, for what is read from a segment), never NULL.
 */
#include "shim/telemetry/abi.h"

#include <stdio.h>

const char *gm_ev_kind_name(unsigned kind)
{
    static const char *const names[GM_EV_COUNT] = {
        [GM_EV_NONE] = "none", [GM_EV_ALLOC] = "alloc",
        [GM_EV_FREE] = "free", [GM_EV_OOM] = "oom",
        [GM_EV_LIMIT] = "limit", [GM_EV_CONTEXT] = "context",
        [GM_EV_SPILL] = "spill", [GM_EV_MODE] = "mode",
        [GM_EV_OVER_LIMIT] = "over_limit", [GM_EV_WAIT_BEGIN] = "wait_begin",
        [GM_EV_WAIT_END] = "wait_end", [GM_EV_TRIM] = "trim",
        [GM_EV_RECLAIM] = "reclaim", [GM_EV_HOST] = "host",
        [GM_EV_STEP] = "step", [GM_EV_MARK] = "mark",
        [GM_EV_FORECAST] = "forecast", [GM_EV_CONTEXT_END] = "context_end",
        [GM_EV_CTX_FREED] = "ctx_freed",
    };
    return kind < GM_EV_COUNT && names[kind] ? names[kind] : "?";
}

const char *gm_api_name(unsigned api)
{
    static const char *const names[GM_API_COUNT] = {
        [GM_API_NONE] = "-",
        [GM_API_MEM_ALLOC] = "cuMemAlloc",
        [GM_API_MEM_ALLOC_PITCH] = "cuMemAllocPitch",
        [GM_API_MEM_ALLOC_MANAGED] = "cuMemAllocManaged",
        [GM_API_MEM_FREE] = "cuMemFree",
        [GM_API_MEM_ALLOC_ASYNC] = "cuMemAllocAsync",
        [GM_API_MEM_ALLOC_FROM_POOL] = "cuMemAllocFromPoolAsync",
        [GM_API_MEM_FREE_ASYNC] = "cuMemFreeAsync",
        [GM_API_MEM_CREATE] = "cuMemCreate",
        [GM_API_MEM_RELEASE] = "cuMemRelease",
        [GM_API_MEM_RETAIN] = "cuMemRetainAllocationHandle",
        [GM_API_ARRAY_CREATE] = "cuArrayCreate",
        [GM_API_ARRAY3D_CREATE] = "cuArray3DCreate",
        [GM_API_ARRAY_DESTROY] = "cuArrayDestroy",
        [GM_API_MIPMAP_CREATE] = "cuMipmappedArrayCreate",
        [GM_API_MIPMAP_DESTROY] = "cuMipmappedArrayDestroy",
        [GM_API_MEM_HOST_ALLOC] = "cuMemHostAlloc",
        [GM_API_MEM_ALLOC_HOST] = "cuMemAllocHost",
        [GM_API_MEM_FREE_HOST] = "cuMemFreeHost",
        [GM_API_CTX_CREATE] = "cuCtxCreate",
        [GM_API_PRIMARY_CTX_RETAIN] = "cuDevicePrimaryCtxRetain",
        [GM_API_POOL_TRIM] = "cuMemPoolTrimTo",
        [GM_API_POOL_DESTROY] = "cuMemPoolDestroy",
        [GM_API_CTX_END] = "context end",
    };
    return api < GM_API_COUNT && names[api] ? names[api] : "?";
}

/* The name, or "<what><value>" in buf for a value without one. */
static const char *known_or_number(const char *name, const char *what,
                                   unsigned v, char *buf, size_t cap)
{
    if (name[0] != '?')
        return name;
    snprintf(buf, cap, "%s%u", what, v);
    return buf;
}

const char *gm_api_text(unsigned api, char *buf, size_t cap)
{
    return known_or_number(gm_api_name(api), "api", api, buf, cap);
}

const char *gm_ev_kind_text(unsigned kind, char *buf, size_t cap)
{
    return known_or_number(gm_ev_kind_name(kind), "kind", kind, buf, cap);
}
