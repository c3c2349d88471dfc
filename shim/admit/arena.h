/*
 * shim/admit/arena.h — the static-mode sub-allocator: hands out pieces of one
 * region [base, base + size) that the shim reserved with a single driver
 * allocation.
 *
 * Exact best fit (the smallest free block that holds the request; the
 * lowest address among equals) over free blocks segregated by log2 size
 * class, each class an ordered tree; neighbours coalesce immediately on
 * free. Every block starts at base + a multiple of GM_ARENA_ALIGN and its
 * size is rounded up to a multiple of it. O(log n) per operation.
 *
 * The region is device memory and is never read or written: every piece of
 * metadata (block records, trees, the address hash) lives in host memory
 * mapped with mmap, never malloc.
 *
 * Invariants: the blocks tile [0, size) in address order without gaps;
 * no two free blocks are adjacent; used + free bytes == size.
 *
 * Thread safety: every call may run concurrently. alloc and free hold the
 * arena's lock (a spinlock that yields the CPU after a short spin) for the
 * O(log n) work only: no syscall except a rare mmap when the metadata
 * grows, never a driver call. The figures (used, free, largest, frag) are
 * published in atomics at the end of each alloc/free and read without the
 * lock; gm_arena_owns reads fields fixed at init.
 *
 * Errors are negative errno values; a failed call changes nothing.
 */
#ifndef GM_ARENA_H
#define GM_ARENA_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "shim/base/nodepool.h"

#define GM_ARENA_ALIGN 512u
#define GM_ARENA_CLASSES 64

struct gm_arena_blk;

struct gm_arena {
    uint64_t base;                /* fixed at init */
    uint64_t size;                /* usable bytes, a multiple of 512 */
    _Atomic int lock;             /* see arena_lock() in arena.c */
    /* Guarded by lock. */
    struct gm_arena_blk *head;    /* block at offset 0 (never released) */
    struct gm_arena_blk *cls[GM_ARENA_CLASSES]; /* free blocks per class */
    uint64_t cls_map;             /* bit c set: cls[c] not empty */
    struct gm_arena_blk **hash;   /* used blocks by offset */
    uint64_t hash_mask;           /* buckets - 1 */
    unsigned hash_shift;          /* 64 - log2(buckets) */
    uint64_t nused;               /* used blocks */
    uint64_t used_bytes;
    uint64_t largest;             /* largest free block */
    uint64_t rng;                 /* tree priorities */
    struct gm_nodepool blocks;    /* where block records come from */
    /* Published at the end of each alloc/free (relaxed; see arena.c). */
    _Atomic uint64_t pub_used;
    _Atomic uint64_t pub_largest;
    _Atomic uint64_t pub_live;
    _Atomic uint32_t pub_frag;
};

/* base must be a multiple of 512; size is rounded down to one and must be
 * at least 512; base + size must not pass 2^64. -EINVAL, or -ENOMEM when
 * host memory for the metadata could not be mapped. */
int gm_arena_init(struct gm_arena *a, uint64_t base, uint64_t size);
/* Forgets every block and unmaps the metadata. No call may be in flight. */
void gm_arena_destroy(struct gm_arena *a);

/* Best-fit allocation of size bytes rounded up to 512. On success writes
 * the address and the rounded size (charged_out may be NULL). -EINVAL for
 * size 0 or a NULL addr_out; -ENOMEM when no free block is large enough
 * (the arena is exhausted for this size) or, rarely, when host memory for
 * a block record could not be mapped. */
int gm_arena_alloc(struct gm_arena *a, uint64_t size, uint64_t *addr_out,
                   uint64_t *charged_out);
/* Frees the block starting at addr and writes its (rounded) size
 * (size_out may be NULL). -ENOENT when addr is not the start of a live
 * block: outside the arena, inside a block, already freed. */
int gm_arena_free(struct gm_arena *a, uint64_t addr, uint64_t *size_out);
/* 1 when addr lies in [base, base + size), else 0. */
int gm_arena_owns(const struct gm_arena *a, uint64_t addr);

uint64_t gm_arena_used(const struct gm_arena *a);
uint64_t gm_arena_free_bytes(const struct gm_arena *a);
uint64_t gm_arena_largest_free(const struct gm_arena *a);
uint64_t gm_arena_live(const struct gm_arena *a);   /* used blocks */
/* floor((free - largest free block) * 1e6 / free); 0 when nothing is free. */
uint32_t gm_arena_frag_ppm(const struct gm_arena *a);

/* Takes the lock and checks every invariant (tiling, coalescing, trees,
 * classes, hash, figures). O(n); for tests. 0 when sound, -1 not. */
int gm_arena_check(struct gm_arena *a);

#endif
