/*
 * shim/intercept/hooks_info.h — the device as a limited process sees it,
 * computed by the CUDA queries' module (hooks_info.c) and shared with the
 * NVML view (hooks_nvml.c) so that both report the same figures.
 */
#ifndef GM_HOOKS_INFO_H
#define GM_HOOKS_INFO_H

#include <stdbool.h>
#include <stdint.h>

/* With a limit on CUDA device `dev`, or a group limit there: *t becomes
 * min(limit, group limit, *t) and *f the free memory the process can
 * still get: min(real *f, limit - its charge, what the group admits for
 * it now: gm_grp_view) (+ the static arena's room), at most *t; true.
 * Without either (or a bad ordinal) nothing changes; false. Needs the
 * shim initialised. */
bool gm_view_info(int dev, uint64_t *f, uint64_t *t);

/* The process's own entry in NVML's process lists on `dev`: its charge,
 * less the static arena's free room (never below 0), which its free
 * already counts; so the entry is the view's used when nothing else
 * (the device, the group) holds free lower. */
uint64_t gm_view_own(int dev);

#endif
