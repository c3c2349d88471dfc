/*
 * shim/driver/real.h — the real driver: where it is loaded from, and the table of
 * real function pointers, one per wrapped variant and per plain function
 * the shim calls itself.
 *
 * Invariants: gm_real is filled once by gm_real_load() during
 * initialisation (before the state is published as ready) and read-only
 * afterwards, except that cuGetProcAddress may fill a slot that dlsym could
 * not (atomically, pointer-sized store). A NULL slot means the driver lacks
 * that function: wrappers then return CUDA_ERROR_NOT_FOUND.
 */
#ifndef GM_REAL_H
#define GM_REAL_H

#include "shim/driver/cuda_api.h"
#include "shim/driver/hooklist.h"

struct gm_real_table {
#define GM_REAL_FIELD(v, fam, ver, ptsz) __typeof__(v) *v;
    GM_HOOKS(GM_REAL_FIELD)
#undef GM_REAL_FIELD
#define GM_PLAIN_FIELD(v) __typeof__(v) *v;
    GM_PLAIN(GM_PLAIN_FIELD)
#undef GM_PLAIN_FIELD
};

extern struct gm_real_table gm_real __attribute__((visibility("hidden")));

/* The nesting guard: a thread-local depth counter with the initial-exec
 * TLS model (no malloc, no lazy TLS allocation). Our own code raises it
 * around every call into the real driver; a wrapper entered while it is
 * above 0 (the driver or our own code calling back into an exported
 * symbol) passes straight to the real function and accounts nothing. */
extern __thread int gm_depth __attribute__((tls_model("initial-exec")));

/* glibc's dlsym (never ours). Resolved on first use; safe before init. */
typedef void *(*gm_dlsym_fn)(void *, const char *);
gm_dlsym_fn gm_real_dlsym_get(void);

/* dlopen the driver named by `path` and fill gm_real. Returns 0, or -1
 * with a message in err. */
int gm_real_load(const char *path, char *err, size_t errcap);
/* When that failed: fill the slots still empty from the driver this
 * process already reaches by itself (its own dlopen handle, a function
 * cuGetProcAddress returned, or a driver linked into the program). Returns
 * 0 with the driver's file name in `found`, -1 when no driver is loaded. */
int gm_real_adopt(char *found, size_t cap);

#endif
