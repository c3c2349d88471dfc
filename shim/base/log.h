/*
 * shim/base/log.h — messages from the shim: stderr only, prefixed "gpumem: ",
 * formatted into a stack buffer (no malloc), written with one write(2).
 *
 * Invariant: a message is never longer than GM_LOG_LINE bytes; lines are
 * written whole so concurrent messages do not interleave.
 */
#ifndef GM_LOG_H
#define GM_LOG_H

#include <stdatomic.h>
#include <stdint.h>

#define GM_LOG_LINE 512

/* Levels, quietest first (GPUMEM_LOG names them). */
enum gm_log { GM_LOG_QUIET = 0, GM_LOG_ERROR, GM_LOG_WARN, GM_LOG_INFO,
              GM_LOG_DEBUG };

/* Level threshold (an enum gm_log); default warn. */
void gm_log_set_level(int level);
int gm_log_enabled(int level);
/* Print "gpumem: " + formatted text + '\n' when level is enabled. */
void gm_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Rate limiter: allow at most one message per `interval_ns` per limiter;
 * returns the number of messages suppressed since the last allowed one
 * plus 1 when this one may print, 0 when it must be suppressed. */
struct gm_ratelimit {
    _Atomic uint64_t next_ns;
    _Atomic uint64_t suppressed;
};
uint64_t gm_ratelimit_pass(struct gm_ratelimit *r, uint64_t interval_ns);

#endif
