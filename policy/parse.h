/*
 * policy/parse.h — pure string parsers for gpumem's variable forms.
 *
 * Each parser takes a NUL-terminated string and writes its result only on
 * success (returns 0); on failure returns -1 and leaves *out unchanged.
 * No locale dependence, no malloc, no errno side effects visible to callers.
 * Sizes are binary (K = 1024). Overflow of uint64_t is an error.
 */
#ifndef GM_PARSE_H
#define GM_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* "1073741824", "4G", "4GB", "4GiB", "1.5g", "512k", "1B": bytes. */
int gm_parse_size(const char *s, uint64_t *out);
/* "50%", "12.5%": fraction in (0, 1]. */
int gm_parse_percent(const char *s, double *out);
/* "30s", "5m", "1500ms", "2h", "100us": nanoseconds (> 0). */
int gm_parse_duration(const char *s, uint64_t *out);
/* Decimal number with optional fraction, e.g. "0.7", "10". */
int gm_parse_number(const char *s, double *out);
/* Unsigned decimal integer, no sign, no junk. */
int gm_parse_uint(const char *s, uint64_t *out);
/* Human-readable size into buf: "256.0 MiB", "4.0 GiB", "512 B". */
size_t gm_format_size(uint64_t bytes, char *buf, size_t cap);

#endif
