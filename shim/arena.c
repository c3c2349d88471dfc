/*
 * shim/arena.c — static-mode sub-allocator over one reserved region (see
 * arena.h for the contract).
 *
 * Host-side records, one per block, tile the region in address order (a
 * doubly linked list: prev/next are the physical neighbours, so coalescing
 * is O(1)). A free block sits in the treap of its class, class =
 * floor(log2(size / 512)), ordered by (size, offset); cls_map has bit c set
 * while class c is non-empty. A used block sits in a chained hash keyed by
 * offset (the chain link reuses the tree's left pointer, since a block is
 * never in both).
 *
 * Best fit: in the request's own class, the lowest (size, offset) with
 * size >= request; failing that, the smallest block of the next non-empty
 * class (its every block is larger than any in the request's class). Both
 * are O(log n), so the result is the smallest block that fits, lowest
 * address first among equals. The chosen block is split at its low end:
 * the allocation keeps the record, the remainder gets a new one.
 *
 * Invariants (checked by gm_arena_check): blocks tile [0, size); sizes and
 * offsets are multiples of 512; no two free blocks are adjacent; every free
 * block is in exactly the treap of its class (BST order on (size, offset),
 * heap order on prio), every used block in the hash; used_bytes is the sum
 * of used sizes. The record at offset 0 is never released (splits keep the
 * low part, merges keep the lower record), so head stays valid.
 *
 * Memory order: the pub_* figures are stored relaxed under the lock after
 * each change and loaded relaxed by readers; they are statistics, each a
 * value that existed, with no ordering promised between them.
 */
#include "shim/arena.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#define GRAIN_SHIFT 9
#define HASH_FIRST_BITS 9
#define SLAB_FIRST ((size_t)64 << 10)
#define SLAB_MAX ((size_t)8 << 20)

struct gm_arena_blk {
    uint64_t off;
    uint64_t size;
    struct gm_arena_blk *prev, *next;   /* physical neighbours */
    struct gm_arena_blk *l, *r;         /* treap children; l: hash/spare link */
    uint32_t prio;
    uint8_t is_free;
};

struct gm_arena_slab {
    struct gm_arena_slab *next;
    size_t bytes;
};

/* ---- host memory ------------------------------------------------------- */

static void *map_bytes(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static int slab_grow(struct gm_arena *a)
{
    size_t bytes = a->next_slab ? a->next_slab : SLAB_FIRST;
    struct gm_arena_slab *s = map_bytes(bytes);
    if (!s)
        return -ENOMEM;
    s->next = a->slabs;
    s->bytes = bytes;
    a->slabs = s;
    a->bump = (char *)s + 64;
    a->bump_end = (char *)s + bytes;
    a->next_slab = bytes < SLAB_MAX ? bytes * 2 : SLAB_MAX;
    return 0;
}

static struct gm_arena_blk *blk_get(struct gm_arena *a)
{
    struct gm_arena_blk *b = a->spare;
    if (b) {
        a->spare = b->l;
        return b;
    }
    if ((size_t)(a->bump_end - a->bump) < sizeof *b && slab_grow(a) != 0)
        return NULL;
    b = (struct gm_arena_blk *)(void *)a->bump;
    a->bump += sizeof *b;
    return b;
}

static void blk_put(struct gm_arena *a, struct gm_arena_blk *b)
{
    b->l = a->spare;
    a->spare = b;
}

/* ---- free-block treaps ------------------------------------------------- */

static inline unsigned size_class(uint64_t size)
{
    return 63u - (unsigned)__builtin_clzll(size >> GRAIN_SHIFT);
}

static inline int key_less(const struct gm_arena_blk *x,
                           const struct gm_arena_blk *y)
{
    return x->size < y->size || (x->size == y->size && x->off < y->off);
}

static uint32_t next_prio(struct gm_arena *a)
{
    uint64_t x = a->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    a->rng = x;
    return (uint32_t)((x * 2685821657736338717ull) >> 32);
}

/* Splits treap t into keys < k (*lo) and keys > k (*hi); k is not in t. */
static void split(struct gm_arena_blk *t, const struct gm_arena_blk *k,
                  struct gm_arena_blk **lo, struct gm_arena_blk **hi)
{
    while (t) {
        if (key_less(t, k)) {
            *lo = t;
            lo = &t->r;
            t = t->r;
        } else {
            *hi = t;
            hi = &t->l;
            t = t->l;
        }
    }
    *lo = NULL;
    *hi = NULL;
}

/* Joins treaps x and y where every key of x is below every key of y. */
static struct gm_arena_blk *join(struct gm_arena_blk *x,
                                 struct gm_arena_blk *y)
{
    struct gm_arena_blk *root, **p = &root;
    while (x && y) {
        if (x->prio > y->prio) {
            *p = x;
            p = &x->r;
            x = x->r;
        } else {
            *p = y;
            p = &y->l;
            y = y->l;
        }
    }
    *p = x ? x : y;
    return root;
}

static void free_insert(struct gm_arena *a, struct gm_arena_blk *b)
{
    unsigned c = size_class(b->size);
    struct gm_arena_blk **p = &a->cls[c];
    b->is_free = 1;
    b->prio = next_prio(a);
    while (*p && (*p)->prio >= b->prio)
        p = key_less(b, *p) ? &(*p)->l : &(*p)->r;
    split(*p, b, &b->l, &b->r);
    *p = b;
    a->cls_map |= 1ull << c;
}

static void free_remove(struct gm_arena *a, struct gm_arena_blk *b)
{
    unsigned c = size_class(b->size);
    struct gm_arena_blk **p = &a->cls[c];
    while (*p != b)
        p = key_less(b, *p) ? &(*p)->l : &(*p)->r;
    *p = join(b->l, b->r);
    if (!a->cls[c])
        a->cls_map &= ~(1ull << c);
    b->is_free = 0;
    b->l = b->r = NULL;
}

/* The smallest free block of at least need bytes, or NULL. */
static struct gm_arena_blk *best_fit(const struct gm_arena *a, uint64_t need)
{
    unsigned c = size_class(need);
    struct gm_arena_blk *best = NULL, *t = a->cls[c];
    while (t) {
        if (t->size >= need) {
            best = t;
            t = t->l;
        } else {
            t = t->r;
        }
    }
    if (best)
        return best;
    uint64_t above = c >= 63 ? 0 : a->cls_map & ~((2ull << c) - 1);
    if (!above)
        return NULL;
    t = a->cls[__builtin_ctzll(above)];
    while (t->l)
        t = t->l;
    return t;
}

/* ---- used-block hash --------------------------------------------------- */

static inline uint64_t hash_slot(const struct gm_arena *a, uint64_t off)
{
    return ((off >> GRAIN_SHIFT) * 0x9e3779b97f4a7c15ull) >> a->hash_shift;
}

/* Doubles the bucket array. On mapping failure the old one stays (chains
 * grow longer, nothing breaks). Runs under the lock, amortised O(1). */
static void hash_grow(struct gm_arena *a)
{
    uint64_t n = a->hash_mask + 1, n2 = n * 2;
    struct gm_arena_blk **h2 = map_bytes(n2 * sizeof *h2);
    if (!h2)
        return;
    struct gm_arena_blk **h = a->hash;
    a->hash = h2;
    a->hash_mask = n2 - 1;
    a->hash_shift--;
    for (uint64_t i = 0; i < n; i++) {
        struct gm_arena_blk *b = h[i];
        while (b) {
            struct gm_arena_blk *next = b->l;
            uint64_t s = hash_slot(a, b->off);
            b->l = h2[s];
            h2[s] = b;
            b = next;
        }
    }
    munmap(h, n * sizeof *h);
}

static void hash_insert(struct gm_arena *a, struct gm_arena_blk *b)
{
    if (a->nused > a->hash_mask)
        hash_grow(a);
    uint64_t s = hash_slot(a, b->off);
    b->l = a->hash[s];
    a->hash[s] = b;
    a->nused++;
}

static struct gm_arena_blk *hash_take(struct gm_arena *a, uint64_t off)
{
    struct gm_arena_blk **p = &a->hash[hash_slot(a, off)];
    while (*p && (*p)->off != off)
        p = &(*p)->l;
    struct gm_arena_blk *b = *p;
    if (b) {
        *p = b->l;
        b->l = NULL;
        a->nused--;
    }
    return b;
}

/* ---- figures ----------------------------------------------------------- */

static uint64_t largest_free(const struct gm_arena *a)
{
    if (!a->cls_map)
        return 0;
    const struct gm_arena_blk *t = a->cls[63 - __builtin_clzll(a->cls_map)];
    while (t->r)
        t = t->r;
    return t->size;
}

static uint32_t frag_of(uint64_t free_bytes, uint64_t largest)
{
    if (free_bytes == 0)
        return 0;
    return (uint32_t)((unsigned __int128)(free_bytes - largest) * 1000000u /
                      free_bytes);
}

static void publish(struct gm_arena *a)
{
    uint64_t largest = largest_free(a);
    atomic_store_explicit(&a->pub_used, a->used_bytes, memory_order_relaxed);
    atomic_store_explicit(&a->pub_largest, largest, memory_order_relaxed);
    atomic_store_explicit(&a->pub_live, a->nused, memory_order_relaxed);
    atomic_store_explicit(&a->pub_frag,
                          frag_of(a->size - a->used_bytes, largest),
                          memory_order_relaxed);
}

/* ---- public API -------------------------------------------------------- */

static void release_maps(struct gm_arena *a)
{
    struct gm_arena_slab *s = a->slabs;
    while (s) {
        struct gm_arena_slab *next = s->next;
        munmap(s, s->bytes);
        s = next;
    }
    if (a->hash)
        munmap(a->hash, (a->hash_mask + 1) * sizeof *a->hash);
}

int gm_arena_init(struct gm_arena *a, uint64_t base, uint64_t size)
{
    memset(a, 0, sizeof *a);
    size &= ~(uint64_t)(GM_ARENA_ALIGN - 1);
    if (base % GM_ARENA_ALIGN || size == 0 || size > UINT64_MAX - base)
        return -EINVAL;
    a->base = base;
    a->size = size;
    a->rng = 0x2545f4914f6cdd1dull ^ base;
    a->hash_shift = 64 - HASH_FIRST_BITS;
    a->hash_mask = (1ull << HASH_FIRST_BITS) - 1;
    a->hash = map_bytes((a->hash_mask + 1) * sizeof *a->hash);
    struct gm_arena_blk *b = a->hash ? blk_get(a) : NULL;
    if (!b || pthread_mutex_init(&a->lock, NULL) != 0) {
        release_maps(a);
        memset(a, 0, sizeof *a);
        return -ENOMEM;
    }
    memset(b, 0, sizeof *b);
    b->size = size;
    a->head = b;
    free_insert(a, b);
    publish(a);
    return 0;
}

void gm_arena_destroy(struct gm_arena *a)
{
    if (!a->hash)
        return;   /* never initialised, or destroyed already */
    release_maps(a);
    pthread_mutex_destroy(&a->lock);
    memset(a, 0, sizeof *a);
}

int gm_arena_alloc(struct gm_arena *a, uint64_t size, uint64_t *addr_out,
                   uint64_t *charged_out)
{
    if (size == 0 || !addr_out)
        return -EINVAL;
    if (size > a->size)
        return -ENOMEM;
    uint64_t need = (size + GM_ARENA_ALIGN - 1) & ~(uint64_t)(GM_ARENA_ALIGN - 1);

    pthread_mutex_lock(&a->lock);
    struct gm_arena_blk *b = best_fit(a, need), *rest = NULL;
    if (b && b->size > need && !(rest = blk_get(a)))
        b = NULL;
    if (!b) {
        pthread_mutex_unlock(&a->lock);
        return -ENOMEM;
    }
    free_remove(a, b);
    if (rest) {
        rest->off = b->off + need;
        rest->size = b->size - need;
        rest->prev = b;
        rest->next = b->next;
        if (b->next)
            b->next->prev = rest;
        b->next = rest;
        b->size = need;
        free_insert(a, rest);
    }
    hash_insert(a, b);
    a->used_bytes += need;
    uint64_t addr = a->base + b->off;
    publish(a);
    pthread_mutex_unlock(&a->lock);

    *addr_out = addr;
    if (charged_out)
        *charged_out = need;
    return 0;
}

/* Absorbs b->next (free, already out of its treap) into b. */
static void absorb_next(struct gm_arena *a, struct gm_arena_blk *b)
{
    struct gm_arena_blk *n = b->next;
    b->size += n->size;
    b->next = n->next;
    if (n->next)
        n->next->prev = b;
    blk_put(a, n);
}

int gm_arena_free(struct gm_arena *a, uint64_t addr, uint64_t *size_out)
{
    uint64_t off = addr - a->base;
    if (off >= a->size || off % GM_ARENA_ALIGN)
        return -ENOENT;

    pthread_mutex_lock(&a->lock);
    struct gm_arena_blk *b = hash_take(a, off);
    if (!b) {
        pthread_mutex_unlock(&a->lock);
        return -ENOENT;
    }
    uint64_t size = b->size;
    a->used_bytes -= size;
    if (b->prev && b->prev->is_free) {
        free_remove(a, b->prev);
        b = b->prev;
        absorb_next(a, b);
    }
    if (b->next && b->next->is_free) {
        free_remove(a, b->next);
        absorb_next(a, b);
    }
    free_insert(a, b);
    publish(a);
    pthread_mutex_unlock(&a->lock);

    if (size_out)
        *size_out = size;
    return 0;
}

int gm_arena_owns(const struct gm_arena *a, uint64_t addr)
{
    return addr - a->base < a->size;
}

uint64_t gm_arena_used(const struct gm_arena *a)
{
    return atomic_load_explicit(&a->pub_used, memory_order_relaxed);
}

uint64_t gm_arena_free_bytes(const struct gm_arena *a)
{
    return a->size - gm_arena_used(a);
}

uint64_t gm_arena_largest_free(const struct gm_arena *a)
{
    return atomic_load_explicit(&a->pub_largest, memory_order_relaxed);
}

uint64_t gm_arena_live(const struct gm_arena *a)
{
    return atomic_load_explicit(&a->pub_live, memory_order_relaxed);
}

uint32_t gm_arena_frag_ppm(const struct gm_arena *a)
{
    return atomic_load_explicit(&a->pub_frag, memory_order_relaxed);
}

/* ---- validation -------------------------------------------------------- */

struct tally {
    uint64_t blocks;
    uint64_t bytes;
    int bad;
};

static void check_treap(const struct gm_arena_blk *t, unsigned c,
                        const struct gm_arena_blk *lo,
                        const struct gm_arena_blk *hi, struct tally *w)
{
    if (!t || w->bad)
        return;
    if (!t->is_free || size_class(t->size) != c ||
        (lo && !key_less(lo, t)) || (hi && !key_less(t, hi)) ||
        (t->l && t->l->prio > t->prio) || (t->r && t->r->prio > t->prio)) {
        w->bad = 1;
        return;
    }
    w->blocks++;
    w->bytes += t->size;
    check_treap(t->l, c, lo, t, w);
    check_treap(t->r, c, t, hi, w);
}

static int check_locked(const struct gm_arena *a)
{
    struct tally used = { 0, 0, 0 }, freeb = { 0, 0, 0 }, tree = { 0, 0, 0 };
    uint64_t at = 0, maxfree = 0;
    const struct gm_arena_blk *prev = NULL;
    for (const struct gm_arena_blk *b = a->head; b; prev = b, b = b->next) {
        if (b->off != at || b->prev != prev || b->size == 0 ||
            b->size % GM_ARENA_ALIGN || b->size > a->size - at)
            return -1;
        if (b->is_free && prev && prev->is_free)
            return -1;   /* missed coalescing */
        struct tally *t = b->is_free ? &freeb : &used;
        t->blocks++;
        t->bytes += b->size;
        if (b->is_free && b->size > maxfree)
            maxfree = b->size;
        if (!b->is_free) {
            const struct gm_arena_blk *h = a->hash[hash_slot(a, b->off)];
            while (h && h != b)
                h = h->l;
            if (!h)
                return -1;
        }
        at += b->size;
    }
    if (at != a->size || a->head->off != 0)
        return -1;
    for (unsigned c = 0; c < GM_ARENA_CLASSES; c++) {
        if (!a->cls[c] != !(a->cls_map >> c & 1))
            return -1;
        check_treap(a->cls[c], c, NULL, NULL, &tree);
    }
    if (tree.bad || tree.blocks != freeb.blocks || tree.bytes != freeb.bytes)
        return -1;
    uint64_t chained = 0;
    for (uint64_t i = 0; i <= a->hash_mask; i++)
        for (const struct gm_arena_blk *h = a->hash[i]; h; h = h->l)
            chained++;
    if (chained != used.blocks || a->nused != used.blocks ||
        a->used_bytes != used.bytes || used.bytes + freeb.bytes != a->size)
        return -1;
    if (gm_arena_used(a) != used.bytes || gm_arena_live(a) != used.blocks ||
        largest_free(a) != maxfree || gm_arena_largest_free(a) != maxfree ||
        gm_arena_frag_ppm(a) != frag_of(freeb.bytes, maxfree))
        return -1;
    return 0;
}

int gm_arena_check(struct gm_arena *a)
{
    pthread_mutex_lock(&a->lock);
    int rc = check_locked(a);
    pthread_mutex_unlock(&a->lock);
    return rc;
}
