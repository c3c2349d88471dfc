/*
 * shim/account/track.h — the live-allocation table: (namespace, pointer or handle)
 * -> what was charged for it (size, device, API, reference count).
 *
 * Sharded open-addressing hash (256 shards, linear probing, backward-shift
 * deletion, power-of-two capacity grown by doubling at 70% load), each
 * shard behind its own spinlock, so threads touching different allocations
 * almost never meet. Storage comes from mmap, never malloc. Invariant: a
 * key appears at most once per namespace; an entry's size is exactly what
 * was charged to the budget for it, so removing it releases exactly that.
 */
#ifndef GM_TRACK_H
#define GM_TRACK_H

#include <stdbool.h>
#include <stdint.h>

#include "shim/base/compiler.h"

enum gm_ns {
    GM_NS_NONE = 0,
    GM_NS_PTR,      /* device pointer (cuMemAlloc*, async, managed, arena) */
    GM_NS_HANDLE,   /* VMM allocation handle (cuMemCreate) */
    GM_NS_ARRAY,    /* CUarray */
    GM_NS_MIPMAP,   /* CUmipmappedArray */
    GM_NS_HOST,     /* pinned host pointer */
};

/* Entry flags. */
#define GM_AF_SPILL   0x02u  /* served as managed memory after a refusal */
#define GM_AF_ASYNC   0x04u  /* stream-ordered allocation */
#define GM_AF_UNCHARGED 0x08u /* recorded but not charged to the limit */

struct gm_alloc {
    uint64_t key;
    uint64_t size;     /* bytes charged */
    uint64_t aux;      /* async allocations: the pool they came from */
    uint8_t dev;       /* < GM_MAX_DEVICES (64) */
    uint8_t ns;        /* enum gm_ns; 0 = empty slot */
    uint8_t api;       /* enum gm_api */
    uint8_t flags;     /* GM_AF_* */
    union {
        uint32_t refs;     /* VMM handles: reference count */
        uint32_t fragmark; /* device pointers: the fragmentation log's mark
                              of its add (gm_fragq_mark; 0: none) */
    };
    uint32_t birth_t;  /* CLOCK_REALTIME >> 24 (16.8 ms units, modulo
                          2^32) when charged; 0 = unknown (OOM ages) */
    uint32_t birth_step; /* the step count when charged */
};
_Static_assert(sizeof(struct gm_alloc) == 40, "gm_alloc: 40 bytes");

/* Insert a new entry. If the key is already present (a free we never saw),
 * the old entry is replaced and copied to *old, and 1 is returned; 0 when
 * the key was new; -1 when memory for the table could not be had. */
int gm_track_insert(const struct gm_alloc *a, struct gm_alloc *old);
/* Remove and return the entry; false when unknown. */
bool gm_track_remove(enum gm_ns ns, uint64_t key, struct gm_alloc *out);
/* Copy the entry out without removing it; false when unknown. */
bool gm_track_find(enum gm_ns ns, uint64_t key, struct gm_alloc *out);
/* Add a reference (VMM retain); false when unknown. */
bool gm_track_ref(enum gm_ns ns, uint64_t key);
/* Drop a reference. Returns 1 and removes the entry (copied to *out) when
 * the count reaches zero, 0 when references remain, -1 when unknown. */
int gm_track_unref(enum gm_ns ns, uint64_t key, struct gm_alloc *out);
/* Number of live entries (sum over shards; approximate under writers). */
uint64_t gm_track_count(void);
/* Live entries of namespace ns whose aux is `aux` (a scan of every shard
 * under its lock: for rare paths only, such as a pool's destruction). */
uint64_t gm_track_count_aux(enum gm_ns ns, uint64_t aux);
/* Call fn(ctx, entry) for live entries, each shard under its lock, at
 * most max entries in all (a bound for cold paths: the OOM snapshot).
 * Returns the number visited; *truncated tells whether entries were left
 * unvisited. */
uint64_t gm_track_walk(void (*fn)(void *ctx, const struct gm_alloc *a),
                       void *ctx, uint64_t max, bool *truncated);
/* Forget everything (fork child): unmaps the tables. */
void gm_track_reset(void);

#endif
