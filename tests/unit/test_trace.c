/*
 * tests/unit/test_trace.c — recordings and traces: the recording sink
 * (shim/record/record.c) writes what was put, one section per process,
 * a forked child its own; a directory others may write is refused; a
 * file size limit makes records lost, counted in the header and in a
 * "lost" record; the loader (tools/lib/trace.c) reads closed, unclosed
 * and multi-section files and text traces, and refuses truncated,
 * foreign-version and malformed input with the place named (in a text
 * trace also the field and what it accepts); a section's writer is
 * running only as the process that started it (not a reused pid);
 * pacing counts from the first event and bounds each wait; the peak is
 * one device's, each event on its recorded device.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shim/record/record.h"
#include "tools/lib/trace.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/gmtrace.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* The only .gmr file of pid in dir (path into out). */
static int file_of(int pid, char *out, size_t cap)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char pre[32];
    out[0] = 0;
    int n = 0;
    snprintf(pre, sizeof pre, "%d.", pid);
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, pre, strlen(pre)) == 0) {
            snprintf(out, cap, "%.60s/%.180s", dir, e->d_name);
            n++;
        }
    closedir(d);
    return n;
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

START_TEST(sink_roundtrip)
{
    char err[256], path[256];
    ck_assert_int_eq(gm_rec_open(dir, err, sizeof err), 0);
    ck_assert_int_eq(gm_rec_on, 1);
    for (int i = 0; i < 5000; i++) /* past the first 1 MiB window */
        gm_rec_put(i % 2 ? GM_RO_FREE : GM_RO_ALLOC, 0, 0, 4096 + i,
                   0x1000 + (uint64_t)i, 7, 8, 0);
    gm_rec_put(GM_RO_ALLOC, 0, 0, 1 << 20, 0, 0, 0, 2);
    gm_rec_close();
    ck_assert_int_eq(gm_rec_on, 0);
    ck_assert_int_eq(file_of(getpid(), path, sizeof path), 1);
    struct gm_trace t;
    ck_assert_int_eq(gm_trace_load(path, &t, err, sizeof err), 0);
    ck_assert_uint_eq(t.nproc, 1);
    ck_assert(t.proc[0].closed);
    ck_assert_uint_eq(t.proc[0].pid, (unsigned)getpid());
    ck_assert_uint_eq(t.proc[0].count, 5001);
    ck_assert_uint_eq(t.proc[0].lost, 0);
    for (size_t i = 0; i < 5000; i++) {
        ck_assert_uint_eq(t.ev[i].seq, i + 1);
        ck_assert_uint_eq(t.ev[i].size, 4096 + i);
        ck_assert_uint_eq(t.ev[i].addr, 0x1000 + i);
        ck_assert_uint_eq(t.ev[i].aux, 7);
        ck_assert_uint_eq(t.ev[i].op, i % 2 ? GM_RO_FREE : GM_RO_ALLOC);
        if (i)
            ck_assert_uint_ge(t.ev[i].t_ns, t.ev[i - 1].t_ns);
    }
    ck_assert_uint_eq(t.ev[5000].rc, 2);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_size, 64 + 5001 * 64); /* cut to its length */
    gm_trace_free(&t);
}
END_TEST

START_TEST(sink_fork_child_own_file)
{
    char err[256], path[256];
    ck_assert_int_eq(gm_rec_open(dir, err, sizeof err), 0);
    gm_rec_put(GM_RO_ALLOC, 0, 0, 1, 0x10, 0, 0, 0);
    pid_t ch = fork();
    if (ch == 0) {
        gm_rec_fork_child();
        gm_rec_put(GM_RO_ALLOC, 0, 0, 2, 0x20, 0, 0, 0);
        gm_rec_put(GM_RO_ALLOC, 0, 0, 3, 0x30, 0, 0, 0);
        gm_rec_close();
        _exit(0);
    }
    int s;
    waitpid(ch, &s, 0);
    gm_rec_put(GM_RO_FREE, 0, 0, 0, 0x10, 0, 0, 0);
    gm_rec_close();
    struct gm_trace t;
    ck_assert_int_eq(file_of(getpid(), path, sizeof path), 1);
    ck_assert_int_eq(gm_trace_load(path, &t, err, sizeof err), 0);
    ck_assert_uint_eq(t.proc[0].count, 2); /* the parent's two, only */
    ck_assert_uint_eq(t.ev[1].op, GM_RO_FREE);
    gm_trace_free(&t);
    ck_assert_int_eq(file_of(ch, path, sizeof path), 1);
    ck_assert_int_eq(gm_trace_load(path, &t, err, sizeof err), 0);
    ck_assert_uint_eq(t.proc[0].count, 2);
    ck_assert_uint_eq(t.proc[0].ppid, (unsigned)getpid());
    ck_assert_uint_eq(t.ev[0].size, 2);
    gm_trace_free(&t);
}
END_TEST

START_TEST(sink_refuses_open_directory)
{
    char err[256];
    ck_assert_int_eq(chmod(dir, 0777), 0);
    ck_assert_int_eq(gm_rec_open(dir, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "writable by others"));
    ck_assert_int_eq(gm_rec_on, 0);
    char f[128];
    snprintf(f, sizeof f, "%s/file", dir);
    write_file(f, "x", 1);
    ck_assert_int_eq(gm_rec_open(f, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "is not a directory: a file of another kind"));
    /* A link to a good directory is refused as the link it is (it was
     * said to be "not a directory"); a missing path says so. */
    ck_assert_int_eq(chmod(dir, 0700), 0);
    char l[128];
    snprintf(l, sizeof l, "%s/link", dir);
    ck_assert_int_eq(symlink(dir, l), 0);
    ck_assert_int_eq(gm_rec_open(l, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "is not a directory: a symbolic link, never followed;"));
    snprintf(l, sizeof l, "%s/none", dir);
    ck_assert_int_eq(gm_rec_open(l, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "is not a directory: No such file or directory;"));
    ck_assert_int_eq(gm_rec_on, 0);
}
END_TEST

START_TEST(sink_counts_lost_records)
{
    char err[256], path[256];
    pid_t ch = fork();
    if (ch == 0) { /* a 2 MiB file size limit: the third window fails */
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl;
        getrlimit(RLIMIT_FSIZE, &rl);
        rlim_t max = rl.rlim_max;
        if (max != RLIM_INFINITY && max < (8u << 20))
            _exit(4); /* no room to test in */
        rl.rlim_cur = 2u << 20;
        setrlimit(RLIMIT_FSIZE, &rl);
        if (gm_rec_open(dir, err, sizeof err) != 0)
            _exit(1);
        for (int i = 0; i < 40000; i++)
            gm_rec_put(GM_RO_ALLOC, 0, 0, 1, (uint64_t)i, 0, 0, 0);
        rl.rlim_cur = max; /* the soft limit goes back up */
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) { /* raising needs root */
            gm_rec_close();
            _exit(3);
        }
        for (int i = 0; i < 1000; i++) /* room again: a "lost" record */
            gm_rec_put(GM_RO_FREE, 0, 0, 0, (uint64_t)i, 0, 0, 0);
        gm_rec_close();
        _exit(0);
    }
    int s;
    waitpid(ch, &s, 0);
    ck_assert(WIFEXITED(s));
    int code = WEXITSTATUS(s);
    ck_assert_int_ne(code, 1);
    if (code == 4)
        return;
    ck_assert_int_eq(file_of(ch, path, sizeof path), 1);
    struct gm_trace t;
    ck_assert_int_eq(gm_trace_load(path, &t, err, sizeof err), 0);
    const struct gm_tproc *p = &t.proc[0];
    uint64_t cap = ((2u << 20) - 64) / 64; /* records in two windows */
    ck_assert_uint_eq(p->first_lost, cap + 1);
    ck_assert_uint_ge(p->lost, 40000 - cap);
    ck_assert_int_eq(code, 0);
    {
        size_t nlost = 0, nfree = 0, i;
        for (i = 0; i < p->count; i++) {
            if (t.ev[i].op == GM_RO_LOST) {
                nlost++;
                ck_assert_uint_eq(t.ev[i].size, p->lost); /* one gap */
                ck_assert_uint_eq(t.ev[i].addr, cap + 1);
            }
            nfree += t.ev[i].op == GM_RO_FREE;
        }
        ck_assert_uint_eq(nlost, 1);
        ck_assert_uint_ge(nfree, 1000 - 256); /* retried every 256 */
    }
    gm_trace_free(&t);
}
END_TEST

START_TEST(load_unclosed_and_sections)
{
    char err[256], path[128];
    unsigned char buf[64 * 8];
    memset(buf, 0, sizeof buf);
    struct gm_rec_header h = { .magic = GM_REC_MAGIC,
        .version = GM_REC_VERSION, .header_size = 64, .record_size = 64,
        .pid = 11, .flags = GM_REC_F_CLOSED, .count = 1 };
    struct gm_rec r = { .seq = 1, .op = GM_RO_ALLOC, .size = 5 };
    memcpy(buf, &h, 64);
    memcpy(buf + 64, &r, 64);
    h.pid = 12;
    h.flags = 0; /* unclosed: ends at the first zero record */
    h.count = 0;
    memcpy(buf + 128, &h, 64);
    memcpy(buf + 192, &r, 64);
    memcpy(buf + 256, &r, 64);
    snprintf(path, sizeof path, "%s/a.gmr", dir);
    write_file(path, buf, sizeof buf);
    struct gm_trace t;
    ck_assert_int_eq(gm_trace_load(path, &t, err, sizeof err), 0);
    ck_assert_uint_eq(t.nproc, 2);
    ck_assert_uint_eq(t.proc[0].count, 1);
    ck_assert_uint_eq(t.proc[1].count, 2);
    ck_assert(!t.proc[1].closed);
    gm_trace_free(&t);
}
END_TEST

START_TEST(load_refuses_bad_binary)
{
    char err[256], path[128];
    unsigned char buf[64 * 3];
    memset(buf, 0, sizeof buf);
    struct gm_rec_header h = { .magic = GM_REC_MAGIC,
        .version = GM_REC_VERSION, .header_size = 64, .record_size = 64,
        .pid = 11, .flags = GM_REC_F_CLOSED, .count = 3 };
    struct gm_rec r = { .seq = 1, .op = GM_RO_ALLOC, .size = 5 };
    memcpy(buf, &h, 64);
    memcpy(buf + 64, &r, 64);
    memcpy(buf + 128, &r, 64);
    snprintf(path, sizeof path, "%s/b.gmr", dir);
    write_file(path, buf, sizeof buf); /* count 3, two records */
    struct gm_trace t;
    ck_assert_int_eq(gm_trace_load(path, &t, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "truncated"));
    h.version = 9;
    memcpy(buf, &h, 64);
    write_file(path, buf, sizeof buf);
    ck_assert_int_eq(gm_trace_load(path, &t, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "version 9"));
    h.version = GM_REC_VERSION;
    h.header_size = 0; /* this version, but not its layout: said so */
    memcpy(buf, &h, 64);
    write_file(path, buf, sizeof buf);
    ck_assert_int_eq(gm_trace_load(path, &t, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "with a header of 0 bytes and records of 64") !=
                      NULL && strstr(err, "is not version") == NULL,
                  "said: %s", err);
    h.header_size = 64;
    h.count = 2;
    r.op = 999;
    memcpy(buf, &h, 64);
    memcpy(buf + 128, &r, 64);
    write_file(path, buf, sizeof buf);
    ck_assert_int_eq(gm_trace_load(path, &t, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "unknown operation 999"));
    /* unclosed (no count), cut inside its second record: the message
     * says so and counts the whole records, no count it never had */
    h.flags = 0;
    h.count = 0;
    r.op = GM_RO_ALLOC;
    memcpy(buf, &h, 64);
    memcpy(buf + 128, &r, 64);
    write_file(path, buf, 64 * 2 + 10);
    ck_assert_int_eq(gm_trace_load(path, &t, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "offset 128: the unclosed section of pid 11 "
                  "ends inside a record, after 1 whole record (") != NULL,
                  "said: %s", err);
}
END_TEST

START_TEST(load_text)
{
    char err[256], path[128];
    snprintf(path, sizeof path, "%s/t.trace", dir);
    static const char good[] =
        "# a comment\n"
        "1 10 alloc 4096 0x1000 0 5\n"
        "2 11 create 2097152 0xabc 0 0\n"
        "1 12 free 0 0x1000 0 3\n"
        "\n"
        "2 13 release 0 0xabc 0 0\n";
    write_file(path, good, sizeof good - 1);
    struct gm_trace t;
    ck_assert_int_eq(gm_trace_load(path, &t, err, sizeof err), 0);
    ck_assert(t.text);
    ck_assert_uint_eq(t.nproc, 2);
    ck_assert_uint_eq(t.proc[0].pid, 1);
    ck_assert_uint_eq(t.proc[0].count, 2);
    ck_assert_uint_eq(t.ev[t.proc[0].first + 1].op, GM_RO_FREE);
    ck_assert_uint_eq(t.ev[t.proc[0].first + 1].seq, 2);
    ck_assert_uint_eq(t.ev[t.proc[1].first].op, GM_RO_CREATE);
    ck_assert_uint_eq(t.ev[t.proc[1].first].addr, 0xabc);
    gm_trace_free(&t);
    static const char bad[] = "1 10 alloc 4096 0x1000 0 5\n1 11 alloc x\n";
    write_file(path, bad, sizeof bad - 1);
    ck_assert_int_eq(gm_trace_load(path, &t, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "line 2"));
    static const char op[] = "1 10 mmap 4096 0x1000 0 5\n";
    write_file(path, op, sizeof op - 1);
    ck_assert_int_eq(gm_trace_load(path, &t, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "unknown op 'mmap'"));
    ck_assert_int_eq(gm_trace_load("/nonexistent/x", &t, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "cannot read"));
}
END_TEST

/* Lines of a text trace: a comment of any length is skipped, blanks past
 * the end of a line do not count (both were refused as "longer than 511
 * bytes"), a data line longer than that is refused, and a NUL byte is
 * named as such (it was taken for a long line). Many processes, each on
 * its own lines and interleaved, keep their own events in file order. */
START_TEST(load_text_lines)
{
    char err[256], path[128];
    snprintf(path, sizeof path, "%s/l.trace", dir);
    static char text[8192];
    size_t n = 0;
    text[n++] = '#';
    memset(text + n, 'c', 2000);
    n += 2000;
    text[n++] = '\n';
    n += (size_t)snprintf(text + n, sizeof text - n, "7 0 alloc 4096 0x1000 0 0");
    memset(text + n, ' ', 900);
    n += 900;
    n += (size_t)snprintf(text + n, sizeof text - n, "\n7 5 free 0 0x1000 0 0\n");
    write_file(path, text, n);
    struct gm_trace t;
    ck_assert_msg(gm_trace_load(path, &t, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(t.nproc, 1);
    ck_assert_uint_eq(t.proc[0].count, 2);
    gm_trace_free(&t);
    n = (size_t)snprintf(text, sizeof text, "7 0 alloc 4096 0x1000 0 0\n7 0 ");
    memset(text + n, '1', 600);
    n += 600;
    text[n++] = '\n';
    write_file(path, text, n);
    ck_assert_int_eq(gm_trace_load(path, &t, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "line 2: longer than 511 bytes") != NULL, "%s",
                  err);
    static const char nul[] = "7 0 alloc 4096 0x1000 0 0\n7 5 fr\0ee 0 0x1000 0 0\n";
    write_file(path, nul, sizeof nul - 1);
    ck_assert_int_eq(gm_trace_load(path, &t, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "line 2: holds a NUL byte") != NULL, "%s", err);
    /* 300 processes, their lines interleaved: each keeps its two events,
     * in order, and the processes their order of first appearance */
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (int round = 0; round < 2; round++)
        for (int pid = 1; pid <= 300; pid++)
            fprintf(f, "%d %d %s %d 0x%x 0 0\n", pid * 7, round,
                    round ? "free" : "alloc", round ? 0 : 4096 * pid,
                    0x1000 * pid);
    fclose(f);
    ck_assert_msg(gm_trace_load(path, &t, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(t.nproc, 300);
    for (size_t pi = 0; pi < 300; pi++) {
        const struct gm_tev *e = &t.ev[t.proc[pi].first];
        ck_assert_uint_eq(t.proc[pi].pid, (pi + 1) * 7);
        ck_assert_uint_eq(t.proc[pi].count, 2);
        ck_assert_uint_eq(e[0].op, GM_RO_ALLOC);
        ck_assert_uint_eq(e[0].size, 4096 * (pi + 1));
        ck_assert_uint_eq(e[1].op, GM_RO_FREE);
        ck_assert_uint_eq(e[1].addr, 0x1000 * (pi + 1));
        ck_assert_uint_eq(e[1].seq, 2);
    }
    gm_trace_free(&t);
}
END_TEST

/* Numbers of a text line are read whole and within their field: a sign,
 * a value past the field's range or a stray character is refused, with
 * the line, the field and what it accepts named; never wrapped or
 * clamped. */
START_TEST(load_text_refuses_bad_numbers)
{
    static const struct { const char *line, *want; } bad[] = {
        { "1 0 alloc -5 0x1000 0 0\n", "line 1: size '-5' is not a size" },
        { "1 0 alloc +5 0x1000 0 0\n", "size '+5'" },
        { "1 0 alloc 99999999999999999999999 0x1000 0 0\n",
          "size '99999999999999999999999' is not a size in bytes (0 to "
          "18446744073709551615)" },
        { "-1 0 alloc 5 0x1000 0 0\n", "pid '-1' is not a process id" },
        { "4294967296 0 alloc 5 0x1000 0 0\n", "pid '4294967296'" },
        { "1 -3 alloc 5 0x1000 0 0\n", "t_ns '-3'" },
        { "1 0 alloc 5 0x10g0 0 0\n", "ptr '0x10g0' is not a hexadecimal" },
        { "1 0 alloc 5 0x 0 0\n", "ptr '0x'" },
        { "1 0 alloc 5 -0x10 0 0\n", "ptr '-0x10'" },
        { "1 0 alloc 5 0x1000 4294967296 0\n", "rc '4294967296' is not a "
          "CUresult (0 to 4294967295)" },
        { "1 0 alloc 5 0x1000 0 1.5\n", "dt_ns '1.5'" },
        { "1 0 alloc 5 0x1000 0 0 7\n", "more than 7 fields" },
        { "1 0 alloc 5 0x1000 0\n", "line 1: 6 fields, not the 7" },
    };
    char err[256], path[128];
    snprintf(path, sizeof path, "%s/n.trace", dir);
    struct gm_trace t;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(path, bad[i].line, strlen(bad[i].line));
        err[0] = '\0';
        ck_assert_msg(gm_trace_load(path, &t, err, sizeof err) == -1,
                      "accepted: %s", bad[i].line);
        ck_assert_msg(strstr(err, bad[i].want) != NULL, "%s: said '%s', "
                      "want '%s'", bad[i].line, err, bad[i].want);
    }
    /* the ends of each range, and a pointer with or without 0x */
    static const char ends[] = "4294967295 18446744073709551615 alloc "
        "18446744073709551615 ffffffffffffffff 4294967295 0\n"
        "0 0 free 0 0X0 0 0\n";
    write_file(path, ends, sizeof ends - 1);
    ck_assert_int_eq(gm_trace_load(path, &t, err, sizeof err), 0);
    ck_assert_uint_eq(t.nproc, 2);
    ck_assert_uint_eq(t.proc[0].pid, UINT32_MAX);
    ck_assert_uint_eq(t.ev[0].size, UINT64_MAX);
    ck_assert_uint_eq(t.ev[0].addr, UINT64_MAX);
    ck_assert_uint_eq(t.ev[0].rc, UINT32_MAX);
    ck_assert_uint_eq(t.proc[1].pid, 0);
    gm_trace_free(&t);
}
END_TEST

/* Pacing counts from the first event of the processes paced together: a
 * text trace's absolute times begin at 0; a stretch with no event longer
 * than the gap bound is shortened to it, on the clock the processes
 * share, so their offsets outside such stretches are kept. */
START_TEST(pace_from_first_event_gaps_bounded)
{
    char err[256], path[128];
    snprintf(path, sizeof path, "%s/abs.trace", dir);
    static const char abs[] =
        "7 1796196764182579453 alloc 1048576 0x1000 0 0\n"
        "7 1796196764182600000 free 0 0x1000 0 0\n"
        "8 1796196764182590000 alloc 4096 0x2000 0 0\n"
        "7 1796196764182700000 alloc 1 0x3000 0 0\n"
        "7 3796196764182700000 free 0 0x3000 0 0\n";
    write_file(path, abs, sizeof abs - 1);
    struct gm_trace t;
    ck_assert_int_eq(gm_trace_load(path, &t, err, sizeof err), 0);
    const struct gm_tproc *p7 = &t.proc[0], *p8 = &t.proc[1];
    const struct gm_tev *e7 = &t.ev[p7->first], *e8 = &t.ev[p8->first];
    struct gm_pace pl;
    ck_assert_int_eq(gm_pace_plan(&t, p7, GM_PACE_GAP_NS, &pl), 0);
    ck_assert_uint_eq(gm_pace_at(&pl, &t, p7, &e7[0]), 0);
    ck_assert_uint_eq(gm_pace_at(&pl, &t, p7, &e7[1]), 20547);
    ck_assert_uint_eq(gm_pace_at(&pl, &t, p7, &e7[2]), 120547);
    ck_assert_uint_eq(gm_pace_at(&pl, &t, p7, &e7[3]),
                      120547 + GM_PACE_GAP_NS); /* 63 years: 60 s */
    gm_pace_free(&pl);
    ck_assert_int_eq(gm_pace_plan(&t, p8, GM_PACE_GAP_NS, &pl), 0);
    ck_assert_uint_eq(gm_pace_at(&pl, &t, p8, &e8[0]), 0); /* alone */
    gm_pace_free(&pl);
    ck_assert_int_eq(gm_pace_plan(&t, NULL, GM_PACE_GAP_NS, &pl), 0);
    ck_assert_uint_eq(gm_pace_at(&pl, &t, p8, &e8[0]), 10547); /* together */
    ck_assert_uint_eq(gm_pace_at(&pl, &t, p7, &e7[1]), 20547);
    gm_pace_free(&pl);
    gm_trace_free(&t);
    /* Recording sections by their start: A at 1000 ns (events at 0 and
     * 10 s), B 5 s later; with a 1 s bound each 5 s stretch is 1 s. */
    struct gm_tev ev[3] = { { .t_ns = 0 }, { .t_ns = 10000000000ull },
                            { .t_ns = 0 } };
    struct gm_tproc pr[2] = {
        { .pid = 1, .start_ns = 1000, .first = 0, .count = 2 },
        { .pid = 2, .start_ns = 5000001000ull, .first = 2, .count = 1 },
    };
    struct gm_trace r = { .ev = ev, .n = 3, .cap = 3, .proc = pr,
                          .nproc = 2 };
    ck_assert_int_eq(gm_pace_plan(&r, NULL, 1000000000ull, &pl), 0);
    ck_assert_uint_eq(gm_pace_at(&pl, &r, &pr[0], &ev[0]), 0);
    ck_assert_uint_eq(gm_pace_at(&pl, &r, &pr[1], &ev[2]), 1000000000ull);
    ck_assert_uint_eq(gm_pace_at(&pl, &r, &pr[0], &ev[1]), 2000000000ull);
    gm_pace_free(&pl);
    ck_assert_int_eq(gm_pace_plan(&r, &pr[1], 1000000000ull, &pl), 0);
    ck_assert_uint_eq(gm_pace_at(&pl, &r, &pr[1], &ev[2]), 0);
    gm_pace_free(&pl);
}
END_TEST

/* The peak of a process: frees, releases and destroys give back what they
 * held; a retained or mapped handle stays held until its last release or
 * unmap; failed calls count nothing. */
START_TEST(peak_follows_what_is_held)
{
    static const struct { unsigned op; uint64_t size, addr, aux; uint32_t rc; }
        calls[] = {
        { GM_RO_ALLOC, 100, 0xa, 0, 0 },      /* 100 */
        { GM_RO_ALLOC, 50, 0xb, 0, 0 },       /* 150 */
        { GM_RO_FREE, 0, 0xa, 0, 0 },         /* 50 */
        { GM_RO_ALLOC, 120, 0xc, 0, 0 },      /* 170 */
        { GM_RO_FREE, 0, 0xb, 0, 0 },
        { GM_RO_FREE, 0, 0xc, 0, 0 },         /* 0 */
        { GM_RO_CREATE, 1000, 0x77, 0, 0 },   /* 1000 */
        { GM_RO_RETAIN, 0, 0x77, 0x10000, 0 },
        { GM_RO_MAP, 1000, 0x77, 0x10000, 0 },
        { GM_RO_RELEASE, 0, 0x77, 0, 0 },
        { GM_RO_RELEASE, 0, 0x77, 0, 0 },     /* still mapped: 1000 */
        { GM_RO_ALLOC, 500, 0xd, 0, 0 },      /* 1500, the peak */
        { GM_RO_UNMAP, 1000, 0, 0x10000, 0 }, /* 500 */
        { GM_RO_ALLOC, 100, 0xe, 0, 0 },      /* 600 */
        { GM_RO_ALLOC, 5000, 0, 0, 2 },       /* refused: nothing */
        { GM_RO_ARRAY, 700, 0x5, 0, 0 },      /* 1300 */
        { GM_RO_ARRAY_DESTROY, 0, 0x5, 0, 0 },
    };
    enum { N = sizeof calls / sizeof calls[0] };
    struct gm_tev ev[N];
    memset(ev, 0, sizeof ev);
    for (size_t i = 0; i < N; i++) {
        ev[i].seq = i + 1;
        ev[i].op = (uint16_t)calls[i].op;
        ev[i].size = calls[i].size;
        ev[i].addr = calls[i].addr;
        ev[i].aux = calls[i].aux;
        ev[i].rc = calls[i].rc;
    }
    struct gm_tproc pr = { .pid = 1, .first = 0, .count = N };
    struct gm_trace t = { .ev = ev, .n = N, .cap = N, .proc = &pr, .nproc = 1 };
    ck_assert_uint_eq(gm_trace_peak(&t, &pr), 1500);
    /* Many allocations, one at a time: the peak is one of them. */
    enum { M = 20000 };
    struct gm_tev *many = calloc(2 * M, sizeof *many);
    ck_assert_ptr_nonnull(many);
    for (size_t i = 0; i < M; i++) {
        many[2 * i] = (struct gm_tev){ .op = GM_RO_ALLOC, .size = 1u << 30,
                                       .addr = 0x1000 + i };
        many[2 * i + 1] = (struct gm_tev){ .op = GM_RO_FREE,
                                           .addr = 0x1000 + i };
    }
    struct gm_tproc pm = { .pid = 2, .first = 0, .count = 2 * M };
    struct gm_trace tm = { .ev = many, .n = 2 * M, .cap = 2 * M,
                           .proc = &pm, .nproc = 1 };
    ck_assert_uint_eq(gm_trace_peak(&tm, &pm), 1u << 30);
    free(many);
}
END_TEST

/* Devices: an event's is its recorded one, or (255) the one before it;
 * the peak is the most held on one device, a free leaving the device of
 * its allocation; the devices replayed are those allocated on or with a
 * context made. */
START_TEST(devices_and_peak_per_device)
{
    static const struct { unsigned op, dev; uint64_t size, addr; unsigned rc; }
        calls[] = {
        { GM_RO_CTX, 0, 0, 0xc0, 0 },
        { GM_RO_CTX, 2, 0, 0xc2, 0 },
        { GM_RO_ALLOC, 0, 600, 0xa, 0 },      /* device 0: 600 */
        { GM_RO_ALLOC, 1, 600, 0xb, 0 },      /* device 1: 600 */
        { GM_RO_CREATE, 255, 300, 0x7, 0 },   /* device 1 (before): 900 */
        { GM_RO_FREE, 0, 0, 0xb, 0 },         /* device 1 again: 300 */
        { GM_RO_ALLOC, 0, 500, 0xd, 0 },      /* device 0: 1100, the peak */
        { GM_RO_ALLOC, 3, 100, 0, 800 },      /* failed: not replayed */
        { GM_RO_ALLOC, 4, 100, 0, 2 },        /* refused: replayed */
        { GM_RO_CTX, 5, 0, 0, 201 },          /* failed: no context */
    };
    enum { N = sizeof calls / sizeof calls[0] };
    struct gm_tev ev[N];
    memset(ev, 0, sizeof ev);
    for (size_t i = 0; i < N; i++) {
        ev[i].seq = i + 1;
        ev[i].op = (uint16_t)calls[i].op;
        ev[i].dev = (uint8_t)calls[i].dev;
        ev[i].size = calls[i].size;
        ev[i].addr = calls[i].addr;
        ev[i].rc = calls[i].rc;
    }
    unsigned cur = 0;
    ck_assert_uint_eq(gm_tev_device(&ev[3], &cur), 1);
    ck_assert_uint_eq(gm_tev_device(&ev[4], &cur), 1);
    struct gm_tproc pr = { .pid = 1, .first = 0, .count = N };
    struct gm_trace t = { .ev = ev, .n = N, .cap = N, .proc = &pr, .nproc = 1 };
    ck_assert_uint_eq(gm_trace_peak(&t, &pr), 1100);
    bool used[GM_TRACE_DEVICES];
    ck_assert_uint_eq(gm_trace_devices(&t, NULL, used), 5);
    ck_assert(used[0] && used[1] && used[2] && !used[3] && used[4]);
    ck_assert(!used[5]);
    struct gm_tproc none = { .pid = 2, .first = N, .count = 0 };
    ck_assert_uint_eq(gm_trace_devices(&t, &none, used), 1); /* device 0 */
    ck_assert(used[0] && !used[1]);
}
END_TEST

/* A fork child leaves alone a descriptor number the program took over
 * after closing the recording's (a daemon that closed every descriptor
 * and opened its log). */
START_TEST(sink_fork_child_leaves_a_reused_fd)
{
    char err[256], link[64], target[512], log[300], real[256];
    ck_assert_int_eq(gm_rec_open(dir, err, sizeof err), 0);
    gm_rec_put(GM_RO_ALLOC, 0, 0, 1, 0x10, 0, 0, 0);
    ck_assert_ptr_nonnull(realpath(dir, real));
    int fd = -1;
    for (int i = 3; i < 1024 && fd < 0; i++) { /* the recording's number */
        snprintf(link, sizeof link, "/proc/self/fd/%d", i);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n > 0) {
            target[n] = '\0';
            if (strncmp(target, real, strlen(real)) == 0)
                fd = i;
        }
    }
    ck_assert_int_ge(fd, 0);
    snprintf(log, sizeof log, "%s/program.log", dir);
    int own = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(own, 0);
    ck_assert_int_eq(dup2(own, fd), fd); /* the program's file, there */
    close(own);
    pid_t ch = fork();
    if (ch == 0) {
        gm_rec_fork_child();
        _exit(write(fd, "child\n", 6) == 6 ? 0 : 1);
    }
    int st;
    waitpid(ch, &st, 0);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "the child could not write its own descriptor");
    close(fd);
}
END_TEST

static uint64_t realtime_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether /proc says pid is a zombie (waited for at most 2 s). */
static bool becomes_zombie(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    for (int i = 0; i < 200; i++) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = '\0';
        char *p = strrchr(buf, ')');
        if (p != NULL && p[1] == ' ' && p[2] == 'Z')
            return true;
        usleep(10000);
    }
    return false;
}

/* The writer of a section is the process under its pid only while that
 * runs, is the caller's user's and started no later than the section:
 * a process started after it (a pid given again), a zombie, a reaped
 * child and another user's process are not. */
START_TEST(writer_running_is_not_a_reused_pid)
{
    uint64_t now = realtime_now();
    ck_assert(gm_rec_writer_running((uint32_t)getpid(), now));
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t ch = fork();
    ck_assert_int_ge(ch, 0);
    if (ch == 0) {
        char c;
        close(fds[1]);
        (void)!read(fds[0], &c, 1); /* until the parent closes its end */
        _exit(0);
    }
    close(fds[0]);
    uint64_t after = realtime_now();
    ck_assert(gm_rec_writer_running((uint32_t)ch, after));
    /* a section 5 s older than the process: another one had the pid */
    ck_assert(!gm_rec_writer_running((uint32_t)ch, after - 5000000000ull));
    close(fds[1]);
    ck_assert(becomes_zombie(ch));
    ck_assert(!gm_rec_writer_running((uint32_t)ch, after));
    ck_assert_int_eq(waitpid(ch, NULL, 0), ch);
    ck_assert(!gm_rec_writer_running((uint32_t)ch, after));
    ck_assert(!gm_rec_writer_running(0, after));
    if (geteuid() != 0) /* init is root's */
        ck_assert(!gm_rec_writer_running(1, after));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("all");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, sink_roundtrip);
    tcase_add_test(tc, sink_fork_child_own_file);
    tcase_add_test(tc, sink_fork_child_leaves_a_reused_fd);
    tcase_add_test(tc, sink_refuses_open_directory);
    tcase_add_test(tc, sink_counts_lost_records);
    tcase_add_test(tc, load_unclosed_and_sections);
    tcase_add_test(tc, load_refuses_bad_binary);
    tcase_add_test(tc, load_text);
    tcase_add_test(tc, load_text_refuses_bad_numbers);
    tcase_add_test(tc, load_text_lines);
    tcase_add_test(tc, peak_follows_what_is_held);
    tcase_add_test(tc, writer_running_is_not_a_reused_pid);
    tcase_add_test(tc, devices_and_peak_per_device);
    tcase_add_test(tc, pace_from_first_event_gaps_bounded);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf == 0 ? 0 : 1;
}
