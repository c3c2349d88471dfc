/*
 * tests/unit/test_clock.c — the hooks' tick clock (shim/base/clock.c): a tick
 * difference converts to the nanoseconds CLOCK_MONOTONIC saw, and a tick
 * reading converts to the CLOCK_REALTIME instant, whether the ticks are
 * the TSC (clocksource tsc) or monotonic nanoseconds. Bounds are wide
 * (a loaded machine may stretch a sleep); a wrong factor is off by orders
 * of magnitude.
 */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shim/base/clock.h"

static void sleep_ms(long ms)
{
    struct timespec ts = { 0, ms * 1000000L };
    nanosleep(&ts, NULL);
}

static char stat_state(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return '?';
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : '?';
}

/* A process killed or exited but not yet reaped is not alive: its pid and
 * start time remain, its memory and descriptors do not. */
START_TEST(test_zombie_is_not_alive)
{
    ck_assert(gm_proc_alive((int)getpid(), 0));
    uint64_t self;
    ck_assert_int_eq(gm_proc_start_ticks((int)getpid(), &self), 0);
    ck_assert(gm_proc_alive((int)getpid(), self));
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0)
        _exit(0);
    uint64_t start = 0;
    (void)gm_proc_start_ticks((int)c, &start);
    for (int i = 0; i < 5000 && stat_state(c) != 'Z'; i++) {
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    ck_assert_int_eq(stat_state(c), 'Z');
    /* The leader shows 'Z' a moment before its process's last threads
     * (a sanitizer's own, say) are gone; from then on it is dead. */
    bool alive = true;
    for (int i = 0; i < 5000 && alive; i++) {
        alive = gm_proc_alive((int)c, 0);
        if (alive) {
            struct timespec ms = { 0, 1000000 };
            nanosleep(&ms, NULL);
        }
    }
    ck_assert_msg(!alive, "a zombie counted as alive");
    ck_assert(!gm_proc_alive((int)c, start));
    int st;
    ck_assert_int_eq(waitpid(c, &st, 0), c);
    ck_assert(!gm_proc_alive((int)c, 0));
}
END_TEST

static void *sleeper(void *arg)
{
    int *fd = arg;
    char c;
    (void)!read(*fd, &c, 1);   /* until the parent closes the pipe */
    /* The process ends here: returning would leave a sanitizer's own
     * background thread, and the process with it, alive. */
    _exit(0);
}

/* A process whose main thread left with pthread_exit while another thread
 * runs shows 'Z' for its leader, and is alive: a group member or a
 * telemetry writer allocating from its other threads. */
START_TEST(test_leader_gone_threads_alive)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0) {
        close(p[1]);
        static int fd;
        fd = p[0];
        pthread_t t;
        if (pthread_create(&t, NULL, sleeper, &fd) != 0)
            _exit(3);
        pthread_exit(NULL);
    }
    close(p[0]);
    for (int i = 0; i < 5000 && stat_state(c) != 'Z'; i++) {
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    ck_assert_int_eq(stat_state(c), 'Z');
    uint64_t start = 0;
    ck_assert_int_eq(gm_proc_start_ticks((int)c, &start), 0);
    ck_assert_msg(gm_proc_alive((int)c, start),
                  "a process with a running thread counted as dead");
    close(p[1]);   /* the thread ends the process */
    int st;
    ck_assert_int_eq(waitpid(c, &st, 0), c);
    ck_assert(!gm_proc_alive((int)c, start));
}
END_TEST

START_TEST(test_tick_difference_is_monotonic_time)
{
    gm_ticks_init();
    ck_assert_uint_gt(gm_tick_mult, 0);
    for (int i = 0; i < 3; i++) {
        uint64_t n0 = gm_clock_monotonic_ns(), t0 = gm_ticks();
        sleep_ms(20);
        uint64_t t1 = gm_ticks(), n1 = gm_clock_monotonic_ns();
        uint64_t ns = gm_ticks_ns(t1 - t0), want = n1 - n0;
        ck_assert_msg(ns > want / 2 && ns < want * 2,
                      "%llu ns of ticks for %llu ns of CLOCK_MONOTONIC",
                      (unsigned long long)ns, (unsigned long long)want);
    }
}
END_TEST

START_TEST(test_tick_reading_is_realtime)
{
    gm_ticks_init();
    for (int i = 0; i < 5; i++) {
        uint64_t r0 = gm_clock_realtime_ns();
        uint64_t ts = gm_ticks_realtime(gm_ticks());
        uint64_t r1 = gm_clock_realtime_ns();
        /* Within 5 ms of the interval the system clock saw. */
        ck_assert_msg(ts + 5000000 >= r0 && ts <= r1 + 5000000,
                      "tick time %llu outside [%llu, %llu]",
                      (unsigned long long)ts, (unsigned long long)r0,
                      (unsigned long long)r1);
        sleep_ms(30); /* past the 2^27-tick re-anchoring on fast TSCs */
    }
}
END_TEST

static Suite *clock_suite(void)
{
    Suite *s = suite_create("clock");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_tick_difference_is_monotonic_time);
    tcase_add_test(tc, test_tick_reading_is_realtime);
    tcase_add_test(tc, test_zombie_is_not_alive);
    tcase_add_test(tc, test_leader_gone_threads_alive);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(clock_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
