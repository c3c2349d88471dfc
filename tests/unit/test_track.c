/*
 * tests/unit/test_track.c — the live-allocation table: insert, find,
 * remove, namespaces, duplicate keys, reference counts, taking an entry
 * only while it is still the one copied, a million live entries, and 8
 * threads inserting and removing without losing any.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "shim/account/track.h"

static struct gm_alloc mk(enum gm_ns ns, uint64_t key, uint64_t size)
{
    struct gm_alloc a = { .key = key, .size = size, .ns = (uint8_t)ns,
                          .refs = 1 };
    return a;
}

START_TEST(basic_and_namespaces)
{
    gm_track_reset();
    struct gm_alloc a = mk(GM_NS_PTR, 0x1000, 64), o;
    ck_assert_int_eq(gm_track_insert(&a, &o), 0);
    a = mk(GM_NS_HANDLE, 0x1000, 128); /* same key, other namespace */
    ck_assert_int_eq(gm_track_insert(&a, &o), 0);
    ck_assert(gm_track_find(GM_NS_PTR, 0x1000, &o));
    ck_assert_uint_eq(o.size, 64);
    ck_assert(gm_track_find(GM_NS_HANDLE, 0x1000, &o));
    ck_assert_uint_eq(o.size, 128);
    ck_assert(!gm_track_find(GM_NS_ARRAY, 0x1000, &o));
    ck_assert(gm_track_remove(GM_NS_PTR, 0x1000, &o));
    ck_assert(!gm_track_remove(GM_NS_PTR, 0x1000, &o));
    ck_assert_uint_eq(gm_track_count(), 1);
    /* Duplicate key: the old entry comes back. */
    a = mk(GM_NS_HANDLE, 0x1000, 256);
    ck_assert_int_eq(gm_track_insert(&a, &o), 1);
    ck_assert_uint_eq(o.size, 128);
    ck_assert_uint_eq(gm_track_count(), 1);
}
END_TEST

/* gm_track_take_same: the entry copied, not another that took its key. */
START_TEST(take_only_the_same_entry)
{
    gm_track_reset();
    struct gm_alloc a = mk(GM_NS_PTR, 0x2000, 64), b, o;
    a.birth_step = 7;
    ck_assert_int_eq(gm_track_insert(&a, NULL), 0);
    ck_assert(gm_track_find(GM_NS_PTR, 0x2000, &b));
    /* the key is taken by another block (one field differs) */
    struct gm_alloc c = a;
    c.birth_step = 8;
    ck_assert_int_eq(gm_track_insert(&c, &o), 1);
    ck_assert(!gm_track_take_same(&b, &o));
    ck_assert(gm_track_find(GM_NS_PTR, 0x2000, &o));
    ck_assert_uint_eq(o.birth_step, 8);
    /* the entry as copied: taken, once */
    ck_assert(gm_track_find(GM_NS_PTR, 0x2000, &b));
    ck_assert(gm_track_take_same(&b, &o));
    ck_assert_uint_eq(o.size, 64);
    ck_assert(!gm_track_take_same(&b, &o));
    ck_assert_uint_eq(gm_track_count(), 0);
    /* another namespace with the same key is not it */
    struct gm_alloc h = mk(GM_NS_HANDLE, 0x2000, 64);
    ck_assert_int_eq(gm_track_insert(&h, NULL), 0);
    ck_assert(!gm_track_take_same(&b, &o));
    ck_assert_uint_eq(gm_track_count(), 1);
}
END_TEST

START_TEST(refcounts)
{
    gm_track_reset();
    struct gm_alloc a = mk(GM_NS_HANDLE, 42, 2 << 20), o;
    gm_track_insert(&a, NULL);
    ck_assert(gm_track_ref(GM_NS_HANDLE, 42));
    ck_assert(gm_track_ref(GM_NS_HANDLE, 42));
    ck_assert_int_eq(gm_track_unref(GM_NS_HANDLE, 42, &o), 0);
    ck_assert_int_eq(gm_track_unref(GM_NS_HANDLE, 42, &o), 0);
    ck_assert_int_eq(gm_track_unref(GM_NS_HANDLE, 42, &o), 1);
    ck_assert_uint_eq(o.size, 2 << 20);
    ck_assert_int_eq(gm_track_unref(GM_NS_HANDLE, 42, &o), -1);
    ck_assert(!gm_track_ref(GM_NS_HANDLE, 42));
}
END_TEST

START_TEST(a_million_live)
{
    gm_track_reset();
    const uint64_t n = 1000000;
    uint64_t bad = 0; /* counted, asserted once: Check asserts are slow */
    for (uint64_t i = 0; i < n; i++) {
        struct gm_alloc a = mk(GM_NS_PTR, 0x7f0000000000ull + i * 512, i);
        bad += gm_track_insert(&a, NULL) != 0;
    }
    ck_assert_uint_eq(bad, 0);
    ck_assert_uint_eq(gm_track_count(), n);
    struct gm_alloc o;
    /* Remove every other one, then check all. */
    for (uint64_t i = 0; i < n; i += 2)
        bad += !gm_track_remove(GM_NS_PTR, 0x7f0000000000ull + i * 512, &o);
    ck_assert_uint_eq(bad, 0);
    for (uint64_t i = 0; i < n; i++) {
        bool f = gm_track_find(GM_NS_PTR, 0x7f0000000000ull + i * 512, &o);
        bad += f != (i % 2 == 1) || (f && o.size != i);
    }
    ck_assert_uint_eq(bad, 0);
    ck_assert_uint_eq(gm_track_count(), n / 2);
    gm_track_reset();
    ck_assert_uint_eq(gm_track_count(), 0);
}
END_TEST

static _Atomic uint64_t thread_errors;

static void *worker(void *arg)
{
    uint64_t base = (uint64_t)(uintptr_t)arg << 40, bad = 0;
    for (int round = 0; round < 20; round++) {
        for (uint64_t i = 0; i < 5000; i++) {
            struct gm_alloc a = mk(GM_NS_PTR, base + i * 4096, i + 1);
            bad += gm_track_insert(&a, NULL) != 0;
        }
        for (uint64_t i = 0; i < 5000; i++) {
            struct gm_alloc o;
            bad += !gm_track_remove(GM_NS_PTR, base + i * 4096, &o) ||
                   o.size != i + 1;
        }
    }
    thread_errors += bad;
    return NULL;
}

START_TEST(threads)
{
    gm_track_reset();
    pthread_t t[8];
    for (uintptr_t i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    ck_assert_uint_eq(thread_errors, 0);
    ck_assert_uint_eq(gm_track_count(), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("track");
    TCase *t = tcase_create("core");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, basic_and_namespaces);
    tcase_add_test(t, refcounts);
    tcase_add_test(t, take_only_the_same_entry);
    tcase_add_test(t, a_million_live);
    tcase_add_test(t, threads);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int f = srunner_ntests_failed(r);
    srunner_free(r);
    return f ? 1 : 0;
}
