/*
 * tests/progs/ctorcuda.c — linked against a library that allocated 100 MiB
 * in its constructor; prints what the (virtualised) cuMemGetInfo says
 * afterwards: "rc R free F total T".
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

extern int gm_probe_ctor_rc;

int main(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    __typeof__(cuMemGetInfo_v2) *info =
        h ? (__typeof__(cuMemGetInfo_v2) *)dlsym(h, "cuMemGetInfo_v2") : NULL;
    size_t f = 0, t = 0;
    if (info == NULL || info(&f, &t) != CUDA_SUCCESS)
        return 1;
    printf("rc %d free %zu total %zu\n", gm_probe_ctor_rc, f, t);
    return 0;
}
