/*
 * policy/budget.c — lock-free reserve/release against a limit.
 *
 * Memory order: `used` updates are relaxed CAS loops (the value itself is
 * the only shared datum; nothing else is published through it). `peak` is
 * a relaxed atomic max. Readers that need a consistent (used, peak) pair
 * take it from the telemetry snapshot, not from here.
 */
#include "policy/budget.h"

static void raise_peak(struct gm_budget *b, uint64_t v)
{
    uint64_t p = atomic_load_explicit(&b->peak, memory_order_relaxed);
    while (v > p &&
           !atomic_compare_exchange_weak_explicit(&b->peak, &p, v,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

bool gm_budget_reserve(struct gm_budget *b, uint64_t size, uint64_t *used_out)
{
    uint64_t limit = atomic_load_explicit(&b->limit, memory_order_relaxed);
    uint64_t u = atomic_load_explicit(&b->used, memory_order_relaxed);
    for (;;) {
        if (size > UINT64_MAX - u || (limit != 0 && u + size > limit)) {
            *used_out = u;
            return false;
        }
        if (atomic_compare_exchange_weak_explicit(&b->used, &u, u + size,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
            break;
    }
    raise_peak(b, u + size);
    *used_out = u + size;
    return true;
}

uint64_t gm_budget_force(struct gm_budget *b, uint64_t size)
{
    uint64_t u = atomic_load_explicit(&b->used, memory_order_relaxed);
    uint64_t n;
    do {
        n = size > UINT64_MAX - u ? UINT64_MAX : u + size;
    } while (!atomic_compare_exchange_weak_explicit(
        &b->used, &u, n, memory_order_relaxed, memory_order_relaxed));
    raise_peak(b, n);
    return n;
}

uint64_t gm_budget_release(struct gm_budget *b, uint64_t size)
{
    uint64_t u = atomic_load_explicit(&b->used, memory_order_relaxed);
    uint64_t n;
    do {
        n = size > u ? 0 : u - size;
    } while (!atomic_compare_exchange_weak_explicit(
        &b->used, &u, n, memory_order_relaxed, memory_order_relaxed));
    return n;
}

bool gm_budget_fits(const struct gm_budget *b, uint64_t size)
{
    return size <= gm_budget_room(b);
}

uint64_t gm_budget_room(const struct gm_budget *b)
{
    uint64_t limit = atomic_load_explicit(&b->limit, memory_order_relaxed);
    if (limit == 0)
        return UINT64_MAX;
    uint64_t u = atomic_load_explicit(&b->used, memory_order_relaxed);
    return u >= limit ? 0 : limit - u;
}

uint64_t gm_budget_used(const struct gm_budget *b)
{
    return atomic_load_explicit(&b->used, memory_order_relaxed);
}

uint64_t gm_budget_peak(const struct gm_budget *b)
{
    return atomic_load_explicit(&b->peak, memory_order_relaxed);
}

uint64_t gm_budget_limit(const struct gm_budget *b)
{
    return atomic_load_explicit(&b->limit, memory_order_relaxed);
}

void gm_budget_set_limit(struct gm_budget *b, uint64_t limit)
{
    atomic_store_explicit(&b->limit, limit, memory_order_relaxed);
}
