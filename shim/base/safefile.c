/*
 * shim/base/safefile.c — gm_write_all, and gm_file_replace: a temporary
 * file next to the target, created exclusively with mode 0600, written
 * whole, then renamed over the target. Invariants in safefile.h.
 */
#include "shim/base/safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
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

int gm_file_replace(const char *path, const void *buf, size_t n, char *err,
                    size_t cap)
{
    char tmp[4200];
    int k = snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path);
    if (k < 0 || (size_t)k >= sizeof tmp) {
        snprintf(err, cap, "cannot write %s: the path is too long", path);
        return -1;
    }
    /* A file size limit below n would raise SIGXFSZ in the write (fatal by
     * default, the program's own handler otherwise) and leave a partial
     * temporary file: refuse before creating anything. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < n) {
        snprintf(err, cap, "cannot write %s: the file (%zu bytes) is larger "
                 "than this process's file size limit (RLIMIT_FSIZE, %llu "
                 "bytes)", path, n, (unsigned long long)rl.rlim_cur);
        return -1;
    }
    int fd = mkostemp(tmp, O_CLOEXEC); /* O_EXCL, mode 0600 */
    if (fd < 0) {
        snprintf(err, cap, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    int e = 0;
    if (fchmod(fd, S_IRUSR | S_IWUSR) != 0 || gm_write_all(fd, buf, n) != 0)
        e = errno ? errno : EIO;
    if (close(fd) != 0 && e == 0)
        e = errno;
    if (e == 0 && rename(tmp, path) != 0)
        e = errno;
    if (e != 0) {
        unlink(tmp);
        snprintf(err, cap, "cannot write %s: %s", path, strerror(e));
        return -1;
    }
    return 0;
}
