/*
 * shim/account/track.h — the live-allocation table: (namespace, pointer or handle)
 * -> what was charged for it (size, device, API, reference count).
 *
 * Sharded open-addressing hash (256 shards, linear probing, backward-shift
 * deletion, power-of-two capacity grown by doubling at 50% load), each
 * shard behind its own spinlock, so threads touching different allocations
 * almost never meet. Storage comes from mmap, never malloc. A slot is
 * empty when its ns byte is 0 (its other bytes are then stale). Invariant: a
 * key appears at most once per namespace; an entry's size is exactly what
 * was charged to the budget for it, so removing it releases exactly that.
 */
#ifndef GM_TRACK_H
#define GM_TRACK_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "shim/base/compiler.h"
#include "shim/base/spin.h"

enum gm_ns {
    GM_NS_NONE = 0,
    GM_NS_PTR,      /* device pointer (cuMemAlloc*, async, managed, arena) */
    GM_NS_HANDLE,   /* VMM allocation handle (cuMemCreate) */
    GM_NS_ARRAY,    /* CUarray */
    GM_NS_MIPMAP,   /* CUmipmappedArray */
    GM_NS_HOST,     /* pinned host pointer */
    GM_NS_MAP,      /* a VMM mapping (cuMemMap): key its start, size its
                       length, aux its handle; never charged */
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
                              of its add (gm_tel_alloc_ev's; 0: none) */
    };
    uint32_t birth_t;  /* CLOCK_REALTIME >> 24 (16.8 ms units, modulo
                          2^32) when charged; 0 = unknown (OOM ages) */
    uint32_t birth_step; /* the step count when charged */
};
_Static_assert(sizeof(struct gm_alloc) == 40, "gm_alloc: 40 bytes");
/* gm_track_put's two packed words: dev, ns, api, flags, refs in one,
 * birth_t and birth_step in the other (little-endian layout). */
_Static_assert(offsetof(struct gm_alloc, dev) == 24 &&
               offsetof(struct gm_alloc, ns) == 25 &&
               offsetof(struct gm_alloc, api) == 26 &&
               offsetof(struct gm_alloc, flags) == 27 &&
               offsetof(struct gm_alloc, refs) == 28 &&
               offsetof(struct gm_alloc, birth_t) == 32 &&
               offsetof(struct gm_alloc, birth_step) == 36,
               "gm_alloc: packed words");
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gm_track_put packs gm_alloc's bytes little-endian"
#endif

/* The table's shards, for the inline fast paths below only. */
struct gm_track_shard {
    gm_spin lock;
    uint32_t count;
    uint32_t cap;                 /* 0, or a power of two >= 64 */
    uint32_t grow_at;             /* count that triggers growth: cap / 2 */
    struct gm_alloc *slots;
    char pad[64 - sizeof(gm_spin) - 3 * sizeof(uint32_t) -
             sizeof(struct gm_alloc *)];
};
#define GM_TRACK_SHARDS 256u
extern struct gm_track_shard gm_track_shards[GM_TRACK_SHARDS]
    __attribute__((visibility("hidden")));

/* Multiplicative hash: the top byte picks the shard, the low bits (with
 * the high half folded in, so aligned pointers spread) the slot. */
static inline uint64_t gm_track_mix(uint64_t key, unsigned ns)
{
    uint64_t h = (key ^ ((uint64_t)ns << 59)) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 32);
}

/* The slow paths (shard busy, full, or the key already present; an
 * erase that must shift entries back): out of line. */
int gm_track_insert_slow(struct gm_track_shard *s, uint64_t h,
                         const struct gm_alloc *a, struct gm_alloc *old)
    __attribute__((noinline));
bool gm_track_remove_slow(struct gm_track_shard *s, uint64_t h,
                          enum gm_ns ns, uint64_t key, struct gm_alloc *out)
    __attribute__((noinline));
void gm_track_erase_shift(struct gm_track_shard *s, uint32_t i)
    __attribute__((noinline));

/* The fast paths below write the probe out over an entry pointer rather
 * than sharing track.c's index-based probe: with that one the compiler
 * recomputes the slot's address, 14 instructions more per alloc+free pair
 * (tests/bench/profile.sh). */

/* Store the packed words (gm_track_put's meta and birth) into e. */
static inline void gm_track_set_words(struct gm_alloc *e, uint64_t meta,
                                      uint64_t birth)
{
    memcpy((char *)e + offsetof(struct gm_alloc, dev), &meta, sizeof meta);
    memcpy((char *)e + offsetof(struct gm_alloc, birth_t), &birth,
           sizeof birth);
}

/* Insert a new entry: key, size and aux with the packed bytes and words
 * of a struct gm_alloc (meta: dev | ns << 8 | api << 16 | flags << 24 |
 * refs << 32; birth: birth_t | birth_step << 32), so that a caller's entry
 * never needs to be in memory on the fast path. If the key is already
 * present (a free we never saw), the old entry is replaced and copied to
 * *old, and 1 is returned; 0 when the key was new; -1 when memory for the
 * table could not be had. Inline: the shard is taken with one exchange,
 * the entry written where the probe ends; anything else goes to the slow
 * path. */
static inline __attribute__((always_inline)) int
gm_track_put(uint64_t key, uint64_t size, uint64_t aux, uint64_t meta,
             uint64_t birth, struct gm_alloc *old)
{
    const unsigned ns = (unsigned)(meta >> 8) & 0xffu;
    uint64_t h = gm_track_mix(key, ns);
    struct gm_track_shard *s = &gm_track_shards[h >> 56];
    if (GM_LIKELY(gm_spin_trylock(&s->lock))) {
        if (GM_LIKELY(s->count < s->grow_at)) {
            uint32_t mask = s->cap - 1, i = (uint32_t)h & mask;
            struct gm_alloc *e = &s->slots[i];
            while (e->ns != 0 && !(e->ns == ns && e->key == key)) {
                i = (i + 1) & mask;
                e = &s->slots[i];
            }
            if (GM_LIKELY(e->ns == 0)) {
                e->key = key;
                e->size = size;
                e->aux = aux;
                gm_track_set_words(e, meta, birth);
                s->count++;
                gm_spin_unlock(&s->lock);
                return 0;
            }
        }
        gm_spin_unlock(&s->lock);
    }
    struct gm_alloc c = { .key = key, .size = size, .aux = aux };
    gm_track_set_words(&c, meta, birth);
    return gm_track_insert_slow(s, h, &c, old);
}

/* An entry's packed words, as gm_track_put takes them. */
static inline uint64_t gm_track_meta(const struct gm_alloc *a)
{
    uint64_t m;
    memcpy(&m, (const char *)a + offsetof(struct gm_alloc, dev), sizeof m);
    return m;
}

static inline uint64_t gm_track_birth(const struct gm_alloc *a)
{
    uint64_t b;
    memcpy(&b, (const char *)a + offsetof(struct gm_alloc, birth_t),
           sizeof b);
    return b;
}

/* The same with the entry given whole. */
static inline __attribute__((always_inline)) int
gm_track_insert(const struct gm_alloc *a, struct gm_alloc *old)
{
    return gm_track_put(a->key, a->size, a->aux, gm_track_meta(a),
                        gm_track_birth(a), old);
}

/* Remove and return the entry; false when unknown. Inline as above: an
 * entry whose next slot is empty (the common case at the table's load)
 * is erased by clearing its namespace byte. */
static inline __attribute__((always_inline)) bool
gm_track_remove(enum gm_ns ns, uint64_t key, struct gm_alloc *out)
{
    uint64_t h = gm_track_mix(key, ns);
    struct gm_track_shard *s = &gm_track_shards[h >> 56];
    if (GM_UNLIKELY(!gm_spin_trylock(&s->lock)))
        return gm_track_remove_slow(s, h, ns, key, out);
    bool found = false;
    if (GM_LIKELY(s->cap != 0)) {
        uint32_t mask = s->cap - 1, i = (uint32_t)h & mask;
        struct gm_alloc *e = &s->slots[i];
        /* The key first: a hit is the common case. (An empty slot's
         * stale key cannot match: its ns is 0.) */
        while (!(e->key == key && e->ns == ns) && e->ns != 0) {
            i = (i + 1) & mask;
            e = &s->slots[i];
        }
        if (e->ns != 0) {
            found = true;
            *out = *e;
            s->count--;
            if (GM_LIKELY(s->slots[(i + 1) & mask].ns == 0))
                e->ns = 0;
            else
                gm_track_erase_shift(s, i);
        }
    }
    gm_spin_unlock(&s->lock);
    return found;
}

/* Copy the entry out without removing it; false when unknown. */
bool gm_track_find(enum gm_ns ns, uint64_t key, struct gm_alloc *out);
/* Remove the entry of want's namespace and key only when every field of
 * it is still want's (copied to *out); false when it is absent or another
 * entry has taken the key since want was copied. */
bool gm_track_take_same(const struct gm_alloc *want, struct gm_alloc *out);
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
