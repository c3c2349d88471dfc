/*
 * shim/base/msg.c — gm_msgf: vsnprintf into a caller's buffer, always
 * NUL-terminated, never writing past cap, a no-op without a buffer.
 */
#include "shim/base/msg.h"

#include <stdarg.h>
#include <stdio.h>

void gm_msgf(char *buf, size_t cap, const char *fmt, ...)
{
    if (buf == NULL || cap == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}
