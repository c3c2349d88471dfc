/*
 * tools/trainsim/trainsim.c — gpumem-trainsim: a synthetic workload that allocates
 * device memory the way a training loop does, through the CUDA driver API.
 *
 * It dlopens libcuda.so.1 (a real driver or the simulated one) and reaches
 * its functions by one of three paths (--via): the dynamic linker's normal
 * symbol binding (direct), dlsym on the library handle (dlsym, as XLA does),
 * or cuGetProcAddress_v2 (gpa, as cudart does).  The pattern per thread:
 * weights and two optimizer-state buffers per layer, once; per step an
 * optional leak, forward activations layer by layer, backward gradients
 * while activations are freed in reverse, gradients freed after the
 * optimizer step, and every --eval-every steps one large evaluation buffer.
 *
 * Invariants: the tally (in use, peak, counts) counts exactly the bytes
 * this program holds, as charged to it (vmm sizes rounded to granularity);
 * everything except --leak buffers is freed before exit; the primary
 * context is retained once and released once.  Exit status: 0 done,
 * 1 setup or driver failure, 2 bad options, 3 an allocation failed.
 * Counters are relaxed atomics: they are statistics, read for progress
 * lines while threads run, and exactly after pthread_join.
 */
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

#include "policy/parse.h"

enum { EX_DONE = 0, EX_SETUP = 1, EX_USAGE = 2, EX_ALLOC = 3 };
enum via { VIA_DIRECT, VIA_DLSYM, VIA_GPA };
enum api { API_ALLOC, API_ASYNC, API_VMM, API_MIXED };
enum kind { KIND_ALLOC, KIND_ASYNC, KIND_VMM };

#define DRIVER_NAME "libcuda.so.1"
#define GPA_VERSION 13000
#define BYTES_PER_ELEM 4u
#define PLAN_GRANULARITY (2u << 20) /* assumed by --print-peak for vmm */
#define MAX_THREADS 256

struct opts {
    uint64_t steps, layers, hidden, batch, seq, leak, eval_every;
    uint64_t threads, report_every, device;
    enum via via;
    enum api api;
    int quiet, print_peak;
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
    int rc;
    pthread_t tid;
};

/* ---- options ------------------------------------------------------------ */

static const char usage_line[] =
    "usage: gpumem-trainsim [--steps N] [--layers N] [--hidden N] [--batch N]\n"
    "         [--seq N] [--eval-every N] [--leak BYTES] [--via direct|dlsym|gpa]\n"
    "         [--api alloc|async|vmm|mixed] [--threads N] [--device N]\n"
    "         [--report-every N] [--quiet] [--print-peak] [--help]\n";

static const char help_text[] =
    "NAME\n"
    "    gpumem-trainsim - synthetic training-like GPU memory workload\n"
    "\n"
    "SYNOPSIS\n"
    "    gpumem-trainsim [OPTION]...\n"
    "\n"
    "DESCRIPTION\n"
    "    Loads the CUDA driver (libcuda.so.1) at run time and allocates device\n"
    "    memory like a training loop: per layer a weight and two optimizer-state\n"
    "    buffers once; per step forward activations layer by layer, gradients\n"
    "    during backward while activations are freed in reverse, gradients freed\n"
    "    after the optimizer step, and a periodic evaluation buffer. Nothing is\n"
    "    computed. It runs on a real GPU or on the simulated driver\n"
    "    (LD_LIBRARY_PATH=build/sim) unchanged.\n"
    "\n"
    "    Buffer sizes (bytes): weight, moment, gradient W = hidden*hidden*4;\n"
    "    activation A = batch*seq*hidden*4; evaluation E = 2*layers*A.\n"
    "\n"
    "OPTIONS\n"
    "    --steps N          training steps (default 200)\n"
    "    --layers N         layers (default 12)\n"
    "    --hidden N         hidden size (default 1024)\n"
    "    --batch N          batch size (default 32)\n"
    "    --seq N            sequence length (default 64)\n"
    "    --eval-every N     evaluation spike every N steps; 0 = never (default 50)\n"
    "    --leak BYTES       allocate BYTES per step and never free them (default 0);\n"
    "                       sizes like 1M, 1.5G (binary units)\n"
    "    --via PATH         how driver functions are found (default gpa):\n"
    "                         direct  symbols bound by the dynamic linker\n"
    "                                 (dlsym(RTLD_DEFAULT)), as a linked program\n"
    "                         dlsym   dlsym on the libcuda handle, as XLA/JAX\n"
    "                         gpa     cuGetProcAddress_v2, as the CUDA runtime\n"
    "    --api API          allocation calls (default alloc):\n"
    "                         alloc   cuMemAlloc_v2 / cuMemFree_v2\n"
    "                         async   cuMemAllocAsync / cuMemFreeAsync on a stream\n"
    "                         vmm     cuMemCreate + cuMemAddressReserve + cuMemMap,\n"
    "                                 sizes rounded up to the granularity\n"
    "                         mixed   weights vmm, activations alloc, gradients async\n"
    "    --threads N        N threads, each training its share of the layers in\n"
    "                       the shared primary context (default 1)\n"
    "    --device N         CUDA device ordinal (default 0)\n"
    "    --report-every N   progress line every N steps; 0 = none (default 50)\n"
    "    --quiet            no banner and no progress lines\n"
    "    --print-peak       print the planned peak in bytes and exit; exact for\n"
    "                       one thread with alloc or async, an upper bound with\n"
    "                       threads, assumes a 2 MiB granularity for vmm\n"
    "    --help             this text\n"
    "\n"
    "OUTPUT\n"
    "    trainsim: step 50/200  in use 1.2 GiB  peak 1.4 GiB\n"
    "    trainsim: done: 200 steps, 4812 allocs, 4812 frees, peak ... (N bytes), leaked 0 B\n"
    "    trainsim: step 17: cuMemAlloc_v2 of 256.0 MiB failed: CUDA_ERROR_OUT_OF_MEMORY (2)\n"
    "    In use and peak are the program's own tally of what it holds.\n"
    "\n"
    "EXIT STATUS\n"
    "    0 done; 1 the driver could not be loaded or set up; 2 bad options;\n"
    "    3 an allocation failed (step 0 is the setup of weights and optimizer\n"
    "    state).\n"
    "\n"
    "EXAMPLES\n"
    "    LD_LIBRARY_PATH=build/sim build/gpumem-trainsim --steps 100 --leak 1M\n"
    "    LD_PRELOAD=build/libgpumem.so GPUMEM_LIMIT=2G build/gpumem-trainsim\n";

__attribute__((format(printf, 1, 2)))
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("trainsim: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fputs(usage_line, stderr);
    fputs("Try 'gpumem-trainsim --help' for more.\n", stderr);
    return EX_USAGE;
}

static int parse_count(const char *opt, const char *val, uint64_t lo, uint64_t hi,
                       uint64_t *out)
{
    uint64_t v;
    if (gm_parse_uint(val, &v) == 0 && v >= lo && v <= hi) {
        *out = v;
        return 0;
    }
    char what[160];
    snprintf(what, sizeof what, "--%s '%s' is not an integer from %" PRIu64 " to %" PRIu64,
             opt, val, lo, hi);
    return usage_error("%s", what);
}

static int parse_via(const char *val, enum via *out)
{
    static const char *const names[] = { "direct", "dlsym", "gpa" };
    for (int i = 0; i < 3; i++)
        if (strcmp(val, names[i]) == 0) {
            *out = (enum via)i;
            return 0;
        }
    return usage_error("--via '%s' is not one of direct, dlsym, gpa", val);
}

static int parse_api(const char *val, enum api *out)
{
    static const char *const names[] = { "alloc", "async", "vmm", "mixed" };
    for (int i = 0; i < 4; i++)
        if (strcmp(val, names[i]) == 0) {
            *out = (enum api)i;
            return 0;
        }
    return usage_error("--api '%s' is not one of alloc, async, vmm, mixed", val);
}

static void opts_default(struct opts *o)
{
    memset(o, 0, sizeof *o);
    o->steps = 200;
    o->layers = 12;
    o->hidden = 1024;
    o->batch = 32;
    o->seq = 64;
    o->eval_every = 50;
    o->threads = 1;
    o->report_every = 50;
    o->via = VIA_GPA;
    o->api = API_ALLOC;
}

enum {
    OPT_STEPS = 256, OPT_LAYERS, OPT_HIDDEN, OPT_BATCH, OPT_SEQ, OPT_EVAL, OPT_LEAK,
    OPT_VIA, OPT_API, OPT_THREADS, OPT_DEVICE, OPT_REPORT, OPT_QUIET, OPT_PEAK, OPT_HELP
};

static const struct option long_opts[] = {
    { "steps", required_argument, NULL, OPT_STEPS },
    { "layers", required_argument, NULL, OPT_LAYERS },
    { "hidden", required_argument, NULL, OPT_HIDDEN },
    { "batch", required_argument, NULL, OPT_BATCH },
    { "seq", required_argument, NULL, OPT_SEQ },
    { "eval-every", required_argument, NULL, OPT_EVAL },
    { "leak", required_argument, NULL, OPT_LEAK },
    { "via", required_argument, NULL, OPT_VIA },
    { "api", required_argument, NULL, OPT_API },
    { "threads", required_argument, NULL, OPT_THREADS },
    { "device", required_argument, NULL, OPT_DEVICE },
    { "report-every", required_argument, NULL, OPT_REPORT },
    { "quiet", no_argument, NULL, OPT_QUIET },
    { "print-peak", no_argument, NULL, OPT_PEAK },
    { "help", no_argument, NULL, OPT_HELP },
    { NULL, 0, NULL, 0 },
};

/* One option; returns 0, EX_USAGE, or -1 for --help. */
static int apply_opt(struct opts *o, int c, const char *v)
{
    switch (c) {
    case OPT_STEPS: return parse_count("steps", v, 1, 1000000000, &o->steps);
    case OPT_LAYERS: return parse_count("layers", v, 1, 65536, &o->layers);
    case OPT_HIDDEN: return parse_count("hidden", v, 1, 1u << 20, &o->hidden);
    case OPT_BATCH: return parse_count("batch", v, 1, 1u << 20, &o->batch);
    case OPT_SEQ: return parse_count("seq", v, 1, 1u << 20, &o->seq);
    case OPT_EVAL: return parse_count("eval-every", v, 0, UINT32_MAX, &o->eval_every);
    case OPT_THREADS: return parse_count("threads", v, 1, MAX_THREADS, &o->threads);
    case OPT_DEVICE: return parse_count("device", v, 0, 1023, &o->device);
    case OPT_REPORT: return parse_count("report-every", v, 0, UINT32_MAX, &o->report_every);
    case OPT_VIA: return parse_via(v, &o->via);
    case OPT_API: return parse_api(v, &o->api);
    case OPT_QUIET: o->quiet = 1; return 0;
    case OPT_PEAK: o->print_peak = 1; return 0;
    case OPT_HELP: return -1;
    case OPT_LEAK:
        if (gm_parse_size(v, &o->leak) == 0)
            return 0;
        return usage_error("--leak '%s' is not a size; use bytes or a number with "
                           "K/M/G/T (binary units)", v);
    default: return EX_USAGE;
    }
}

static int mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

static int sizes_of(const struct opts *o, struct sizes *s)
{
    uint64_t hh, bs, e;
    if (!mul_ok(o->hidden, o->hidden, &hh) || !mul_ok(hh, BYTES_PER_ELEM, &s->weight) ||
        !mul_ok(o->batch, o->seq, &bs) || !mul_ok(bs, o->hidden, &bs) ||
        !mul_ok(bs, BYTES_PER_ELEM, &s->act) || !mul_ok(s->act, 2 * o->layers, &e) ||
        !mul_ok(s->weight, 4 * o->layers, &hh) || e > SIZE_MAX / 4 || hh > SIZE_MAX / 4)
        return -1;
    return 0;
}

/* Parses argv into *o; returns -1 to go on, else the exit status. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
    opts_default(o);
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
        if (c == '?' || c == ':')
            return usage_error("unknown option, or option without its value: '%s'",
                               argv[optind - 1 < argc ? optind - 1 : argc - 1]);
        int rc = apply_opt(o, c, optarg ? optarg : "");
        if (rc == -1) {
            fputs(help_text, stdout);
            return EX_DONE;
        }
        if (rc != 0)
            return rc;
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    if (o->threads > o->layers)
        return usage_error("--threads must not exceed --layers");
    struct sizes s;
    uint64_t leaks;
    if (!mul_ok(o->steps, o->leak, &leaks) || leaks > SIZE_MAX / 4)
        return usage_error("--leak times --steps is too large to represent");
    if (sizes_of(o, &s) != 0)
        return usage_error("--layers, --hidden, --batch and --seq give buffers too "
                           "large to represent");
    return -1;
}

/* ---- roles, kinds and the planned peak ---------------------------------- */

enum role { ROLE_PARAM, ROLE_ACT, ROLE_GRAD };

static enum kind kind_of(enum api api, enum role role)
{
    switch (api) {
    case API_ASYNC: return KIND_ASYNC;
    case API_VMM: return KIND_VMM;
    case API_MIXED:
        return role == ROLE_PARAM ? KIND_VMM : role == ROLE_GRAD ? KIND_ASYNC : KIND_ALLOC;
    default: return KIND_ALLOC;
    }
}

static uint64_t round_up(uint64_t v, uint64_t g)
{
    return g ? (v + g - 1) / g * g : v;
}

static uint64_t charged(enum kind k, uint64_t size, uint64_t gran)
{
    return k == KIND_VMM ? round_up(size, gran) : size;
}

static uint64_t layers_of(const struct opts *o, uint64_t id)
{
    return o->layers / o->threads + (id < o->layers % o->threads ? 1 : 0);
}

/*
 * Peak of what the program holds: per thread 3*L_t*Wp persistent, plus the
 * step peak max(L_t*A + G, A + L_t*G) (all activations and the first
 * gradient, or the last activation and all gradients), or the eval buffer;
 * plus the leaks allocated up to the step in question (first thread only).
 */
static uint64_t plan_peak(const struct opts *o, uint64_t gran)
{
    struct sizes s;
    sizes_of(o, &s);
    uint64_t wp = charged(kind_of(o->api, ROLE_PARAM), s.weight, gran);
    uint64_t g = charged(kind_of(o->api, ROLE_GRAD), s.weight, gran);
    uint64_t a = charged(kind_of(o->api, ROLE_ACT), s.act, gran);
    uint64_t leak = o->leak ? charged(kind_of(o->api, ROLE_ACT), o->leak, gran) : 0;
    uint64_t last_eval = o->eval_every ? o->steps / o->eval_every * o->eval_every : 0;
    uint64_t persistent = 0, train = 0, eval = 0;
    for (uint64_t t = 0; t < o->threads; t++) {
        uint64_t lt = layers_of(o, t);
        persistent += 3 * lt * wp;
        uint64_t top = lt * a + g, bottom = a + lt * g;
        train += top > bottom ? top : bottom;
        eval += charged(kind_of(o->api, ROLE_ACT), 2 * lt * s.act, gran);
    }
    uint64_t peak_train = o->steps * leak + train;
    uint64_t peak_eval = last_eval ? last_eval * leak + eval : 0;
    return persistent + (peak_train > peak_eval ? peak_train : peak_eval);
}

/* ---- loading the driver ------------------------------------------------- */

static const char *via_name(enum via v)
{
    return v == VIA_DIRECT ? "direct" : v == VIA_DLSYM ? "dlsym" : "gpa";
}

static const char *api_name(enum api a)
{
    static const char *const names[] = { "alloc", "async", "vmm", "mixed" };
    return names[a];
}

/* One function by the chosen path: base name for cuGetProcAddress, the
 * exported symbol otherwise (alt: an equivalent older export, or NULL).
 * gpa asks every name at 13000, so no function whose 13000 variant changed
 * its signature (cuCtxSynchronize, cuCtxGetDevice) is used here. */
static void *find_fn(const struct drv *d, const char *base, const char *sym, const char *alt)
{
    void *p = NULL;
    if (d->via == VIA_GPA) {
        CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        if (d->cuGetProcAddress_v2(base, &p, GPA_VERSION, 0, &st) != CUDA_SUCCESS ||
            st != CU_GET_PROC_ADDRESS_SUCCESS)
            return NULL;
        return p;
    }
    void *h = d->via == VIA_DLSYM ? d->lib : RTLD_DEFAULT;
    p = dlsym(h, sym);
    if (!p && alt)
        p = dlsym(h, alt);
    return p;
}

static void *need_fn(const struct drv *d, const char *base, const char *sym,
                     const char *alt, int required, int *missing)
{
    void *p = find_fn(d, base, sym, alt);
    if (!p && required) {
        fprintf(stderr, "trainsim: %s lacks %s (looked up via %s)\n", DRIVER_NAME,
                d->via == VIA_GPA ? base : sym, via_name(d->via));
        (*missing)++;
    }
    return p;
}

#define BIND(d, field, base, alt, req, missing) \
    ((d)->field = (__typeof__((d)->field))need_fn((d), (base), #field, (alt), (req), (missing)))

static int bind_all(struct drv *d, enum api api)
{
    int m = 0;
    int async = api == API_ASYNC || api == API_MIXED;
    int vmm = api == API_VMM || api == API_MIXED;
    BIND(d, cuGetErrorName, "cuGetErrorName", NULL, 1, &m);
    BIND(d, cuInit, "cuInit", NULL, 1, &m);
    BIND(d, cuDeviceGet, "cuDeviceGet", NULL, 1, &m);
    BIND(d, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL, 1, &m);
    BIND(d, cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease",
         "cuDevicePrimaryCtxRelease", 1, &m);
    BIND(d, cuCtxSetCurrent, "cuCtxSetCurrent", NULL, 1, &m);
    BIND(d, cuMemAlloc_v2, "cuMemAlloc", NULL, 1, &m);
    BIND(d, cuMemFree_v2, "cuMemFree", NULL, 1, &m);
    BIND(d, cuStreamCreate, "cuStreamCreate", NULL, async, &m);
    BIND(d, cuStreamSynchronize, "cuStreamSynchronize", NULL, async, &m);
    BIND(d, cuStreamDestroy_v2, "cuStreamDestroy", "cuStreamDestroy", async, &m);
    BIND(d, cuMemAllocAsync, "cuMemAllocAsync", NULL, async, &m);
    BIND(d, cuMemFreeAsync, "cuMemFreeAsync", NULL, async, &m);
    BIND(d, cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity", NULL, vmm, &m);
    BIND(d, cuMemCreate, "cuMemCreate", NULL, vmm, &m);
    BIND(d, cuMemRelease, "cuMemRelease", NULL, vmm, &m);
    BIND(d, cuMemAddressReserve, "cuMemAddressReserve", NULL, vmm, &m);
    BIND(d, cuMemAddressFree, "cuMemAddressFree", NULL, vmm, &m);
    BIND(d, cuMemMap, "cuMemMap", NULL, vmm, &m);
    BIND(d, cuMemUnmap, "cuMemUnmap", NULL, vmm, &m);
    BIND(d, cuMemSetAccess, "cuMemSetAccess", NULL, vmm, &m);
    return m ? -1 : 0;
}

/* cudart's sequence: dlsym cuGetProcAddress_v2 only, then fetch
 * "cuGetProcAddress" at 12000 through it and use that from then on. */
static int bind_gpa(struct drv *d)
{
    void *p = dlsym(d->lib, "cuGetProcAddress_v2");
    if (!p) {
        fprintf(stderr, "trainsim: %s lacks cuGetProcAddress_v2 (needed by --via gpa)\n",
                DRIVER_NAME);
        return -1;
    }
    d->cuGetProcAddress_v2 = (__typeof__(d->cuGetProcAddress_v2))p;
    void *again = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = d->cuGetProcAddress_v2("cuGetProcAddress", &again, 12000, 0, &st);
    if (r != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS || !again) {
        fprintf(stderr, "trainsim: cuGetProcAddress_v2(\"cuGetProcAddress\", 12000) "
                        "failed (result %d, status %d)\n", (int)r, (int)st);
        return -1;
    }
    d->cuGetProcAddress_v2 = (__typeof__(d->cuGetProcAddress_v2))again;
    return 0;
}

static int drv_open(struct drv *d, const struct opts *o)
{
    memset(d, 0, sizeof *d);
    d->via = o->via;
    int mode = RTLD_NOW | (o->via == VIA_DIRECT ? RTLD_GLOBAL : RTLD_LOCAL);
    d->lib = dlopen(DRIVER_NAME, mode);
    if (!d->lib) {
        const char *why = dlerror();
        fprintf(stderr, "trainsim: cannot load %s: %s\n"
                        "trainsim: install the NVIDIA driver, or use the simulated one: "
                        "LD_LIBRARY_PATH=build/sim\n", DRIVER_NAME, why ? why : "?");
        return -1;
    }
    if (o->via == VIA_GPA && bind_gpa(d) != 0)
        return -1;
    return bind_all(d, o->api);
}

static const char *err_name(const struct drv *d, CUresult r)
{
    const char *s = NULL;
    if (d->cuGetErrorName && d->cuGetErrorName(r, &s) == CUDA_SUCCESS && s)
        return s;
    return "CUDA_ERROR_UNKNOWN_CODE";
}

/* ---- the tally ---------------------------------------------------------- */

static void tally_add(struct tally *t, uint64_t n)
{
    uint64_t now = atomic_fetch_add_explicit(&t->in_use, n, memory_order_relaxed) + n;
    uint64_t p = atomic_load_explicit(&t->peak, memory_order_relaxed);
    while (now > p &&
           !atomic_compare_exchange_weak_explicit(&t->peak, &p, now, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
    atomic_fetch_add_explicit(&t->allocs, 1, memory_order_relaxed);
}

static void tally_sub(struct tally *t, uint64_t n)
{
    atomic_fetch_sub_explicit(&t->in_use, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->frees, 1, memory_order_relaxed);
}

static uint64_t get(_Atomic uint64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

/* ---- buffers ------------------------------------------------------------ */

static void fail(struct worker *w, int rc, const char *fn, uint64_t size, CUresult r)
{
    char sz[32];
    gm_format_size(size, sz, sizeof sz);
    fprintf(stderr, "trainsim: step %" PRIu64 ": %s of %s failed: %s (%d)\n", w->step, fn,
            sz, err_name(w->run->d, r), (int)r);
    if (rc > w->rc)
        w->rc = rc;
    atomic_store(&w->run->stop, 1);
}

static CUresult vmm_alloc(struct worker *w, struct buf *b, const char **fn)
{
    const struct drv *d = w->run->d;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = w->run->dev;
    CUmemAccessDesc acc = { .location = prop.location,
                            .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    CUresult r;
    *fn = "cuMemCreate";
    if ((r = d->cuMemCreate(&b->handle, b->size, &prop, 0)) != CUDA_SUCCESS)
        return r;
    *fn = "cuMemAddressReserve";
    if ((r = d->cuMemAddressReserve(&b->ptr, b->size, 0, 0, 0)) != CUDA_SUCCESS)
        goto release;
    *fn = "cuMemMap";
    if ((r = d->cuMemMap(b->ptr, b->size, 0, b->handle, 0)) != CUDA_SUCCESS)
        goto unreserve;
    *fn = "cuMemSetAccess";
    if ((r = d->cuMemSetAccess(b->ptr, b->size, &acc, 1)) == CUDA_SUCCESS)
        return r;
    d->cuMemUnmap(b->ptr, b->size);
unreserve:
    d->cuMemAddressFree(b->ptr, b->size);
release:
    d->cuMemRelease(b->handle);
    return r;
}

static int buf_alloc(struct worker *w, enum role role, uint64_t size, struct buf *b)
{
    const struct drv *d = w->run->d;
    const char *fn = "cuMemAlloc_v2";
    CUresult r;
    b->kind = kind_of(w->run->o->api, role);
    b->size = charged(b->kind, size, w->run->gran);
    if (b->kind == KIND_ALLOC) {
        r = d->cuMemAlloc_v2(&b->ptr, b->size);
    } else if (b->kind == KIND_ASYNC) {
        fn = "cuMemAllocAsync";
        r = d->cuMemAllocAsync(&b->ptr, b->size, w->stream);
    } else {
        r = vmm_alloc(w, b, &fn);
    }
    if (r != CUDA_SUCCESS) {
        fail(w, EX_ALLOC, fn, b->size, r);
        return -1;
    }
    b->live = 1;
    tally_add(&w->run->tally, b->size);
    return 0;
}

static CUresult vmm_free(const struct drv *d, struct buf *b, const char **fn)
{
    CUresult r, first = CUDA_SUCCESS;
    *fn = "cuMemUnmap";
    if ((r = d->cuMemUnmap(b->ptr, b->size)) != CUDA_SUCCESS)
        first = r;
    if ((r = d->cuMemRelease(b->handle)) != CUDA_SUCCESS && first == CUDA_SUCCESS) {
        *fn = "cuMemRelease";
        first = r;
    }
    if ((r = d->cuMemAddressFree(b->ptr, b->size)) != CUDA_SUCCESS && first == CUDA_SUCCESS) {
        *fn = "cuMemAddressFree";
        first = r;
    }
    return first;
}

/* Frees a live buffer (no-op otherwise); a failure is reported, the buffer
 * is considered gone, and the run stops with status 1. */
static void buf_free(struct worker *w, struct buf *b)
{
    if (!b->live)
        return;
    const struct drv *d = w->run->d;
    const char *fn = "cuMemFree_v2";
    CUresult r;
    if (b->kind == KIND_ALLOC) {
        r = d->cuMemFree_v2(b->ptr);
    } else if (b->kind == KIND_ASYNC) {
        fn = "cuMemFreeAsync";
        r = d->cuMemFreeAsync(b->ptr, w->stream);
    } else {
        r = vmm_free(d, b, &fn);
    }
    b->live = 0;
    tally_sub(&w->run->tally, b->size);
    if (r != CUDA_SUCCESS)
        fail(w, EX_SETUP, fn, b->size, r);
}

/* ---- the training loop -------------------------------------------------- */

static int setup_params(struct worker *w)
{
    for (uint64_t i = 0; i < 3 * w->layers; i++)
        if (buf_alloc(w, ROLE_PARAM, w->run->sz.weight, &w->params[i]) != 0)
            return -1;
    return 0;
}

static int leak_once(struct worker *w)
{
    struct buf lost;
    memset(&lost, 0, sizeof lost);
    if (buf_alloc(w, ROLE_ACT, w->run->o->leak, &lost) != 0)
        return -1;
    atomic_fetch_add_explicit(&w->run->tally.leaked, lost.size, memory_order_relaxed);
    return 0;
}

static int forward(struct worker *w)
{
    for (uint64_t i = 0; i < w->layers; i++)
        if (buf_alloc(w, ROLE_ACT, w->run->sz.act, &w->acts[i]) != 0)
            return -1;
    return 0;
}

/* Layer by layer from the top: its weight gradient appears, then its saved
 * activation is no longer needed. */
static int backward(struct worker *w)
{
    for (uint64_t i = w->layers; i-- > 0;) {
        if (buf_alloc(w, ROLE_GRAD, w->run->sz.weight, &w->grads[i]) != 0)
            return -1;
        buf_free(w, &w->acts[i]);
    }
    return w->rc ? -1 : 0;
}

/* After the optimizer step the gradients are dropped (set to none). */
static void drop_grads(struct worker *w)
{
    for (uint64_t i = 0; i < w->layers; i++)
        buf_free(w, &w->grads[i]);
}

static int evaluate(struct worker *w)
{
    const struct opts *o = w->run->o;
    if (!o->eval_every || w->step % o->eval_every != 0)
        return 0;
    if (buf_alloc(w, ROLE_ACT, 2 * w->layers * w->run->sz.act, &w->eval) != 0)
        return -1;
    buf_free(w, &w->eval);
    return w->rc ? -1 : 0;
}

static void progress(struct worker *w)
{
    const struct opts *o = w->run->o;
    if (w->id != 0 || o->quiet || !o->report_every || w->step % o->report_every != 0)
        return;
    char use[32], peak[32];
    gm_format_size(get(&w->run->tally.in_use), use, sizeof use);
    gm_format_size(get(&w->run->tally.peak), peak, sizeof peak);
    printf("trainsim: step %" PRIu64 "/%" PRIu64 "  in use %s  peak %s\n", w->step,
           o->steps, use, peak);
}

static int train_step(struct worker *w)
{
    if (w->id == 0 && w->run->o->leak && leak_once(w) != 0)
        return -1;
    if (forward(w) != 0 || backward(w) != 0)
        return -1;
    drop_grads(w);
    if (w->rc || evaluate(w) != 0)
        return -1;
    progress(w);
    return 0;
}

static void release_all(struct worker *w)
{
    for (uint64_t i = 0; i < w->layers; i++) {
        buf_free(w, &w->acts[i]);
        buf_free(w, &w->grads[i]);
    }
    buf_free(w, &w->eval);
    for (uint64_t i = 3 * w->layers; i-- > 0;)
        buf_free(w, &w->params[i]);
}

static int worker_prepare(struct worker *w)
{
    const struct drv *d = w->run->d;
    CUresult r = d->cuCtxSetCurrent(w->run->ctx);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "trainsim: cuCtxSetCurrent failed: %s (%d)\n", err_name(d, r), (int)r);
        return -1;
    }
    int async = w->run->o->api == API_ASYNC || w->run->o->api == API_MIXED;
    if (async && (r = d->cuStreamCreate(&w->stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
        fprintf(stderr, "trainsim: cuStreamCreate failed: %s (%d)\n", err_name(d, r), (int)r);
        return -1;
    }
    return 0;
}

static void worker_finish(struct worker *w)
{
    const struct drv *d = w->run->d;
    if (!w->stream)
        return;
    CUresult r = d->cuStreamSynchronize(w->stream);
    if (r == CUDA_SUCCESS)
        r = d->cuStreamDestroy_v2(w->stream);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "trainsim: closing the stream failed: %s (%d)\n", err_name(d, r),
                (int)r);
        w->rc = w->rc ? w->rc : EX_SETUP;
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    if (worker_prepare(w) != 0) {
        w->rc = EX_SETUP;
        atomic_store(&w->run->stop, 1);
        return NULL;
    }
    if (setup_params(w) == 0)
        for (w->step = 1; w->step <= w->run->o->steps; w->step++)
            if (atomic_load(&w->run->stop) || train_step(w) != 0)
                break;
    release_all(w);
    worker_finish(w);
    return NULL;
}

static int workers_init(struct run *run, struct worker *ws, uint64_t n)
{
    for (uint64_t t = 0; t < n; t++) {
        struct worker *w = &ws[t];
        w->run = run;
        w->id = (int)t;
        w->layers = layers_of(run->o, t);
        w->params = calloc(3 * w->layers, sizeof *w->params);
        w->acts = calloc(w->layers, sizeof *w->acts);
        w->grads = calloc(w->layers, sizeof *w->grads);
        if (!w->params || !w->acts || !w->grads) {
            fputs("trainsim: out of host memory\n", stderr);
            return -1;
        }
    }
    return 0;
}

static void workers_free(struct worker *ws, uint64_t n)
{
    for (uint64_t t = 0; t < n; t++) {
        free(ws[t].params);
        free(ws[t].acts);
        free(ws[t].grads);
    }
}

/* Runs thread 0 on the calling thread, the others on new threads. */
static int workers_run(struct run *run)
{
    uint64_t n = run->o->threads;
    struct worker ws[MAX_THREADS];
    memset(ws, 0, sizeof ws);
    int rc = workers_init(run, ws, n) == 0 ? EX_DONE : EX_SETUP;
    uint64_t started = 1;
    for (; rc == EX_DONE && started < n; started++)
        if (pthread_create(&ws[started].tid, NULL, worker_main, &ws[started]) != 0) {
            fputs("trainsim: cannot start a thread\n", stderr);
            atomic_store(&run->stop, 1);
            rc = EX_SETUP;
            break;
        }
    if (rc == EX_DONE)
        worker_main(&ws[0]);
    for (uint64_t t = 1; t < started; t++)
        pthread_join(ws[t].tid, NULL);
    for (uint64_t t = 0; t < n; t++)
        rc = ws[t].rc > rc ? ws[t].rc : rc;
    workers_free(ws, n);
    return rc;
}

/* ---- setup and main ----------------------------------------------------- */

static int cu_setup_error(const struct drv *d, const char *what, CUresult r)
{
    fprintf(stderr, "trainsim: %s failed: %s (%d)\n", what, err_name(d, r), (int)r);
    return r == CUDA_ERROR_OUT_OF_MEMORY ? EX_ALLOC : EX_SETUP;
}

static int granularity(struct run *run)
{
    const struct drv *d = run->d;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = run->dev;
    size_t g = 0;
    CUresult r = d->cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (r != CUDA_SUCCESS)
        return cu_setup_error(d, "cuMemGetAllocationGranularity", r);
    run->gran = g ? g : 1;
    return EX_DONE;
}

static int ctx_open(struct run *run)
{
    const struct drv *d = run->d;
    CUresult r = d->cuInit(0);
    if (r != CUDA_SUCCESS)
        return cu_setup_error(d, "cuInit", r);
    if ((r = d->cuDeviceGet(&run->dev, (int)run->o->device)) != CUDA_SUCCESS) {
        char what[48];
        snprintf(what, sizeof what, "cuDeviceGet(%" PRIu64 ")", run->o->device);
        return cu_setup_error(d, what, r);
    }
    if ((r = d->cuDevicePrimaryCtxRetain(&run->ctx, run->dev)) != CUDA_SUCCESS)
        return cu_setup_error(d, "cuDevicePrimaryCtxRetain", r);
    if ((r = d->cuCtxSetCurrent(run->ctx)) != CUDA_SUCCESS) {
        d->cuDevicePrimaryCtxRelease_v2(run->dev);
        return cu_setup_error(d, "cuCtxSetCurrent", r);
    }
    if (run->o->api != API_VMM && run->o->api != API_MIXED)
        return EX_DONE;
    int rc = granularity(run);
    if (rc != EX_DONE) {
        d->cuCtxSetCurrent(NULL);
        d->cuDevicePrimaryCtxRelease_v2(run->dev);
    }
    return rc;
}

static int ctx_close(struct run *run)
{
    const struct drv *d = run->d;
    d->cuCtxSetCurrent(NULL);
    CUresult r = d->cuDevicePrimaryCtxRelease_v2(run->dev);
    return r == CUDA_SUCCESS ? EX_DONE : cu_setup_error(d, "cuDevicePrimaryCtxRelease", r);
}

static void banner(const struct opts *o)
{
    if (o->quiet)
        return;
    printf("trainsim: %" PRIu64 " layers x %" PRIu64 " hidden, batch %" PRIu64 ", seq %" PRIu64
           ", %" PRIu64 " steps; api %s via %s; %" PRIu64 " thread%s; device %" PRIu64 "\n",
           o->layers, o->hidden, o->batch, o->seq, o->steps, api_name(o->api),
           via_name(o->via), o->threads, o->threads == 1 ? "" : "s", o->device);
}

static void summary(struct run *run)
{
    struct tally *t = &run->tally;
    char peak[32], leaked[32];
    gm_format_size(get(&t->peak), peak, sizeof peak);
    gm_format_size(get(&t->leaked), leaked, sizeof leaked);
    printf("trainsim: done: %" PRIu64 " steps, %" PRIu64 " allocs, %" PRIu64
           " frees, peak %s (%" PRIu64 " bytes), leaked %s\n",
           run->o->steps, get(&t->allocs), get(&t->frees), peak, get(&t->peak), leaked);
}

int main(int argc, char **argv)
{
    struct opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc >= 0)
        return rc;
    if (o.print_peak) {
        printf("%" PRIu64 "\n", plan_peak(&o, PLAN_GRANULARITY));
        return EX_DONE;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct drv d;
    if (drv_open(&d, &o) != 0)
        return EX_SETUP;
    struct run run;
    memset(&run, 0, sizeof run);
    run.o = &o;
    run.d = &d;
    sizes_of(&o, &run.sz);
    if ((rc = ctx_open(&run)) != EX_DONE)
        return rc;
    banner(&o);
    rc = workers_run(&run);
    int rc2 = ctx_close(&run);
    if (rc == EX_DONE)
        rc = rc2;
    if (rc == EX_DONE)
        summary(&run);
    return rc;
}
