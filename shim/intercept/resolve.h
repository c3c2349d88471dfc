/*
 * shim/intercept/resolve.h — mapping driver function names and pointers to our
 * wrappers, for the dlsym override and the cuGetProcAddress wrappers.
 */
#ifndef GM_RESOLVE_H
#define GM_RESOLVE_H

#include <stdint.h>

/* Our wrapper for exported variant name `name` (e.g. "cuMemAlloc_v2"),
 * or NULL when we do not wrap it. */
void *gm_wrapper_for_symbol(const char *name);

/* Given what the real cuGetProcAddress returned for (family `name`,
 * version, flags), the pointer to hand to the program: our wrapper of the
 * same variant, or `real` unchanged when we do not wrap it. */
void *gm_wrapper_for_proc(const char *name, void *real, int version,
                          uint64_t flags);

#endif
