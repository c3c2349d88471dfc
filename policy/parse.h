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
#include <stdbool.h>
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
/* GPUMEM_SHM_DIR's form: an absolute path without "." or ".." components,
 * spaces or control bytes, at most cap-1 bytes once repeated and trailing
 * slashes are dropped; the normal form goes to out. Returns 0, or -1 with
 * *why set to a short phrase ("is not an absolute path", ...). */
int gm_parse_shm_dir(const char *val, char *out, size_t cap,
                     const char **why);
/* Human-readable size into buf: "256.0 MiB", "4.0 GiB", "512 B". */
size_t gm_format_size(uint64_t bytes, char *buf, size_t cap);
/* The longest text gm_format_size writes, its NUL not counted:
 * "1023.9 GiB" (below 1024 of a unit; 16.0 EiB at most). */
#define GM_SIZE_TEXT_MAX 10

/*
 * Detailed variants: they return why a string was refused, so callers can
 * word a precise message. On GM_PERR_TRAILING, *junk (when not NULL) is the
 * offset of the first unexpected character. *out is written only on
 * GM_PERR_OK. Numbers are plain decimals: digits, optionally '.' and more
 * digits; no sign, no exponent, no spaces.
 */
enum gm_perr {
    GM_PERR_OK = 0,
    GM_PERR_EMPTY,      /* "" */
    GM_PERR_NEGATIVE,   /* starts with '-' */
    GM_PERR_SYNTAX,     /* not a number, or an unknown unit */
    GM_PERR_TRAILING,   /* a valid value followed by unexpected text */
    GM_PERR_OVERFLOW,   /* does not fit in 64 bits */
    GM_PERR_NO_UNIT,    /* duration without unit, percentage without '%' */
    GM_PERR_ZERO,       /* zero (or rounds to zero) where > 0 is required */
    GM_PERR_FRACTION,   /* a fraction where a whole number is required */
};
/* Size: whole bytes, or number + K/M/G/T (+ B or iB, any case) floored to
 * a byte; "B" alone is bytes. "0" is 0. */
enum gm_perr gm_parse_size_ex(const char *s, uint64_t *out, size_t *junk);
/* Duration: number + ns/us/ms/s/m/h (any case), floored to ns, > 0. */
enum gm_perr gm_parse_duration_ex(const char *s, uint64_t *out, size_t *junk);
/* Plain decimal number (>= 0). */
enum gm_perr gm_parse_number_ex(const char *s, double *out, size_t *junk);
/* The same, and *inside whether the number as written (every digit, not
 * its double) lies in [lo_num/den, hi_num/den]: a value a double rounds
 * onto a bound (0.09999999999999999999 onto 0.1) stays outside. */
enum gm_perr gm_parse_number_in(const char *s, uint64_t lo_num,
                                uint64_t hi_num, uint64_t den, double *out,
                                bool *inside, size_t *junk);
/* Unsigned integer; a fractional number gives GM_PERR_FRACTION. */
enum gm_perr gm_parse_uint_ex(const char *s, uint64_t *out, size_t *junk);
/* "NN%" / "NN.N%": the percentage as written (any value >= 0). */
enum gm_perr gm_parse_pct_ex(const char *s, double *pct, size_t *junk);
/* HAMi-core's CUDA_DEVICE_MEMORY_LIMIT form: digits and at most one of
 * k/m/g (binary, any case), a bare number = bytes; "0" is 0; a leading 0
 * before more digits gives GM_PERR_TRAILING at offset 1 (HAMi-core would
 * read it as octal or hex). */
enum gm_perr gm_parse_hami_size_ex(const char *s, uint64_t *out, size_t *junk);
/* Short phrase for a parse error: "is empty", "is negative", ... */
const char *gm_perr_phrase(enum gm_perr e);

/* Duration as text: the largest unit that represents it exactly, minutes
 * and hours only from 2 on ("60s", "1500ms", "5m", "2h"); snprintf-like. */
size_t gm_format_duration(uint64_t ns, char *buf, size_t cap);
/* Decimal number as text, rounded to at most `decimals` (0..9) fraction
 * digits, trailing zeros and a bare '.' dropped ("1.5", "0.125", "10"); no
 * floating-point printf. Negative values and NaN print as "0"; values at or
 * above 1e18 print as "1e18+". */
size_t gm_format_decimal(double v, int decimals, char *buf, size_t cap);
/* ASCII case-insensitive equality (locale-independent). */
int gm_ascii_ieq(const char *a, const char *b);

#endif
