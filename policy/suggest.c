/*
 * policy/suggest.c — "did you mean ...?": the closest known name to a word,
 * by optimal-string-alignment edit distance (insert, delete, substitute,
 * swap two adjacent characters; each costs 1), ASCII case-insensitive.
 *
 * Invariants: no malloc (three rows of a fixed-size table on the stack);
 * words longer than WORD_MAX characters get no suggestion.
 */
#include "policy/policy.h"

#include <string.h>

#define WORD_MAX 64

static char fold(char c)
{
    return (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
}

static unsigned min3(unsigned a, unsigned b, unsigned c)
{
    unsigned m = a < b ? a : b;
    return m < c ? m : c;
}

/* OSA distance between a[0..la) and b[0..lb), both <= WORD_MAX long. */
static unsigned distance(const char *a, size_t la, const char *b, size_t lb)
{
    unsigned rows[3][WORD_MAX + 1];
    unsigned *pp = rows[0], *prev = rows[1], *cur = rows[2], *t;
    size_t i, j;

    for (j = 0; j <= lb; j++)
        prev[j] = (unsigned)j;
    for (i = 1; i <= la; i++) {
        cur[0] = (unsigned)i;
        for (j = 1; j <= lb; j++) {
            unsigned cost = fold(a[i - 1]) == fold(b[j - 1]) ? 0 : 1;
            cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
            if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) &&
                fold(a[i - 2]) == fold(b[j - 1]) && pp[j - 2] + 1 < cur[j])
                cur[j] = pp[j - 2] + 1;
        }
        t = pp;
        pp = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

const char *gm_closest_name(const char *word, const char *const *names,
                            size_t n, unsigned max_dist)
{
    size_t lw = word ? strlen(word) : 0, i;
    const char *best = NULL;
    unsigned best_d = 0;

    if (word == NULL || lw > WORD_MAX)
        return NULL;
    for (i = 0; i < n; i++) {
        size_t ln = names[i] ? strlen(names[i]) : 0;
        unsigned d;
        if (names[i] == NULL || ln > WORD_MAX)
            continue;
        d = distance(word, lw, names[i], ln);
        if (d <= max_dist && (best == NULL || d < best_d)) {
            best_d = d;
            best = names[i];
        }
    }
    return best;
}
