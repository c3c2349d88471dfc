/*
 * tests/progs/probe/probe_a.c — first of two libraries defining
 * gm_probe_value; gm_probe_next asks dlsym(RTLD_NEXT) for the next
 * definition, which must be probe_b's whatever is preloaded.
 */
#include <dlfcn.h>

int gm_probe_value(void);
void *gm_probe_next(void);

__attribute__((visibility("default"))) int gm_probe_value(void)
{
    return 1;
}

__attribute__((visibility("default"))) void *gm_probe_next(void)
{
    void *p = dlsym(RTLD_NEXT, "gm_probe_value");
    __asm__("" : "+r"(p)); /* keep this a real call: the caller is us */
    return p;
}
