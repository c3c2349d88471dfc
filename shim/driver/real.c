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
#include <stdbool.h>
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

/* Resolve every slot from handle h; with only_missing, leave the slots
 * that dlsym or cuGetProcAddress already filled (compare-and-swap from
 * NULL: those lookups may run concurrently and store the same kind of
 * value, see resolve.c). */
static void fill(gm_dlsym_fn rdlsym, void *h, bool only_missing)
{
#define GM_FILL(v)                                                          \
    do {                                                                    \
        __typeof__(gm_real.v) f_ = (__typeof__(gm_real.v))rdlsym(h, #v);    \
        __typeof__(gm_real.v) none_ = NULL;                                 \
        if (!only_missing)                                                  \
            __atomic_store_n(&gm_real.v, f_, __ATOMIC_RELAXED);             \
        else if (f_ != NULL)                                                \
            __atomic_compare_exchange_n(&gm_real.v, &none_, f_, 0,          \
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED);\
    } while (0);
#define GM_FILL_HOOK(v, fam, ver, ptsz) GM_FILL(v)
    GM_HOOKS(GM_FILL_HOOK)
    GM_PLAIN(GM_FILL)
#undef GM_FILL_HOOK
#undef GM_FILL
}

/* Some function of the driver this process already reaches: a slot that
 * dlsym on the program's own handle or cuGetProcAddress filled, else a
 * driver linked into the program (found past us with RTLD_NEXT). */
static void *reached_function(gm_dlsym_fn rdlsym)
{
    void *f = NULL;
#define GM_FIRST(v, fam, ver, ptsz)                                         \
    if (f == NULL)                                                          \
        f = (void *)__atomic_load_n(&gm_real.v, __ATOMIC_RELAXED);
    GM_HOOKS(GM_FIRST)
#undef GM_FIRST
    if (f == NULL)
        f = rdlsym(RTLD_NEXT, "cuInit");
    return f;
}

int gm_real_adopt(char *found, size_t cap)
{
    gm_dlsym_fn rdlsym = gm_real_dlsym_get();
    if (rdlsym == NULL)
        return -1;
    void *f = reached_function(rdlsym);
    Dl_info di;
    if (f == NULL || dladdr(f, &di) == 0 || di.dli_fname == NULL)
        return -1;
    void *h = dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    if (h == NULL)
        return -1;
    fill(rdlsym, h, true);
    snprintf(found, cap, "%s", di.dli_fname);
    return 0;
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
    /* A library that loads but is no driver (no cuInit) would leave every
     * slot NULL and the first call would jump to address 0. */
    if (rdlsym(h, "cuInit") == NULL) {
        snprintf(err, errcap, "'%s' is not a CUDA driver: it has no cuInit",
                 path);
        dlclose(h);
        return -1;
    }
    fill(rdlsym, h, false);
    return 0;
}
