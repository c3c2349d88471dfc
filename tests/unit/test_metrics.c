/*
 * tests/unit/test_metrics.c — one scrape (tools/lib/metrics.c) over a
 * directory of its own holding this process's live segment and copies of
 * it under other names: the figures written appear under the right
 * labels; the bounds (--max-segments, the time budget, the size of the
 * text) skip the rest with their reason and keep the text valid, the
 * --max-segments places going to live writers, then kept, then dead
 * ones, each by pid; a copy whose device block is never consistent is
 * exported without that device (reason "inconsistent"), and a group
 * file whose copy is never consistent gives none of its series (counted
 * the same), its member still labelled; a second file that means the
 * same process here is skipped (reason "duplicate"), so no label set
 * appears twice; the node-level device sums are per card (by the UUID
 * each live writer recorded, by ordinal without one), not per ordinal,
 * over two writers that see one card under different ordinals; a copy
 * of a process that is not running is left out
 * unless asked; an unreadable directory fails with its name and still
 * yields the health figures; errors add up across scrapes.
 */
#include <check.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim/group/group.h"
#include "shim/telemetry/telemetry.h"
#include "tools/lib/metrics.h"
#include "tools/lib/reader.h"

static char dir[256];
static struct gm_tel tel;

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/gm-metrics.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    struct gm_tel_params p = { .prefix = "gmu", .ring_events = 64,
                               .policy_summary = "limit=1.0GiB mode=grow",
                               .shm_dir = dir, .dev_slots = 2 };
    char err[256];
    ck_assert_int_eq(gm_tel_open(&tel, &p, err, sizeof err), 0);
    gm_tel_device(&tel, 0, 80ull << 30, 1ull << 30, NULL);
    gm_tel_alloc(&tel, 0, GM_API_MEM_ALLOC, 0x1000, 4096, 1500, 4096, 4096);
    gm_tel_alloc(&tel, 0, GM_API_MEM_ALLOC, 0x9000, 8192, 300, 12288, 12288);
    gm_tel_free(&tel, 0, GM_API_MEM_FREE, 0x1000, 4096, 100, 8192);
}

static void teardown(void)
{
    char cmd[300];
    gm_tel_close(&tel, false);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Copies this process's segment to "<dir>/<name>" with the header's pid
 * set to pid, then lets edit change the copy. */
static void copy_to(const char *name, int pid,
                    void (*edit)(unsigned char *img, size_t n))
{
    char from[300], to[300];
    snprintf(from, sizeof from, "%s/gmu.%d", dir, (int)getpid());
    snprintf(to, sizeof to, "%s/%s", dir, name);
    FILE *f = fopen(from, "rb");
    ck_assert_ptr_nonnull(f);
    static _Alignas(64) unsigned char img[1 << 20];
    size_t n = fread(img, 1, sizeof img, f);
    fclose(f);
    ck_assert_uint_gt(n, sizeof(struct gm_abi_header));
    ((struct gm_abi_header *)(void *)img)->pid = (uint32_t)pid;
    if (edit)
        edit(img, n);
    f = fopen(to, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(img, 1, n, f), n);
    fclose(f);
}

/* The copy "<dir>/gmu.<pid>". */
static void copy_as(int pid, void (*edit)(unsigned char *img, size_t n))
{
    char name[32];
    snprintf(name, sizeof name, "gmu.%d", pid);
    copy_to(name, pid, edit);
}

static struct gm_metrics_totals tot;

static char *scrape(struct gm_metrics_opts *o, int want_rc)
{
    struct gm_expo_buf b;
    char err[512] = "";
    gm_expo_buf_init(&b, 0);
    int rc = gm_metrics_scrape(o, &tot, GM_EXPO_PROM, &b, NULL, err,
                               sizeof err);
    ck_assert_msg(rc == want_rc, "scrape returned %d (%s)", rc, err);
    return b.p;   /* caller frees */
}

static void opts(struct gm_metrics_opts *o)
{
    gm_metrics_opts_default(o);
    o->dir = dir;
    o->prefix = "gmu";
}

static unsigned long long value_of(const char *text, const char *series)
{
    char line[256];
    snprintf(line, sizeof line, "\n%s", series);
    const char *p = strstr(text, line);
    /* The text cut: check's messages are bounded. */
    ck_assert_msg(p != NULL, "no series %s in:\n%.3000s", series, text);
    return strtoull(p + strlen(line), NULL, 10);
}

START_TEST(test_figures)
{
    memset(&tot, 0, sizeof tot);
    struct gm_metrics_opts o;
    opts(&o);
    char *t = scrape(&o, 0);
    char s[256];
    int pid = (int)getpid();
    snprintf(s, sizeof s, "gpumem_used_bytes{pid=\"%d\",command=", pid);
    ck_assert_ptr_nonnull(strstr(t, s));
    ck_assert_ptr_nonnull(strstr(t, ",mode=\"grow\",user=\""));
    ck_assert_ptr_nonnull(strstr(t, ",device=\"0\"} 8192\n"));
    ck_assert_ptr_nonnull(strstr(t, ",device=\"0\"} 1073741824\n"));
    ck_assert_uint_eq(value_of(t, "gpumem_device_used_bytes{device=\"0\"} "),
                      8192);
    ck_assert_uint_eq(value_of(t, "gpumem_device_processes{device=\"0\"} "),
                      1);
    /* Two allocations: 1500 ns in bucket 10 (le 2^11 ns), 300 in 8. */
    ck_assert_ptr_nonnull(strstr(t, "le=\"2.56e-07\"} 0\n"));
    ck_assert_ptr_nonnull(strstr(t, "le=\"5.12e-07\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(t, "le=\"2.048e-06\"} 2\n"));
    ck_assert_ptr_nonnull(strstr(t, "le=\"+Inf\"} 2\n"));
    ck_assert_ptr_nonnull(strstr(t, "gpumem_alloc_latency_seconds_sum{"));
    ck_assert_uint_eq(value_of(t, "gpumem_scrape_segments "), 1);
    ck_assert_uint_eq(value_of(t,
        "gpumem_scrape_errors_total{reason=\"invalid\"} "), 0);
    ck_assert_ptr_null(strstr(t, "hami_"));
    free(t);
    o.hami = true;
    t = scrape(&o, 0);
    ck_assert_ptr_nonnull(strstr(t, "hami_vgpu_memory_used_bytes{namespace="
        "\"\",pod=\"\",container=\"\",vdevice_index=\"0\",device_uuid=\"\","
        "zone=\"vGPU\"} 8192\n"));
    free(t);
}
END_TEST

START_TEST(test_bounds)
{
    memset(&tot, 0, sizeof tot);
    /* Names of processes that are not running: listed, skipped by the
     * bounds before they are even opened. */
    copy_as(999990, NULL);
    copy_as(999991, NULL);
    struct gm_metrics_opts o;
    opts(&o);
    o.max_segments = 1;
    o.dead = true;
    char *t = scrape(&o, 0);
    ck_assert_uint_eq(value_of(t,
        "gpumem_scrape_errors_total{reason=\"limit\"} "), 2);
    /* The slot goes to the live writer. */
    ck_assert_uint_eq(value_of(t, "gpumem_scrape_segments "), 1);
    ck_assert_ptr_nonnull(strstr(t, "gpumem_process_info{pid=\""));
    ck_assert_ptr_null(strstr(t, "gpumem_process_info{pid=\"99999"));
    free(t);
    opts(&o);
    o.timeout_ns = 0;
    t = scrape(&o, 0);
    ck_assert_uint_eq(value_of(t,
        "gpumem_scrape_errors_total{reason=\"timeout\"} "), 3);
    ck_assert_uint_eq(value_of(t, "gpumem_scrape_segments "), 0);
    /* Counters: the first scrape's 2 are still there. */
    ck_assert_uint_eq(value_of(t,
        "gpumem_scrape_errors_total{reason=\"limit\"} "), 2);
    free(t);
    opts(&o);
    o.max_bytes = 100;          /* the first segment's text is past it */
    o.dead = true;              /* every one of them has text */
    t = scrape(&o, 0);
    ck_assert_uint_eq(value_of(t,
        "gpumem_scrape_errors_total{reason=\"limit\"} "), 4);
    ck_assert_uint_eq(value_of(t, "gpumem_scrape_segments "), 1);
    free(t);
    /* Not running: left out without an error, exported with dead. */
    opts(&o);
    t = scrape(&o, 0);
    ck_assert_uint_eq(value_of(t, "gpumem_scrape_segments "), 1);
    free(t);
    o.dead = true;
    t = scrape(&o, 0);
    ck_assert_uint_eq(value_of(t, "gpumem_scrape_segments "), 3);
    ck_assert_ptr_nonnull(strstr(t, "gpumem_used_bytes{pid=\"999990\""));
    /* The sums count the live writer only. */
    ck_assert_uint_eq(value_of(t, "gpumem_device_used_bytes{device=\"0\"} "),
                      8192);
    free(t);
}
END_TEST

static void closed_kept(unsigned char *img, size_t n)
{
    (void)n;
    ((struct gm_abi_header *)(void *)img)->flags |=
        GM_ABI_F_CLOSED | GM_ABI_F_KEPT;
}

/* Whether the scrape exported the process pid (its info row). */
static bool exported(const char *t, int pid)
{
    char s[64];
    snprintf(s, sizeof s, "\ngpumem_process_info{pid=\"%d\",", pid);
    return strstr(t, s) != NULL;
}

/* The --max-segments slots go to what will be exported: the live writer,
 * then kept segments, then (with --dead) dead ones, each by pid; dead
 * segments left out anyway take none and are not counted. */
START_TEST(test_bounds_export_order)
{
    memset(&tot, 0, sizeof tot);
    copy_as(999970, NULL);          /* dead: the lowest pids */
    copy_as(999971, NULL);
    copy_as(999980, closed_kept);
    copy_as(999981, closed_kept);
    struct gm_metrics_opts o;
    opts(&o);
    o.max_segments = 2;
    char *t = scrape(&o, 0);
    ck_assert_uint_eq(value_of(t, "gpumem_scrape_segments "), 2);
    ck_assert(exported(t, (int)getpid()));
    ck_assert(exported(t, 999980));
    ck_assert_uint_eq(value_of(t,
        "gpumem_scrape_errors_total{reason=\"limit\"} "), 1);
    free(t);
    memset(&tot, 0, sizeof tot);
    o.dead = true;
    o.max_segments = 4;
    t = scrape(&o, 0);
    ck_assert_uint_eq(value_of(t, "gpumem_scrape_segments "), 4);
    ck_assert(exported(t, 999981) && exported(t, 999970));
    ck_assert(!exported(t, 999971));
    ck_assert_uint_eq(value_of(t,
        "gpumem_scrape_errors_total{reason=\"limit\"} "), 1);
    free(t);
}
END_TEST

static void torn(unsigned char *img, size_t n)
{
    const struct gm_abi_header *h = (const void *)img;
    ck_assert_uint_gt(n, h->dev_offset + sizeof(struct gm_abi_dev));
    struct gm_abi_dev *d = (void *)(img + h->dev_offset);
    d->wbegin = d->wdone + 1;   /* a writer that never left */
}

START_TEST(test_inconsistent)
{
    memset(&tot, 0, sizeof tot);
    copy_as(999992, torn);
    struct gm_metrics_opts o;
    opts(&o);
    o.dead = true;
    char *t = scrape(&o, 0);
    ck_assert_uint_eq(value_of(t,
        "gpumem_scrape_errors_total{reason=\"inconsistent\"} "), 1);
    ck_assert_ptr_nonnull(strstr(t, "gpumem_process_info{pid=\"999992\""));
    ck_assert_ptr_null(strstr(t, "gpumem_used_bytes{pid=\"999992\""));
    free(t);
}
END_TEST

/* A group of this process with 4096 bytes charged on one device; its
 * seqlock then set to odd (a locker that died inside an update), as
 * every copy then reads it. */
static void odd_gen_group(struct gm_group *g, bool odd)
{
    struct gm_group_params p = { .dir = dir, .prefix = "gmu",
                                 .name = "gm-odd", .weight = 1,
                                 .limit = { .kind = GM_LIMIT_BYTES,
                                            .bytes = 1ull << 30 } };
    static const unsigned char uuid[16] = { 0xab };
    char msg[512], path[300];
    ck_assert_msg(gm_group_join(g, &p, msg, sizeof msg) == 0, "%s", msg);
    int gdev = gm_group_device(g, uuid, 80ull << 30, msg, sizeof msg);
    ck_assert_int_ge(gdev, 0);
    ck_assert(gm_group_reserve(g, gdev, 4096, NULL));
    if (!odd)
        return;
    snprintf(path, sizeof path, "%s/gmu.group@gm-odd", dir);
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    uint64_t gen;
    off_t at = (off_t)offsetof(struct gm_group_hdr, gen);
    ck_assert_int_eq(pread(fd, &gen, sizeof gen, at), (ssize_t)sizeof gen);
    gen |= 1;
    ck_assert_int_eq(pwrite(fd, &gen, sizeof gen, at), (ssize_t)sizeof gen);
    close(fd);
}

START_TEST(test_inconsistent_group)
{
    memset(&tot, 0, sizeof tot);
    struct gm_group g;
    struct gm_metrics_opts o;
    opts(&o);
    char s[128];
    snprintf(s, sizeof s, "gpumem_process_info{pid=\"%d\",", (int)getpid());
    odd_gen_group(&g, false);
    char *t = scrape(&o, 0);
    ck_assert_ptr_nonnull(strstr(t, "\ngpumem_group_used_bytes{group=\"gm-odd\""));
    ck_assert_uint_eq(value_of(t, "gpumem_scrape_groups "), 1);
    free(t);
    gm_group_leave(&g);
    odd_gen_group(&g, true);
    t = scrape(&o, 0);
    /* None of the group's figures; counted; its member still labelled. */
    ck_assert_ptr_null(strstr(t, "\ngpumem_group_"));
    ck_assert_uint_eq(value_of(t, "gpumem_scrape_groups "), 0);
    ck_assert_uint_eq(value_of(t,
        "gpumem_scrape_errors_total{reason=\"inconsistent\"} "), 1);
    ck_assert_ptr_nonnull(strstr(t, s));
    ck_assert_ptr_nonnull(strstr(strstr(t, s), ",group=\"gm-odd\""));
    free(t);
    gm_group_leave(&g);
}
END_TEST

static void initial_pidns(unsigned char *img, size_t n)
{
    (void)n;
    ((struct gm_abi_header *)(void *)img)->ident.pidns = GM_PIDNS_INIT;
}

/* Asserts that no two samples of text have one name and label set. */
static void samples_unique(const char *text)
{
    size_t n = 0, cap = 256;
    char **key = malloc(cap * sizeof *key);
    ck_assert_ptr_nonnull(key);
    for (const char *p = text; *p; ) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *sp = memrchr(p, ' ', len);
        if (p[0] != '#' && sp != NULL) {
            char *k = strndup(p, (size_t)(sp - p));
            for (size_t i = 0; i < n; i++)
                ck_assert_msg(strcmp(key[i], k) != 0, "twice: %s", k);
            if (n == cap) {
                cap *= 2;
                key = realloc(key, cap * sizeof *key);
                ck_assert_ptr_nonnull(key);
            }
            key[n++] = k;
        }
        p += len + (e != NULL);
    }
    for (size_t i = 0; i < n; i++)
        free(key[i]);
    free(key);
}

/* One process under the two names that both mean it in the initial pid
 * namespace (plain, and ".ns<inode>" of that namespace): one label set,
 * exported once; the later file is skipped as "duplicate", and the
 * per-device sums count the process once. */
START_TEST(test_duplicate_labels_skipped)
{
    if (gm_reader_self_pidns() != GM_PIDNS_INIT) {
        printf("not in the initial pid namespace: no second name means "
               "this process here; skipped\n");
        return;
    }
    memset(&tot, 0, sizeof tot);
    char name[64];
    snprintf(name, sizeof name, "gmu.%d.ns%llu", (int)getpid(),
             (unsigned long long)GM_PIDNS_INIT);
    copy_to(name, (int)getpid(), initial_pidns);
    struct gm_metrics_opts o;
    opts(&o);
    char *t = scrape(&o, 0);
    samples_unique(t);
    ck_assert_uint_eq(value_of(t, "gpumem_scrape_segments "), 1);
    ck_assert_uint_eq(value_of(t,
        "gpumem_scrape_errors_total{reason=\"duplicate\"} "), 1);
    ck_assert_uint_eq(value_of(t, "gpumem_device_used_bytes{device=\"0\"} "),
                      8192);
    ck_assert_uint_eq(value_of(t, "gpumem_device_processes{device=\"0\"} "),
                      1);
    free(t);
}
END_TEST

/* A second live writer in the directory: a child holding its own segment
 * with two cards until the parent closes the pipe. */
static pid_t child_writer(const unsigned char *u0, const unsigned char *u1,
                          int *hold)
{
    int ready[2], go[2];
    ck_assert_int_eq(pipe(ready), 0);
    ck_assert_int_eq(pipe(go), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct gm_tel c;
        struct gm_tel_params p = { .prefix = "gmu", .ring_events = 64,
                                   .policy_summary = "mode=grow",
                                   .shm_dir = dir, .dev_slots = 2 };
        char err[256], b;
        close(ready[0]);
        close(go[1]);
        if (gm_tel_open(&c, &p, err, sizeof err) != 0)
            _exit(1);
        gm_tel_device(&c, 0, 1ull << 30, 0, u0);
        gm_tel_alloc(&c, 0, GM_API_MEM_ALLOC, 0x1000, 4096, 100, 4096, 4096);
        gm_tel_device(&c, 1, 1ull << 30, 0, u1);
        gm_tel_alloc(&c, 1, GM_API_MEM_ALLOC, 0x1000, 1024, 100, 1024, 1024);
        if (write(ready[1], "r", 1) != 1)
            _exit(1);
        while (read(go[0], &b, 1) > 0)
            ;
        gm_tel_close(&c, false);
        _exit(0);
    }
    close(ready[1]);
    close(go[0]);
    char b;
    ck_assert_int_eq(read(ready[0], &b, 1), 1);
    close(ready[0]);
    *hold = go[1];
    return pid;
}

/* The node-level device sums are per physical card, keyed by the UUID
 * each process recorded, not by ordinal: the child sees card A as its
 * device 0 and card B as its device 1, this process sees card A as its
 * device 1 and has a device 0 without a UUID. Card A sums both
 * processes' blocks (4096 + 16384 bytes); card B and the block without a
 * UUID (by its ordinal) are each alone; no series of them carries both
 * labels, and none is written twice. */
START_TEST(test_device_sums_by_card)
{
    static const unsigned char ua[16] = { 0xaa, 1, 2, 3 },
                               ub[16] = { 0xbb, 1, 2, 3 };
    memset(&tot, 0, sizeof tot);
    int hold;
    pid_t pid = child_writer(ua, ub, &hold);
    gm_tel_device(&tel, 1, 1ull << 30, 0, ua);
    gm_tel_alloc(&tel, 1, GM_API_MEM_ALLOC, 0x5000, 16384, 100, 16384, 16384);
    struct gm_metrics_opts o;
    opts(&o);
    char *t = scrape(&o, 0);
    close(hold);
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
    samples_unique(t);
    const char *A = "uuid=\"GPU-aa010203-0000-0000-0000-000000000000\"";
    const char *Bu = "uuid=\"GPU-bb010203-0000-0000-0000-000000000000\"";
    char s[160];
    snprintf(s, sizeof s, "gpumem_device_used_bytes{%s} ", A);
    ck_assert_uint_eq(value_of(t, s), 4096 + 16384);
    snprintf(s, sizeof s, "gpumem_device_processes{%s} ", A);
    ck_assert_uint_eq(value_of(t, s), 2);
    snprintf(s, sizeof s, "gpumem_device_physical_bytes{%s} ", A);
    ck_assert_uint_eq(value_of(t, s), 1ull << 30);
    snprintf(s, sizeof s, "gpumem_device_used_bytes{%s} ", Bu);
    ck_assert_uint_eq(value_of(t, s), 1024);
    snprintf(s, sizeof s, "gpumem_device_processes{%s} ", Bu);
    ck_assert_uint_eq(value_of(t, s), 1);
    ck_assert_uint_eq(value_of(t, "gpumem_device_used_bytes{device=\"0\"} "),
                      8192);
    ck_assert_uint_eq(value_of(t, "gpumem_device_processes{device=\"0\"} "),
                      1);
    ck_assert_ptr_null(strstr(t, "gpumem_device_used_bytes{device=\"1\""));
    ck_assert_ptr_null(strstr(t, "gpumem_device_used_bytes{device=\"0\","));
    ck_assert_uint_eq(value_of(t, "gpumem_scrape_segments "), 2);
    free(t);
}
END_TEST

START_TEST(test_missing_dir)
{
    memset(&tot, 0, sizeof tot);
    struct gm_metrics_opts o;
    opts(&o);
    o.dir = "/nonexistent-gpumem-dir";
    struct gm_expo_buf b;
    char err[512] = "";
    gm_expo_buf_init(&b, 0);
    ck_assert_int_eq(gm_metrics_scrape(&o, &tot, GM_EXPO_OPENMETRICS, &b,
                                       NULL, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "/nonexistent-gpumem-dir") != NULL, "%s", err);
    ck_assert_ptr_nonnull(strstr(b.p, "gpumem_scrape_segments 0\n"));
    size_t n = strlen(b.p);
    ck_assert_str_eq(b.p + n - 6, "# EOF\n");
    gm_expo_buf_free(&b);
}
END_TEST

START_TEST(test_write_file)
{
    char err[512];
    ck_assert_int_eq(gm_metrics_write_file(dir, "x.prom", "a 1\n", 4, err,
                                           sizeof err), 0);
    char path[300];
    snprintf(path, sizeof path, "%s/x.prom", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[16] = "";
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    fclose(f);
    ck_assert_str_eq(line, "a 1\n");
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0644);
    ck_assert_int_eq(gm_metrics_write_file("/nonexistent-gpumem-dir", "x",
                                           "", 0, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "cannot open directory /nonexistent") != NULL,
                  "%s", err);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("metrics");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_figures);
    tcase_add_test(tc, test_bounds);
    tcase_add_test(tc, test_bounds_export_order);
    tcase_add_test(tc, test_inconsistent);
    tcase_add_test(tc, test_inconsistent_group);
    tcase_add_test(tc, test_duplicate_labels_skipped);
    tcase_add_test(tc, test_device_sums_by_card);
    tcase_add_test(tc, test_missing_dir);
    tcase_add_test(tc, test_write_file);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
