/*
 * shim/base/shmfile.h — creating the shared-memory files gpumem writes (the
 * per-process telemetry segment, a group's segment): the checks and the
 * sizing every such file needs, in one place, and the rule for the names
 * that go into their names (a segment prefix, a group name).
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
#include <sys/types.h>

/* True when a file of len bytes would exceed RLIMIT_FSIZE (growing it
 * raises SIGXFSZ, whatever that signal's action). */
bool gm_shm_fsize_over(size_t len);

/* True when creating a file of len bytes would exceed RLIMIT_FSIZE while
 * SIGXFSZ keeps its default action (which would kill the process). */
bool gm_shm_fsize_would_kill(size_t len);

/* For fd, a file just created with O_CREAT|O_EXCL: take LOCK_EX (no wait:
 * the inode is new), set mode 0600, allocate len bytes and map them shared
 * read-write, its page-table entries filled in up front (MAP_POPULATE:
 * the writers' first pass over the file, on the allocation path, takes no
 * page faults). Returns the mapping, or NULL with the errno value in *err
 * (the caller unlinks and closes). The lock stays held. */
void *gm_shm_size_map(int fd, size_t len, int *err);

/* Whether dir may hold gpumem's shared files (GPUMEM_SHM_DIR). The rule:
 * dir exists and is a directory, the path's last component is not a
 * symbolic link, it is owned by root or by `owner`, and it is writable by
 * group or others only with the sticky bit set (as /dev/shm, mode 1777),
 * so nobody else can rename, replace or remove the files in it. With
 * any_owner (a reader running as root) the owner is not checked. Returns
 * 0, or -1 with a one-line reason in err naming dir and the rule. */
int gm_shm_dir_check(const char *dir, uid_t owner, bool any_owner, char *err,
                     size_t cap);

/* The rule above in words, for messages and --help. */
#define GM_SHM_DIR_RULE                                                     \
    "a directory (not a symbolic link) owned by root or by the user, not "  \
    "writable by group or others unless sticky like /dev/shm (mode 1777)"

/* A name that goes into a file's name (a group name, a segment prefix):
 * 1 to max characters of A-Z a-z 0-9 _ . -, so it can neither leave the
 * directory nor carry a space or a control character. NULL when s is
 * one; else why not, as the end of a sentence "NAME='S' ...": "is
 * empty", "contains '/', which is not allowed", "contains a space,
 * control or non-ASCII character", "is longer than 32 characters"
 * (formatted into buf, which holds at least GM_NAME_WHY bytes). */
#define GM_NAME_WHY 64
const char *gm_name_problem(const char *s, size_t max, char *buf,
                            size_t cap);

/* The segment prefix of <dir>/<prefix>.<pid> (GPUMEM_SHM_PREFIX, the
 * tools' --prefix): a name of at most GM_SHM_PREFIX_MAX characters that
 * does not start with '.' (a segment is never a hidden file, and ".."
 * is no prefix). NULL, or why not as gm_name_problem says it, or "starts
 * with '.'". The library and the tools apply this one rule. */
#define GM_SHM_PREFIX_MAX 32
const char *gm_shm_prefix_problem(const char *s, char *buf, size_t cap);

/* The prefix rule in words, for messages ("use " GM_SHM_PREFIX_RULE). */
#define GM_SHM_PREFIX_RULE                                                  \
    "1 to 32 characters from A-Z a-z 0-9 _ . -, not starting with ."

#endif
