/*
 * tests/unit/test_segment.c — creation of the per-process telemetry
 * segment (shim/telemetry/ring.c): name, mode 0600 whatever the umask, layout,
 * removal or keeping at close, replacement of a stale segment left under
 * our pid (other start time, or this image before exec), never touching
 * one a live process holds, refusing a planted symbolic link or other
 * non-file (target untouched), and degrading to private memory when the
 * file cannot be sized (file size limit, full tmpfs) or created, or the
 * directory is not safe (the GPUMEM_SHM_DIR rule); the name outside the
 * initial pid namespace.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim/base/clock.h"
#include "shim/base/shmfile.h"
#include "shim/telemetry/ident.h"
#include "shim/telemetry/telemetry.h"
#include "tools/lib/reader.h"

#define PREFIX "gmseg"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/gmseg.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void rm_rf(const char *path)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    ck_assert_int_eq(system(cmd), 0);
}

static void teardown(void)
{
    rm_rf(dir);
}

static struct gm_tel_params params(void)
{
    return (struct gm_tel_params){ .prefix = PREFIX, .ring_events = 64,
                                   .policy_summary = "limit=1.0GiB",
                                   .mode = 1, .on_oom = 2, .shm_dir = dir,
                                   .dev_slots = 4 };
}

static void seg_path(char *buf, size_t cap, long pid)
{
    snprintf(buf, cap, "%s/%s.%ld", dir, PREFIX, pid);
}

static uint64_t my_ticks(void)
{
    uint64_t t = 0;
    ck_assert_int_eq(gm_proc_start_ticks(0, &t), 0);
    return t;
}

/* Writes a valid segment image at path with the given pid/start. */
static void plant(const char *path, uint32_t pid, uint64_t ticks)
{
    struct gm_tel_params p = params();
    size_t len = gm_tel_layout_size(p.ring_events, p.dev_slots);
    void *mem = aligned_alloc(64, len);
    struct gm_tel t;
    ck_assert_int_eq(gm_tel_open_mem(&t, mem, len, &p), 0);
    struct gm_abi_header *h = mem;
    h->pid = pid;
    h->start_ticks = ticks;
    snprintf(h->cmdline, sizeof h->cmdline, "planted");
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, mem, len), (ssize_t)len);
    close(fd);
    free(mem);
}

/* True when path still holds the image plant() wrote. */
static bool is_planted(const char *path)
{
    struct gm_abi_header h;
    int fd = open(path, O_RDONLY | O_NOFOLLOW);
    ck_assert_int_ge(fd, 0);
    ssize_t n = pread(fd, &h, sizeof h, 0);
    close(fd);
    return n == (ssize_t)sizeof h && h.magic == GM_ABI_MAGIC &&
           strcmp(h.cmdline, "planted") == 0;
}

static bool file_has(const char *path, const char *want)
{
    char buf[256] = "";
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n >= 0 && strcmp(buf, want) == 0;
}

static void write_text(const char *path, const char *text)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

/* ---- creation ------------------------------------------------------------ */

START_TEST(test_create_mode_owner_layout)
{
    static const mode_t masks[] = { 0, 022, 077, 0277 };
    for (unsigned i = 0; i < sizeof masks / sizeof *masks; i++) {
        mode_t old = umask(masks[i]);
        struct gm_tel t;
        struct gm_tel_params p = params();
        char err[256];
        ck_assert_msg(gm_tel_open(&t, &p, err, sizeof err) == 0, "%s", err);
        umask(old);
        char path[256];
        seg_path(path, sizeof path, (long)getpid());
        ck_assert_str_eq(t.path, path);
        ck_assert(t.shared);
        struct stat st;
        ck_assert_int_eq(lstat(path, &st), 0);
        ck_assert(S_ISREG(st.st_mode));
        ck_assert_int_eq(st.st_mode & 07777, 0600);
        ck_assert_int_eq(st.st_uid, geteuid());
        ck_assert_int_eq(st.st_size, (off_t)gm_tel_layout_size(64, 4));
        /* The header as a reader sees it. */
        struct gm_seg s;
        ck_assert_msg(gm_seg_open(&s, dir, PREFIX, getpid(), err,
                                  sizeof err) == 0, "%s", err);
        const struct gm_abi_header *h = (const void *)s.head;
        ck_assert_uint_eq(h->magic, GM_ABI_MAGIC);
        ck_assert_uint_eq(h->pid, (uint32_t)getpid());
        ck_assert_uint_eq(h->start_ticks, my_ticks());
        ck_assert_uint_eq(h->dev_slots, 4);
        ck_assert_uint_eq(h->ring_capacity, 64);
        ck_assert_uint_eq(h->mode, 1);
        ck_assert_uint_eq(h->on_oom, 2);
        ck_assert_str_eq(h->policy, "limit=1.0GiB");
        ck_assert_ptr_nonnull(strstr(h->cmdline, "test_segment"));
        ck_assert_uint_le(h->start_realtime_ns, h->created_ns);
        ck_assert_uint_eq(s.uid, geteuid());
        ck_assert_int_eq(gm_seg_state(&s), GM_SEG_ALIVE);
        gm_seg_close(&s);
        gm_tel_close(&t, false);
        ck_assert_int_eq(access(path, F_OK), -1);
    }
}
END_TEST

START_TEST(test_ring_capacity_rounding)
{
    /* Header, device blocks, ring, then 128 marks and the histories of
     * min(devices, 16) devices. */
    ck_assert_uint_eq(gm_tel_layout_size(1000, 1),
                      2048 + 1024 + 1024 * 64 + 128 * 64 + 99456);
    ck_assert_uint_eq(gm_tel_layout_size(1, 1),
                      2048 + 1024 + 16 * 64 + 128 * 64 + 99456);
    ck_assert_uint_eq(gm_tel_layout_size(0, 0),
                      2048 + 64 * 1024 + (size_t)GM_ABI_RING_DEFAULT * 64 +
                          128 * 64 + 16 * 99456);
    ck_assert_uint_eq(gm_tel_layout_size(UINT32_MAX, 99),
                      2048 + 64 * 1024 + (size_t)GM_ABI_RING_MAX * 64 +
                          128 * 64 + 16 * 99456);
}
END_TEST

START_TEST(test_close_unlinks_or_keeps)
{
    struct gm_tel t;
    struct gm_tel_params p = params();
    char err[256], path[256];
    seg_path(path, sizeof path, (long)getpid());
    ck_assert_int_eq(gm_tel_open(&t, &p, err, sizeof err), 0);
    gm_tel_alloc(&t, 0, 1, 0x10, 100, 5, 100, 100);
    gm_tel_close(&t, true);
    ck_assert_ptr_null(t.hdr);
    gm_tel_alloc(&t, 0, 1, 0x10, 100, 5, 100, 100); /* no-op now */
    struct gm_seg s;
    ck_assert_msg(gm_seg_open(&s, dir, PREFIX, getpid(), err, sizeof err)
                  == 0, "%s", err);
    struct gm_snapshot *snap = malloc(sizeof *snap);
    ck_assert_int_eq(gm_seg_snapshot(&s, snap), 0);
    ck_assert_uint_eq(snap->flags, GM_ABI_F_CLOSED | GM_ABI_F_KEPT);
    ck_assert_uint_ne(snap->closed_ns, 0);
    ck_assert_uint_eq(snap->dev[0].allocs, 1);
    free(snap);
    gm_seg_close(&s);
    /* A kept segment of this very process (pid and start time match, no
     * lock held): the next open replaces it. */
    ck_assert_msg(gm_tel_open(&t, &p, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(t.hdr->flags, 0);
    ck_assert_uint_eq(t.hdr->ring_head, 0);
    gm_tel_close(&t, false);
    ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

/* ---- a file already at the path ----------------------------------------- */

START_TEST(test_stale_same_pid_other_start_replaced)
{
    char path[256], err[256];
    seg_path(path, sizeof path, (long)getpid());
    plant(path, (uint32_t)getpid(), my_ticks() + 12345);
    ck_assert(is_planted(path));
    struct gm_tel t;
    struct gm_tel_params p = params();
    ck_assert_msg(gm_tel_open(&t, &p, err, sizeof err) == 0, "%s", err);
    ck_assert(!is_planted(path));
    ck_assert_uint_eq(t.hdr->start_ticks, my_ticks());
    ck_assert_ptr_nonnull(strstr(t.hdr->cmdline, "test_segment"));
    gm_tel_close(&t, false);
}
END_TEST

START_TEST(test_garbage_at_path_replaced)
{
    char path[256], err[256];
    seg_path(path, sizeof path, (long)getpid());
    int fd = open(path, O_CREAT | O_WRONLY, 0600);
    ck_assert_int_eq(write(fd, "junk", 4), 4);
    close(fd);
    struct gm_tel t;
    struct gm_tel_params p = params();
    ck_assert_msg(gm_tel_open(&t, &p, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(t.hdr->magic, GM_ABI_MAGIC);
    gm_tel_close(&t, false);
}
END_TEST

START_TEST(test_live_holder_never_touched)
{
    char path[256], err[256];
    seg_path(path, sizeof path, (long)getpid());
    plant(path, (uint32_t)getpid(), my_ticks() + 1);
    int go[2], done[2];
    ck_assert_int_eq(pipe(go), 0);
    ck_assert_int_eq(pipe(done), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        /* A live writer (e.g. in another pid namespace) holding it. */
        int fd = open(path, O_RDONLY);
        char c = flock(fd, LOCK_EX) == 0 ? 'y' : 'n';
        if (write(go[1], &c, 1) != 1 || read(done[0], &c, 1) < 0)
            _exit(1);
        _exit(0);
    }
    char c;
    ck_assert_int_eq(read(go[0], &c, 1), 1);
    ck_assert_int_eq(c, 'y');
    struct gm_tel t;
    struct gm_tel_params p = params();
    ck_assert_int_eq(gm_tel_open(&t, &p, err, sizeof err), 1);
    ck_assert_ptr_nonnull(strstr(err, "in use by a live process"));
    ck_assert(!t.shared);
    ck_assert_ptr_nonnull(t.hdr); /* private memory still records */
    ck_assert(is_planted(path));
    struct gm_seg s;
    ck_assert_int_eq(gm_seg_open_path(&s, path, err, sizeof err), 0);
    ck_assert_str_eq(((const struct gm_abi_header *)s.head)->cmdline,
                     "planted");
    gm_seg_close(&s);
    gm_tel_close(&t, false);
    ck_assert(is_planted(path)); /* close leaves it too */
    /* Once the holder is gone, the leftover is replaced. */
    ck_assert_int_eq(write(done[1], "x", 1), 1);
    int st;
    ck_assert_int_eq(waitpid(child, &st, 0), child);
    ck_assert_msg(gm_tel_open(&t, &p, err, sizeof err) == 0, "%s", err);
    ck_assert(!is_planted(path));
    gm_tel_close(&t, false);
}
END_TEST

START_TEST(test_symlink_not_followed)
{
    char path[256], victim[256], err[256];
    seg_path(path, sizeof path, (long)getpid());
    snprintf(victim, sizeof victim, "%s/victim", dir);
    int fd = open(victim, O_CREAT | O_WRONLY, 0644);
    ck_assert_int_eq(write(fd, "precious", 8), 8);
    close(fd);
    ck_assert_int_eq(symlink(victim, path), 0);
    struct gm_tel t;
    struct gm_tel_params p = params();
    ck_assert_int_eq(gm_tel_open(&t, &p, err, sizeof err), 1);
    ck_assert_ptr_nonnull(strstr(err, "symbolic link"));
    ck_assert(file_has(victim, "precious"));
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    ck_assert_int_eq(stat(victim, &st), 0);
    ck_assert_int_eq(st.st_size, 8);
    ck_assert_int_eq(st.st_mode & 0777, 0644);
    gm_tel_close(&t, false);
    ck_assert(S_ISLNK((lstat(path, &st), st.st_mode)));
    /* A dangling link: nothing is created at its target either. */
    unlink(path);
    unlink(victim);
    ck_assert_int_eq(symlink(victim, path), 0);
    ck_assert_int_eq(gm_tel_open(&t, &p, err, sizeof err), 1);
    ck_assert_int_eq(access(victim, F_OK), -1);
    gm_tel_close(&t, false);
}
END_TEST

START_TEST(test_non_regular_refused)
{
    char path[256], err[256];
    seg_path(path, sizeof path, (long)getpid());
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    struct gm_tel t;
    struct gm_tel_params p = params();
    ck_assert_int_eq(gm_tel_open(&t, &p, err, sizeof err), 1);
    ck_assert_ptr_nonnull(strstr(err, "not a regular file"));
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISFIFO(st.st_mode));
    gm_tel_close(&t, false);
}
END_TEST

/* ---- degrading to private memory ---------------------------------------- */

static int count_entries(const char *d)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", d);
    return system(cmd) == 0 ? 0 : 1;
}

/* In a child: open under a lowered RLIMIT_FSIZE; exit 0 when it fell back
 * cleanly (returns 1, the reason mentions `want`, stats still work). */
static int fsize_child(bool ignore_xfsz, const char *want)
{
    if (ignore_xfsz)
        signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = { 4096, 4096 };
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        return 2;
    struct gm_tel t;
    struct gm_tel_params p = params();
    char err[256];
    if (gm_tel_open(&t, &p, err, sizeof err) != 1 || t.shared ||
        strstr(err, want) == NULL) {
        fprintf(stderr, "unexpected: %s\n", err);
        return 3;
    }
    gm_tel_alloc(&t, 1, 1, 0x100, 512, 10, 512, 512);
    struct gm_snapshot *snap = malloc(sizeof *snap);
    if (gm_tel_snapshot(&t, snap) != 0 || snap->dev[1].allocs != 1 ||
        snap->dev[1].used != 512)
        return 4;
    gm_tel_close(&t, false);
    return 0;
}

START_TEST(test_fsize_limit_degrades)
{
    /* SIGXFSZ ignored: posix_fallocate itself fails (EFBIG). */
    pid_t c = fork();
    if (c == 0)
        _exit(fsize_child(true, "cannot size the segment"));
    int st;
    ck_assert_int_eq(waitpid(c, &st, 0), c);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    ck_assert_int_eq(count_entries(dir), 0); /* nothing left behind */
    /* SIGXFSZ at its default (fatal) action: never even tried. */
    c = fork();
    if (c == 0)
        _exit(fsize_child(false, "RLIMIT_FSIZE"));
    ck_assert_int_eq(waitpid(c, &st, 0), c);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    ck_assert_int_eq(count_entries(dir), 0);
}
END_TEST

/* A private mount namespace with a 64 KiB tmpfs; 77 if not permitted. */
static int small_tmpfs_child(void)
{
    if (unshare(CLONE_NEWNS) != 0) {
        uid_t uid = geteuid();
        gid_t gid = getegid();
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
            return 77;
        char m[64];
        int fd = open("/proc/self/setgroups", O_WRONLY);
        if (fd >= 0) {
            if (write(fd, "deny", 4) != 4)
                return 77;
            close(fd);
        }
        snprintf(m, sizeof m, "0 %u 1", (unsigned)uid);
        fd = open("/proc/self/uid_map", O_WRONLY);
        if (fd < 0 || write(fd, m, strlen(m)) < 0)
            return 77;
        close(fd);
        snprintf(m, sizeof m, "0 %u 1", (unsigned)gid);
        fd = open("/proc/self/gid_map", O_WRONLY);
        if (fd < 0 || write(fd, m, strlen(m)) < 0)
            return 77;
        close(fd);
    }
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", dir, "tmpfs", 0, "size=3m,mode=0700") != 0)
        return 77;
    struct gm_tel t;
    struct gm_tel_params p = params();
    p.ring_events = 65536; /* 4 MiB of ring alone: does not fit */
    char err[256];
    int rc = gm_tel_open(&t, &p, err, sizeof err);
    if (rc != 1 || strstr(err, "No space left") == NULL) {
        fprintf(stderr, "rc %d: %s\n", rc, err);
        return 3;
    }
    if (count_entries(dir) != 0)
        return 4;
    gm_tel_alloc(&t, 0, 1, 0x100, 512, 10, 512, 512);
    if (t.hdr == NULL || t.hdr->ring_head != 1)
        return 5;
    /* A segment that fits is still created there. */
    gm_tel_close(&t, false);
    p.ring_events = 64;
    if (gm_tel_open(&t, &p, err, sizeof err) != 0)
        return 6;
    gm_tel_close(&t, false);
    return 0;
}

START_TEST(test_full_tmpfs_degrades)
{
    pid_t c = fork();
    if (c == 0)
        _exit(small_tmpfs_child());
    int st;
    ck_assert_int_eq(waitpid(c, &st, 0), c);
    ck_assert(WIFEXITED(st));
    if (WEXITSTATUS(st) == 77) {
        fprintf(stderr, "full tmpfs case not run: no mount namespace\n");
        return;
    }
    ck_assert_msg(WEXITSTATUS(st) == 0, "status %d", WEXITSTATUS(st));
}
END_TEST

START_TEST(test_unusable_dir_or_prefix_degrades)
{
    struct gm_tel t;
    struct gm_tel_params p = params();
    char err[256], missing[128], said[160];
    snprintf(missing, sizeof missing, "%s/none", dir);
    p.shm_dir = missing;
    ck_assert_int_eq(gm_tel_open(&t, &p, err, sizeof err), 1);
    /* The system's reason follows the path after a colon. */
    snprintf(said, sizeof said, "segment directory %s: No such file", missing);
    ck_assert_msg(strstr(err, said) != NULL, "%s", err);
    gm_tel_close(&t, false);
    p.shm_dir = dir;
    static const char *const bad[] = { "../x", "a/b", ".hidden",
                                       "waytoolongprefix_waytoolongprefix_x",
                                       "sp ace" };
    for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
        p.prefix = bad[i];
        ck_assert_int_eq(gm_tel_open(&t, &p, err, sizeof err), 1);
        ck_assert_ptr_nonnull(strstr(err, "invalid segment prefix"));
        gm_tel_close(&t, false);
    }
    ck_assert_int_eq(count_entries(dir), 0);
}
END_TEST

/* The directory rule (gm_shm_dir_check): each unsafe form refused with
 * a reason naming the directory and the rule, the writer degrading to
 * private telemetry with nothing created; each safe form accepted. */
START_TEST(test_dir_rules)
{
    char d[128], link[128], file[128], err[512];
    struct gm_tel t;
    struct gm_tel_params p = params();
    snprintf(d, sizeof d, "%s/shared", dir);
    ck_assert_int_eq(mkdir(d, 0700), 0);
    ck_assert_int_eq(gm_shm_dir_check(d, geteuid(), false, err, sizeof err),
                     0);
    static const struct { mode_t mode; const char *why; } modes[] = {
        { 0777, "writable by others without the sticky bit (mode 0777)" },
        { 0770, "writable by its group without the sticky bit" },
        { 0722, "writable by others" },
    };
    p.shm_dir = d;
    for (unsigned i = 0; i < sizeof modes / sizeof *modes; i++) {
        ck_assert_int_eq(chmod(d, modes[i].mode), 0);
        ck_assert_int_eq(gm_shm_dir_check(d, geteuid(), false, err,
                                          sizeof err), -1);
        ck_assert_msg(strstr(err, modes[i].why) && strstr(err, d) &&
                      strstr(err, "unless sticky"), "%s", err);
        ck_assert_int_eq(gm_tel_open(&t, &p, err, sizeof err), 1);
        ck_assert_ptr_nonnull(strstr(err, modes[i].why));
        gm_tel_close(&t, false);
        ck_assert_int_eq(count_entries(d), 0);
    }
    /* Sticky and world-writable, as /dev/shm and /tmp: accepted. */
    ck_assert_int_eq(chmod(d, 01777), 0);
    ck_assert_int_eq(gm_shm_dir_check(d, geteuid(), false, err, sizeof err),
                     0);
    ck_assert_int_eq(gm_tel_open(&t, &p, err, sizeof err), 0);
    ck_assert_int_eq(count_entries(d), 1);
    gm_tel_close(&t, false);
    ck_assert_int_eq(count_entries(d), 0);
    ck_assert_int_eq(chmod(d, 0700), 0);
    /* Another owner (not root): refused, unless any owner is allowed. */
    struct stat st;
    ck_assert_int_eq(stat(d, &st), 0);
    if (st.st_uid != 0) {
        ck_assert_int_eq(gm_shm_dir_check(d, st.st_uid + 1, false, err,
                                          sizeof err), -1);
        ck_assert_ptr_nonnull(strstr(err, "is owned by uid"));
    }
    if (chown(d, 4242, (gid_t)-1) == 0) { /* as root: a foreign owner */
        ck_assert_int_eq(gm_shm_dir_check(d, 0, false, err, sizeof err), -1);
        ck_assert_msg(strstr(err, "is owned by uid 4242 (neither root nor "
                             "uid 0)") != NULL, "%s", err);
        ck_assert_int_eq(gm_shm_dir_check(d, 0, true, err, sizeof err), 0);
        ck_assert_int_eq(chown(d, geteuid(), (gid_t)-1), 0);
    }
    /* A symbolic link to a good directory, a file, nothing, a relative
     * path. */
    snprintf(link, sizeof link, "%s/link", dir);
    ck_assert_int_eq(symlink(d, link), 0);
    ck_assert_int_eq(gm_shm_dir_check(link, geteuid(), false, err,
                                      sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "is a symbolic link"));
    p.shm_dir = link;
    ck_assert_int_eq(gm_tel_open(&t, &p, err, sizeof err), 1);
    gm_tel_close(&t, false);
    ck_assert_int_eq(count_entries(d), 0);
    snprintf(file, sizeof file, "%s/file", dir);
    write_text(file, "x");
    ck_assert_int_eq(gm_shm_dir_check(file, geteuid(), false, err,
                                      sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "is not a directory"));
    ck_assert_int_eq(gm_shm_dir_check("rel/dir", geteuid(), false, err,
                                      sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "is not an absolute path"));
    ck_assert_int_eq(gm_shm_dir_check(NULL, geteuid(), false, err,
                                      sizeof err), -1);
}
END_TEST

/* Outside the initial pid namespace the name carries the namespace. */
START_TEST(test_name_carries_pidns)
{
    struct gm_tel t;
    struct gm_tel_params p = params();
    struct gm_abi_ident id;
    memset(&id, 0, sizeof id);
    char err[256], want[256];
    id.pidns = 4026532999ull;
    p.ident = &id;
    ck_assert_int_eq(gm_tel_open(&t, &p, err, sizeof err), 0);
    snprintf(want, sizeof want, "%s/%s.%ld.ns4026532999", dir, PREFIX,
             (long)getpid());
    ck_assert_str_eq(t.path, want);
    struct gm_seg s;
    struct gm_seg_id sid = { getpid(), 4026532999ull };
    ck_assert_int_eq(gm_seg_open_id(&s, dir, PREFIX, &sid, err, sizeof err),
                     0);
    ck_assert_uint_eq(s.name_ns, 4026532999ull);
    ck_assert(!gm_seg_local(&s)); /* not our namespace */
    /* Its writer holds the lock: alive, though its pid is not trusted. */
    ck_assert_int_eq(gm_seg_state(&s), GM_SEG_ALIVE);
    gm_seg_close(&s);
    gm_tel_close(&t, false);
    id.pidns = GM_PIDNS_INIT;     /* the initial namespace: the plain name */
    ck_assert_int_eq(gm_tel_open(&t, &p, err, sizeof err), 0);
    seg_path(want, sizeof want, getpid());
    ck_assert_str_eq(t.path, want);
    gm_tel_close(&t, false);
}
END_TEST

/* ---- fork ---------------------------------------------------------------- */

START_TEST(test_forget_in_child)
{
    struct gm_tel t;
    struct gm_tel_params p = params();
    char err[256], path[256];
    seg_path(path, sizeof path, (long)getpid());
    ck_assert_int_eq(gm_tel_open(&t, &p, err, sizeof err), 0);
    uint32_t parent_tid = gm_thread_id();
    pid_t c = fork();
    if (c == 0) {
        gm_tel_forget(&t);
        int bad = t.hdr != NULL || t.shared || access(path, F_OK) != 0 ||
                  gm_thread_id() == parent_tid;
        gm_tel_alloc(&t, 0, 1, 1, 1, 1, 1, 1); /* no-op */
        _exit(bad);
    }
    int st;
    ck_assert_int_eq(waitpid(c, &st, 0), c);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert_uint_eq(t.hdr->ring_head, 0);
    /* The parent's lock survived the child's close. */
    struct gm_seg s;
    ck_assert_int_eq(gm_seg_open(&s, dir, PREFIX, getpid(), err, sizeof err),
                     0);
    ck_assert_int_ne(flock(s.fd, LOCK_SH | LOCK_NB), 0);
    gm_seg_close(&s);
    gm_tel_close(&t, false);
}
END_TEST

/* A program that closes the segment's descriptor and gets the number back
 * for a file of its own (a daemon closing every descriptor, then opening
 * its log) keeps it: a fork child's forget does not close it, and close
 * at exit neither unlocks nor closes it. */
START_TEST(test_reused_fd_number_is_left_alone)
{
    struct gm_tel t;
    struct gm_tel_params p = params();
    char err[256], log[300];
    ck_assert_int_eq(gm_tel_open(&t, &p, err, sizeof err), 0);
    int num = t.fd;
    ck_assert_int_ge(num, 0);
    snprintf(log, sizeof log, "%s/daemon.log", dir);
    int lf = open(log, O_CREAT | O_TRUNC | O_RDWR, 0600);
    ck_assert_int_ge(lf, 0);
    ck_assert_int_eq(dup2(lf, num), num);   /* closes ours, reuses it */
    close(lf);
    ck_assert_int_eq(flock(num, LOCK_EX | LOCK_NB), 0);
    pid_t c = fork();
    if (c == 0) {
        gm_tel_forget(&t);
        _exit(dprintf(num, "child\n") == 6 ? 0 : 1);
    }
    int st;
    ck_assert_int_eq(waitpid(c, &st, 0), c);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    gm_tel_close(&t, false);
    ck_assert_int_eq(dprintf(num, "parent\n"), 7);
    int other = open(log, O_RDONLY);
    ck_assert_int_ge(other, 0);
    ck_assert_int_ne(flock(other, LOCK_SH | LOCK_NB), 0);   /* still ours */
    close(other);
    close(num);
    ck_assert(file_has(log, "child\nparent\n"));
    unlink(log);
}
END_TEST

static Suite *segment_suite(void)
{
    Suite *s = suite_create("segment");
    TCase *tc = tcase_create("segment");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_create_mode_owner_layout);
    tcase_add_test(tc, test_ring_capacity_rounding);
    tcase_add_test(tc, test_close_unlinks_or_keeps);
    tcase_add_test(tc, test_stale_same_pid_other_start_replaced);
    tcase_add_test(tc, test_garbage_at_path_replaced);
    tcase_add_test(tc, test_live_holder_never_touched);
    tcase_add_test(tc, test_symlink_not_followed);
    tcase_add_test(tc, test_non_regular_refused);
    tcase_add_test(tc, test_fsize_limit_degrades);
    tcase_add_test(tc, test_full_tmpfs_degrades);
    tcase_add_test(tc, test_unusable_dir_or_prefix_degrades);
    tcase_add_test(tc, test_dir_rules);
    tcase_add_test(tc, test_name_carries_pidns);
    tcase_add_test(tc, test_forget_in_child);
    tcase_add_test(tc, test_reused_fd_number_is_left_alone);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(segment_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
