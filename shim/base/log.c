/*
 * shim/base/log.c — stderr messages and a lock-free rate limiter.
 *
 * vsnprintf with integer and string conversions does not allocate in
 * glibc; callers use only those (sizes are pre-formatted with
 * gm_format_size). The level is a relaxed atomic set once at init.
 */
#include "shim/base/log.h"

#include "shim/base/clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic int log_level = GM_LOG_WARN;

void gm_log_set_level(int level)
{
    atomic_store_explicit(&log_level, level, memory_order_relaxed);
}

int gm_log_enabled(int level)
{
    return level <= atomic_load_explicit(&log_level, memory_order_relaxed);
}

void gm_log(int level, const char *fmt, ...)
{
    if (!gm_log_enabled(level))
        return;
    char line[GM_LOG_LINE];
    size_t n = sizeof("gpumem: ") - 1;
    memcpy(line, "gpumem: ", n);
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    n += (size_t)k < sizeof line - n - 1 ? (size_t)k : sizeof line - n - 2;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, n);
    (void)w;
}

uint64_t gm_ratelimit_pass(struct gm_ratelimit *r, uint64_t interval_ns)
{
    uint64_t now = gm_clock_monotonic_ns();
    uint64_t next = atomic_load_explicit(&r->next_ns, memory_order_relaxed);
    if (now >= next &&
        atomic_compare_exchange_strong_explicit(&r->next_ns, &next,
                                                now + interval_ns,
                                                memory_order_relaxed,
                                                memory_order_relaxed))
        return atomic_exchange_explicit(&r->suppressed, 0,
                                        memory_order_relaxed) + 1;
    atomic_fetch_add_explicit(&r->suppressed, 1, memory_order_relaxed);
    return 0;
}
