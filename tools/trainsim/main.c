/*
 * tools/trainsim/main.c — gpumem-trainsim: primary context, banner, summary and main.
 * Types and invariants: tools/trainsim/trainsim.h.
 */
#include "tools/trainsim/trainsim.h"

/* ---- setup and main ----------------------------------------------------- */

static int cu_setup_error(const struct drv *d, const char *what, CUresult r)
{
    fprintf(stderr, "trainsim: %s failed: %s (%d)\n", what, gm_ts_err_name(d, r), (int)r);
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

/* The primary context is released, unless --keep-context leaves it to the
 * process's end (as frameworks do). */
static int ctx_close(struct run *run)
{
    const struct drv *d = run->d;
    if (run->o->keep_context)
        return EX_DONE;
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
           o->layers, o->hidden, o->batch, o->seq, o->steps, gm_ts_api_name(o->api),
           gm_ts_via_name(o->via), o->threads, o->threads == 1 ? "" : "s", o->device);
}

static void summary(struct run *run)
{
    struct tally *t = &run->tally;
    char peak[32], leaked[32];
    gm_format_size(gm_ts_get(&t->peak), peak, sizeof peak);
    gm_format_size(gm_ts_get(&t->leaked), leaked, sizeof leaked);
    printf("trainsim: done: %" PRIu64 " steps, %" PRIu64 " allocs, %" PRIu64
           " frees, peak %s (%" PRIu64 " bytes), leaked %s\n",
           run->o->steps, gm_ts_get(&t->allocs), gm_ts_get(&t->frees), peak, gm_ts_get(&t->peak), leaked);
}

int main(int argc, char **argv)
{
    struct opts o;
    int rc = gm_ts_parse_opts(argc, argv, &o);
    if (rc >= 0)
        return rc;
    if (o.print_peak) {
        printf("%" PRIu64 "\n", gm_ts_plan_peak(&o, PLAN_GRANULARITY));
        return EX_DONE;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct drv d;
    if (gm_ts_drv_open(&d, &o) != 0)
        return EX_SETUP;
    struct run run;
    memset(&run, 0, sizeof run);
    run.o = &o;
    run.d = &d;
    gm_ts_sizes_of(&o, &run.sz);
    if ((rc = ctx_open(&run)) != EX_DONE)
        return rc;
    banner(&o);
    rc = gm_ts_workers_run(&run);
    int rc2 = ctx_close(&run);
    if (rc == EX_DONE)
        rc = rc2;
    if (rc == EX_DONE)
        summary(&run);
    return rc;
}
