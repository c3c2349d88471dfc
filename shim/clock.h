/*
 * shim/clock.h — time and identity helpers for telemetry: nanosecond
 * clocks (vDSO clock_gettime, no syscall), the calling thread's id (cached
 * per thread), and a process's start time as the kernel reports it in
 * /proc/<pid>/stat (used to tell a process from a later one with the same
 * pid).
 *
 * Invariants: the clock and thread-id functions never allocate, never
 * block and are safe in any thread; the /proc readers use only open/read/
 * close on a stack buffer.
 */
#ifndef GM_CLOCK_H
#define GM_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* CLOCK_REALTIME / CLOCK_MONOTONIC in nanoseconds (0 if the clock fails). */
uint64_t gm_clock_realtime_ns(void);
uint64_t gm_clock_monotonic_ns(void);

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

/* True when `pid` exists (kill(pid, 0) succeeds or fails with EPERM) and,
 * when start_ticks != 0 and /proc/<pid>/stat is readable, its start time
 * equals start_ticks. */
bool gm_proc_alive(int pid, uint64_t start_ticks);

#endif
