/*
 * shim/base/spin.h — a tiny test-and-test-and-set spinlock for critical sections
 * of a few dozen instructions (never held across a driver call or a
 * syscall other than mmap during a rare table growth). A waiter spins
 * about a hundred times, then yields.
 *
 * Memory order: lock = acquire exchange, unlock = release store; the data
 * it protects is published by that pair.
 */
#ifndef GM_SPIN_H
#define GM_SPIN_H

#include <sched.h>
#include <stdatomic.h>

typedef struct { _Atomic int v; } gm_spin;

static inline void gm_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Spins briefly, then yields the CPU, so a holder that was preempted
 * (more threads than cores) gets to run instead of being spun against.
 * Out of line: the uncontended path is one exchange. */
static __attribute__((noinline, cold, unused)) void
gm_spin_lock_slow(gm_spin *s)
{
    unsigned spins = 0;
    for (;;) {
        while (atomic_load_explicit(&s->v, memory_order_relaxed)) {
            if (++spins < 100)
                gm_cpu_relax();
            else
                sched_yield();
        }
        if (!atomic_exchange_explicit(&s->v, 1, memory_order_acquire))
            return;
    }
}

static inline void gm_spin_lock(gm_spin *s)
{
    if (__builtin_expect(
            atomic_exchange_explicit(&s->v, 1, memory_order_acquire) != 0, 0))
        gm_spin_lock_slow(s);
}

/* One exchange; true when the lock was taken. */
static inline int gm_spin_trylock(gm_spin *s)
{
    return !atomic_exchange_explicit(&s->v, 1, memory_order_acquire);
}

static inline void gm_spin_unlock(gm_spin *s)
{
    atomic_store_explicit(&s->v, 0, memory_order_release);
}

#endif
