/*
 * tests/progs/direct_trace.c — issues the calls of a text trace ("pid
 * t_ns op size ptr rc dt_ns") straight to the driver it is linked
 * against, with its own parser and its own pointer table, and prints the
 * 1-based line number of every allocation refused with out of memory.
 * It shares no code with gpumem replay: the recording tests run it under
 * the shim and compare. Lines whose original rc is neither 0 nor 2 are
 * skipped, as is the free of an allocation that was refused.
 * Usage: direct_trace FILE. Exit 0, or 1 when the setup failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

struct slot { unsigned long long rec, got; int handle, used; };

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    FILE *f = fopen(argv[1], "r");
    CUdevice dev;
    CUcontext ctx;
    if (f == NULL || cuInit(0) || cuDeviceGet(&dev, 0) ||
        cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx))
        return 1;
    size_t cap = 1 << 16, n = 0;
    struct slot *tab = calloc(cap, sizeof *tab);
    char line[512], op[32];
    unsigned long lineno = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned pid;
        unsigned long long t, size, ptr, rc, dt;
        lineno++;
        if (sscanf(line, "%u %llu %31s %llu %llx %llu %llu", &pid, &t, op,
                   &size, &ptr, &rc, &dt) != 7)
            continue;
        if (rc != 0 && rc != 2)
            continue;
        int create = strcmp(op, "create") == 0;
        if (strcmp(op, "alloc") == 0 || create) {
            CUdeviceptr p = 0;
            CUmemGenericAllocationHandle h = 0;
            CUresult r;
            if (create) {
                CUmemAllocationProp pr;
                memset(&pr, 0, sizeof pr);
                pr.type = CU_MEM_ALLOCATION_TYPE_PINNED;
                pr.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
                pr.location.id = dev;
                r = cuMemCreate(&h, size, &pr, 0);
            } else {
                r = cuMemAlloc(&p, size);
            }
            if (r == CUDA_ERROR_OUT_OF_MEMORY) {
                printf("%lu\n", lineno);
                continue;
            }
            if (r != CUDA_SUCCESS || n == cap)
                return 1;
            tab[n++] = (struct slot){ ptr, create ? h : p, create, 1 };
        } else if (strcmp(op, "free") == 0 || strcmp(op, "release") == 0) {
            for (size_t i = 0; i < n; i++)
                if (tab[i].used && tab[i].rec == ptr &&
                    tab[i].handle == (op[0] == 'r')) {
                    tab[i].used = 0;
                    if (tab[i].handle)
                        cuMemRelease(tab[i].got);
                    else
                        cuMemFree(tab[i].got);
                    break;
                }
        }
    }
    return 0;
}
