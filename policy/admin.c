/*
 * policy/admin.c — reading the admin policy file without trusting the
 * path: every directory from / down is opened relative to the one above
 * it (O_PATH, O_NOFOLLOW) and checked on the descriptor, so nothing can
 * be swapped between the check and the read; the file itself is opened
 * with O_NOFOLLOW and checked with fstat.
 *
 * Invariants: a file is READ only when it and every directory above it
 * are owned by root and not writable by group or others (a directory
 * with the sticky bit may be: others cannot replace a root-owned entry in
 * it); a symbolic link anywhere, a foreign owner, a loose mode, a special
 * file, a NUL byte or more than GM_ADMIN_TEXT_MAX bytes make it REFUSED
 * with a reason; only "no such file or directory" makes it ABSENT.
 * No malloc; every descriptor opened here is closed before returning.
 */
#include "policy/policy.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void refuse(struct gm_admin_file *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void refuse(struct gm_admin_file *a, const char *fmt, ...)
{
    va_list ap;

    a->state = GM_ADMIN_REFUSED;
    va_start(ap, fmt);
    vsnprintf(a->why, sizeof a->why, fmt, ap);
    va_end(ap);
}

/* EMFILE/ENFILE: nothing is wrong with the file; this process could not
 * open it to check. Still REFUSED (fail closed), with its own words. */
static bool refuse_no_fd(struct gm_admin_file *a, int e, const char *shown)
{
    if (e != EMFILE && e != ENFILE)
        return false;
    refuse(a, "this process has no file descriptor left (opening %s: %s)",
           shown, strerror(e));
    a->no_fd = true;
    return true;
}

/* Owner root, and no write bit for group or others unless sticky. */
static bool mode_trusted(struct gm_admin_file *a, const struct stat *st,
                         const char *what, bool dir)
{
    if (st->st_uid != 0) {
        refuse(a, "%s is owned by uid %lu, not root", what,
               (unsigned long)st->st_uid);
        return false;
    }
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) != 0 &&
        !(dir && (st->st_mode & S_ISVTX) != 0)) {
        refuse(a, "%s is writable by group or others (mode %04lo)", what,
               (unsigned long)(st->st_mode & 07777));
        return false;
    }
    return true;
}

/* Open the directory `name` below `dirfd` (O_PATH, never following a
 * link) and check it; -1 with a->state set when it cannot be used. */
static int open_dir(struct gm_admin_file *a, int dirfd, const char *name,
                    const char *shown)
{
    struct stat st;
    int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0) {
        if (errno == ENOENT)
            a->state = GM_ADMIN_ABSENT;
        else if (!refuse_no_fd(a, errno, shown))
            refuse(a, "directory %s cannot be opened (%s)", shown,
                   strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0) {
        refuse(a, "directory %s cannot be examined (errno %lu)", shown,
               (unsigned long)errno);
        close(fd);
        return -1;
    }
    if (S_ISLNK(st.st_mode)) {
        refuse(a, "%s is a symbolic link (install the real directory)",
               shown);
        close(fd);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        refuse(a, "%s is not a directory", shown);
        close(fd);
        return -1;
    }
    char what[GM_PATH_MAX + 16];
    snprintf(what, sizeof what, "directory %s", shown);
    if (!mode_trusted(a, &st, what, true)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Read the whole regular file below dirfd into a->text. */
static void read_file(struct gm_admin_file *a, int dirfd, const char *name)
{
    struct stat st;
    int fd = openat(dirfd, name,
                    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

    if (fd < 0) {
        if (errno == ENOENT)
            a->state = GM_ADMIN_ABSENT;
        else if (errno == ELOOP)
            refuse(a, "%s is a symbolic link (install the file itself)",
                   a->path);
        else if (!refuse_no_fd(a, errno, a->path))
            refuse(a, "%s cannot be opened (%s)", a->path,
                   strerror(errno));
        return;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        refuse(a, "%s is not a regular file", a->path);
        close(fd);
        return;
    }
    if (!mode_trusted(a, &st, a->path, false)) {
        close(fd);
        return;
    }
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, a->text + len, GM_ADMIN_TEXT_MAX + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            refuse(a, "%s cannot be read (%s)", a->path,
                   strerror(errno));
            close(fd);
            return;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > GM_ADMIN_TEXT_MAX) {
            refuse(a, "%s is larger than %lu bytes", a->path,
                   (unsigned long)GM_ADMIN_TEXT_MAX);
            close(fd);
            return;
        }
    }
    close(fd);
    if (memchr(a->text, '\0', len) != NULL) {
        refuse(a, "%s contains a NUL byte (it is not a text file)",
               a->path);
        return;
    }
    a->text[len] = '\0';
    a->len = len;
    a->state = GM_ADMIN_READ;
}

void gm_admin_read(const char *path, struct gm_admin_file *a)
{
    char buf[GM_PATH_MAX], shown[GM_PATH_MAX];
    size_t n;

    a->state = GM_ADMIN_ABSENT;
    a->why[0] = '\0';
    a->no_fd = false;
    a->len = 0;
    a->text[0] = '\0';
    snprintf(a->path, sizeof a->path, "%s", path ? path : "");
    n = path ? strlen(path) : 0;
    if (n == 0 || path[0] != '/' || n >= sizeof buf) {
        refuse(a, "'%s' is not an absolute path", a->path);
        return;
    }
    memcpy(buf, path, n + 1);
    int fd = open_dir(a, AT_FDCWD, "/", "/");
    if (fd < 0)
        return;
    char *s = buf + 1;
    for (;;) {
        while (*s == '/')
            s++;
        char *slash = strchr(s, '/');
        if (slash == NULL)
            break;              /* s is the file's own name */
        *slash = '\0';
        if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0) {
            refuse(a, "%s has a '.' or '..' component", a->path);
            close(fd);
            return;
        }
        snprintf(shown, sizeof shown, "%.*s", (int)(slash - buf), path);
        int next = open_dir(a, fd, s, shown);
        close(fd);
        if (next < 0)
            return;
        fd = next;
        s = slash + 1;
    }
    if (*s == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0) {
        refuse(a, "'%s' does not name a file", a->path);
        close(fd);
        return;
    }
    read_file(a, fd, s);
    close(fd);
}
