/*
 * shim/account/ctxend.c — releasing the entries a context's end freed
 * (rules and invariants in ctxend.h): the table is walked once into a
 * buffer of candidates (mmap: the shim never calls malloc), then each
 * candidate is judged and taken out of the table outside every shard lock,
 * since judging it asks the driver.
 */
#include "shim/account/ctxend.h"

#include <stdbool.h>
#include <sys/mman.h>

#include "shim/account/account.h"
#include "shim/account/contexts.h"
#include "shim/account/state.h"
#include "shim/base/clock.h"
#include "shim/driver/real.h"
#include "shim/telemetry/telemetry.h"

#define PASSES 4          /* walks when the buffer filled (table grew) */
#define SLACK 1024u       /* room for entries made during the walk */

struct collect {
    struct gm_alloc *v;
    uint64_t n, cap;
    int dev;
    bool sole;            /* the ended context was the device's only one,
                             and no context was listed or unlisted since */
    uint64_t gen;         /* the context list's generation when judged so */
    bool full;            /* a candidate found no room */
};

static bool candidate(const struct collect *c, const struct gm_alloc *a)
{
    if (a->dev != c->dev)
        return false;
    if (a->ns == GM_NS_PTR)
        return !(a->flags & GM_AF_ASYNC);
    return c->sole && (a->ns == GM_NS_ARRAY || a->ns == GM_NS_MIPMAP);
}

static void collect_one(void *ctx, const struct gm_alloc *a)
{
    struct collect *c = ctx;
    if (!candidate(c, a))
        return;
    if (c->n == c->cap) {
        c->full = true;
        return;
    }
    c->v[c->n++] = *a;
}

/* Has the driver freed the device pointer p? Only its own "not a pointer
 * of any context" says so (asked with no context of ours made current:
 * the attribute is a lookup of the address, and another thread's context
 * may end meanwhile); without the query, only when the ended context was
 * the device's only one. */
static bool ptr_dead(uint64_t p, bool sole)
{
    if (gm_real.cuPointerGetAttribute == NULL)
        return sole;
    CUcontext c = NULL;
    gm_depth++;
    CUresult rc = gm_real.cuPointerGetAttribute(
        &c, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)p);
    gm_depth--;
    return rc == CUDA_ERROR_INVALID_VALUE;
}

static void release(const struct gm_alloc *a, struct gm_ctxend_sum *sum,
                    gm_ctxend_fn fn, void *arg)
{
    uint64_t t = gm_hook_ticks();
    gm_acct_released(a, GM_API_CTX_END, t, t);
    sum->entries++;
    sum->bytes += a->size;
    if (fn != NULL)
        fn(arg, a);
}

/* A taken entry the driver reports live after all (a block that got the
 * same address and the same fields meanwhile) goes back; should yet
 * another entry have taken the key while it was out, that one is the live
 * block, and the taken one's block was freed meanwhile: released. */
static void put_back(const struct gm_alloc *a, struct gm_ctxend_sum *sum,
                     gm_ctxend_fn fn, void *arg)
{
    struct gm_alloc other, mine;
    if (gm_track_insert(a, &other) != 1)
        return; /* back (or no memory: the charge stays, on the safe side) */
    if (gm_track_insert(&other, &mine) == 1)
        release(&mine, sum, fn, arg);
}

static void judge(const struct collect *c, const struct gm_alloc *cand,
                  struct gm_ctxend_sum *sum, gm_ctxend_fn fn, void *arg)
{
    bool ptr = cand->ns == GM_NS_PTR;
    if (!ptr && !c->sole)
        return; /* an array: only when no other context can hold it */
    if (ptr && !ptr_dead(cand->key, c->sole))
        return;
    struct gm_alloc a;
    if (!gm_track_take_same(cand, &a))
        return; /* freed, or its key reused, since the walk */
    if (ptr && gm_real.cuPointerGetAttribute != NULL &&
        !ptr_dead(a.key, c->sole)) {
        put_back(&a, sum, fn, arg);
        return;
    }
    release(&a, sum, fn, arg);
}

/* One walk and its judgements; false when the buffer could not be had. */
static bool pass(struct collect *c, struct gm_ctxend_sum *sum,
                 gm_ctxend_fn fn, void *arg)
{
    c->cap = gm_track_count() + SLACK;
    size_t len = (size_t)c->cap * sizeof *c->v;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return false;
    c->v = m;
    c->n = 0;
    c->full = false;
    bool truncated;
    gm_track_walk(collect_one, c, UINT64_MAX, &truncated);
    /* A context listed since the device was found to have none may hold
     * some of what the walk copied (it was listed before its first
     * allocation was): then nothing is taken on the device's word. */
    if (c->sole && gm_ctx_generation() != c->gen)
        c->sole = false;
    for (uint64_t i = 0; i < c->n; i++)
        judge(c, &c->v[i], sum, fn, arg);
    munmap(m, len);
    return true;
}

struct gm_ctxend_sum gm_ctxend_release(int dev, gm_ctxend_fn fn, void *arg)
{
    struct gm_ctxend_sum sum = { 0, 0 };
    if (dev < 0 || dev >= GM_MAX_DEVICES)
        return sum;
    struct collect c = { .dev = dev };
    c.sole = gm_ctx_listed_on(dev, &c.gen) == 0;
    uint64_t began = gm_clock_realtime_ns();
    for (int i = 0; i < PASSES; i++)
        if (!pass(&c, &sum, fn, arg) || !c.full)
            break;
    /* One record for them all: it takes them out of the live figures
     * (each free changed only used and the fragmentation log), with the
     * time the first could have gone. */
    if (sum.entries != 0 && gm_telemetry_on())
        gm_tel_ctx_freed(&gm_st.tel, (unsigned)dev, sum.bytes, sum.entries,
                         gm_budget_used(&gm_st.dev[dev].budget), began);
    return sum;
}
