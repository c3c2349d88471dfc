/*
 * shim/intercept/view.h — the device as a limited process sees it, shared
 * by the CUDA queries (hooks_info.c) and the NVML view (hooks_nvml.c) so
 * that both report the same figures.
 */
#ifndef GM_VIEW_H
#define GM_VIEW_H

#include <stdbool.h>
#include <stdint.h>

/* With a limit on CUDA device `dev`: *t becomes min(limit, *t) and *f
 * the free memory the process can still get (no more than the real *f
 * and than *t); true. Without a limit (or a bad ordinal) nothing changes;
 * false. Needs the shim initialised. */
bool gm_view_info(int dev, uint64_t *f, uint64_t *t);

/* NVML wrappers for a name looked up on a library handle (the dlsym
 * override): `real` is what glibc's dlsym found. Returns our wrapper of
 * that name (remembering `real` as the function it calls), or `real`
 * when we do not wrap the name. */
void *gm_nvml_wrapper_for(const char *name, void *real);

#endif
