/*
 * tools/replay/replay.c — gpumem-replay: issues the driver calls of one
 * process (section) of a recording (or text trace) again, in order, through
 * whatever libgpumem.so is preloaded, over the driver named on its
 * command line (the simulated one when run by `gpumem replay`), and
 * prints what happened as "key value" lines for `gpumem replay` (also why
 * its context could not be made: "context_rc", "context_size").
 *
 * Invariants: recorded pointers and handles are mapped to the replay's
 * own; a free meets the oldest live allocation of its recorded address
 * (two threads' records can cross: a free is stored after the
 * allocation that reused its address, never the other way round for one
 * address); calls the original driver failed for reasons other than
 * memory (rc not 0 and not out of memory) are skipped and counted, as
 * are frees of what the replay could not allocate; a handle is released
 * at its last recorded release, a retain adding one; figures come from the
 * replay's own telemetry segment, read at the end with the allocations
 * still live (live at the end is what the recording left). Each
 * allocation is issued on its recorded device (gm_tev_device), in that
 * device's primary context, made at the start for every device the
 * section uses.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "shim/base/mix.h"
#include "tools/lib/reader.h"
#include "tools/lib/trace.h"
#include "tools/lib/util.h"

#define OOM 2u  /* CUDA_ERROR_OUT_OF_MEMORY */

static struct {
    CUresult (*init)(unsigned);
    CUresult (*dev_get)(CUdevice *, int);
    CUresult (*pctx_retain)(CUcontext *, CUdevice);
    CUresult (*ctx_set)(CUcontext);
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*managed)(CUdeviceptr *, size_t, unsigned);
    CUresult (*pitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
    CUresult (*aalloc)(CUdeviceptr *, size_t, CUstream);
    CUresult (*palloc)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    CUresult (*free)(CUdeviceptr);
    CUresult (*afree)(CUdeviceptr, CUstream);
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t,
                       const CUmemAllocationProp *, unsigned long long);
    CUresult (*release)(CUmemGenericAllocationHandle);
    CUresult (*stream_create)(CUstream *, unsigned);
    CUresult (*stream_sync)(CUstream);
    CUresult (*ctx_sync)(void);
    CUresult (*get_pool)(CUmemoryPool *, CUdevice);
    CUresult (*trim)(CUmemoryPool, size_t);
} cu;

/* ---- recorded -> replayed ------------------------------------------------ */

struct ent { uint64_t key, val, order; uint8_t used, ns; };
static struct ent *tab;
static size_t tcap, tn, tdead;
static uint64_t order_next;

static size_t hash(uint64_t k, unsigned ns)
{
    /* addresses from a file: mixed whole (see shim/base/mix.h) */
    return (size_t)gm_mix64(k ^ ((uint64_t)ns << 59));
}

static void grow(void);

static void put_o(unsigned ns, uint64_t key, uint64_t val, uint64_t order)
{
    if ((tn + tdead + 1) * 2 > tcap)
        grow();
    size_t i = hash(key, ns) & (tcap - 1);
    while (tab[i].used == 1)
        i = (i + 1) & (tcap - 1);
    if (tab[i].used == 2)
        tdead--;
    tab[i] = (struct ent){ key, val, order, 1, (uint8_t)ns };
    tn++;
}

static void put(unsigned ns, uint64_t key, uint64_t val)
{
    put_o(ns, key, val, order_next++);
}

/* Double the table; entries keep their order numbers. */
static void grow(void)
{
    struct ent *old = tab;
    size_t oc = tcap;
    tcap = tcap ? tcap * 2 : 1024;
    while ((tn + 1) * 2 > tcap)
        tcap *= 2;
    tab = calloc(tcap, sizeof *tab);
    if (tab == NULL) {
        fprintf(stderr, "gpumem-replay: out of memory\n");
        exit(1);
    }
    tn = tdead = 0;
    for (size_t i = 0; i < oc; i++)
        if (old[i].used == 1)
            put_o(old[i].ns, old[i].key, old[i].val, old[i].order);
    free(old);
}

/* The slot of the oldest live entry of key; SIZE_MAX when none. */
static size_t oldest(unsigned ns, uint64_t key)
{
    if (tcap == 0)
        return SIZE_MAX;
    size_t i = hash(key, ns) & (tcap - 1), best = SIZE_MAX;
    while (tab[i].used != 0) {
        if (tab[i].used == 1 && tab[i].key == key && tab[i].ns == ns &&
            (best == SIZE_MAX || tab[i].order < tab[best].order))
            best = i;
        i = (i + 1) & (tcap - 1);
    }
    return best;
}

/* The oldest live entry's value of key, left in place; 0 when none. */
static uint64_t peek(unsigned ns, uint64_t key)
{
    size_t i = oldest(ns, key);
    return i == SIZE_MAX ? 0 : tab[i].val;
}

/* Remove the oldest live entry of key; false when none. */
static bool take(unsigned ns, uint64_t key, uint64_t *val)
{
    size_t best = oldest(ns, key);
    if (best == SIZE_MAX)
        return false;
    *val = tab[best].val;
    tab[best].used = 2;
    tn--;
    tdead++;
    return true;
}

enum {
    NS_PTR = 0, NS_HANDLE = 1, NS_STREAM = 2,
    NS_MAP,     /* recorded mapping start -> recorded handle */
    NS_MAPSZ,   /* recorded mapping start -> its length */
    NS_MAPS,    /* recorded handle -> mappings live */
    NS_DEFER,   /* recorded handle -> replayed handle, released while
                   mapped: its release waits for the last unmap */
    NS_REFS,    /* recorded handle -> its retains not yet released */
    NS_POOL,    /* recorded pool -> its device + 1 */
};

/* A count kept per recorded key (absent: 0), moved by one. */
static void count_add(unsigned ns, uint64_t key, int by)
{
    uint64_t n = 0;
    (void)take(ns, key, &n);
    n = by > 0 ? n + 1 : n > 0 ? n - 1 : 0;
    if (n > 0)
        put(ns, key, n);
}

/* The mappings of a recorded handle: a driver keeps a released handle's
 * memory until its last mapping goes, and the shim its charge; the
 * replay maps nothing, so it holds such a release back until then. */
static uint64_t maps_of(uint64_t h)
{
    return peek(NS_MAPS, h);
}

static void mapped(uint64_t ptr, uint64_t size, uint64_t h)
{
    put(NS_MAP, ptr, h);
    put(NS_MAPSZ, ptr, size);
    count_add(NS_MAPS, h, 1);
}

/* The recorded mappings back to back from ptr within size go; a handle
 * released meanwhile whose last one this was is released now. Returns
 * the releases issued. */
static unsigned unmapped(uint64_t ptr, uint64_t size)
{
    unsigned n = 0;
    uint64_t at = ptr, h, sz, v;
    while (at - ptr < size && take(NS_MAP, at, &h)) {
        if (!take(NS_MAPSZ, at, &sz) || sz == 0)
            break;
        count_add(NS_MAPS, h, -1);
        if (maps_of(h) == 0 && take(NS_DEFER, h, &v)) {
            cu.release(v);
            n++;
        }
        at += sz;
    }
    return n;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The devices of our own segment, mapped read-only, for their `waits`
 * counters: a call during which its device's grew waited (on_oom=wait).
 * *n: how many blocks. */
static const struct gm_abi_dev *own_devs(const char *pfx, unsigned *n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.%ld", gm_tool_shm_dir(), pfx,
             (long)getpid());
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct gm_abi_header h;
    const void *p = MAP_FAILED;
    if (read(fd, &h, sizeof h) == (ssize_t)sizeof h &&
        h.dev_offset >= sizeof h && h.dev_size == sizeof(struct gm_abi_dev) &&
        h.dev_slots >= 1)
        p = mmap(NULL, (size_t)(h.dev_offset + (uint64_t)h.dev_size *
                                                h.dev_slots),
                 PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return NULL;
    *n = h.dev_slots;
    return (const struct gm_abi_dev *)((const char *)p + h.dev_offset);
}

static const struct gm_abi_dev *seg_devs;
static unsigned seg_nslots;

static uint64_t waits_of(unsigned dev)
{
    /* relaxed: a counter, compared before and after one call of ours */
    return seg_devs != NULL && dev < seg_nslots
               ? __atomic_load_n(&seg_devs[dev].waits, __ATOMIC_RELAXED) : 0;
}

/* ---- devices ------------------------------------------------------------- */

/* The devices the section is replayed on (gm_trace_devices), each with
 * its primary context and default pool, and the one current now. */
static bool dev_used[GM_TRACE_DEVICES];
static CUcontext dev_ctx[GM_TRACE_DEVICES];
static CUmemoryPool dev_pool[GM_TRACE_DEVICES];
static unsigned dev_cur;

/* Make every used device's context; the lowest is current. 0, or the
 * driver's error. */
static CUresult make_contexts(unsigned top)
{
    CUresult r = cu.init(0);
    bool first = true;
    for (unsigned d = 0; r == CUDA_SUCCESS && d < top; d++) {
        CUdevice dv;
        if (!dev_used[d])
            continue;
        if ((r = cu.dev_get(&dv, (int)d)) != CUDA_SUCCESS ||
            (r = cu.pctx_retain(&dev_ctx[d], dv)) != CUDA_SUCCESS)
            break;
        if (cu.get_pool != NULL)
            cu.get_pool(&dev_pool[d], dv);
        if (first && (r = cu.ctx_set(dev_ctx[d])) == CUDA_SUCCESS)
            dev_cur = d;
        first = false;
    }
    return r;
}

/* The context of device d current (one the section does not use stays
 * as it is). */
static void use_device(unsigned d)
{
    if (d != dev_cur && d < GM_TRACE_DEVICES && dev_used[d] &&
        cu.ctx_set(dev_ctx[d]) == CUDA_SUCCESS)
        dev_cur = d;
}

static void *sym(void *h, const char *name, bool need)
{
    void *p = dlsym(h, name);
    if (p == NULL && need) {
        fprintf(stderr, "gpumem-replay: the driver has no %s\n", name);
        exit(1);
    }
    return p;
}

static CUstream stream_for(uint64_t rec)
{
    if (rec == 0 || cu.stream_create == NULL)
        return NULL;
    uint64_t v;
    if (take(NS_STREAM, rec, &v)) {
        put(NS_STREAM, rec, v);
        return (CUstream)(uintptr_t)v;
    }
    CUstream s = NULL;
    if (cu.stream_create(&s, 1 /* non-blocking */) != CUDA_SUCCESS)
        return NULL;
    put(NS_STREAM, rec, (uint64_t)(uintptr_t)s);
    return s;
}

/* A context the device had no room for: what one charges, when the
 * driver can say (the simulated one). True when printed. */
static bool say_context_size(void *h)
{
    uint64_t (*bytes)(void) = (uint64_t (*)(void))dlsym(h,
                                                "gm_simcuda_context_bytes");
    uint64_t b = bytes != NULL ? bytes() : 0;
    if (b == 0)
        return false;
    printf("context_size %llu\n", (unsigned long long)b);
    return true;
}

/* The figures of the devices used (those the shim saw): the device with
 * the largest peak gives the peak, its context, limit and fragmentation
 * (what a limit per device must hold), the counts are summed; then a
 * "device D peak context limit refused live_allocs live_bytes" line for
 * each. */
static void print_figures(const struct gm_snapshot *snap, unsigned top)
{
    struct gm_abi_dev sum;
    const struct gm_abi_dev *big = NULL;
    memset(&sum, 0, sizeof sum);
    for (unsigned i = 0; i < top && i < snap->dev_count; i++) {
        const struct gm_abi_dev *d = &snap->dev[i];
        if (!dev_used[i])
            continue;
        if (big == NULL || d->peak > big->peak)
            big = d;
        sum.allocs += d->allocs;
        sum.frees += d->frees;
        sum.refusals += d->refusals;
        sum.spills += d->spills;
        sum.spilled_bytes += d->spilled_bytes;
        sum.waits += d->waits;
        sum.over_limit += d->over_limit;
        sum.live_allocs += d->live_allocs;
        sum.live_bytes += d->live_bytes;
        sum.used += d->used;
    }
    if (big == NULL)
        return;
    printf("physical %llu\nlimit %llu\npeak %llu\ncontext %llu\n"
           "allocs %llu\nfrees %llu\nrefused %llu\nspills %llu\n"
           "spilled_bytes %llu\nwaits %llu\nover_limit %llu\n"
           "frag_at_peak_ppm %llu\nlive_allocs %llu\nlive_bytes %llu\n"
           "used %llu\n",
           (unsigned long long)big->physical, (unsigned long long)big->limit,
           (unsigned long long)big->peak,
           (unsigned long long)big->context_bytes,
           (unsigned long long)sum.allocs, (unsigned long long)sum.frees,
           (unsigned long long)sum.refusals, (unsigned long long)sum.spills,
           (unsigned long long)sum.spilled_bytes,
           (unsigned long long)sum.waits, (unsigned long long)sum.over_limit,
           (unsigned long long)big->frag_peak_ppm,
           (unsigned long long)sum.live_allocs,
           (unsigned long long)sum.live_bytes, (unsigned long long)sum.used);
    for (unsigned i = 0; i < top && i < snap->dev_count; i++) {
        const struct gm_abi_dev *d = &snap->dev[i];
        if (dev_used[i])
            printf("device %u %llu %llu %llu %llu %llu %llu\n", i,
                   (unsigned long long)d->peak,
                   (unsigned long long)d->context_bytes,
                   (unsigned long long)d->limit,
                   (unsigned long long)d->refusals,
                   (unsigned long long)d->live_allocs,
                   (unsigned long long)d->live_bytes);
    }
}

int main(int argc, char **argv)
{
    const char *driver = NULL, *file = NULL;
    long want = 0;      /* the section: its index in the file */
    uint64_t pace = 0;
    bool together = false;  /* paced with every process of the file */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--driver") == 0 && i + 1 < argc)
            driver = argv[++i];
        else if (strcmp(argv[i], "--section") == 0 && i + 1 < argc)
            want = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--pace") == 0 && i + 1 < argc)
            pace = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--together") == 0)
            together = true;
        else if (argv[i][0] != '-' && file == NULL)
            file = argv[i];
        else {
            fprintf(stderr, "usage: gpumem-replay --driver LIB [--section K] "
                    "[--pace ORIGIN_NS [--together]] FILE (run by "
                    "gpumem replay)\n");
            return 2;
        }
    }
    if (driver == NULL || file == NULL) {
        fprintf(stderr, "usage: gpumem-replay --driver LIB [--section K] FILE "
                "(run by gpumem replay)\n");
        return 2;
    }
    struct gm_trace t;
    char err[512];
    if (gm_trace_load(file, &t, err, sizeof err) != 0) {
        fprintf(stderr, "gpumem-replay: %s: %s\n", file, err);
        return 1;
    }
    if (want < 0 || (size_t)want >= t.nproc) {
        fprintf(stderr, "gpumem-replay: %s: no section %ld (it has %zu)\n",
                file, want, t.nproc);
        return 1;
    }
    const struct gm_tproc *p = &t.proc[want];
    struct gm_pace plan = { 0, 0, NULL, NULL };
    if (pace != 0 && gm_pace_plan(&t, together ? NULL : p, GM_PACE_GAP_NS,
                                  &plan) != 0) {
        fprintf(stderr, "gpumem-replay: out of memory\n");
        return 1;
    }
    void *h = dlopen(driver, RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL) {
        fprintf(stderr, "gpumem-replay: cannot load %s: %s\n", driver,
                dlerror());
        return 1;
    }
    cu.init = sym(h, "cuInit", true);
    cu.dev_get = sym(h, "cuDeviceGet", true);
    cu.pctx_retain = sym(h, "cuDevicePrimaryCtxRetain", true);
    cu.ctx_set = sym(h, "cuCtxSetCurrent", true);
    cu.alloc = sym(h, "cuMemAlloc_v2", true);
    cu.free = sym(h, "cuMemFree_v2", true);
    cu.managed = sym(h, "cuMemAllocManaged", false);
    cu.pitch = sym(h, "cuMemAllocPitch_v2", false);
    cu.aalloc = sym(h, "cuMemAllocAsync", false);
    cu.palloc = sym(h, "cuMemAllocFromPoolAsync", false);
    cu.afree = sym(h, "cuMemFreeAsync", false);
    cu.create = sym(h, "cuMemCreate", false);
    cu.release = sym(h, "cuMemRelease", false);
    cu.stream_create = sym(h, "cuStreamCreate", false);
    cu.stream_sync = sym(h, "cuStreamSynchronize", false);
    cu.ctx_sync = sym(h, "cuCtxSynchronize", false);
    cu.get_pool = sym(h, "cuDeviceGetMemPool", false);
    cu.trim = sym(h, "cuMemPoolTrimTo", false);

    CUresult r;
    unsigned top = gm_trace_devices(&t, p, dev_used);
    if ((r = make_contexts(top)) != CUDA_SUCCESS) {
        printf("context_rc %d\n", (int)r);
        if (r == OOM && say_context_size(h))
            return 3; /* gpumem replay says it with the device's size */
        fprintf(stderr, "gpumem-replay: the context could not be made: "
                "error %d\n", (int)r);
        return 3;
    }
    const char *pfx = getenv("GPUMEM_SHM_PREFIX");
    if (pfx == NULL || *pfx == '\0')
        pfx = "gpumem";
    seg_devs = own_devs(pfx, &seg_nslots);

    uint64_t refused = 0, first_i = 0, first_t = 0, first_size = 0;
    uint64_t first_dev = 0;
    uint64_t skipped = 0, orphan = 0, unsupported = 0, calls = 0;
    uint64_t slow_sum = 0;
    unsigned cur = 0; /* the recording's device (gm_tev_device) */
    uint64_t t0 = now_ns();
    for (size_t k = 0; k < p->count; k++) {
        const struct gm_tev *e = &t.ev[p->first + k];
        unsigned dv = gm_tev_device(e, &cur);
        bool alloc = gm_rec_op_allocates(e->op);
        if (alloc && e->rc != 0 && e->rc != OOM) {
            skipped++; /* the driver's own failure, not memory */
            continue;
        }
        if (!alloc && e->rc != 0 && e->op != GM_RO_SYNC) {
            skipped++;
            continue;
        }
        if (pace != 0) { /* at its recorded time after the origin */
            uint64_t at = pace + gm_pace_at(&plan, &t, p, e);
            struct timespec ts = { (time_t)(at / 1000000000ull),
                                   (long)(at % 1000000000ull) };
            while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts,
                                   NULL) == EINTR)
                ;
        }
        if (alloc || e->op == GM_RO_SYNC)
            use_device(dv);
        uint64_t w0 = alloc ? waits_of(dv) : 0;
        uint64_t c0 = now_ns(), v = 0;
        CUdeviceptr dp = 0;
        size_t pitch = 0;
        CUmemGenericAllocationHandle mh = 0;
        r = CUDA_SUCCESS;
        bool issued = true;
        switch (e->op) {
        case GM_RO_ALLOC:
            r = cu.alloc(&dp, (size_t)e->size);
            break;
        case GM_RO_MANAGED:
            r = cu.managed ? cu.managed(&dp, (size_t)e->size,
                                        e->aux ? (unsigned)e->aux : 1)
                           : CUDA_ERROR_NOT_SUPPORTED;
            break;
        case GM_RO_PITCH: {
            uint64_t hgt = e->aux2 & ((1ull << 48) - 1);
            unsigned el = (unsigned)(e->aux2 >> 48);
            r = cu.pitch ? cu.pitch(&dp, &pitch, (size_t)e->aux, (size_t)hgt,
                                    el ? el : 4)
                         : CUDA_ERROR_NOT_SUPPORTED;
            break;
        }
        case GM_RO_ASYNC:
            r = cu.aalloc ? cu.aalloc(&dp, (size_t)e->size, stream_for(e->aux))
                          : CUDA_ERROR_NOT_SUPPORTED;
            break;
        case GM_RO_POOL_ALLOC: /* from its device's default pool */
            if (peek(NS_POOL, e->aux2) == 0)
                put(NS_POOL, e->aux2, dv + 1u);
            r = cu.palloc && dev_pool[dv]
                    ? cu.palloc(&dp, (size_t)e->size, dev_pool[dv],
                                stream_for(e->aux))
                    : CUDA_ERROR_NOT_SUPPORTED;
            break;
        case GM_RO_CREATE: {
            CUmemAllocationProp pr;
            memset(&pr, 0, sizeof pr);
            pr.type = CU_MEM_ALLOCATION_TYPE_PINNED;
            pr.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
            pr.location.id = (int)dv;
            r = cu.create ? cu.create(&mh, (size_t)e->size, &pr, 0)
                          : CUDA_ERROR_NOT_SUPPORTED;
            break;
        }
        case GM_RO_FREE:
        case GM_RO_FREE_ASYNC:
            if (e->addr == 0) {
                issued = false; /* free(NULL): nothing to do */
                break;
            }
            if (!take(NS_PTR, e->addr, &v)) {
                orphan++;
                issued = false;
                break;
            }
            r = e->op == GM_RO_FREE || cu.afree == NULL
                    ? cu.free((CUdeviceptr)v)
                    : cu.afree((CUdeviceptr)v, stream_for(e->aux));
            break;
        case GM_RO_RETAIN: /* one more reference of a replayed handle */
            if (take(NS_DEFER, e->addr, &v)) /* released, still mapped: */
                put(NS_HANDLE, e->addr, v);  /* this is its reference now */
            else if (oldest(NS_HANDLE, e->addr) != SIZE_MAX)
                count_add(NS_REFS, e->addr, 1);
            issued = false;
            break;
        case GM_RO_RELEASE:
            if (peek(NS_REFS, e->addr) != 0) { /* a retain's reference */
                count_add(NS_REFS, e->addr, -1);
                issued = false;
                break;
            }
            if (!take(NS_HANDLE, e->addr, &v)) {
                orphan++;
                issued = false;
                break;
            }
            if (maps_of(e->addr) != 0) { /* released at its last unmap */
                put(NS_DEFER, e->addr, v);
                issued = false;
                break;
            }
            r = cu.release(v);
            break;
        case GM_RO_MAP: /* size, addr = handle, aux = start */
            mapped(e->aux, e->size, e->addr);
            issued = false;
            break;
        case GM_RO_UNMAP: /* size, aux = start */
            calls += unmapped(e->aux, e->size);
            issued = false;
            break;
        case GM_RO_SYNC:
            r = cu.ctx_sync ? cu.ctx_sync() : CUDA_SUCCESS;
            break;
        case GM_RO_POOL_TRIM: { /* the pool allocated from, else current */
            uint64_t pd = peek(NS_POOL, e->aux2);
            CUmemoryPool pool = dev_pool[pd ? pd - 1 : dev_cur];
            r = cu.trim && pool ? cu.trim(pool, (size_t)e->size) : 0;
            break;
        }
        case GM_RO_CTX:
        case GM_RO_LOST:
            issued = false; /* the context is made at the start */
            break;
        default: /* arrays: not replayed */
            unsupported++;
            issued = false;
            break;
        }
        uint64_t c1 = now_ns();
        if (!issued)
            continue;
        calls++;
        if (alloc && r == CUDA_SUCCESS) {
            if (e->op == GM_RO_CREATE)
                put(NS_HANDLE, e->addr, mh);
            else
                put(NS_PTR, e->addr, dp);
        } else if (alloc && r == OOM) {
            if (refused < 1000)
                printf("refusal_step %llu\n", (unsigned long long)e->seq);
            if (refused++ == 0) {
                first_i = e->seq;
                first_t = e->t_ns;
                first_size = e->size;
                first_dev = dv;
            }
        }
        if (alloc && waits_of(dv) != w0)
            slow_sum += c1 - c0; /* this call waited */
    }
    uint64_t t1 = now_ns();
    printf("events %zu\ncalls %llu\nskipped %llu\norphan_frees %llu\n"
           "unsupported %llu\nrefused_calls %llu\n", p->count,
           (unsigned long long)calls, (unsigned long long)skipped,
           (unsigned long long)orphan, (unsigned long long)unsupported,
           (unsigned long long)refused);
    printf("first_refusal_step %llu\nfirst_refusal_t_ns %llu\n"
           "first_refusal_size %llu\nfirst_refusal_device %llu\n"
           "replay_ns %llu\nwait_ns %llu\n",
           (unsigned long long)first_i, (unsigned long long)first_t,
           (unsigned long long)first_size, (unsigned long long)first_dev,
           (unsigned long long)(t1 - t0), (unsigned long long)slow_sum);
    /* The shim's figures, from our own segment. */
    struct gm_seg s;
    struct gm_snapshot snap;
    if (gm_seg_open(&s, gm_tool_shm_dir(), pfx, (int)getpid(),
                    err, sizeof err) == 0) {
        if (gm_seg_snapshot(&s, &snap) >= 0 && snap.dev_count > 0)
            print_figures(&snap, top);
        gm_seg_close(&s);
    } else {
        printf("segment_error %s\n", err);
    }
    fflush(stdout);
    gm_pace_free(&plan);
    gm_trace_free(&t);
    return 0;
}
