/*
 * shim/intercept/hooks_nvml.h — what the dlsym override needs of the NVML
 * view (hooks_nvml.c; the wrappers themselves are exported under NVML's
 * names).
 */
#ifndef GM_HOOKS_NVML_H
#define GM_HOOKS_NVML_H

/* For a name looked up on a library handle: `real` is what glibc's dlsym
 * found. Returns our wrapper of that name (remembering `real` as the
 * function it calls), or `real` when we do not wrap the name (or already
 * call another function for it). */
void *gm_nvml_wrapper_for(const char *name, void *real);

#endif
