/*
 * shim/base/msg.h — bounded message formatting for error strings handed back
 * to callers (a NULL buffer or zero capacity is allowed and ignored).
 */
#ifndef GM_MSG_H
#define GM_MSG_H

#include <stddef.h>

void gm_msgf(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
