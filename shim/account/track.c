/*
 * shim/account/track.c — sharded open-addressing hash of live allocations.
 *
 * Invariants per shard: cap is 0 or a power of two >= 64; count <= cap / 2
 * after every insert (fuller, the probe chains a free shifts back grow
 * long: at 61% load a pair cost 63 instructions more); no tombstones
 * (backward-shift deletion keeps every probe chain contiguous); slots[] is
 * only touched with the shard's lock held. Growth maps a table twice the
 * size, rehashes, unmaps the old one.
 */
#include "shim/account/track.h"

#include <string.h>
#include <sys/mman.h>

#include "shim/base/spin.h"

#define SHARDS GM_TRACK_SHARDS
#define MIN_CAP 64u

struct gm_track_shard gm_track_shards[SHARDS];
#define shards gm_track_shards

static inline uint64_t mix(uint64_t key, unsigned ns)
{
    return gm_track_mix(key, ns);
}

static inline struct gm_track_shard *shard_of(uint64_t h)
{
    return &shards[h >> 56];
}

static struct gm_alloc *map_slots(uint32_t cap)
{
    void *p = mmap(NULL, (size_t)cap * sizeof(struct gm_alloc),
                   PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Index of the key, or of the empty slot where it would go. */
static inline uint32_t probe(const struct gm_track_shard *s, uint64_t h, unsigned ns,
                             uint64_t key)
{
    uint32_t mask = s->cap - 1;
    uint32_t i = (uint32_t)h & mask;
    while (s->slots[i].ns != 0 &&
           !(s->slots[i].ns == ns && s->slots[i].key == key))
        i = (i + 1) & mask;
    return i;
}

static int grow(struct gm_track_shard *s)
{
    uint32_t ncap = s->cap ? s->cap * 2 : MIN_CAP;
    struct gm_alloc *n = map_slots(ncap);
    if (n == NULL)
        return -1;
    struct gm_alloc *old = s->slots;
    uint32_t ocap = s->cap;
    s->slots = n;
    s->cap = ncap;
    s->grow_at = ncap / 2;
    for (uint32_t i = 0; i < ocap; i++) {
        if (old[i].ns == 0)
            continue;
        uint32_t j = probe(s, mix(old[i].key, old[i].ns), old[i].ns,
                           old[i].key);
        n[j] = old[i];
    }
    if (old)
        munmap(old, (size_t)ocap * sizeof(struct gm_alloc));
    return 0;
}

/* Backward-shift deletion of slot i (linear probing); the count is the
 * caller's. */
void gm_track_erase_shift(struct gm_track_shard *s, uint32_t i)
{
    uint32_t mask = s->cap - 1;
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (s->slots[j].ns == 0)
            break;
        uint32_t home = (uint32_t)mix(s->slots[j].key, s->slots[j].ns) & mask;
        /* Move j back to i unless its home lies cyclically in (i, j]. */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            s->slots[i] = s->slots[j];
            i = j;
        }
    }
    s->slots[i].ns = 0;
}

static inline void erase(struct gm_track_shard *s, uint32_t i)
{
    gm_track_erase_shift(s, i);
    s->count--;
}

/* The key's slot index in a locked shard, or -1 when absent. */
static inline int64_t find_locked(const struct gm_track_shard *s, uint64_t h,
                                  enum gm_ns ns, uint64_t key)
{
    if (s->cap == 0)
        return -1;
    uint32_t i = probe(s, h, ns, key);
    return s->slots[i].ns != 0 ? (int64_t)i : -1;
}

/* Insert with the shard locked (rc as gm_track_insert). */
static inline int insert_locked(struct gm_track_shard *s, uint64_t h,
                                const struct gm_alloc *a, struct gm_alloc *old)
{
    uint32_t i = probe(s, h, a->ns, a->key);
    int rc = 0;
    if (s->slots[i].ns != 0) {
        if (old)
            *old = s->slots[i];
        rc = 1;
    } else {
        s->count++;
    }
    s->slots[i] = *a;
    return rc;
}

/* The shard was busy or full, or the key present: wait for it, grow it,
 * insert. */
int gm_track_insert_slow(struct gm_track_shard *s, uint64_t h,
                         const struct gm_alloc *a, struct gm_alloc *old)
{
    int rc = -1;
    gm_spin_lock(&s->lock);
    if (s->count + 1 <= s->grow_at || grow(s) == 0)
        rc = insert_locked(s, h, a, old);
    gm_spin_unlock(&s->lock);
    return rc;
}

static inline bool remove_locked(struct gm_track_shard *s, uint64_t h, enum gm_ns ns,
                                 uint64_t key, struct gm_alloc *out)
{
    int64_t i = find_locked(s, h, ns, key);
    if (i < 0)
        return false;
    if (out)
        *out = s->slots[i];
    erase(s, (uint32_t)i);
    return true;
}

bool gm_track_remove_slow(struct gm_track_shard *s, uint64_t h,
                          enum gm_ns ns, uint64_t key, struct gm_alloc *out)
{
    gm_spin_lock(&s->lock);
    bool found = remove_locked(s, h, ns, key, out);
    gm_spin_unlock(&s->lock);
    return found;
}

bool gm_track_find(enum gm_ns ns, uint64_t key, struct gm_alloc *out)
{
    uint64_t h = mix(key, ns);
    struct gm_track_shard *s = shard_of(h);
    gm_spin_lock(&s->lock);
    int64_t i = find_locked(s, h, ns, key);
    if (i >= 0 && out)
        *out = s->slots[i];
    gm_spin_unlock(&s->lock);
    return i >= 0;
}

bool gm_track_take_same(const struct gm_alloc *want, struct gm_alloc *out)
{
    uint64_t h = mix(want->key, (enum gm_ns)want->ns);
    struct gm_track_shard *s = shard_of(h);
    gm_spin_lock(&s->lock);
    int64_t i = find_locked(s, h, (enum gm_ns)want->ns, want->key);
    bool same = i >= 0 && memcmp(&s->slots[i], want, sizeof *want) == 0;
    if (same) {
        *out = s->slots[i];
        erase(s, (uint32_t)i);
    }
    gm_spin_unlock(&s->lock);
    return same;
}

bool gm_track_ref(enum gm_ns ns, uint64_t key)
{
    uint64_t h = mix(key, ns);
    struct gm_track_shard *s = shard_of(h);
    gm_spin_lock(&s->lock);
    int64_t i = find_locked(s, h, ns, key);
    if (i >= 0 && s->slots[i].refs < UINT32_MAX)
        s->slots[i].refs++;
    gm_spin_unlock(&s->lock);
    return i >= 0;
}

int gm_track_unref(enum gm_ns ns, uint64_t key, struct gm_alloc *out)
{
    uint64_t h = mix(key, ns);
    struct gm_track_shard *s = shard_of(h);
    int rc = -1;
    gm_spin_lock(&s->lock);
    int64_t i = find_locked(s, h, ns, key);
    if (i >= 0 && s->slots[i].refs > 1) {
        s->slots[i].refs--;
        rc = 0;
    } else if (i >= 0) {
        if (out)
            *out = s->slots[i];
        erase(s, (uint32_t)i);
        rc = 1;
    }
    gm_spin_unlock(&s->lock);
    return rc;
}

uint64_t gm_track_count(void)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < SHARDS; i++)
        n += __atomic_load_n(&shards[i].count, __ATOMIC_RELAXED);
    return n;
}

uint64_t gm_track_count_aux(enum gm_ns ns, uint64_t aux)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < SHARDS; i++) {
        struct gm_track_shard *s = &shards[i];
        gm_spin_lock(&s->lock);
        for (uint32_t j = 0; j < s->cap; j++)
            if (s->slots[j].ns == ns && s->slots[j].aux == aux)
                n++;
        gm_spin_unlock(&s->lock);
    }
    return n;
}

void gm_track_reset(void)
{
    for (unsigned i = 0; i < SHARDS; i++) {
        struct gm_track_shard *s = &shards[i];
        if (s->slots)
            munmap(s->slots, (size_t)s->cap * sizeof(struct gm_alloc));
        s->slots = NULL;
        s->cap = 0;
        s->count = 0;
        s->grow_at = 0;
        atomic_store_explicit(&s->lock.v, 0, memory_order_relaxed);
    }
}

uint64_t gm_track_walk(void (*fn)(void *ctx, const struct gm_alloc *a),
                       void *ctx, uint64_t max, bool *truncated)
{
    uint64_t n = 0;
    *truncated = false;
    for (unsigned i = 0; i < SHARDS && !*truncated; i++) {
        struct gm_track_shard *s = &shards[i];
        gm_spin_lock(&s->lock);
        for (uint32_t j = 0; j < s->cap; j++) {
            if (s->slots[j].ns == 0)
                continue;
            if (n == max) {
                *truncated = true;
                break;
            }
            fn(ctx, &s->slots[j]);
            n++;
        }
        gm_spin_unlock(&s->lock);
    }
    return n;
}
