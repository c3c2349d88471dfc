/*
 * shim/driver/real.c — loading the real driver and resolving the real function
 * table with glibc's own dlsym (our exported dlsym is never used here, so
 * resolution cannot recurse into our wrappers).
 *
 * Invariants: gm_real_load runs once, under the initialisation lock.
 * gm_real_dlsym_get may race on first use; both racers store the same
 * value, so a relaxed atomic pointer is enough.
 */
#include "shim/driver/real.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

struct gm_real_table gm_real;
__thread int gm_depth __attribute__((tls_model("initial-exec")));

static _Atomic(gm_dlsym_fn) real_dlsym;

gm_dlsym_fn gm_real_dlsym_get(void)
{
    gm_dlsym_fn f = atomic_load_explicit(&real_dlsym, memory_order_relaxed);
    if (GM_LIKELY(f != NULL))
        return f;
    /* dlvsym is not wrapped, so this finds glibc's dlsym. */
    void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (p == NULL)
        p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    f = (gm_dlsym_fn)p;
    atomic_store_explicit(&real_dlsym, f, memory_order_relaxed);
    return f;
}

int gm_real_load(const char *path, char *err, size_t errcap)
{
    gm_dlsym_fn rdlsym = gm_real_dlsym_get();
    if (rdlsym == NULL) {
        snprintf(err, errcap, "cannot find glibc's dlsym");
        return -1;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL) {
        const char *why = dlerror();
        snprintf(err, errcap, "cannot load the CUDA driver '%s': %s", path,
                 why ? why : "unknown error");
        return -1;
    }
#define GM_RESOLVE(v, fam, ver, ptsz) \
    gm_real.v = (__typeof__(gm_real.v))rdlsym(h, #v);
    GM_HOOKS(GM_RESOLVE)
#undef GM_RESOLVE
#define GM_RESOLVE_PLAIN(v) gm_real.v = (__typeof__(gm_real.v))rdlsym(h, #v);
    GM_PLAIN(GM_RESOLVE_PLAIN)
#undef GM_RESOLVE_PLAIN
    return 0;
}
