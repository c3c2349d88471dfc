/*
 * shim/base/shmfile.h — creating the shared-memory files gpumem writes (the
 * per-process telemetry segment, a group's segment): the checks and the
 * sizing every such file needs, in one place.
 *
 * Invariant: a file these helpers sized is mapped read-write, has mode
 * 0600 whatever the umask, and is backed by tmpfs pages allocated up front
 * (posix_fallocate), so a full /dev/shm fails here with an error instead
 * of raising SIGBUS on a later store.
 */
#ifndef GM_SHMFILE_H
#define GM_SHMFILE_H

#include <stdbool.h>
#include <stddef.h>

/* True when creating a file of len bytes would exceed RLIMIT_FSIZE while
 * SIGXFSZ keeps its default action (which would kill the process). */
bool gm_shm_fsize_would_kill(size_t len);

/* For fd, a file just created with O_CREAT|O_EXCL: take LOCK_EX (no wait:
 * the inode is new), set mode 0600, allocate len bytes and map them shared
 * read-write. Returns the mapping, or NULL with the errno value in *err
 * (the caller unlinks and closes). The lock stays held. */
void *gm_shm_size_map(int fd, size_t len, int *err);

#endif
