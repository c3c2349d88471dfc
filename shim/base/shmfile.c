/*
 * shim/base/shmfile.c — checks and sizing for the shared-memory files gpumem
 * creates, and the rule for the names in their names (see
 * shim/base/shmfile.h). No malloc, no stdio.
 */
#include "shim/base/shmfile.h"
#include "shim/base/msg.h"

#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>

bool gm_shm_fsize_over(size_t len)
{
    struct rlimit rl;
    return getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
           rl.rlim_cur < len;
}

bool gm_shm_fsize_would_kill(size_t len)
{
    if (!gm_shm_fsize_over(len))
        return false;
    struct sigaction sa;
    if (sigaction(SIGXFSZ, NULL, &sa) != 0)
        return true;
    return !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL;
}

void *gm_shm_size_map(int fd, size_t len, int *err)
{
    (void)flock(fd, LOCK_EX | LOCK_NB); /* a new inode: nobody else has it */
    int e = fchmod(fd, 0600) != 0 ? errno : 0;
    if (e == 0)
        e = posix_fallocate(fd, 0, (off_t)len);
    void *mem = NULL;
    if (e == 0) {
        mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                   fd, 0);
        if (mem == MAP_FAILED) {
            e = errno;
            mem = NULL;
        }
    }
    *err = e;
    return mem;
}

int gm_shm_dir_check(const char *dir, uid_t owner, bool any_owner, char *err,
                     size_t cap)
{
    struct stat st;
    const char *why = NULL, *sep = " ";
    char buf[96];
    if (dir == NULL || dir[0] != '/') {
        why = "is not an absolute path";
    } else if (lstat(dir, &st) != 0) {
        why = strerror(errno); /* a reason, not a predicate: after a colon */
        sep = ": ";
    } else if (S_ISLNK(st.st_mode)) {
        why = "is a symbolic link";
    } else if (!S_ISDIR(st.st_mode)) {
        why = "is not a directory";
    } else if (!any_owner && st.st_uid != 0 && st.st_uid != owner) {
        gm_msgf(buf, sizeof buf, "is owned by uid %u (neither root nor uid "
                "%u)", (unsigned)st.st_uid, (unsigned)owner);
        why = buf;
    } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 &&
               (st.st_mode & S_ISVTX) == 0) {
        gm_msgf(buf, sizeof buf, "is writable by %s without the sticky bit "
                "(mode %04o)", (st.st_mode & S_IWOTH) ? "others" : "its group",
                (unsigned)(st.st_mode & 07777));
        why = buf;
    }
    if (why == NULL)
        return 0;
    gm_msgf(err, cap, "segment directory %s%s%s; it must be " GM_SHM_DIR_RULE,
            dir ? dir : "(null)", sep, why);
    return -1;
}

const char *gm_name_problem(const char *s, size_t max, char *buf, size_t cap)
{
    size_t n = strlen(s);
    if (n == 0)
        return "is empty";
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
            (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-')
            continue;
        if (ch < 0x21 || ch >= 0x7f)
            return "contains a space, control or non-ASCII character";
        gm_msgf(buf, cap, "contains '%c', which is not allowed", ch);
        return buf;
    }
    if (n > max) {
        gm_msgf(buf, cap, "is longer than %u characters", (unsigned)max);
        return buf;
    }
    return NULL;
}

const char *gm_shm_prefix_problem(const char *s, char *buf, size_t cap)
{
    const char *why = gm_name_problem(s, GM_SHM_PREFIX_MAX, buf, cap);
    if (why == NULL && s[0] == '.')
        why = "starts with '.'";
    return why;
}
