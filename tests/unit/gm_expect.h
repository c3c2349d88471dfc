/*
 * tests/unit/gm_expect.h — EXPECT_EQ for the unit suites' long loops.
 * Check records every ck_assert through a pipe; a loop that compares
 * millions of times uses this instead, which calls into Check only when a
 * comparison fails (then with both expressions and values).
 */
#ifndef GM_EXPECT_H
#define GM_EXPECT_H

#include <check.h>

#define EXPECT_EQ(a, b)                                                      \
    do {                                                                     \
        unsigned long long a_ = (unsigned long long)(a);                     \
        unsigned long long b_ = (unsigned long long)(b);                     \
        if (a_ != b_)                                                        \
            ck_abort_msg("%s == %llu, expected %s == %llu", #a, a_, #b, b_); \
    } while (0)

#endif
