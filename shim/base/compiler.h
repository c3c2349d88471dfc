/*
 * shim/base/compiler.h — branch hints shared by every layer.
 *
 * GM_LIKELY / GM_UNLIKELY only steer code layout; they never change what
 * an expression means.
 */
#ifndef GM_COMPILER_H
#define GM_COMPILER_H

#define GM_LIKELY(x) __builtin_expect(!!(x), 1)
#define GM_UNLIKELY(x) __builtin_expect(!!(x), 0)

#endif
