/*
 * tools/sim/simcuda.c — the simulated driver's state, configuration and
 * initialisation: cuInit, cuDriverGetVersion, the SIMCUDA_* variables, the
 * allocation gate (fault injection, latency), capacity charging and the
 * exported gm_simcuda_stats() and gm_simcuda_context_bytes().
 *
 * Configuration is read once, by the first cuInit (pthread_once); a bad
 * value prints "simcuda: ..." to stderr and makes every cuInit return
 * CUDA_ERROR_INVALID_VALUE while the rest of the API answers
 * CUDA_ERROR_NOT_INITIALIZED. Invariant: `sim_ready` is set (release) only
 * after every device is fully initialised; readers load it with acquire.
 */
#include "tools/sim/simcuda.h"

#include "policy/parse.h"
#include "policy/visible.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gm_sim_state gm_sim;

static pthread_once_t sim_once = PTHREAD_ONCE_INIT;
static CUresult sim_init_rc = CUDA_ERROR_NOT_INITIALIZED;
static atomic_bool sim_ready;

extern char **environ;

/* ---- configuration ------------------------------------------------------ */

static const char *const sim_vars[] = {
    "SIMCUDA_DEVICES", "SIMCUDA_MEMORY", "SIMCUDA_CONTEXT", "SIMCUDA_LATENCY",
    "SIMCUDA_FAIL", "SIMCUDA_UUID_SEED", "SIMCUDA_POOL_RELEASE", "SIMCUDA_SHM",
};

static int cfg_bad(const char *var, const char *val, const char *what)
{
    fprintf(stderr, "simcuda: %s='%s' %s\n", var, val, what);
    return -1;
}

/* Warns about SIMCUDA_* variables nobody reads (typos). */
static void cfg_warn_unknown(void)
{
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        if (strncmp(*e, "SIMCUDA_", 8) != 0)
            continue;
        size_t len = strcspn(*e, "=");
        bool known = false;
        for (size_t i = 0; i < sizeof sim_vars / sizeof sim_vars[0]; i++)
            if (strlen(sim_vars[i]) == len && strncmp(*e, sim_vars[i], len) == 0)
                known = true;
        if (!known)
            fprintf(stderr, "simcuda: unknown variable %.*s ignored\n", (int)len, *e);
    }
}

static int cfg_latency(const char *v, uint64_t *ns)
{
    if (strcmp(v, "0") == 0) {
        *ns = 0;
        return 0;
    }
    if (gm_parse_duration(v, ns) != 0)
        return cfg_bad("SIMCUDA_LATENCY", v,
                       "is not a duration; use a number with ns, us, ms or s (e.g. 60us), or 0");
    return 0;
}

/* A CUresult by number or by name (CUDA_ERROR_OUT_OF_MEMORY). */
static int cfg_code(const char *s, CUresult *code)
{
    uint64_t n;
    if (gm_parse_uint(s, &n) == 0) {
        if (n == 0 || n > 100000)
            return -1;
        *code = (CUresult)n;
        return 0;
    }
    for (int c = 1; c <= 1000; c++) {
        const char *name = gm_sim_err_name((CUresult)c);
        if (name != NULL && strcmp(name, s) == 0) {
            *code = (CUresult)c;
            return 0;
        }
    }
    return -1;
}

/* "N:CODE" (the Nth allocation call fails) or "N+:CODE" (every call from
 * the Nth on). */
static int cfg_fail(const char *v, struct gm_sim_config *c)
{
    static const char *const what =
        "is not a fault; use N:CODE (the Nth allocation call returns CODE) or N+:CODE "
        "(every call from the Nth on), N >= 1, CODE a non-zero CUresult number or name";
    char num[32];
    const char *colon = strchr(v, ':');
    size_t len = colon ? (size_t)(colon - v) : 0;

    if (colon == NULL || len == 0 || len >= sizeof num)
        return cfg_bad("SIMCUDA_FAIL", v, what);
    memcpy(num, v, len);
    num[len] = '\0';
    c->fail_from = num[len - 1] == '+';
    if (c->fail_from)
        num[len - 1] = '\0';
    if (gm_parse_uint(num, &c->fail_n) != 0 || c->fail_n == 0 ||
        cfg_code(colon + 1, &c->fail_code) != 0)
        return cfg_bad("SIMCUDA_FAIL", v, what);
    return 0;
}

/* CUDA_VISIBLE_DEVICES, applied as a real driver does: CUDA ordinal i is
 * physical device phys[i]. */
static void cfg_visible(struct gm_sim_config *c)
{
    char uuid[GM_SIM_MAX_PHYS][48];
    const char *uuids[GM_SIM_MAX_PHYS];
    for (int i = 0; i < c->machine.ndev; i++) {
        unsigned char b[16];
        gm_sim_uuid(&c->machine, i, b);
        gm_sim_uuid_string(b, uuid[i], sizeof uuid[i]);
        uuids[i] = uuid[i];
    }
    c->ndev = gm_visible_map(getenv("CUDA_VISIBLE_DEVICES"), uuids,
                             c->machine.ndev, c->phys);
    for (int i = 0; i < c->ndev; i++)
        c->memory[i] = c->machine.memory[c->phys[i]];
}

static int cfg_load(struct gm_sim_config *c)
{
    const char *v;
    int rc = 0;

    memset(c, 0, sizeof *c);
    c->context = 300ULL << 20;
    c->release = SIM_RELEASE_SYNC;
    cfg_warn_unknown();
    rc |= gm_sim_machine_load(&c->machine);
    cfg_visible(c);
    if ((v = getenv("SIMCUDA_CONTEXT")) != NULL && gm_parse_size(v, &c->context) != 0)
        rc |= cfg_bad("SIMCUDA_CONTEXT", v,
                      "is not a size; use bytes or a number with K/M/G/T (binary units), e.g. 300M, or 0");
    if ((v = getenv("SIMCUDA_LATENCY")) != NULL)
        rc |= cfg_latency(v, &c->latency_ns);
    if ((v = getenv("SIMCUDA_FAIL")) != NULL)
        rc |= cfg_fail(v, c);
    if ((v = getenv("SIMCUDA_POOL_RELEASE")) != NULL) {
        if (strcmp(v, "free") == 0)
            c->release = SIM_RELEASE_FREE;
        else if (strcmp(v, "sync") == 0)
            c->release = SIM_RELEASE_SYNC;
        else
            rc |= cfg_bad("SIMCUDA_POOL_RELEASE", v, "is not a release point; use free or sync");
    }
    return rc;
}

/* ---- initialisation ------------------------------------------------------ */

static int dev_init(struct gm_sim_dev *d, int i)
{
    memset(d, 0, sizeof *d);
    pthread_mutex_init(&d->lock, NULL);
    d->ordinal = i;
    d->capacity = gm_sim.cfg.memory[i];
    d->primary.dev = i;
    d->primary.primary = true;
    atomic_init(&d->primary_refs, 0);
    atomic_init(&d->primary_active, false);
    if (gm_sim_ext_init(&d->va, SIM_DEV_BASE + (uint64_t)i * SIM_DEV_SPAN,
                        SIM_DEV_BASE + (uint64_t)(i + 1) * SIM_DEV_SPAN) != 0)
        return -1;
    return gm_sim_pools_init(d);
}

/* A fork child is another process: its own board, with the figures it
 * inherited (no lock is taken: the other threads did not survive). */
static void board_fork_child(void)
{
    gm_sim_board_close();
    if (!gm_sim_board_open(&gm_sim.cfg.machine))
        return;
    for (int i = 0; i < gm_sim.cfg.ndev; i++)
        gm_sim_board_set(gm_sim.cfg.phys[i], gm_sim.dev[i].used,
                         (uint32_t)gm_sim.dev[i].nctx);
}

static void sim_init_once(void)
{
    if (cfg_load(&gm_sim.cfg) != 0) {
        sim_init_rc = CUDA_ERROR_INVALID_VALUE;
        return;
    }
    if (gm_sim.cfg.ndev == 0) {
        sim_init_rc = CUDA_ERROR_NO_DEVICE;
        return;
    }
    pthread_mutex_init(&gm_sim.vmm_lock, NULL);
    pthread_mutex_init(&gm_sim.host_lock, NULL);
    pthread_mutex_init(&gm_sim.low_lock, NULL);
    gm_sim.next_handle = 0x100;
    atomic_init(&gm_sim.alloc_calls, 0);
    atomic_init(&gm_sim.pool_attr_calls, 0);
    atomic_init(&gm_sim.stream_syncs, 0);
    if (gm_sim_ext_init(&gm_sim.vmm_va, SIM_VMM_BASE, SIM_VMM_BASE + SIM_VMM_SPAN) != 0 ||
        gm_sim_ext_init(&gm_sim.low_va, SIM_LOW_BASE, SIM_LOW_END) != 0) {
        sim_init_rc = CUDA_ERROR_OUT_OF_MEMORY;
        return;
    }
    for (int i = 0; i < gm_sim.cfg.ndev; i++) {
        if (dev_init(&gm_sim.dev[i], i) != 0) {
            sim_init_rc = CUDA_ERROR_OUT_OF_MEMORY;
            return;
        }
    }
    if (gm_sim_board_open(&gm_sim.cfg.machine)) {
        pthread_atfork(NULL, NULL, board_fork_child);
        atexit(gm_sim_board_close);
    }
    sim_init_rc = CUDA_SUCCESS;
    atomic_store_explicit(&sim_ready, true, memory_order_release);
}

CUresult cuInit(unsigned int Flags)
{
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_once(&sim_once, sim_init_once);
    return sim_init_rc;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
    if (driverVersion == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = SIM_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

CUresult gm_sim_ready(void)
{
    /* Pairs with the release store at the end of sim_init_once. */
    return atomic_load_explicit(&sim_ready, memory_order_acquire)
               ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

bool gm_sim_valid_dev(CUdevice d)
{
    return d >= 0 && d < gm_sim.cfg.ndev;
}

/* ---- allocation gate ----------------------------------------------------- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void gm_sim_latency(void)
{
    uint64_t ns = gm_sim.cfg.latency_ns;
    if (ns == 0)
        return;
    uint64_t start = now_ns();
    while (now_ns() - start < ns)
        ;
}

CUresult gm_sim_alloc_gate(void)
{
    uint64_t n = atomic_fetch_add_explicit(&gm_sim.alloc_calls, 1, memory_order_relaxed) + 1;
    const struct gm_sim_config *c = &gm_sim.cfg;

    if (c->fail_n != 0 && (n == c->fail_n || (c->fail_from && n > c->fail_n)))
        return c->fail_code;
    gm_sim_latency();
    return CUDA_SUCCESS;
}

/* ---- capacity and handles ------------------------------------------------ */

bool gm_sim_charge(struct gm_sim_dev *d, uint64_t bytes)
{
    if (bytes > d->capacity - d->used)
        return false;
    d->used += bytes;
    gm_sim_publish(d);
    return true;
}

void gm_sim_uncharge(struct gm_sim_dev *d, uint64_t bytes)
{
    d->used = bytes > d->used ? 0 : d->used - bytes;
    gm_sim_publish(d);
}

void gm_sim_publish(const struct gm_sim_dev *d)
{
    gm_sim_board_set(gm_sim.cfg.phys[d->ordinal], d->used, (uint32_t)d->nctx);
}

void *gm_sim_lock_handle(int kind, uint64_t key, struct gm_sim_dev **dp)
{
    for (;;) {
        int dev, dev2;
        void *obj = gm_sim_reg_find(kind, key, &dev);
        if (obj == NULL)
            return NULL;
        struct gm_sim_dev *d = &gm_sim.dev[dev];
        pthread_mutex_lock(&d->lock);
        void *again = gm_sim_reg_find(kind, key, &dev2);
        if (again == obj && dev2 == dev) {
            *dp = d;
            return obj;
        }
        pthread_mutex_unlock(&d->lock);
        if (again == NULL)
            return NULL;
    }
}

uint64_t gm_simcuda_context_bytes(void)
{
    return gm_sim_ready() == CUDA_SUCCESS ? gm_sim.cfg.context : 0;
}

int gm_simcuda_stats(int dev, struct gm_simcuda_stats *out)
{
    if (gm_sim_ready() != CUDA_SUCCESS || !gm_sim_valid_dev(dev) || out == NULL)
        return -1;
    struct gm_sim_dev *d = &gm_sim.dev[dev];
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&d->lock);
    out->capacity = d->capacity;
    out->used = d->used;
    out->context = d->ctx_bytes;
    out->alloc = d->alloc_bytes;
    out->pool_reserved = d->pool_reserved;
    out->pool_used = d->pool_used;
    out->vmm = d->vmm_bytes;
    out->arrays = d->array_bytes;
    out->managed = d->managed_bytes;
    out->live = d->live.n;
    out->contexts = d->nctx;
    out->primary_refs = atomic_load(&d->primary_refs);
    pthread_mutex_unlock(&d->lock);
    pthread_mutex_lock(&gm_sim.host_lock);
    out->host = gm_sim.host_bytes;
    pthread_mutex_unlock(&gm_sim.host_lock);
    out->alloc_calls = atomic_load(&gm_sim.alloc_calls);
    out->pool_attr_calls = atomic_load(&gm_sim.pool_attr_calls);
    out->stream_syncs = atomic_load(&gm_sim.stream_syncs);
    return 0;
}
