/*
 * tools/trainsim/train.c — gpumem-trainsim: the tally, buffers, the training loop and its worker threads.
 * Types and invariants: tools/trainsim/trainsim.h.
 */
#include "tools/trainsim/trainsim.h"

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

uint64_t gm_ts_get(_Atomic uint64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

/* ---- buffers ------------------------------------------------------------ */

static void fail(struct worker *w, int rc, const char *fn, uint64_t size, CUresult r)
{
    char sz[32];
    gm_format_size(size, sz, sizeof sz);
    fprintf(stderr, "trainsim: step %" PRIu64 ": %s of %s failed: %s (%d)\n", w->step, fn,
            sz, gm_ts_err_name(w->run->d, r), (int)r);
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
    b->kind = gm_ts_kind_of(w->run->o->api, role);
    b->size = gm_ts_charged(b->kind, size, w->run->gran);
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

/* Every --eval-every steps an evaluation buffer, freed in the same step
 * or, with --eval-hold H, at the end of the H-th step after it. */
static int evaluate(struct worker *w)
{
    const struct opts *o = w->run->o;
    if (w->eval.live && w->step >= w->eval_until)
        buf_free(w, &w->eval);
    if (!o->eval_every || w->step % o->eval_every != 0)
        return w->rc ? -1 : 0;
    uint64_t size = o->eval_size ? o->eval_size : 2 * w->layers * w->run->sz.act;
    if (buf_alloc(w, ROLE_ACT, size, &w->eval) != 0)
        return -1;
    w->eval_until = w->step + o->eval_hold;
    if (!o->eval_hold)
        buf_free(w, &w->eval);
    return w->rc ? -1 : 0;
}

/* In each of the first --warmup-steps steps the cache grows by --warmup. */
static int warm_up(struct worker *w)
{
    const struct opts *o = w->run->o;
    if (w->id != 0 || !o->warmup || w->step > o->warmup_steps)
        return 0;
    return buf_alloc(w, ROLE_ACT, o->warmup, &w->warm[w->step - 1]);
}

static void step_end(struct worker *w)
{
    const struct opts *o = w->run->o;
    if (w->mark)
        w->mark();
    if (o->step_ns && w->id == 0) {
        struct timespec ts = { (time_t)(o->step_ns / 1000000000u),
                               (long)(o->step_ns % 1000000000u) };
        while (nanosleep(&ts, &ts) != 0)
            ;
    }
}

static void progress(struct worker *w)
{
    const struct opts *o = w->run->o;
    if (w->id != 0 || o->quiet || !o->report_every || w->step % o->report_every != 0)
        return;
    char use[32], peak[32];
    gm_format_size(gm_ts_get(&w->run->tally.in_use), use, sizeof use);
    gm_format_size(gm_ts_get(&w->run->tally.peak), peak, sizeof peak);
    printf("trainsim: step %" PRIu64 "/%" PRIu64 "  in use %s  peak %s\n", w->step,
           o->steps, use, peak);
}

static int train_step(struct worker *w)
{
    if (w->id == 0 && w->run->o->leak && leak_once(w) != 0)
        return -1;
    if (warm_up(w) != 0 || forward(w) != 0 || backward(w) != 0)
        return -1;
    drop_grads(w);
    if (w->rc || evaluate(w) != 0)
        return -1;
    progress(w);
    step_end(w);
    return 0;
}

static void release_all(struct worker *w)
{
    for (uint64_t i = 0; i < w->layers; i++) {
        buf_free(w, &w->acts[i]);
        buf_free(w, &w->grads[i]);
    }
    buf_free(w, &w->eval);
    if (w->warm)
        for (uint64_t i = w->run->o->warmup_steps; i-- > 0;)
            buf_free(w, &w->warm[i]);
    for (uint64_t i = 3 * w->layers; i-- > 0;)
        buf_free(w, &w->params[i]);
}

static int worker_prepare(struct worker *w)
{
    const struct drv *d = w->run->d;
    CUresult r = d->cuCtxSetCurrent(w->run->ctx);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "trainsim: cuCtxSetCurrent failed: %s (%d)\n", gm_ts_err_name(d, r), (int)r);
        return -1;
    }
    int async = w->run->o->api == API_ASYNC || w->run->o->api == API_MIXED;
    if (async && (r = d->cuStreamCreate(&w->stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
        fprintf(stderr, "trainsim: cuStreamCreate failed: %s (%d)\n", gm_ts_err_name(d, r), (int)r);
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
        fprintf(stderr, "trainsim: closing the stream failed: %s (%d)\n", gm_ts_err_name(d, r),
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
        w->layers = gm_ts_layers_of(run->o, t);
        w->params = calloc(3 * w->layers, sizeof *w->params);
        w->acts = calloc(w->layers, sizeof *w->acts);
        w->grads = calloc(w->layers, sizeof *w->grads);
        if (t == 0 && run->o->warmup)
            w->warm = calloc(run->o->warmup_steps, sizeof *w->warm);
        if (t == 0 && run->o->mark_steps) {
            /* The object pointer from dlsym converted the POSIX way. */
            void *sym = dlsym(RTLD_DEFAULT, "gpumem_step");
            memcpy(&w->mark, &sym, sizeof w->mark);
            if (w->mark == NULL)
                fputs("trainsim: --mark-steps: gpumem_step not found (libgpumem.so not "
                      "preloaded); steps are not marked\n", stderr);
        }
        if (!w->params || !w->acts || !w->grads || (t == 0 && run->o->warmup && !w->warm)) {
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
        free(ws[t].warm);
    }
}

/* Runs thread 0 on the calling thread, the others on new threads. */
int gm_ts_workers_run(struct run *run)
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
