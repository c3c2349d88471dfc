/*
 * tests/progs/fdclose.c — a program that, as a daemon does, closes every
 * descriptor above stderr after setting up the driver, then opens files
 * of its own (which get the lowest numbers, the shim's among them) and
 * goes on allocating and freeing.
 *
 *   fdclose FILE N       N allocations and frees after the close; each of
 *                        FILE.0 .. FILE.63 holds "mine\n" alone at exit. Exit 1 when the
 *                        driver cannot be set up or refuses.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/progs/drv.h"

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int n = atoi(argv[2]);
    struct gm_prog_drv drv;
    if (gm_prog_drv_open("fdclose", &drv) != 0)
        return 1;
    CUdeviceptr p;
    if (drv.alloc(&p, 1 << 20) != CUDA_SUCCESS)
        return 1;
    drv.free(p);
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    int fd[64];
    for (int k = 0; k < 64; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s.%d", argv[1], k);
        fd[k] = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd[k] < 0)
            return 1;
    }
    for (int i = 0; i < n; i++) {
        if (drv.alloc(&p, 1 << 20) != CUDA_SUCCESS)
            return 1;
        drv.free(p);
    }
    for (int k = 0; k < 64; k++)
        if (write(fd[k], "mine\n", 5) != 5)
            return 1;
    return 0;
}
