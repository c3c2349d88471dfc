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
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

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
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL)
        return 1;
    __typeof__(cuInit) *init = (__typeof__(cuInit) *)dlsym(h, "cuInit");
    __typeof__(cuDeviceGet) *dev =
        (__typeof__(cuDeviceGet) *)dlsym(h, "cuDeviceGet");
    __typeof__(cuDevicePrimaryCtxRetain) *retain =
        (__typeof__(cuDevicePrimaryCtxRetain) *)dlsym(
            h, "cuDevicePrimaryCtxRetain");
    __typeof__(cuCtxSetCurrent) *set =
        (__typeof__(cuCtxSetCurrent) *)dlsym(h, "cuCtxSetCurrent");
    __typeof__(cuMemAlloc_v2) *alloc =
        (__typeof__(cuMemAlloc_v2) *)dlsym(h, "cuMemAlloc_v2");
    __typeof__(cuMemFree_v2) *release =
        (__typeof__(cuMemFree_v2) *)dlsym(h, "cuMemFree_v2");
    CUdevice d;
    CUcontext c;
    if (!init || !dev || !retain || !set || !alloc || !release ||
        init(0) || dev(&d, 0) || retain(&c, d) || set(c))
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = { { 0, 100 }, { 0, 100 } };
    setitimer(ITIMER_REAL, &it, NULL);
    for (;;) {
        CUdeviceptr p;
        if (alloc(&p, 1 << 20) != CUDA_SUCCESS)
            return 1;
        release(p);
    }
}
