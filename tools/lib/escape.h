/*
 * tools/lib/escape.h — making text that comes from a segment (command
 * lines, policy summaries, group names) safe to print, for `gpumem` and
 * `gpumem-top` alike: for a terminal (escape sequences and control bytes
 * shown visibly, never sent) and for JSON (valid UTF-8, controls as
 * \u00XX). A segment is written by whoever can create a file under the
 * prefix, so its text is arbitrary bytes up to a NUL.
 *
 * The terminal form (docs/tools.md): printable ASCII and valid UTF-8 are
 * kept; a backslash is doubled; every other byte is written \xHH (two
 * lowercase hex digits): C0 controls, DEL, bytes that are not part of
 * valid UTF-8 (0x80..0xff on their own, overlong forms, surrogates, code
 * points above U+10FFFF, sequences cut short) and both bytes of a C1
 * control written in UTF-8 (U+0080..U+009F, which some terminals obey).
 * With GM_ESC_ASCII every byte >= 0x80 is written \xHH (gpumem-top, which
 * draws ASCII only).
 *
 * The JSON form: a string literal whose every byte is valid UTF-8; '"' and
 * '\' escaped, \n and \t as such, other C0 controls, DEL and C1 controls as
 * \u00XX, and each byte that is not part of valid UTF-8 as \ufffd (U+FFFD,
 * the replacement character; the original byte is not kept).
 *
 * Invariants: output never holds a byte the rules above escape; the
 * buffer form never splits an escape or a UTF-8 sequence when it has to
 * truncate, and is always NUL-terminated (cap >= 1); no function reads
 * past the terminating NUL of its input.
 */
#ifndef GM_TOOLS_ESCAPE_H
#define GM_TOOLS_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* gm_esc_term flags */
#define GM_ESC_ASCII 1u          /* escape every byte >= 0x80 as well */

/* A buffer that holds the terminal form of any string of n bytes. */
#define GM_ESC_TERM_CAP(n) (4 * (size_t)(n) + 1)

/* Length (1..4) of the valid UTF-8 sequence that starts at p, in a
 * NUL-terminated string; 0 when p[0] starts no valid sequence (or is
 * NUL). Valid: RFC 3629 (no overlong form, no surrogate, at most
 * U+10FFFF). */
size_t gm_utf8_len(const char *p);

/* True when the valid sequence of len bytes at p is a C1 control
 * (U+0080..U+009F). */
int gm_utf8_is_c1(const char *p, size_t len);

/* The terminal form of s in buf (cap bytes, cap >= 1), truncated before
 * the first unit (character or escape) that does not fit. Returns buf. */
char *gm_esc_term(const char *s, unsigned flags, char *buf, size_t cap);

/* Writes the terminal form of s to f, whole. */
void gm_esc_term_put(FILE *f, const char *s, unsigned flags);

/* Writes s as a JSON string literal, quotes included (the JSON form). */
void gm_json_str(FILE *f, const char *s);

#endif
