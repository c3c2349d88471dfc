/*
 * shim/intercept/resolve.c — the two lookup paths besides plain symbol binding:
 * our exported dlsym, and the cuGetProcAddress / cuGetProcAddress_v2
 * wrappers. Both are driven by the table in shim/driver/hooklist.h.
 *
 * dlsym: lookups with RTLD_NEXT or RTLD_DEFAULT, and names that cannot be
 * driver functions, are forwarded to glibc's dlsym as a tail call (a jmp),
 * so glibc still sees the original caller's return address, which it uses
 * to resolve RTLD_NEXT. A handle lookup of a wrapped name returns our
 * wrapper only when the real lookup found the name (NULL stays NULL, so
 * callers fall back as they would without us). Names starting "nv" on a
 * handle go the same way to the NVML view (hooks_nvml.c). No
 * initialisation, no locking, no allocation happens in dlsym.
 *
 * cuGetProcAddress: the real one is called with the same name, version and
 * flags and its status is kept. If the pointer it returns is one of the
 * variants we resolved by name, the program gets our wrapper of exactly
 * that variant. If the driver returns a pointer we did not resolve (a
 * driver-internal entry), the variant is chosen the way the driver
 * chooses: the highest min_version <= version, and the _ptsz variant when
 * the per-thread-default-stream flag is set; the returned pointer then
 * becomes that variant's real function if we had none.
 */
#include "shim/intercept/lifecycle.h"
#include "shim/intercept/resolve.h"
#include "shim/intercept/hooks_nvml.h"

#include <dlfcn.h>
#include <string.h>

#include "shim/driver/real.h"
#include "shim/account/state.h"

struct hook {
    const char *variant;
    const char *family;
    int min_version;
    int ptsz;
    void *wrapper;
    void **real;
};

static const struct hook hooks[] = {
#define GM_HOOK_ROW(v, fam, ver, pt) \
    { #v, #fam, ver, pt, (void *)&v, (void **)&gm_real.v },
    GM_HOOKS(GM_HOOK_ROW)
#undef GM_HOOK_ROW
};
#define NHOOKS (sizeof hooks / sizeof hooks[0])

void *gm_wrapper_for_symbol(const char *name)
{
    if (name == NULL || name[0] != 'c' || name[1] != 'u')
        return NULL;
    for (size_t i = 0; i < NHOOKS; i++)
        if (strcmp(hooks[i].variant, name) == 0)
            return hooks[i].wrapper;
    return NULL;
}

void *gm_wrapper_for_proc(const char *name, void *real, int version,
                          uint64_t flags)
{
    if (real == NULL || name == NULL || name[0] != 'c' || name[1] != 'u')
        return real;
    const struct hook *exact = NULL, *plain = NULL;
    int want_ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    for (size_t i = 0; i < NHOOKS; i++) {
        const struct hook *h = &hooks[i];
        if (strcmp(h->family, name) != 0 && strcmp(h->variant, name) != 0)
            continue;
        void *mine = __atomic_load_n(h->real, __ATOMIC_RELAXED);
        if (mine == real)
            return h->wrapper;
        if (h->min_version > version)
            continue;
        if (exact == NULL && h->ptsz == want_ptsz)
            exact = h;
        if (plain == NULL && !h->ptsz)
            plain = h;
    }
    /* A family without a _ptsz variant answers the flag with its plain one. */
    const struct hook *pick = exact ? exact : plain;
    if (pick == NULL)
        return real; /* a family we wrap, but no variant fits: leave it */
    void *expected = NULL;
    __atomic_compare_exchange_n(pick->real, &expected, real, 0,
                                __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    if (__atomic_load_n(pick->real, __ATOMIC_RELAXED) != real)
        return real; /* we already call another function for this variant */
    return pick->wrapper;
}

/* ---- dlsym ---------------------------------------------------------- */

__attribute__((noinline)) static void *dlsym_handle_lookup(void *handle,
                                                      const char *name)
{
    void *r = gm_real_dlsym_get()(handle, name);
    if (r == NULL)
        return NULL;
    void *w = gm_wrapper_for_symbol(name);
    if (w == NULL)
        return r;
    /* A program may dlopen the driver by another path than ours: make sure
     * the variant has a real function even before our initialisation. */
    void **slot = NULL;
    for (size_t i = 0; i < NHOOKS; i++)
        if (hooks[i].wrapper == w)
            slot = hooks[i].real;
    void *expected = NULL;
    if (slot)
        __atomic_compare_exchange_n(slot, &expected, r, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
    return w;
}

__attribute__((noinline)) static void *dlsym_nvml_lookup(void *handle,
                                                    const char *name)
{
    return gm_nvml_wrapper_for(name, gm_real_dlsym_get()(handle, name));
}

GM_EXPORT void *dlsym(void *restrict handle, const char *restrict name)
{
    const char *n = name;
    __asm__("" : "+r"(n)); /* glibc declares it nonnull; callers may not */
    if (handle == RTLD_NEXT || handle == RTLD_DEFAULT || n == NULL)
        return gm_real_dlsym_get()(handle, name); /* tail call: a jmp */
    if (n[0] == 'c' && n[1] == 'u')
        return dlsym_handle_lookup(handle, name);
    if (n[0] == 'n' && n[1] == 'v')
        return dlsym_nvml_lookup(handle, name);
    return gm_real_dlsym_get()(handle, name); /* tail call: a jmp */
}

/* ---- cuGetProcAddress ----------------------------------------------- */

GM_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(
    const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
    CUdriverProcAddressQueryResult *symbolStatus)
{
    (void)gm_active(); /* initialise at first CUDA use */
    if (gm_real.cuGetProcAddress_v2 == NULL)
        return CUDA_ERROR_NOT_FOUND;
    gm_depth++;
    CUresult rc = gm_real.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags,
                                             symbolStatus);
    gm_depth--;
    if (rc == CUDA_SUCCESS && pfn != NULL && *pfn != NULL)
        *pfn = gm_wrapper_for_proc(symbol, *pfn, cudaVersion, flags);
    return rc;
}

GM_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn,
                                            int cudaVersion, cuuint64_t flags)
{
    (void)gm_active();
    if (gm_real.cuGetProcAddress == NULL)
        return CUDA_ERROR_NOT_FOUND;
    gm_depth++;
    CUresult rc = gm_real.cuGetProcAddress(symbol, pfn, cudaVersion, flags);
    gm_depth--;
    if (rc == CUDA_SUCCESS && pfn != NULL && *pfn != NULL)
        *pfn = gm_wrapper_for_proc(symbol, *pfn, cudaVersion, flags);
    return rc;
}
