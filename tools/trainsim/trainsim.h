/*
 * tools/trainsim/trainsim.h — gpumem-trainsim: a synthetic workload that allocates
 * device memory the way a training loop does, through the CUDA driver API.
 *
 * It dlopens libcuda.so.1 (a real driver or the simulated one) and reaches
 * its functions by one of three paths (--via): the dynamic linker's normal
 * symbol binding (direct), dlsym on the library handle (dlsym, as XLA does),
 * or cuGetProcAddress_v2 (gpa, as cudart does).  The pattern per thread:
 * weights and two optimizer-state buffers per layer, once; per step an
 * optional leak, forward activations layer by layer, backward gradients
 * while activations are freed in reverse, gradients freed after the
 * optimizer step, and every --eval-every steps one large evaluation buffer
 * (kept --eval-hold steps); the first --warmup-steps steps also grow a
 * kept cache by --warmup bytes each (a caching allocator filling up).
 *
 * The program is options.c (options and the planned peak), driver.c
 * (loading the driver by one of the three paths), train.c (buffers, the
 * training loop, the worker threads) and main.c (context, banner,
 * summary). This header holds their shared types.
 *
 * Invariants: the tally (in use, peak, counts) counts exactly the bytes
 * this program holds, as charged to it (vmm sizes rounded to granularity);
 * everything (the warm-up cache and a held evaluation buffer included)
 * except --leak buffers is freed before exit; the primary
 * context is retained once and released once.  Exit status: 0 done,
 * 1 setup or driver failure, 2 bad options, 3 an allocation failed.
 * Counters are relaxed atomics: they are statistics, read for progress
 * lines while threads run, and exactly after pthread_join.
 */
#ifndef GM_TRAINSIM_H
#define GM_TRAINSIM_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <dlfcn.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/parse.h"

enum { EX_DONE = 0, EX_SETUP = 1, EX_USAGE = 2, EX_ALLOC = 3 };
enum via { VIA_DIRECT, VIA_DLSYM, VIA_GPA };
enum api { API_ALLOC, API_ASYNC, API_VMM, API_MIXED };
enum kind { KIND_ALLOC, KIND_ASYNC, KIND_VMM };
/* What a buffer is for: parameters (weights, optimizer moments),
 * activations, gradients. */
enum role { ROLE_PARAM, ROLE_ACT, ROLE_GRAD };

#define DRIVER_NAME "libcuda.so.1"
#define GPA_VERSION 13000
#define BYTES_PER_ELEM 4u
#define PLAN_GRANULARITY (2u << 20) /* assumed by --print-peak for vmm */
#define MAX_THREADS 256

struct opts {
    uint64_t steps, layers, hidden, batch, seq, leak, eval_every;
    uint64_t threads, report_every, device;
    uint64_t warmup, warmup_steps; /* cache growth per step, for that many steps */
    uint64_t eval_size;            /* 0: 2*layers*A */
    uint64_t eval_hold;            /* steps the evaluation buffer is kept */
    uint64_t step_ns;              /* sleep per step */
    enum via via;
    enum api api;
    int quiet, print_peak, mark_steps;
    int keep_context;           /* exit without releasing the primary context */
};

/* Byte sizes of one buffer of each role, before any rounding. */
struct sizes {
    uint64_t weight; /* hidden*hidden*4: a weight, an optimizer moment, a gradient */
    uint64_t act;    /* batch*seq*hidden*4: one layer's saved activation */
};

#define DRV_FN(name) __typeof__(&name) name
struct drv {
    void *lib;
    enum via via;
    DRV_FN(cuGetProcAddress_v2);
    DRV_FN(cuGetErrorName);
    DRV_FN(cuInit);
    DRV_FN(cuDeviceGet);
    DRV_FN(cuDevicePrimaryCtxRetain);
    DRV_FN(cuDevicePrimaryCtxRelease_v2);
    DRV_FN(cuCtxSetCurrent);
    DRV_FN(cuMemAlloc_v2);
    DRV_FN(cuMemFree_v2);
    DRV_FN(cuStreamCreate);
    DRV_FN(cuStreamSynchronize);
    DRV_FN(cuStreamDestroy_v2);
    DRV_FN(cuMemAllocAsync);
    DRV_FN(cuMemFreeAsync);
    DRV_FN(cuMemGetAllocationGranularity);
    DRV_FN(cuMemCreate);
    DRV_FN(cuMemRelease);
    DRV_FN(cuMemAddressReserve);
    DRV_FN(cuMemAddressFree);
    DRV_FN(cuMemMap);
    DRV_FN(cuMemUnmap);
    DRV_FN(cuMemSetAccess);
};

struct tally {
    _Atomic uint64_t in_use, peak, allocs, frees, leaked;
};

/* Shared by all workers; read-only after setup except tally and stop. */
struct run {
    const struct opts *o;
    const struct drv *d;
    struct sizes sz;
    CUdevice dev;
    CUcontext ctx;
    size_t gran;
    struct tally tally;
    atomic_int stop;
};

struct buf {
    CUdeviceptr ptr;
    CUmemGenericAllocationHandle handle;
    uint64_t size; /* as charged: rounded for vmm */
    enum kind kind;
    int live;
};

struct worker {
    struct run *run;
    int id;
    uint64_t layers; /* this thread's share of the model */
    uint64_t step;   /* 0 during setup */
    CUstream stream;
    struct buf *params; /* 3 per layer: weight, two optimizer moments */
    struct buf *acts, *grads;
    struct buf eval;
    uint64_t eval_until;      /* the step after which eval is freed */
    struct buf *warm;         /* --warmup buffers (thread 0), kept to exit */
    void (*mark)(void);       /* gpumem_step, when --mark-steps found it */
    int rc;
    pthread_t tid;
};

/* ---- across the files ---------------------------------------------------- */

int gm_ts_sizes_of(const struct opts *o, struct sizes *s)
    __attribute__((visibility("hidden")));
int gm_ts_parse_opts(int argc, char **argv, struct opts *o)
    __attribute__((visibility("hidden")));
enum kind gm_ts_kind_of(enum api api, enum role role)
    __attribute__((visibility("hidden")));
uint64_t gm_ts_charged(enum kind k, uint64_t size, uint64_t gran)
    __attribute__((visibility("hidden")));
uint64_t gm_ts_layers_of(const struct opts *o, uint64_t id)
    __attribute__((visibility("hidden")));
uint64_t gm_ts_plan_peak(const struct opts *o, uint64_t gran)
    __attribute__((visibility("hidden")));
const char *gm_ts_via_name(enum via v)
    __attribute__((visibility("hidden")));
const char *gm_ts_api_name(enum api a)
    __attribute__((visibility("hidden")));
int gm_ts_drv_open(struct drv *d, const struct opts *o)
    __attribute__((visibility("hidden")));
const char *gm_ts_err_name(const struct drv *d, CUresult r)
    __attribute__((visibility("hidden")));
uint64_t gm_ts_get(_Atomic uint64_t *v)
    __attribute__((visibility("hidden")));
int gm_ts_workers_run(struct run *run)
    __attribute__((visibility("hidden")));

#endif
