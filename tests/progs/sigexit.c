/*
 * tests/progs/sigexit.c — a program that ends by exit() from a signal
 * handler while its one thread allocates and frees device memory in a
 * loop, as a training script's SIGINT handler does: the signal lands at a
 * random point of an allocation or a free, the shim's telemetry update
 * included, and the shim's exit handlers then run on that same thread.
 *
 *   sigexit SIGNALS      exit(0) from the handler at the SIGNALSth
 *                        SIGALRM (one every 100 µs); exit 1 when the
 *                        driver cannot be set up or refuses.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "tests/progs/drv.h"

static volatile sig_atomic_t left;

static void on_alarm(int sig)
{
    (void)sig;
    if (--left <= 0)
        exit(0); /* not async-signal-safe, and common */
}

int main(int argc, char **argv)
{
    left = argc > 1 ? atoi(argv[1]) : 50;
    struct gm_prog_drv drv;
    if (gm_prog_drv_open("sigexit", &drv) != 0)
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = { { 0, 100 }, { 0, 100 } };
    setitimer(ITIMER_REAL, &it, NULL);
    for (;;) {
        CUdeviceptr p;
        if (drv.alloc(&p, 1 << 20) != CUDA_SUCCESS)
            return 1;
        drv.free(p);
    }
}
