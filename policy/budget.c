/*
 * policy/budget.c — lock-free reserve/release against a limit.
 *
 * Memory order: `used` updates are relaxed CAS loops (the value itself is
 * the only shared datum; nothing else is published through it). `peak` is
 * a relaxed atomic max. Readers that need a consistent (used, peak) pair
 * take it from the telemetry snapshot, not from here.
 */
#include "policy/budget.h"

bool gm_budget_hold_over(struct gm_budget *b, uint64_t size,
                         uint64_t *used_out)
{
    return gm_budget_hold_upto(b, size, 0, used_out); /* 0: no limit */
}

uint64_t gm_budget_force(struct gm_budget *b, uint64_t size)
{
    uint64_t u = atomic_load_explicit(&b->used, memory_order_relaxed);
    uint64_t n;
    do {
        n = size > UINT64_MAX - u ? UINT64_MAX : u + size;
    } while (!atomic_compare_exchange_weak_explicit(
        &b->used, &u, n, memory_order_relaxed, memory_order_relaxed));
    gm_budget_raise_peak(b, n);
    return n;
}

uint64_t gm_budget_settle(struct gm_budget *b, uint64_t add, uint64_t sub)
{
    uint64_t u = atomic_load_explicit(&b->used, memory_order_relaxed);
    uint64_t n;
    do {
        n = add > UINT64_MAX - u ? UINT64_MAX : u + add;
        n = sub > n ? 0 : n - sub;
    } while (!atomic_compare_exchange_weak_explicit(
        &b->used, &u, n, memory_order_relaxed, memory_order_relaxed));
    gm_budget_raise_peak(b, n);
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

void gm_budget_set_limit(struct gm_budget *b, uint64_t limit)
{
    atomic_store_explicit(&b->limit, limit, memory_order_relaxed);
}
