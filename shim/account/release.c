/*
 * shim/account/release.c — the release doorbell (shim/account/release.h):
 * one mutex, one condition variable on CLOCK_MONOTONIC, and the count of
 * registered waiters. The memory-order argument is in the header.
 */
#include "shim/account/release.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static pthread_once_t cv_once = PTHREAD_ONCE_INIT;
static _Atomic unsigned waiters;

static void cv_init(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &a);
    pthread_condattr_destroy(&a);
}

void gm_release_wait_begin(void)
{
    pthread_once(&cv_once, cv_init);
    pthread_mutex_lock(&mu);
    atomic_fetch_add(&waiters, 1);
    /* Pairs with the fence in gm_release_wake_slow. */
    atomic_thread_fence(memory_order_seq_cst);
}

void gm_release_sleep(uint64_t deadline_ns)
{
    struct timespec ts = {
        .tv_sec = (time_t)(deadline_ns / 1000000000u),
        .tv_nsec = (long)(deadline_ns % 1000000000u),
    };
    pthread_cond_timedwait(&cv, &mu, &ts);
}

void gm_release_unlock(void)
{
    pthread_mutex_unlock(&mu);
}

void gm_release_relock(void)
{
    pthread_mutex_lock(&mu);
}

void gm_release_wait_end(void)
{
    atomic_fetch_sub(&waiters, 1);
    pthread_mutex_unlock(&mu);
}

void gm_release_wake_slow(void)
{
    /* Pairs with the fence in gm_release_wait_begin. */
    atomic_thread_fence(memory_order_seq_cst);
    if (GM_LIKELY(atomic_load_explicit(&waiters, memory_order_relaxed) == 0))
        return;
    pthread_mutex_lock(&mu);
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

void gm_release_reset(void)
{
    pthread_mutex_init(&mu, NULL);
    atomic_store(&waiters, 0);
    cv_once = (pthread_once_t)PTHREAD_ONCE_INIT;
}
