/*
 * shim/base/safefile.c — gm_write_all, gm_pread_all, and gm_file_append:
 * one write at the end of a file opened O_APPEND | O_NOFOLLOW, after the
 * file is checked to be this user's plain file. Invariants in safefile.h.
 */
#include "shim/base/safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

bool gm_pread_all(int fd, void *buf, size_t n, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

int gm_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* 0 when `have` bytes already in the file and n more stay within this
 * process's file size limit; else -1 with the message: a write past it
 * would raise SIGXFSZ (fatal by default, the program's own handler
 * otherwise) and leave a partial report. */
static int fsize_check(const char *path, uint64_t have, size_t n, char *err,
                       size_t cap)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        (uint64_t)rl.rlim_cur >= have + n)
        return 0;
    if (have == 0)
        snprintf(err, cap, "cannot write %s: the file (%zu bytes) is larger "
                 "than this process's file size limit (RLIMIT_FSIZE, %llu "
                 "bytes)", path, n, (unsigned long long)rl.rlim_cur);
    else
        snprintf(err, cap, "cannot write %s: %zu more bytes would take the "
                 "file (%llu bytes) past this process's file size limit "
                 "(RLIMIT_FSIZE, %llu bytes)", path, n,
                 (unsigned long long)have, (unsigned long long)rl.rlim_cur);
    return -1;
}

/* Why the file open at path may not take the bytes, or NULL. */
static const char *not_ours(const struct stat *st)
{
    if (!S_ISREG(st->st_mode))
        return "not a regular file";
    if (st->st_uid != geteuid())
        return "the file belongs to another user";
    if (st->st_nlink != 1)
        return "the file has other names (hard links)";
    return NULL;
}

/* The message for a failed open of path. */
static void open_error(const char *path, int e, char *err, size_t cap)
{
    struct stat st;
    if (e == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        snprintf(err, cap, "cannot write %s: it is a symbolic link (never "
                 "written through)", path);
    else if (e == ENXIO)
        snprintf(err, cap, "cannot write %s: not a regular file", path);
    else
        snprintf(err, cap, "cannot write %s: %s", path, strerror(e));
}

/* One write of the whole buffer (O_APPEND: placed at the end as a unit);
 * a short one (a full disk) is completed, which another writer may then
 * interleave. 0, or -1 with errno. */
static int append_once(int fd, const void *buf, size_t n)
{
    ssize_t w;
    do
        w = write(fd, buf, n);
    while (w < 0 && errno == EINTR);
    if (w < 0)
        return -1;
    if ((size_t)w < n)
        return gm_write_all(fd, (const char *)buf + w, n - (size_t)w);
    return 0;
}

/* The append to a file found ours: others' read bits taken away (the
 * report holds the command line), O_NONBLOCK cleared (kept only for the
 * open, which must not wait on a FIFO), then the write. 0, or -1 with
 * errno. */
static int append_checked(int fd, const struct stat *st, const void *buf,
                          size_t n)
{
    if ((st->st_mode & 077) && fchmod(fd, S_IRUSR | S_IWUSR) != 0)
        return -1;
    if (fcntl(fd, F_SETFL, O_APPEND) != 0)
        return -1;
    return append_once(fd, buf, n);
}

int gm_file_append(const char *path, const void *buf, size_t n, char *err,
                   size_t cap)
{
    /* Before anything is created: no empty file is left for a report
     * that can never fit. */
    if (fsize_check(path, 0, n, err, cap) != 0)
        return -1;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW |
                  O_NONBLOCK | O_NOCTTY | O_CLOEXEC, S_IRUSR | S_IWUSR);
    if (fd < 0) {
        open_error(path, errno, err, cap);
        return -1;
    }
    struct stat st;
    const char *why = fstat(fd, &st) != 0 ? strerror(errno) : not_ours(&st);
    int rc = -1;
    if (why != NULL)
        snprintf(err, cap, "cannot write %s: %s", path, why);
    else if (fsize_check(path, (uint64_t)st.st_size, n, err, cap) == 0 &&
             (rc = append_checked(fd, &st, buf, n)) != 0)
        snprintf(err, cap, "cannot write %s: %s", path, strerror(errno));
    if (close(fd) != 0 && rc == 0) {
        snprintf(err, cap, "cannot write %s: %s", path, strerror(errno));
        rc = -1;
    }
    return rc;
}
