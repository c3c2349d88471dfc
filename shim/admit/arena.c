/*
 * shim/admit/arena.c — static-mode sub-allocator over one reserved region (see
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
#include "shim/admit/arena.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#define GRAIN_SHIFT 9
#define HASH_FIRST_BITS 9

struct gm_arena_blk {
    uint64_t off;
    uint64_t size;
    struct gm_arena_blk *prev, *next;   /* physical neighbours */
    struct gm_arena_blk *l, *r;         /* treap children; l: hash link */
    uint32_t prio;
    uint8_t is_free;
};

/* ---- lock -------------------------------------------------------------- */

/* Test-and-test-and-set with a bounded spin, then yielding the CPU: the
 * critical sections are a few hundred instructions, so a waiter normally
 * gets in while spinning; if the holder was preempted, waiters yield
 * instead of burning their time slice. Memory order: the acquire exchange
 * pairs with the release store in arena_unlock; together they publish
 * everything written under the lock. */
static void arena_lock(struct gm_arena *a)
{
    for (unsigned spins = 0;; spins++) {
        if (!atomic_exchange_explicit(&a->lock, 1, memory_order_acquire))
            return;
        while (atomic_load_explicit(&a->lock, memory_order_relaxed)) {
            if (++spins < 128) {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#elif defined(__aarch64__)
                __asm__ __volatile__("yield");
#endif
            } else {
                sched_yield();
            }
        }
    }
}

static void arena_unlock(struct gm_arena *a)
{
    atomic_store_explicit(&a->lock, 0, memory_order_release);
}

/* ---- host memory ------------------------------------------------------- */

static void *map_bytes(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static inline struct gm_arena_blk *blk_get(struct gm_arena *a)
{
    return gm_nodepool_get(&a->blocks, sizeof(struct gm_arena_blk));
}

static inline void blk_put(struct gm_arena *a, struct gm_arena_blk *b)
{
    gm_nodepool_put(&a->blocks, b);
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

/* Unlinks the free block *link (a link inside class c's treap). */
static void free_unlink(struct gm_arena *a, struct gm_arena_blk **link,
                        unsigned c)
{
    struct gm_arena_blk *b = *link;
    *link = join(b->l, b->r);
    if (!a->cls[c])
        a->cls_map &= ~(1ull << c);
    b->is_free = 0;
    b->l = b->r = NULL;
}

static void free_remove(struct gm_arena *a, struct gm_arena_blk *b)
{
    unsigned c = size_class(b->size);
    struct gm_arena_blk **p = &a->cls[c];
    while (*p != b)
        p = key_less(b, *p) ? &(*p)->l : &(*p)->r;
    free_unlink(a, p, c);
}

/* The link to the smallest free block of at least need bytes (lowest
 * offset among equals), or NULL; *cls_out is that block's class. */
static struct gm_arena_blk **best_fit(struct gm_arena *a, uint64_t need,
                                      unsigned *cls_out)
{
    unsigned c = size_class(need);
    struct gm_arena_blk **best = NULL, **p = &a->cls[c];
    while (*p) {
        if ((*p)->size >= need) {
            best = p;
            p = &(*p)->l;
        } else {
            p = &(*p)->r;
        }
    }
    if (!best) {
        uint64_t above = c >= 63 ? 0 : a->cls_map & ~((2ull << c) - 1);
        if (!above)
            return NULL;
        c = (unsigned)__builtin_ctzll(above);
        for (best = &a->cls[c]; (*best)->l; best = &(*best)->l)
            ;
    }
    *cls_out = c;
    return best;
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

/* The largest free block's size: the rightmost of the top class. */
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
    uint64_t rest = free_bytes - largest;
    if (free_bytes == 0)
        return 0;
    if (rest < (1ull << 44))   /* rest * 1e6 fits in 64 bits */
        return (uint32_t)(rest * 1000000u / free_bytes);
    return (uint32_t)((unsigned __int128)rest * 1000000u / free_bytes);
}

static void publish(struct gm_arena *a)
{
    uint64_t largest = a->largest;
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
    gm_nodepool_destroy(&a->blocks);
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
    if (!b) {
        release_maps(a);
        memset(a, 0, sizeof *a);
        return -ENOMEM;
    }
    memset(b, 0, sizeof *b);
    b->size = size;
    a->head = b;
    a->largest = size;
    free_insert(a, b);
    publish(a);
    return 0;
}

void gm_arena_destroy(struct gm_arena *a)
{
    if (!a->hash)
        return;   /* never initialised, or destroyed already */
    release_maps(a);
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

    arena_lock(a);
    unsigned c = 0;
    struct gm_arena_blk **link = best_fit(a, need, &c), *b = NULL, *rest = NULL;
    if (link) {
        b = *link;
        if (b->size > need && !(rest = blk_get(a)))
            b = NULL;
    }
    if (!b) {
        arena_unlock(a);
        return -ENOMEM;
    }
    uint64_t was = b->size;
    free_unlink(a, link, c);
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
    if (was == a->largest)
        a->largest = largest_free(a);   /* only when the largest was cut */
    hash_insert(a, b);
    a->used_bytes += need;
    uint64_t addr = a->base + b->off;
    publish(a);
    arena_unlock(a);

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

    arena_lock(a);
    struct gm_arena_blk *b = hash_take(a, off);
    if (!b) {
        arena_unlock(a);
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
    if (b->size > a->largest)
        a->largest = b->size;   /* merging only ever grows the maximum */
    publish(a);
    arena_unlock(a);

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
        largest_free(a) != maxfree || a->largest != maxfree ||
        gm_arena_largest_free(a) != maxfree ||
        gm_arena_frag_ppm(a) != frag_of(freeb.bytes, maxfree))
        return -1;
    return 0;
}

int gm_arena_check(struct gm_arena *a)
{
    arena_lock(a);
    int rc = check_locked(a);
    arena_unlock(a);
    return rc;
}
