/*
 * shim/account/contexts.c — the list of charged contexts (contexts.h):
 * a fixed array of created contexts searched linearly and one slot per
 * device for its primary context, under one mutex; and one lock per device
 * for the wrappers of its primary context.
 */
#include "shim/account/contexts.h"

#include <pthread.h>
#include <string.h>

#include "shim/account/state.h"

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gm_ctx_ent ents[GM_CTX_MAX];    /* created contexts */
static bool used[GM_CTX_MAX];
static struct gm_ctx_ent prims[GM_MAX_DEVICES]; /* primary ones: always fit */
static bool prim_used[GM_MAX_DEVICES];
static pthread_mutex_t primary_locks[GM_MAX_DEVICES];
static pthread_once_t primary_once = PTHREAD_ONCE_INIT;
static uint64_t first_bytes[GM_MAX_DEVICES];
static bool unlisted[GM_MAX_DEVICES];   /* a context of it did not fit */
static uint64_t generation;             /* changes of the list */
static int ending[GM_MAX_DEVICES];      /* taken for a destroy, not settled */

static bool dev_ok(int dev)
{
    return dev >= 0 && dev < GM_MAX_DEVICES;
}

bool gm_ctx_add(const struct gm_ctx_ent *e)
{
    bool ok = false;
    pthread_mutex_lock(&ctx_lock);
    if (e->primary) {
        if (dev_ok(e->dev) && !prim_used[e->dev]) {
            prims[e->dev] = *e;
            prim_used[e->dev] = true;
            ok = true;
        }
    } else {
        for (unsigned i = 0; i < GM_CTX_MAX && !ok; i++) {
            if (!used[i]) {
                ents[i] = *e;
                used[i] = true;
                ok = true;
            }
        }
        if (!ok && dev_ok(e->dev))
            unlisted[e->dev] = true;
    }
    generation++;
    pthread_mutex_unlock(&ctx_lock);
    return ok;
}

uint64_t gm_ctx_generation(void)
{
    pthread_mutex_lock(&ctx_lock);
    uint64_t g = generation;
    pthread_mutex_unlock(&ctx_lock);
    return g;
}

int gm_ctx_listed_on(int dev, uint64_t *gen)
{
    if (!dev_ok(dev))
        return -1;
    pthread_mutex_lock(&ctx_lock);
    int n = (prim_used[dev] ? 1 : 0) + ending[dev];
    for (unsigned i = 0; i < GM_CTX_MAX; i++)
        if (used[i] && ents[i].dev == dev)
            n++;
    if (unlisted[dev])
        n = -1;
    *gen = generation;
    pthread_mutex_unlock(&ctx_lock);
    return n;
}

bool gm_ctx_take_ending(uintptr_t ctx, struct gm_ctx_ent *out)
{
    bool found = gm_ctx_take(ctx, out);
    if (found && dev_ok(out->dev)) {
        pthread_mutex_lock(&ctx_lock);
        ending[out->dev]++;
        generation++;
        pthread_mutex_unlock(&ctx_lock);
    }
    return found;
}

void gm_ctx_ending_settled(int dev)
{
    if (!dev_ok(dev))
        return;
    pthread_mutex_lock(&ctx_lock);
    if (ending[dev] > 0)
        ending[dev]--;
    generation++;
    pthread_mutex_unlock(&ctx_lock);
}

bool gm_ctx_take(uintptr_t ctx, struct gm_ctx_ent *out)
{
    bool found = false;
    pthread_mutex_lock(&ctx_lock);
    for (unsigned i = 0; i < GM_CTX_MAX && !found; i++) {
        if (used[i] && ents[i].ctx == ctx) {
            *out = ents[i];
            used[i] = false;
            found = true;
            generation++;
        }
    }
    for (unsigned i = 0; i < GM_MAX_DEVICES && !found; i++) {
        if (prim_used[i] && prims[i].ctx == ctx) {
            *out = prims[i];
            prim_used[i] = false;
            found = true;
            generation++;
        }
    }
    pthread_mutex_unlock(&ctx_lock);
    return found;
}

bool gm_ctx_take_primary(int dev, struct gm_ctx_ent *out)
{
    if (!dev_ok(dev))
        return false;
    pthread_mutex_lock(&ctx_lock);
    bool found = prim_used[dev];
    if (found) {
        *out = prims[dev];
        prim_used[dev] = false;
        generation++;
    }
    pthread_mutex_unlock(&ctx_lock);
    return found;
}

bool gm_ctx_has_primary(int dev)
{
    if (!dev_ok(dev))
        return false;
    pthread_mutex_lock(&ctx_lock);
    bool found = prim_used[dev];
    pthread_mutex_unlock(&ctx_lock);
    return found;
}

static void primary_init(void)
{
    for (unsigned i = 0; i < GM_MAX_DEVICES; i++)
        pthread_mutex_init(&primary_locks[i], NULL);
}

void gm_ctx_primary_lock(int dev)
{
    if (!dev_ok(dev))
        return;
    pthread_once(&primary_once, primary_init);
    pthread_mutex_lock(&primary_locks[dev]);
}

void gm_ctx_primary_unlock(int dev)
{
    if (!dev_ok(dev))
        return;
    pthread_mutex_unlock(&primary_locks[dev]);
}

uint64_t gm_ctx_first_bytes(int dev)
{
    if (dev < 0 || dev >= GM_MAX_DEVICES)
        return 0;
    pthread_mutex_lock(&ctx_lock);
    uint64_t b = first_bytes[dev];
    pthread_mutex_unlock(&ctx_lock);
    return b;
}

void gm_ctx_set_first_bytes(int dev, uint64_t bytes)
{
    if (dev < 0 || dev >= GM_MAX_DEVICES)
        return;
    pthread_mutex_lock(&ctx_lock);
    first_bytes[dev] = bytes;
    pthread_mutex_unlock(&ctx_lock);
}

void gm_ctx_reset(void)
{
    pthread_mutex_init(&ctx_lock, NULL);
    memset(used, 0, sizeof used);
    memset(prim_used, 0, sizeof prim_used);
    memset(first_bytes, 0, sizeof first_bytes);
    memset(unlisted, 0, sizeof unlisted);
    memset(ending, 0, sizeof ending);
    /* A lock a parent's thread held at the fork is held in the child by
     * no one: fresh ones (pthread_once already ran in the parent, or
     * runs here). */
    pthread_once(&primary_once, primary_init);
    primary_init();
}
