/*
 * shim/account/contexts.c — the list of charged contexts (contexts.h):
 * a fixed array searched linearly under one mutex, plus one claim flag
 * per device for its primary context.
 */
#include "shim/account/contexts.h"

#include <pthread.h>
#include <string.h>

#include "shim/account/state.h"

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gm_ctx_ent ents[GM_CTX_MAX];
static bool used[GM_CTX_MAX];
static bool claimed[GM_MAX_DEVICES];  /* primary being measured */
static uint64_t first_bytes[GM_MAX_DEVICES];

bool gm_ctx_add(const struct gm_ctx_ent *e)
{
    bool ok = false;
    pthread_mutex_lock(&ctx_lock);
    for (unsigned i = 0; i < GM_CTX_MAX && !ok; i++) {
        if (!used[i]) {
            ents[i] = *e;
            used[i] = true;
            ok = true;
        }
    }
    if (e->primary && e->dev >= 0 && e->dev < GM_MAX_DEVICES)
        claimed[e->dev] = false; /* listed now, or not at all */
    pthread_mutex_unlock(&ctx_lock);
    return ok;
}

static bool take_where(bool (*match)(const struct gm_ctx_ent *, uintptr_t),
                       uintptr_t key, struct gm_ctx_ent *out)
{
    bool found = false;
    pthread_mutex_lock(&ctx_lock);
    for (unsigned i = 0; i < GM_CTX_MAX && !found; i++) {
        if (used[i] && match(&ents[i], key)) {
            *out = ents[i];
            used[i] = false;
            found = true;
        }
    }
    pthread_mutex_unlock(&ctx_lock);
    return found;
}

static bool by_handle(const struct gm_ctx_ent *e, uintptr_t ctx)
{
    return e->ctx == ctx;
}

static bool by_primary(const struct gm_ctx_ent *e, uintptr_t dev)
{
    return e->primary && (uintptr_t)e->dev == dev;
}

bool gm_ctx_take(uintptr_t ctx, struct gm_ctx_ent *out)
{
    return take_where(by_handle, ctx, out);
}

bool gm_ctx_take_primary(int dev, struct gm_ctx_ent *out)
{
    if (dev < 0 || dev >= GM_MAX_DEVICES)
        return false;
    pthread_mutex_lock(&ctx_lock);
    claimed[dev] = false;
    pthread_mutex_unlock(&ctx_lock);
    return take_where(by_primary, (uintptr_t)dev, out);
}

bool gm_ctx_claim_primary(int dev)
{
    if (dev < 0 || dev >= GM_MAX_DEVICES)
        return false;
    bool ok;
    pthread_mutex_lock(&ctx_lock);
    ok = !claimed[dev];
    for (unsigned i = 0; i < GM_CTX_MAX && ok; i++)
        if (used[i] && ents[i].primary && ents[i].dev == dev)
            ok = false;
    if (ok)
        claimed[dev] = true;
    pthread_mutex_unlock(&ctx_lock);
    return ok;
}

void gm_ctx_unclaim_primary(int dev)
{
    if (dev < 0 || dev >= GM_MAX_DEVICES)
        return;
    pthread_mutex_lock(&ctx_lock);
    claimed[dev] = false;
    pthread_mutex_unlock(&ctx_lock);
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
    memset(claimed, 0, sizeof claimed);
    memset(first_bytes, 0, sizeof first_bytes);
}
