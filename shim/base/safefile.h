/*
 * shim/base/safefile.h — whole buffers: written to a descriptor, read at
 * an offset, and written to a file that another user may have prepared a
 * trap for (a report path in a shared directory).
 *
 * Invariant: the bytes reach the path only as one append to a regular
 * file of this user's with a single name (created mode 0600 when absent,
 * made 0600 when others could read it): a symlink at the path is never
 * followed, another user's file or a hard link is never written, and
 * nothing is ever truncated, so writers that share the path all keep
 * their bytes.
 */
#ifndef GM_SAFEFILE_H
#define GM_SAFEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Write all of buf[0..n) to fd, retrying short writes and EINTR.
 * Returns 0, or -1 (errno set) at the first failed write. */
int gm_write_all(int fd, const void *buf, size_t n);

/* Read n bytes at offset off, whole, retrying short reads and EINTR;
 * false on an error or end of file first (a file truncated meanwhile). */
bool gm_pread_all(int fd, void *buf, size_t n, uint64_t off);

/* Append buf[0..n) to `path` in one write(2) on an O_APPEND descriptor,
 * so that processes appending to the same file at once never interleave
 * (a local file system places each such write whole), never past the
 * file size limit (RLIMIT_FSIZE: refused, no SIGXFSZ). Returns 0, or -1
 * with a message naming the path and the reason in err. */
int gm_file_append(const char *path, const void *buf, size_t n, char *err,
                   size_t cap);

#endif
