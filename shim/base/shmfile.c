/*
 * shim/base/shmfile.c — checks and sizing for the shared-memory files gpumem
 * creates (see shim/base/shmfile.h). No malloc, no stdio.
 */
#include "shim/base/shmfile.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>

bool gm_shm_fsize_would_kill(size_t len)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur >= len)
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
        mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (mem == MAP_FAILED) {
            e = errno;
            mem = NULL;
        }
    }
    *err = e;
    return mem;
}
