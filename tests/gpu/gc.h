/*
 * tests/gpu/gc.h — the harness shared by the real-GPU cases (no CUDA types):
 * argument parsing, checks, the closing result line, and the two limit-edge
 * procedures every case runs through its own allocation API.
 *
 * Protocol of every case program:
 *   prog                       without the shim: only the parts that do not
 *                              depend on a limit are checked (the test itself
 *                              is right, the API works on this machine);
 *   prog --expect-limit BYTES  under LD_PRELOAD=libgpumem.so with that
 *                              GPUMEM_LIMIT: the limit edge, the reported
 *                              totals and drift are checked exactly.
 * It prints "  ok   ..." or "  FAIL ..." for each check, then one closing
 * line "PASS|FAIL|SKIP name: detail", and exits 0 pass, 1 fail, 77 skip.
 *
 * Invariant used throughout: under the shim the reported free memory is
 * exactly limit - used (the real card has far more free than the limit),
 * and the shim charges the size asked for, so every figure compares
 * exactly; without the shim, free memory moves in driver-sized steps and
 * is compared with a tolerance (GC_NATIVE_SLACK).
 *
 * Everything here is static: each case is one translation unit.
 */
#ifndef GC_H
#define GC_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GC_OOM 2 /* CUDA_ERROR_OUT_OF_MEMORY == cudaErrorMemoryAllocation */
#define GC_MIB (1024ull * 1024ull)
#define GC_NATIVE_SLACK (64ull * GC_MIB)
#define GC_HUGE (1ull << 50) /* 1 PiB: no card has it */

static const char *gc_name = "case";
static unsigned long long gc_limit; /* 0: run without the shim */
static int gc_checks, gc_fails;
static char gc_first_fail[200];

#if defined(__GNUC__)
#define GC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define GC_PRINTF(a, b)
#endif

/* The case's name is its program's file name. */
static inline void gc_init(int argc, char **argv)
{
    const char *slash = strrchr(argv[0], '/');
    const char *name = slash ? slash + 1 : argv[0];
    gc_name = name;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--expect-limit") == 0 && i + 1 < argc) {
            gc_limit = strtoull(argv[++i], NULL, 10);
        } else {
            printf("FAIL %s: usage: %s [--expect-limit BYTES]\n", name, argv[0]);
            exit(1);
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("  %s: %s\n", name,
           gc_limit ? "under the shim, limit checks on" : "without the shim (sanity)");
}

static inline int gc_check(int ok, const char *fmt, ...) GC_PRINTF(2, 3);
static inline int gc_check(int ok, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gc_checks++;
    if (!ok) {
        if (gc_fails++ == 0)
            snprintf(gc_first_fail, sizeof gc_first_fail, "%s", msg);
    }
    printf("  %s %s\n", ok ? "ok  " : "FAIL", msg);
    return ok;
}

static inline void gc_note(const char *fmt, ...) GC_PRINTF(1, 2);
static inline void gc_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("  note ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

static inline void gc_skip(const char *why)
{
    printf("SKIP %s: %s\n", gc_name, why);
    exit(77);
}

/* A fatal setup error: count it and end the case now. */
static inline void gc_abort(const char *what, int code)
{
    gc_check(0, "%s failed with code %d", what, code);
    printf("FAIL %s: %s\n", gc_name, gc_first_fail);
    exit(1);
}

static inline int gc_finish(void)
{
    if (gc_fails) {
        printf("FAIL %s: %d of %d checks failed; first: %s\n", gc_name, gc_fails,
               gc_checks, gc_first_fail);
        return 1;
    }
    if (gc_limit)
        printf("PASS %s: %d checks under a %llu-byte limit\n", gc_name, gc_checks,
               gc_limit);
    else
        printf("PASS %s: %d checks without the shim\n", gc_name, gc_checks);
    return 0;
}

/* Device-memory query of the API under test: free and total bytes. */
typedef int (*gc_meminfo_fn)(size_t *free_b, size_t *total_b);

/* A byte-granular allocation API (cudaMalloc, cuMemAlloc, ...). The
 * handle is whatever the API returns, carried as a pointer. */
struct gc_api {
    const char *what;
    int (*alloc)(size_t bytes, void **h); /* 0 or the API's error code */
    int (*release)(void *h);
};

/* One fixed allocation of an API that is not byte-granular (pitch, 3D,
 * arrays, VMM): 'nominal' is the payload the caller asked for. */
struct gc_unit {
    const char *what;
    unsigned long long nominal;
    int (*alloc)(void **h);
    int (*release)(void *h);
};

static inline size_t gc_free_now(gc_meminfo_fn mi)
{
    size_t f = 0, t = 0;
    int rc = mi(&f, &t);
    if (rc != 0)
        gc_abort("memory-info query", rc);
    return f;
}

/* The reported total: the limit under the shim, something sane without. */
static inline void gc_check_total(const char *what, unsigned long long total)
{
    if (gc_limit)
        gc_check(total == gc_limit, "%s reports the limit %llu (got %llu)", what,
                 gc_limit, total);
    else
        gc_check(total > 0, "%s reports %llu bytes", what, total);
}

/* Free memory is back where it was. */
static inline void gc_check_drift(const char *when, size_t before, size_t after)
{
    if (gc_limit) {
        gc_check(after == before, "no drift %s: free %zu, was %zu", when, after, before);
    } else {
        size_t d = after > before ? after - before : before - after;
        gc_check(d <= GC_NATIVE_SLACK, "free back within %llu MiB %s (moved %zu bytes)",
                 GC_NATIVE_SLACK / GC_MIB, when, d);
    }
}

/* An absurd request fails with the OOM code, with or without the shim
 * (without it, this shows the code the edge checks expect is right). */
static inline void gc_check_huge(const struct gc_api *a)
{
    void *h = NULL;
    int rc = a->alloc((size_t)GC_HUGE, &h);
    gc_check(rc == GC_OOM, "%s(1 PiB) fails with the OOM code %d (got %d)", a->what,
             GC_OOM, rc);
    if (rc == 0)
        a->release(h);
}

/* Take-and-give-back of a moderate size: works in both modes, no drift. */
static inline void gc_roundtrip(const struct gc_api *a, gc_meminfo_fn mi,
                                size_t bytes)
{
    void *h = NULL;
    size_t f0 = gc_free_now(mi);
    int rc = a->alloc(bytes, &h);
    if (!gc_check(rc == 0, "%s(%zu) succeeds (got %d)", a->what, bytes, rc))
        return;
    size_t f1 = gc_free_now(mi);
    if (gc_limit)
        gc_check(f0 - f1 == bytes, "%s(%zu) charged exactly (free fell by %zu)", a->what,
                 bytes, f0 - f1);
    rc = a->release(h);
    gc_check(rc == 0, "release after %s succeeds (got %d)", a->what, rc);
    gc_check_drift("after the round trip", f0, gc_free_now(mi));
}

/* Limit edge of a byte-granular API (under the shim only): a request one
 * byte over the free memory fails with OOM, exactly the free memory
 * succeeds and leaves 0 free, one more byte then fails, and releasing
 * restores the free memory exactly. */
static inline void gc_edge_bytes(const struct gc_api *a, gc_meminfo_fn mi)
{
    if (!gc_limit)
        return;
    size_t f0 = gc_free_now(mi);
    void *x = NULL, *y = NULL;
    gc_check(f0 > 0 && f0 <= gc_limit, "free %zu is within (0, limit]", f0);
    int rc = a->alloc(f0 + 1, &x);
    gc_check(rc == GC_OOM, "edge: %s(free + 1 = %zu) refused with OOM (got %d)", a->what,
             f0 + 1, rc);
    if (rc == 0)
        a->release(x);
    rc = a->alloc(f0, &x);
    if (!gc_check(rc == 0, "edge: %s(free = %zu) succeeds (got %d)", a->what, f0, rc))
        return;
    gc_check(gc_free_now(mi) == 0, "edge: free is 0 with everything taken");
    rc = a->alloc(1, &y);
    gc_check(rc == GC_OOM, "edge: %s(1) at the limit refused with OOM (got %d)", a->what,
             rc);
    if (rc == 0)
        a->release(y);
    rc = a->release(x);
    gc_check(rc == 0, "edge: release succeeds (got %d)", rc);
    gc_check_drift("after the edge", f0, gc_free_now(mi));
}

/* Limit edge of a fixed-size API. Its charge C is measured (under the
 * shim, exactly what free fell by); then, with a byte-granular filler of
 * the same family leaving C - 1 bytes, the unit is refused with OOM, and
 * leaving exactly C bytes it succeeds, after which one more filler byte is
 * refused. Without the shim only the probe runs. Returns C (0 on error). */
static inline unsigned long long gc_edge_unit(const struct gc_unit *u,
                                              const struct gc_api *fill, gc_meminfo_fn mi)
{
    void *h = NULL, *x = NULL, *y = NULL;
    size_t f0 = gc_free_now(mi);
    int rc = u->alloc(&h);
    if (!gc_check(rc == 0, "%s (%llu bytes asked) succeeds (got %d)", u->what, u->nominal,
                  rc))
        return 0;
    size_t f1 = gc_free_now(mi);
    unsigned long long c = f0 > f1 ? f0 - f1 : 0;
    rc = u->release(h);
    gc_check(rc == 0, "%s released (got %d)", u->what, rc);
    gc_check_drift("after the probe", f0, gc_free_now(mi));
    if (!gc_limit) {
        gc_note("%s: free fell by %llu bytes without the shim", u->what, c);
        return c;
    }
    if (!gc_check(c >= u->nominal && c <= f0, "%s charged %llu bytes (asked %llu)", u->what,
                  c, u->nominal))
        return 0;
    /* C - 1 bytes left: refused. */
    rc = fill->alloc(f0 - c + 1, &x);
    if (gc_check(rc == 0, "edge: filler %s(%llu) succeeds (got %d)", fill->what,
                 f0 - c + 1, rc)) {
        rc = u->alloc(&h);
        gc_check(rc == GC_OOM, "edge: %s with %llu bytes left refused with OOM (got %d)",
                 u->what, c - 1, rc);
        if (rc == 0)
            u->release(h);
        fill->release(x);
    }
    gc_check_drift("after the refused edge", f0, gc_free_now(mi));
    /* Exactly C left: fits; then nothing is left. */
    x = NULL;
    if (f0 > c) {
        rc = fill->alloc(f0 - c, &x);
        if (!gc_check(rc == 0, "edge: filler %s(%llu) succeeds (got %d)", fill->what,
                      (unsigned long long)(f0 - c), rc))
            return c;
    }
    rc = u->alloc(&h);
    if (gc_check(rc == 0, "edge: %s with exactly %llu bytes left succeeds (got %d)",
                 u->what, c, rc)) {
        gc_check(gc_free_now(mi) == 0, "edge: free is 0 with everything taken");
        rc = fill->alloc(1, &y);
        gc_check(rc == GC_OOM, "edge: %s(1) at the limit refused with OOM (got %d)",
                 fill->what, rc);
        if (rc == 0)
            fill->release(y);
        u->release(h);
    }
    if (x)
        fill->release(x);
    gc_check_drift("after the edge", f0, gc_free_now(mi));
    return c;
}

#endif
