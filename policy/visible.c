/*
 * policy/visible.c — CUDA_VISIBLE_DEVICES parsing (see visible.h).
 *
 * Invariant: the result lists distinct physical indices, each < n, in the
 * order the variable names them; nothing is allocated.
 */
#include "policy/visible.h"

#include <stdbool.h>
#include <string.h>

/* The physical index an entry [s, s+len) names, or -1. */
static int entry_device(const char *s, size_t len, const char *const *uuids, int n)
{
    if (len == 0)
        return -1;
    if (s[0] >= '0' && s[0] <= '9') {
        long v = 0;
        for (size_t i = 0; i < len; i++) {
            if (s[i] < '0' || s[i] > '9')
                return -1;
            v = v * 10 + (s[i] - '0');
            if (v >= n)
                return -1;
        }
        return (int)v;
    }
    if (len <= 4 || strncmp(s, "GPU-", 4) != 0)
        return -1;
    int found = -1;
    for (int i = 0; i < n; i++) {
        if (uuids[i] == NULL || strlen(uuids[i]) < len ||
            strncmp(uuids[i], s, len) != 0)
            continue;
        if (found >= 0)
            return -1; /* a prefix of two UUIDs names neither */
        found = i;
    }
    return found;
}

int gm_visible_map(const char *cvd, const char *const *uuids, int n, int *phys)
{
    if (n <= 0)
        return 0;
    if (cvd == NULL) {
        for (int i = 0; i < n; i++)
            phys[i] = i;
        return n;
    }
    int k = 0;
    const char *p = cvd;
    while (*p != '\0' && k < n) {
        while (*p == ' ')
            p++;
        const char *e = p + strcspn(p, ",");
        size_t len = (size_t)(e - p);
        while (len > 0 && p[len - 1] == ' ')
            len--;
        int d = entry_device(p, len, uuids, n);
        if (d < 0)
            break;
        bool dup = false;
        for (int i = 0; i < k; i++)
            dup = dup || phys[i] == d;
        if (dup)
            break;
        phys[k++] = d;
        if (*e == '\0')
            break;
        p = e + 1;
    }
    return k;
}
