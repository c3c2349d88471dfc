/*
 * shim/base/clock.h — time and identity helpers for telemetry: nanosecond
 * clocks (vDSO clock_gettime, no syscall), the calling thread's id (cached
 * per thread), and a process's start time as the kernel reports it in
 * /proc/<pid>/stat (used to tell a process from a later one with the same
 * pid).
 *
 * The hot-path clock counts ticks: the time-stamp counter when the kernel
 * itself keeps time with it (clocksource "tsc": invariant and synchronised
 * across CPUs), else CLOCK_MONOTONIC nanoseconds (one tick = 1 ns).
 * gm_ticks_init calibrates the tick length once against CLOCK_MONOTONIC;
 * a reading becomes a CLOCK_REALTIME instant through a per-thread anchor
 * (one clock_gettime per thread every 2^27 ticks, about 50 ms), so the
 * event time-stamps stay within microseconds of the system clock and
 * follow its adjustments.
 *
 * Invariants: the clock and thread-id functions never allocate, never
 * block and are safe in any thread; the /proc readers use only open/read/
 * close on a stack buffer. gm_tick_tsc and gm_tick_mult are written only
 * by gm_ticks_init, before any hook measures anything.
 */
#ifndef GM_CLOCK_H
#define GM_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* CLOCK_REALTIME / CLOCK_MONOTONIC in nanoseconds (0 if the clock fails). */
uint64_t gm_clock_realtime_ns(void);
uint64_t gm_clock_monotonic_ns(void);

/* ---- hot-path ticks ---------------------------------------------------- */

/* Hidden: read directly, not through the GOT. */
extern int gm_tick_tsc __attribute__((visibility("hidden"))); /* TSC? */
/* nanoseconds per tick, times 2^32 */
extern uint64_t gm_tick_mult __attribute__((visibility("hidden")));

/* Choose the tick source and calibrate it (about 0.2 ms, once). */
void gm_ticks_init(void);

static inline uint64_t gm_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_expect(gm_tick_tsc, 1))
        return __builtin_ia32_rdtsc();
#endif
    return gm_clock_monotonic_ns();
}

/* A tick difference in nanoseconds. */
static inline uint64_t gm_ticks_ns(uint64_t d)
{
    return (uint64_t)(((unsigned __int128)d * gm_tick_mult) >> 32);
}

struct gm_tick_anchor {
    uint64_t tick;    /* a reading ... */
    uint64_t rt_ns;   /* ... and CLOCK_REALTIME then; tick 0 = unset */
};
extern __thread struct gm_tick_anchor gm_tick_anchor
    __attribute__((tls_model("initial-exec")));
#define GM_TICK_REANCHOR (1ull << 27)
uint64_t gm_ticks_realtime_slow(uint64_t t);

/* The CLOCK_REALTIME nanoseconds of tick reading t (taken by this thread
 * a moment ago). */
static inline uint64_t gm_ticks_realtime(uint64_t t)
{
    uint64_t d = t - gm_tick_anchor.tick;
    if (__builtin_expect(d < GM_TICK_REANCHOR, 1))
        return gm_tick_anchor.rt_ns + gm_ticks_ns(d);
    return gm_ticks_realtime_slow(t);
}

/* The calling thread's kernel id (gettid), cached in an initial-exec TLS
 * variable: one syscall per thread, then a TLS load (inline). */
extern __thread uint32_t gm_clock_tid
    __attribute__((tls_model("initial-exec")));
uint32_t gm_thread_id_slow(void);
static inline uint32_t gm_thread_id(void)
{
    uint32_t t = gm_clock_tid;
    return __builtin_expect(t != 0, 1) ? t : gm_thread_id_slow();
}
/* Forget the cached id; call in a fork child (gm_tel_forget does). */
void gm_thread_id_reset(void);

/* Field 22 (starttime, clock ticks since boot) of /proc/<pid>/stat; pid 0
 * means the calling process. Returns 0 on success, -1 when the file cannot
 * be read or parsed (process gone, no /proc). */
int gm_proc_start_ticks(int pid, uint64_t *ticks);

/* The CLOCK_REALTIME instant (ns) at which a process with start time
 * `ticks` began, derived from the current boot-time clock; 0 if unknown. */
uint64_t gm_proc_start_realtime_ns(uint64_t ticks);

/* True when `pid` exists (kill(pid, 0) succeeds or fails with EPERM), is
 * not a zombie (killed or exited, not yet reaped: every tool and the group
 * library call it dead; a leader that left with pthread_exit while other
 * threads run is no zombie here) and, when start_ticks != 0 and /proc/<pid>/stat
 * is readable, its start time equals start_ticks. */
bool gm_proc_alive(int pid, uint64_t start_ticks);

#endif
