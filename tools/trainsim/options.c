/*
 * tools/trainsim/options.c — gpumem-trainsim: options and the planned peak (--print-peak).
 * Types and invariants: tools/trainsim/trainsim.h.
 */
#include "tools/trainsim/trainsim.h"

/* ---- options ------------------------------------------------------------ */

static const char usage_line[] =
    "usage: gpumem-trainsim [--steps N] [--layers N] [--hidden N] [--batch N]\n"
    "         [--seq N] [--eval-every N] [--eval-size BYTES] [--eval-hold N]\n"
    "         [--leak BYTES] [--warmup BYTES] [--warmup-steps N]\n"
    "         [--step-time DURATION] [--mark-steps] [--via direct|dlsym|gpa]\n"
    "         [--api alloc|async|vmm|mixed] [--threads N] [--device N]\n"
    "         [--keep-context] [--report-every N] [--quiet] [--print-peak]\n"
    "         [--help]\n";

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
    "    --eval-size BYTES  size of the evaluation buffer (default E)\n"
    "    --eval-hold N      keep the evaluation buffer over the next N step\n"
    "                       boundaries (less than --eval-every; default 0: freed\n"
    "                       in the step that made it)\n"
    "    --leak BYTES       allocate BYTES per step and never free them (default 0);\n"
    "                       sizes like 1M, 1.5G (binary units)\n"
    "    --warmup BYTES     warm-up growth that levels off: in each of the first\n"
    "                       --warmup-steps steps, BYTES more for a cache kept\n"
    "                       until the end (default 0)\n"
    "    --warmup-steps N   steps of warm-up growth (default 10)\n"
    "    --step-time DUR    sleep DUR per step, e.g. 10ms (default 0)\n"
    "    --mark-steps       call gpumem_step() after each step, found with\n"
    "                       dlsym(RTLD_DEFAULT) (the preloaded libgpumem.so);\n"
    "                       a note on stderr when it is not there\n"
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
    "    --keep-context     exit without releasing the primary context, as\n"
    "                       PyTorch and JAX do (the process's end frees it), so\n"
    "                       leaked buffers are still live when the process exits;\n"
    "                       by default it is released after the last free, as a\n"
    "                       program that cleans up does, and the driver frees the\n"
    "                       leaks with it\n"
    "    --report-every N   progress line every N steps; 0 = none (default 50)\n"
    "    --quiet            no banner and no progress lines\n"
    "    --print-peak       print the planned peak in bytes and exit; exact for\n"
    "                       one thread with alloc or async, an upper bound with\n"
    "                       threads, assumes a 2 MiB granularity for vmm\n"
    "    --help             this text\n"
    "\n"
    "OUTPUT\n"
    "    The run with the default options prints (banner, one of the progress\n"
    "    lines, final line):\n"
    "    trainsim: 12 layers x 1024 hidden, batch 32, seq 64, 200 steps; api alloc via gpa; 1 thread; device 0\n"
    "    trainsim: step 50/200  in use 144.0 MiB  peak 336.0 MiB\n"
    "    trainsim: done: 200 steps, 4840 allocs, 4840 frees, peak 336.0 MiB (352321536 bytes), leaked 0 B\n"
    "    In use and peak are the program's own tally of what it holds. A\n"
    "    failed allocation, here with --leak 4M under libgpumem.so and\n"
    "    GPUMEM_LIMIT=1G on the simulated driver, is said on stderr:\n"
    "    trainsim: step 100: cuMemAlloc_v2 of 192.0 MiB failed: CUDA_ERROR_OUT_OF_MEMORY (2)\n"
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

static int parse_bytes(const char *opt, const char *val, uint64_t *out)
{
    if (gm_parse_size(val, out) == 0)
        return 0;
    return usage_error("--%s '%s' is not a size; use bytes or a number with "
                       "K/M/G/T (binary units)", opt, val);
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
    o->warmup_steps = 10;
    o->via = VIA_GPA;
    o->api = API_ALLOC;
}

enum {
    OPT_STEPS = 256, OPT_LAYERS, OPT_HIDDEN, OPT_BATCH, OPT_SEQ, OPT_EVAL, OPT_LEAK,
    OPT_VIA, OPT_API, OPT_THREADS, OPT_DEVICE, OPT_REPORT, OPT_QUIET, OPT_PEAK, OPT_HELP,
    OPT_EVAL_SIZE, OPT_EVAL_HOLD, OPT_WARMUP, OPT_WARMUP_STEPS, OPT_STEP_TIME, OPT_MARK,
    OPT_KEEP_CTX
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
    { "eval-size", required_argument, NULL, OPT_EVAL_SIZE },
    { "eval-hold", required_argument, NULL, OPT_EVAL_HOLD },
    { "warmup", required_argument, NULL, OPT_WARMUP },
    { "warmup-steps", required_argument, NULL, OPT_WARMUP_STEPS },
    { "step-time", required_argument, NULL, OPT_STEP_TIME },
    { "mark-steps", no_argument, NULL, OPT_MARK },
    { "keep-context", no_argument, NULL, OPT_KEEP_CTX },
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
    case OPT_MARK: o->mark_steps = 1; return 0;
    case OPT_KEEP_CTX: o->keep_context = 1; return 0;
    case OPT_EVAL_HOLD: return parse_count("eval-hold", v, 0, UINT32_MAX, &o->eval_hold);
    case OPT_WARMUP_STEPS:
        return parse_count("warmup-steps", v, 1, 1000000, &o->warmup_steps);
    case OPT_LEAK: return parse_bytes("leak", v, &o->leak);
    case OPT_WARMUP: return parse_bytes("warmup", v, &o->warmup);
    case OPT_EVAL_SIZE: return parse_bytes("eval-size", v, &o->eval_size);
    case OPT_STEP_TIME:
        if (gm_parse_duration(v, &o->step_ns) == 0 && o->step_ns <= 3600000000000ull)
            return 0;
        return usage_error("--step-time '%s' is not a duration up to 1h; use a number "
                           "with ns, us, ms, s, m or h", v);
    default: return EX_USAGE;
    }
}

static int mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

int gm_ts_sizes_of(const struct opts *o, struct sizes *s)
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
int gm_ts_parse_opts(int argc, char **argv, struct opts *o)
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
    if (o->eval_hold && o->eval_hold >= o->eval_every)
        return usage_error("--eval-hold must be less than --eval-every");
    if (!mul_ok(o->warmup_steps, o->warmup, &leaks) || leaks > SIZE_MAX / 4 ||
        o->eval_size > SIZE_MAX / 4)
        return usage_error("--warmup times --warmup-steps, or --eval-size, is too large "
                           "to represent");
    if (gm_ts_sizes_of(o, &s) != 0)
        return usage_error("--layers, --hidden, --batch and --seq give buffers too "
                           "large to represent");
    return -1;
}

/* ---- roles, kinds and the planned peak ---------------------------------- */


enum kind gm_ts_kind_of(enum api api, enum role role)
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

uint64_t gm_ts_charged(enum kind k, uint64_t size, uint64_t gran)
{
    return k == KIND_VMM ? round_up(size, gran) : size;
}

uint64_t gm_ts_layers_of(const struct opts *o, uint64_t id)
{
    return o->layers / o->threads + (id < o->layers % o->threads ? 1 : 0);
}

/*
 * Peak of what the program holds: per thread 3*L_t*Wp persistent, plus the
 * step peak max(L_t*A + G, A + L_t*G) (all activations and the first
 * gradient, or the last activation and all gradients), or the eval buffer;
 * plus the leaks and the warm-up cache allocated up to the step in
 * question (first thread only). A held evaluation buffer (--eval-hold)
 * adds to the training peak of the steps it is kept over.
 */
uint64_t gm_ts_plan_peak(const struct opts *o, uint64_t gran)
{
    struct sizes s;
    gm_ts_sizes_of(o, &s);
    uint64_t wp = gm_ts_charged(gm_ts_kind_of(o->api, ROLE_PARAM), s.weight, gran);
    uint64_t g = gm_ts_charged(gm_ts_kind_of(o->api, ROLE_GRAD), s.weight, gran);
    uint64_t a = gm_ts_charged(gm_ts_kind_of(o->api, ROLE_ACT), s.act, gran);
    uint64_t leak = o->leak ? gm_ts_charged(gm_ts_kind_of(o->api, ROLE_ACT), o->leak, gran) : 0;
    uint64_t last_eval = o->eval_every ? o->steps / o->eval_every * o->eval_every : 0;
    uint64_t wsteps = o->steps < o->warmup_steps ? o->steps : o->warmup_steps;
    uint64_t warm = o->warmup ? wsteps * gm_ts_charged(gm_ts_kind_of(o->api, ROLE_ACT),
                                                      o->warmup, gran) : 0;
    uint64_t persistent = 0, train = 0, eval = 0;
    for (uint64_t t = 0; t < o->threads; t++) {
        uint64_t lt = gm_ts_layers_of(o, t);
        persistent += 3 * lt * wp;
        uint64_t top = lt * a + g, bottom = a + lt * g;
        train += top > bottom ? top : bottom;
        eval += gm_ts_charged(gm_ts_kind_of(o->api, ROLE_ACT),
                              o->eval_size ? o->eval_size : 2 * lt * s.act, gran);
    }
    uint64_t peak_train = o->steps * leak + train;
    uint64_t peak_eval = last_eval ? last_eval * leak + eval : 0;
    /* The last evaluation held over a later step's training. */
    uint64_t held_step = last_eval + o->eval_hold;
    if (o->eval_hold && last_eval && last_eval == o->steps)
        held_step = 0; /* made in the last step: freed at exit, no training over it */
    else if (o->eval_hold && last_eval && held_step > o->steps)
        held_step = o->steps;
    if (o->eval_hold && last_eval && held_step == 0 && last_eval > o->eval_every)
        held_step = last_eval - o->eval_every + o->eval_hold;
    uint64_t peak_held = o->eval_hold && held_step ? held_step * leak + train + eval : 0;
    uint64_t top = peak_train > peak_eval ? peak_train : peak_eval;
    return persistent + warm + (top > peak_held ? top : peak_held);
}
