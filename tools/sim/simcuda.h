/*
 * tools/sim/simcuda.h — the simulated CUDA driver (build/sim/libcuda.so.1):
 * its two exported introspection calls, and the internal interface shared by
 * the tools/simcuda*.c files.
 *
 * Device memory is bookkeeping: addresses are numbers handed out from
 * per-device ranges and never dereferenced. Invariants:
 *  - every device's `used` is exactly the sum of what is charged to it
 *    (context memory + plain allocations + pool reservations + VMM physical
 *    allocations + arrays) and never exceeds `capacity`;
 *  - a live address is never handed out twice; ranges of different devices,
 *    of the low (32-bit) range and of the VMM range never overlap;
 *  - lock order: vmm_lock -> dev[i].lock -> (reg_lock | low_lock | host_lock);
 *    only one device lock is held at a time; no exported cu* function is
 *    called from inside the library (internal static functions only).
 */
#ifndef GM_SIMCUDA_H
#define GM_SIMCUDA_H

#define __CUDA_API_VERSION_INTERNAL 1
#pragma GCC visibility push(default)
#include <cuda.h>
#pragma GCC visibility pop

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/sim/simmachine.h"

/* ---- exported introspection (not part of the CUDA API) ------------------ */

/* The simulator's own view of one device, for tests and tools. */
struct gm_simcuda_stats {
    uint64_t capacity;      /* physical bytes (SIMCUDA_MEMORY) */
    uint64_t used;          /* bytes charged: every figure below but managed/host */
    uint64_t context;       /* context memory currently charged */
    uint64_t alloc;         /* cuMemAlloc/cuMemAllocPitch bytes live */
    uint64_t pool_reserved; /* bytes reserved by this device's pools */
    uint64_t pool_used;     /* bytes of pool reserve handed out */
    uint64_t vmm;           /* cuMemCreate physical bytes live */
    uint64_t arrays;        /* arrays and mipmapped arrays */
    uint64_t managed;       /* cuMemAllocManaged bytes (not charged) */
    uint64_t host;          /* pinned host bytes, process-wide (not charged) */
    uint64_t live;          /* live allocations with a device address */
    uint64_t alloc_calls;   /* allocation calls seen (SIMCUDA_FAIL counter) */
    uint64_t pool_attr_calls; /* cuMemPoolGetAttribute calls, this process */
    uint64_t stream_syncs;  /* cuStreamSynchronize(_ptsz) calls, this process */
    int contexts;           /* live contexts on this device */
    int primary_refs;       /* primary context reference count */
};

/* Fills *out for device `dev`; 0 on success, -1 before a successful cuInit
 * or for a bad ordinal. */
__attribute__((visibility("default")))
int gm_simcuda_stats(int dev, struct gm_simcuda_stats *out);

/* The bytes each context charges on its device (SIMCUDA_CONTEXT), so a
 * program whose context was refused can say what a device must hold
 * (gpumem-replay); 0 before a successful cuInit. */
__attribute__((visibility("default")))
uint64_t gm_simcuda_context_bytes(void);

/* ---- internal ----------------------------------------------------------- */

#define SIM_MAX_DEVICES GM_SIM_MAX_PHYS
#define SIM_ALIGN 512ULL                /* small allocation alignment */
#define SIM_GRAN (2ULL << 20)           /* large alignment, VMM granularity */
/* Device ranges sit above the 47-bit user address space, so a simulated
 * device address can never equal a host address. */
#define SIM_DEV_BASE 0x800000000000ULL  /* device d: base + d * SIM_DEV_SPAN */
#define SIM_DEV_SPAN (1ULL << 40)
#define SIM_VMM_BASE 0x900000000000ULL  /* cuMemAddressReserve range */
#define SIM_VMM_SPAN (1ULL << 44)
#define SIM_LOW_BASE 0x40000000ULL      /* 32-bit range for v1 allocations */
#define SIM_LOW_END 0x100000000ULL
#define SIM_DRIVER_VERSION 13000

static inline uint64_t sim_round(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

/* Sorted, disjoint, coalesced free extents [lo, hi): an address allocator. */
struct gm_sim_ext {
    uint64_t lo, hi;
};
struct gm_sim_extents {
    struct gm_sim_ext *v;
    size_t n, cap;
};
int gm_sim_ext_init(struct gm_sim_extents *e, uint64_t lo, uint64_t hi);
void gm_sim_ext_fini(struct gm_sim_extents *e);
/* First fit; returns the address or 0 when nothing fits. */
uint64_t gm_sim_ext_take(struct gm_sim_extents *e, uint64_t size, uint64_t align);
/* Takes exactly [at, at + size); -1 if any of it is not free. */
int gm_sim_ext_take_at(struct gm_sim_extents *e, uint64_t at, uint64_t size);
void gm_sim_ext_give(struct gm_sim_extents *e, uint64_t lo, uint64_t size);
/* True when the whole of [lo, hi) is one free extent. */
bool gm_sim_ext_all_free(const struct gm_sim_extents *e, uint64_t lo, uint64_t hi);

/* Kinds of address-bearing records. */
enum sim_kind {
    SIM_K_ALLOC = 1,    /* cuMemAlloc / cuMemAllocPitch */
    SIM_K_MANAGED,      /* cuMemAllocManaged */
    SIM_K_BLOCK,        /* a block of a pool (owner = pool, aux = chunk) */
    SIM_K_RESERVE,      /* a cuMemAddressReserve range */
    SIM_K_MAP,          /* a cuMemMap mapping (owner = VMM handle) */
    SIM_K_HOST,         /* pinned host memory */
};

/* A live range [base, base + size); span is the address space it holds. */
struct gm_sim_rec {
    uint64_t base, size, span;
    int kind;
    void *owner;
    void *aux;
    const void *ctx;    /* creating context (dropped with it), or NULL */
};
/* Records sorted by base, non-overlapping. */
struct gm_sim_rmap {
    struct gm_sim_rec *v;
    size_t n, cap;
};
int gm_sim_rmap_add(struct gm_sim_rmap *m, const struct gm_sim_rec *r);
struct gm_sim_rec *gm_sim_rmap_find(struct gm_sim_rmap *m, uint64_t base);
struct gm_sim_rec *gm_sim_rmap_covering(struct gm_sim_rmap *m, uint64_t addr);
/* First record with base >= lo (or NULL). */
struct gm_sim_rec *gm_sim_rmap_from(struct gm_sim_rmap *m, uint64_t lo);
void gm_sim_rmap_del(struct gm_sim_rmap *m, struct gm_sim_rec *r);
void gm_sim_rmap_fini(struct gm_sim_rmap *m);

/* Handle registry: validates opaque handles without dereferencing them. */
enum sim_hkind { SIM_H_CTX = 1, SIM_H_STREAM, SIM_H_POOL, SIM_H_ARRAY,
                 SIM_H_MIPMAP, SIM_H_VMM };
int gm_sim_reg_add(int kind, uint64_t key, int dev, void *obj);
/* Returns the object (and its device in *dev) or NULL. */
void *gm_sim_reg_find(int kind, uint64_t key, int *dev);
/* Call fn(obj, arg) with the registry lock held, so the object cannot be
 * unregistered (and freed) meanwhile; fn must not take other locks.
 * False when the handle is unknown. */
bool gm_sim_reg_with(int kind, uint64_t key, void (*fn)(void *obj, void *arg),
                     void *arg);
void gm_sim_reg_del(int kind, uint64_t key);

/* Contexts. The primary context of a device is dev->primary. `api` is 1
 * for contexts made by the v1 cuCtxCreate, 2 for all others: as on a real
 * driver, the v1 memory calls work only in v1 contexts and their _v2
 * counterparts only in the others. */
struct gm_sim_ctx {
    int dev;
    int api;
    bool primary;
    unsigned flags;
};

/* Objects owned by a context: streams, arrays, mipmapped arrays. */
struct gm_sim_obj {
    struct gm_sim_obj *prev, *next;
    int kind;               /* SIM_H_STREAM, SIM_H_ARRAY, SIM_H_MIPMAP */
    int dev;
    const void *ctx;
    uint64_t bytes;         /* charged (arrays; 0 for deferred-mapping ones) */
    uint64_t reqs;          /* memory requirement (arrays) */
    unsigned flags;         /* creation flags */
};

struct gm_sim_pool;

struct gm_sim_dev {
    pthread_mutex_t lock;
    int ordinal;
    uint64_t capacity, used;
    uint64_t ctx_bytes, alloc_bytes, pool_reserved, pool_used, vmm_bytes;
    uint64_t array_bytes, managed_bytes;
    int nctx;                       /* live contexts (an active primary = 1) */
    atomic_int primary_refs;
    atomic_bool primary_active;     /* refs survive a reset; activity does not */
    unsigned primary_flags;
    struct gm_sim_ctx primary;
    struct gm_sim_extents va;       /* this device's free address space */
    struct gm_sim_rmap live;        /* ALLOC, MANAGED, BLOCK records */
    struct gm_sim_pool *default_pool, *cur_pool;
    struct gm_sim_pool *pools;      /* every pool incl. destroyed, draining ones */
    struct gm_sim_obj *objs;        /* streams, arrays, mipmaps */
};

enum sim_release { SIM_RELEASE_FREE, SIM_RELEASE_SYNC };

struct gm_sim_config {
    struct gm_sim_machine machine;  /* the physical devices */
    int ndev;                       /* visible ones (CUDA_VISIBLE_DEVICES) */
    int phys[SIM_MAX_DEVICES];      /* CUDA ordinal -> physical index */
    uint64_t memory[SIM_MAX_DEVICES];
    uint64_t context;
    uint64_t latency_ns;
    uint64_t fail_n;        /* 0: no fault injection */
    bool fail_from;         /* N+ form */
    CUresult fail_code;
    enum sim_release release;
};

struct gm_sim_state {
    struct gm_sim_config cfg;
    struct gm_sim_dev dev[SIM_MAX_DEVICES];
    atomic_uint_fast64_t alloc_calls;
    atomic_uint_fast64_t pool_attr_calls; /* this process's own */
    atomic_uint_fast64_t stream_syncs;    /* this process's own */
    pthread_mutex_t vmm_lock;       /* VMM handles, reservations, mappings */
    struct gm_sim_extents vmm_va;
    struct gm_sim_rmap vmm_res;     /* RESERVE records */
    struct gm_sim_rmap vmm_map;     /* MAP records (inside reservations) */
    uint64_t next_handle;
    pthread_mutex_t host_lock;
    struct gm_sim_rmap host;
    uint64_t host_bytes;
    pthread_mutex_t low_lock;
    struct gm_sim_extents low_va;
};

extern struct gm_sim_state gm_sim;

/* CUDA_SUCCESS after a successful cuInit, else CUDA_ERROR_NOT_INITIALIZED. */
CUresult gm_sim_ready(void);
bool gm_sim_valid_dev(CUdevice d);
/* The checks a call on a device makes first, in the driver's order:
 * initialised, then the arguments (args_ok false: CUDA_ERROR_INVALID_VALUE),
 * then the ordinal (CUDA_ERROR_INVALID_DEVICE). */
CUresult gm_sim_dev_entry(CUdevice dev, bool args_ok);
/* The allocation-call gate: counts the call (SIMCUDA_FAIL) and spins for
 * SIMCUDA_LATENCY. Returns the injected error or CUDA_SUCCESS. */
CUresult gm_sim_alloc_gate(void);
/* Spins for SIMCUDA_LATENCY (frees and the like). */
void gm_sim_latency(void);

/* Finds a registered handle and returns it with its device locked (and
 * the device in *dp), or NULL with nothing locked. Handles of a device are
 * registered and unregistered only with that device locked. */
void *gm_sim_lock_handle(int kind, uint64_t key, struct gm_sim_dev **dp);

/* Charges `bytes` to a locked device; false when it does not fit. */
bool gm_sim_charge(struct gm_sim_dev *d, uint64_t bytes);
void gm_sim_uncharge(struct gm_sim_dev *d, uint64_t bytes);
/* Writes a locked device's figures to this process's board. */
void gm_sim_publish(const struct gm_sim_dev *d);

/* The current context of the calling thread, validated: its device and
 * context. CUDA_ERROR_INVALID_CONTEXT when there is none or when `api`
 * (1 or 2; 0: any) does not match its API version,
 * CUDA_ERROR_CONTEXT_IS_DESTROYED when it is gone. */
CUresult gm_sim_current(int api, int *dev, const void **ctx);
/* Device of a context handle if it is alive; -1 otherwise. */
int gm_sim_ctx_dev(CUcontext c);
/* Device of a stream (NULL/legacy/per-thread: the current context's). */
CUresult gm_sim_stream_dev(CUstream s, int *dev);

/* Registers and links a stream/array/mipmap object (device locked);
 * CUDA_ERROR_OUT_OF_MEMORY when it cannot be registered. */
CUresult gm_sim_obj_add(struct gm_sim_dev *d, struct gm_sim_obj *o);
/* Unregisters, unlinks, uncharges (arrays) and frees it; device locked. */
void gm_sim_obj_del(struct gm_sim_dev *d, struct gm_sim_obj *o);

/* Called with the device locked: frees everything owned by ctx. */
void gm_sim_mem_drop_ctx(struct gm_sim_dev *d, const void *ctx);
void gm_sim_objs_drop_ctx(struct gm_sim_dev *d, const void *ctx);

/* Pools (tools/sim/simcuda_pool.c). */
int gm_sim_pools_init(struct gm_sim_dev *d);
/* With d locked: returns a pool block (record r) to its pool. */
void gm_sim_pool_free_block(struct gm_sim_dev *d, struct gm_sim_rec *r);
/* Synchronization point on device d (SIMCUDA_POOL_RELEASE=sync). */
void gm_sim_pools_sync(int dev);

/* Device of an address in a device range; -1 when outside them all. */
int gm_sim_addr_dev(uint64_t addr);
/* Locks the device holding a live ALLOC/MANAGED/BLOCK record covering
 * addr (exact base when `exact`); returns the record, device locked, or
 * NULL with nothing locked. */
struct gm_sim_rec *gm_sim_lock_rec(uint64_t addr, bool exact, struct gm_sim_dev **dp);
/* Frees a plain/managed/pool record; device locked. */
void gm_sim_free_rec(struct gm_sim_dev *d, struct gm_sim_rec *r);

/* Error names and strings. */
const char *gm_sim_err_name(CUresult e);

#endif
